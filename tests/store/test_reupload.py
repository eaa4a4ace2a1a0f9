"""Uploading the same contacts again lands each on the prospect it landed on before and creates
nothing, also when the first upload split prospects off (over a LinkedIn conflict or an
ambiguity) that an earlier contact of the request matches: on the tier's own store, through
the store's upload (the rules themselves: test_contact_matching.py)."""

from __future__ import annotations

import pytest

ANN = "ann@example.com"
PHONE = "+14155550101"
CASES = {
    "an ambiguity made after a contact that it matches": (
        [{"email": ANN, "firstName": "Ann"}],
        [{"phoneNumber": PHONE, "firstName": "Bob"}, {"email": ANN, "phoneNumber": PHONE}],
    ),
    "a LinkedIn split made after a contact that it matches": (
        [{"email": ANN, "linkedinUrl": "linkedin.com/in/x"}],
        [{"email": ANN}, {"email": ANN, "linkedinUrl": "linkedin.com/in/y"}],
    ),
    "a LinkedIn split made before": (
        [{"email": ANN, "linkedinUrl": "linkedin.com/in/x"}],
        [
            {"email": ANN, "linkedinUrl": "linkedin.com/in/y"},
            {"email": ANN, "firstName": "Ann"},
            {"email": ANN, "linkedinUrl": "linkedin.com/in/x"},
        ],
    ),
    "a LinkedIn split and an ambiguity, then a contact both match": (
        [{"email": ANN, "linkedinUrl": "linkedin.com/in/x"}, {"phoneNumber": PHONE}],
        [
            {"email": ANN, "linkedinUrl": "linkedin.com/in/y"},
            {"email": ANN, "phoneNumber": PHONE},
            {"email": ANN},
        ],
    ),
}


@pytest.mark.parametrize("before,contacts", CASES.values(), ids=CASES)
async def test_uploading_the_same_contacts_again_creates_nothing(store, ws_a, before, contacts):
    listing = await store.lists.create(ws_a.id, "Again", ws_a.users[0]["id"])
    await store.prospects.add_to_list(ws_a.id, listing, before)
    first = await store.prospects.add_to_list(ws_a.id, listing, contacts)
    again = await store.prospects.add_to_list(ws_a.id, listing, contacts)
    assert again.members == first.members
    assert [r["prospectId"] for r in again.results] == [r["prospectId"] for r in first.results]
    assert {r["outcome"] for r in again.results} == {"reused"}
