"""Contact matching (store/prospects.py) on its own, one table per rule of docs/api.md's
"Contact upload and matching": which prospect each contact lands on, what it fills in, why a new
prospect was made, the dedupe keys, and contacts of one upload matching each other. No
database: existing prospects are stored documents turned into candidates, as the backends do.
(Over HTTP and under concurrency: tests/handlers/test_contacts.py.)"""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from store.prospects import (
    Candidate,
    Contact,
    dedupe_key,
    match_all,
    outcomes,
    prospect_document,
    resolve,
)

NOW = dt.datetime(2026, 11, 21, 9, 30)
_ids = itertools.count(1)


def contact(region: str = "US", **fields: str) -> Contact:
    return Contact.parse(fields, region)


def stored(**fields: str) -> Candidate:
    """An existing prospect, made by an earlier upload of a contact with these fields."""
    created = contact(**fields)
    doc = prospect_document(
        "ws", created, dedupe_key(created), None, NOW, prospect_id=f"p{next(_ids)}"
    )
    return Candidate.from_doc(doc)


def split_off(reason: str, **fields: str) -> Candidate:
    """An existing prospect that an earlier upload created apart from its matches."""
    created = contact(**fields)
    key = dedupe_key(created, reason)
    doc = prospect_document("ws", created, key, None, NOW, prospect_id=f"p{next(_ids)}")
    return Candidate.from_doc(doc)


ANN = {"email": "ann@example.com", "firstName": "Ann"}

# --- email, case-insensitively; phone numbers in E.164 across formats --------------------------

EMAILS = ["ann@example.com", "ANN@EXAMPLE.COM", "Ann@Example.Com", "  ann@example.com  "]


@pytest.mark.parametrize("email", EMAILS)
def test_emails_match_whatever_their_case(email):
    existing = stored(email="Ann@Example.com")
    assert resolve(contact(email=email), [existing]) is existing


PHONES = [
    ("+14155550101", "US"),
    ("(415) 555-0101", "US"),
    ("415.555.0101", "US"),
    ("1-415-555-0101", "US"),
    ("+1 415 555 0101", "DE"),
    ("001 415 555 0101", "DE"),  # Germany's international prefix
    ("011 1 415 555 0101", "US"),  # the US's
]


@pytest.mark.parametrize("phone,region", PHONES)
def test_phone_numbers_match_in_e164_whatever_their_format(phone, region):
    existing = stored(phoneNumber="(415) 555-0101")
    assert existing.phone == "+14155550101"
    parsed = contact(region, phoneNumber=phone)
    assert parsed.phone == "+14155550101" and parsed.fields["phoneNumber"] == "+14155550101"
    assert resolve(parsed, [existing]) is existing


NO_MATCH = {
    "another email": {"email": "anna@example.com"},
    "another number": {"phoneNumber": "+14155550102"},
    "the number in another region": {"phoneNumber": "030 4155550101"},
    "an unreadable number": {"phoneNumber": "call me"},
    "the same name only": {"firstName": "Ann", "lastName": "Lee"},
    "the same LinkedIn URL only": {"linkedinUrl": "linkedin.com/in/ann-lee"},
}


@pytest.mark.parametrize("fields", NO_MATCH.values(), ids=NO_MATCH)
def test_only_email_and_phone_match(fields):
    existing = stored(
        **ANN,
        phoneNumber="+14155550101",
        lastName="Lee",
        linkedinUrl="https://www.linkedin.com/in/ann-lee",
    )
    resolved_to = resolve(contact(**fields), [existing])
    assert resolved_to is not existing and resolved_to.id is None and resolved_to.reason == ""


# --- a safe match is reused: blanks filled, never overwritten ----------------------------------


def test_a_safe_match_is_reused_with_its_blanks_filled_and_nothing_overwritten():
    existing = stored(email="ann@example.com", firstName="Ann", companyName="Acme")
    upload = contact(
        email="ANN@example.com",
        firstName="Annie",  # differs: kept as stored
        companyName="Acme Corp",  # differs: kept as stored
        lastName="Lee",
        phoneNumber="(415) 555-0101",
        jobTitle="CTO",
    )
    targets, chosen = match_all([upload], [existing])
    assert chosen == [existing] and targets == [existing]
    assert existing.fills == {"lastName": "Lee", "phoneNumber": "+14155550101", "jobTitle": "CTO"}
    assert existing.fields["firstName"] == "Ann" and existing.fields["companyName"] == "Acme"
    # Each filled field is set with the identifier derived from it, in one update.
    assert existing.fill_updates() == {
        "lastName": {"lastName": "Lee"},
        "phoneNumber": {"phoneNumber": "+14155550101", "phoneE164": "+14155550101"},
        "jobTitle": {"jobTitle": "CTO"},
    }
    assert existing.phone == "+14155550101"  # later contacts of the upload match it by phone


def test_all_matches_one_prospect_is_safe():
    existing = stored(email="ann@example.com", phoneNumber="+14155550101")
    other = stored(email="bob@example.com")
    both = contact(email="ann@example.com", phoneNumber="415 555 0101")
    assert resolve(both, [other, existing]) is existing


def test_filling_an_email_sets_its_normalised_form():
    existing = stored(phoneNumber="+14155550101")
    match_all([contact(phoneNumber="+14155550101", email="Ann@Example.com")], [existing])
    assert existing.fill_updates()["email"] == {
        "email": "Ann@Example.com",
        "emailNorm": "ann@example.com",
    }


def test_a_reupload_fills_nothing():
    existing = stored(**ANN, phoneNumber="+14155550101")
    match_all([contact(**ANN, phoneNumber="(415) 555-0101")], [existing])
    assert existing.fills == {} and existing.fill_updates() == {}


# --- a LinkedIn conflict splits off a new prospect ---------------------------------------------

LINKEDIN = {
    # existing prospect's URL, contact's URL -> split off (True) or reused (False)
    "different people": ("linkedin.com/in/ann-lee", "linkedin.com/in/ann-lee-2", True),
    "same URL, other forms": (
        "https://www.linkedin.com/in/ann-lee/",
        "http://de.linkedin.com/in/Ann-Lee?trk=profile#about",
        False,
    ),
    "prospect without one": (None, "linkedin.com/in/ann-lee", False),
    "contact without one": ("linkedin.com/in/ann-lee", None, False),
}


@pytest.mark.parametrize("theirs,ours,splits", LINKEDIN.values(), ids=LINKEDIN)
def test_a_linkedin_url_that_differs_splits_off_a_new_prospect(theirs, ours, splits):
    existing = stored(**ANN, **({"linkedinUrl": theirs} if theirs else {}))
    upload = contact(**ANN, **({"linkedinUrl": ours} if ours else {}))
    chosen = match_all([upload], [existing])[1]
    if not splits:
        assert chosen == [existing]
        return
    [new] = chosen
    assert new is not existing and new.id is None and new.reason == "linkedin"
    assert new.key == "e:ann@example.com|l:linkedin.com/in/ann-lee-2"
    assert new.fields == upload.fields and existing.fills == {}
    new.created = True  # as the backend marks what it inserted
    assert outcomes(chosen) == [
        {"index": 0, "prospectId": None, "outcome": "created", "reason": "linkedin_conflict"}
    ]


# --- several prospects match: ambiguous, unless one is the same person by its LinkedIn URL -------


def test_matches_on_different_prospects_are_ambiguous():
    by_email = stored(email="ann@example.com")
    by_phone = stored(phoneNumber="+14155550101")
    upload = contact(email="ann@example.com", phoneNumber="+14155550101")
    [new] = match_all([upload], [by_email, by_phone])[1]
    assert new not in (by_email, by_phone) and new.reason == "ambiguous"
    assert new.key == "e:ann@example.com|ambiguous"
    assert by_email.fills == {} and by_phone.fills == {}
    new.created = True
    assert outcomes([new])[0]["reason"] == "ambiguous_match"


# The prospects an email and a phone number match, by their LinkedIn URLs; the contact's is X.
TIE_BREAK = {
    "one is X, the other Y": (["X", "Y"], 0),
    "one is X, two others differ": (["Y", "X", "Z"], 1),
    "one is X, the other has none": (["X", None], None),  # could be this person too
    "both are X": (["X", "X"], None),
    "neither is X": (["Y", "Z"], None),
}


@pytest.mark.parametrize("urls,chosen", TIE_BREAK.values(), ids=TIE_BREAK)
def test_the_same_linkedin_url_breaks_a_tie_only_when_every_other_match_differs(urls, chosen):
    url = "linkedin.com/in/{}".format
    pool = [
        stored(
            **({"email": "ann@example.com"} if index % 2 == 0 else {"phoneNumber": "+14155550101"}),
            **({"linkedinUrl": url(name)} if name else {}),
        )
        for index, name in enumerate(urls)
    ]
    upload = contact(email="ann@example.com", phoneNumber="+14155550101", linkedinUrl=url("X"))
    resolved_to = resolve(upload, list(pool))
    if chosen is None:
        assert resolved_to not in pool and resolved_to.reason == "ambiguous"
        assert resolved_to.key == "e:ann@example.com|ambiguous|l:linkedin.com/in/x"
    else:
        assert resolved_to is pool[chosen]


def test_a_split_off_contact_uploaded_again_lands_on_its_own_prospect():
    original = stored(**ANN, linkedinUrl="linkedin.com/in/ann-lee")
    namesake = {**ANN, "linkedinUrl": "https://www.linkedin.com/in/ann-lee-2/"}
    [split] = match_all([contact(**namesake)], [original])[1]
    assert split.reason == "linkedin"
    # Stored by the backend under its key; the next upload's candidates are both prospects.
    again = [original, split_off("linkedin", **namesake)]
    assert again[1].key == split.key
    assert resolve(contact(**namesake), list(again)) is again[1]
    assert resolve(contact(**ANN, linkedinUrl="linkedin.com/in/ann-lee"), list(again)) is again[0]
    # Without a LinkedIn URL it lands where it did before the split: a prospect split off
    # does not make a contact ambiguous by itself.
    assert resolve(contact(**ANN), list(again)) is again[0]
    # A third LinkedIn URL conflicts with the original's: a new prospect.
    third = resolve(contact(**ANN, linkedinUrl="linkedin.com/in/ann-lee-3"), list(again))
    assert third not in again and third.reason == "linkedin"


def test_an_ambiguous_contact_uploaded_again_lands_on_the_prospect_it_made():
    pool = [stored(email="ann@example.com"), stored(phoneNumber="+14155550101")]
    upload = {"email": "ann@example.com", "phoneNumber": "+14155550101"}
    first = resolve(contact(**upload), list(pool))
    made = split_off("ambiguous", **upload)
    assert made.key == first.key
    assert resolve(contact(**upload), [*pool, made]) is made


# --- split-off prospects read back from storage; uploading the same contacts again -------------

SPLIT = {
    "plain, by email": ({"email": "a@x.com", "linkedinUrl": "in/a"}, "", ""),
    "plain, by phone": ({"phoneNumber": "+14155550101"}, "", ""),
    "plain, by fields": ({"firstName": "Ann"}, "", ""),
    "LinkedIn conflict": ({"email": "a@x.com", "linkedinUrl": "in/b"}, "linkedin", "linkedin"),
    "LinkedIn conflict, by phone": (
        {"phoneNumber": "+14155550101", "linkedinUrl": "in/b"},
        "linkedin",
        "linkedin",
    ),
    "ambiguous": ({"email": "a@x.com", "phoneNumber": "+14155550101"}, "ambiguous", "ambiguous"),
    "ambiguous, with LinkedIn": (
        {"email": "a@x.com", "linkedinUrl": "in/b"},
        "ambiguous",
        "ambiguous",
    ),
    "an email that looks like a reason": ({"email": "a|ambiguous"}, "", ""),
}


@pytest.mark.parametrize("fields,made_for,read_back", SPLIT.values(), ids=SPLIT)
def test_why_a_prospect_was_split_off_is_read_back_from_its_document(fields, made_for, read_back):
    assert split_off(made_for, **fields).reason == read_back


def test_an_ambiguous_prospect_filled_with_a_linkedin_url_is_still_one():
    made = split_off("ambiguous", email="a@x.com", phoneNumber="+14155550101")
    match_all(
        [contact(email="a@x.com", phoneNumber="+14155550101", linkedinUrl="in/c")],
        [stored(email="a@x.com"), stored(phoneNumber="+14155550101"), made],
    )
    doc = {
        "_id": made.id,
        "dedupeKey": made.key,
        **made.fields,
        "emailNorm": made.email,
        "phoneE164": made.phone,
        "linkedinNorm": "in/c",
        "linkedinUrl": "in/c",
    }
    assert Candidate.from_doc(doc).reason == "ambiguous"


def persist(pool: list[Candidate]) -> list[Candidate]:
    """The pool as the next upload reads it back: every prospect stored, with its fields."""
    docs = []
    for candidate in pool:
        candidate.id = candidate.id or f"p{next(_ids)}"
        docs.append(
            {
                "_id": candidate.id,
                "dedupeKey": candidate.key,
                **candidate.fields,
                **{
                    name: value
                    for name, value in (
                        ("emailNorm", candidate.email),
                        ("phoneE164", candidate.phone),
                        ("linkedinNorm", candidate.linkedin),
                    )
                    if value
                },
            }
        )
    return [Candidate.from_doc(doc) for doc in docs]


AGAIN = {
    "an ambiguity made after a contact that it matches": (
        [{"email": "ann@example.com"}],
        [
            {"phoneNumber": "+14155550101", "firstName": "Bob"},
            {"email": "ann@example.com", "phoneNumber": "+14155550101"},
        ],
    ),
    "a LinkedIn split made after a contact that it matches": (
        [{"email": "ann@example.com", "linkedinUrl": "in/x"}],
        [{"email": "ann@example.com"}, {"email": "ann@example.com", "linkedinUrl": "in/y"}],
    ),
    "a LinkedIn split before": (
        [{"email": "ann@example.com", "linkedinUrl": "in/x"}],
        [
            {"email": "ann@example.com", "linkedinUrl": "in/y"},
            {"email": "ann@example.com"},
            {"email": "ann@example.com", "linkedinUrl": "in/x"},
        ],
    ),
    "several splits": (
        [{"email": "ann@example.com", "linkedinUrl": "in/x"}, {"phoneNumber": "+14155550101"}],
        [
            {"email": "ann@example.com", "phoneNumber": "+14155550101"},
            {"email": "ann@example.com", "linkedinUrl": "in/y"},
            {"email": "ann@example.com", "linkedinUrl": "in/z"},
            {"phoneNumber": "+14155550101", "linkedinUrl": "in/y"},
            {"email": "ann@example.com"},
            {"phoneNumber": "+14155550101"},
        ],
    ),
    "one upload's contacts matching each other": (
        [],
        [
            {"email": "a@x.com"},
            {"email": "A@x.com", "phoneNumber": "+14155550101"},
            {"phoneNumber": "(415) 555-0101", "lastName": "Lee"},
            {"firstName": "Zed"},
            {"firstName": " zed "},
        ],
    ),
}


@pytest.mark.parametrize("before,upload", AGAIN.values(), ids=AGAIN)
def test_uploading_the_same_contacts_again_lands_each_where_it_did(before, upload):
    pool = persist(match_all([contact(**fields) for fields in before], [])[0])
    contacts = [contact(**fields) for fields in upload]
    first = match_all(contacts, pool)[1]
    pool = persist(pool)
    resolved_to = [target.id for target in first]
    again = match_all([contact(**fields) for fields in upload], pool)[1]
    assert [target.id for target in again] == resolved_to
    assert all(target.id for target in again) and all(not t.fills for t in again)


# --- dedupe keys: equal contacts, equal keys ----------------------------------------------------

EQUAL = {
    "email in any case": (
        {"email": "Ann@Example.com", "firstName": "Ann"},
        {"email": " ann@EXAMPLE.com", "lastName": "Lee"},
    ),
    "phone in any format": (
        {"phoneNumber": "(415) 555-0101"},
        {"phoneNumber": "+1 415-555-0101", "companyName": "Acme"},
    ),
    "LinkedIn URL in any form": (
        {"linkedinUrl": "https://www.linkedin.com/in/ann-lee/"},
        {"linkedinUrl": "linkedin.com/in/Ann-Lee?trk=x", "firstName": "Ann"},
    ),
    "other fields in any case and spacing": (
        {"firstName": "Ann", "companyName": "Acme"},
        {"firstName": "  ANN ", "companyName": "acme"},
    ),
}
DIFFERENT = {
    "email before phone": (
        {"email": "a@x.com", "phoneNumber": "+14155550101"},
        {"email": "b@x.com", "phoneNumber": "+14155550101"},
    ),
    "phone before LinkedIn": (
        {"phoneNumber": "+14155550101", "linkedinUrl": "in/a"},
        {"phoneNumber": "+14155550102", "linkedinUrl": "in/a"},
    ),
    "another field": (
        {"firstName": "Ann", "companyName": "Acme"},
        {"firstName": "Ann", "companyName": "Acme Inc"},
    ),
    "a field moved": ({"firstName": "Lee"}, {"lastName": "Lee"}),
}


@pytest.mark.parametrize("a,b", EQUAL.values(), ids=EQUAL)
def test_equal_contacts_have_equal_dedupe_keys(a, b):
    for reason in ("", "linkedin", "ambiguous"):
        assert dedupe_key(contact(**a), reason) == dedupe_key(contact(**b), reason)


@pytest.mark.parametrize("a,b", DIFFERENT.values(), ids=DIFFERENT)
def test_different_contacts_have_different_dedupe_keys(a, b):
    assert dedupe_key(contact(**a)) != dedupe_key(contact(**b))


def test_a_dedupe_key_names_the_identity_and_why_it_was_split_off():
    full = contact(email="A@x.com", phoneNumber="+14155550101", linkedinUrl="linkedin.com/in/a")
    assert dedupe_key(full) == "e:a@x.com"
    assert dedupe_key(full, "linkedin") == "e:a@x.com|l:linkedin.com/in/a"
    assert dedupe_key(full, "ambiguous") == "e:a@x.com|ambiguous|l:linkedin.com/in/a"
    assert dedupe_key(contact(phoneNumber="+14155550101")) == "p:+14155550101"
    assert dedupe_key(contact(linkedinUrl="linkedin.com/in/a")) == "l:linkedin.com/in/a"
    assert dedupe_key(contact(firstName="Ann")).startswith("f:")
    assert dedupe_key(contact(phoneNumber="call me", firstName="Ann")).startswith("f:")


# --- contacts within one upload match each other ------------------------------------------------


def test_contacts_of_one_upload_land_on_one_prospect_and_fill_it():
    uploads = [
        contact(email="ann@example.com", firstName="Ann"),
        contact(email="ANN@example.com", phoneNumber="(415) 555-0101", firstName="Annie"),
        contact(phoneNumber="+14155550101", lastName="Lee"),  # by the phone the 2nd brought
        contact(email="bob@example.com"),
    ]
    targets, chosen = match_all(uploads, [])
    ann, bob = targets
    assert chosen == [ann, ann, ann, bob]
    assert ann.fields == {
        "email": "ann@example.com",
        "firstName": "Ann",
        "phoneNumber": "+14155550101",
        "lastName": "Lee",
    }
    ann.created = bob.created = True
    assert [entry["outcome"] for entry in outcomes(chosen)] == [
        "created",
        "reused",
        "reused",
        "created",
    ]


def test_contacts_of_one_upload_split_and_tie_break_among_themselves():
    uploads = [
        contact(email="ann@example.com", linkedinUrl="linkedin.com/in/ann-1"),
        contact(email="ann@example.com", linkedinUrl="linkedin.com/in/ann-2"),  # split off
        contact(email="ann@example.com", linkedinUrl="linkedin.com/in/ann-2"),  # tie-break
        contact(phoneNumber="+14155550101"),
        contact(email="ann@example.com", phoneNumber="+14155550101"),  # ambiguous
        contact(email="Ann@example.com", phoneNumber="415 555 0101"),  # the same ambiguity
    ]
    targets, chosen = match_all(uploads, [])
    first, second, phone, ambiguous = targets
    assert chosen == [first, second, second, phone, ambiguous, ambiguous]
    assert (second.reason, ambiguous.reason) == ("linkedin", "ambiguous")


def test_an_existing_prospect_and_one_made_by_the_upload_are_matched_alike():
    existing = stored(email="ann@example.com")
    uploads = [
        contact(phoneNumber="+14155550101", firstName="Bob"),
        contact(email="ann@example.com", phoneNumber="+14155550101"),  # both: ambiguous
    ]
    pool = [existing]
    targets, chosen = match_all(uploads, pool)
    assert chosen[1] not in (existing, chosen[0]) and chosen[1].reason == "ambiguous"
    assert pool == [existing, *targets]  # what the upload made, later contacts match too
    # The same contacts again, against what is there now, land where they did: nothing new.
    assert match_all(uploads, pool)[1] == chosen and len(pool) == 3
