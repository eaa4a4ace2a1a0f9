"""Contact uploads racing suppressions of the same numbers, from parallel clients: no contact is
added to a list after its number's suppression committed. The feed's order is the order the
writes committed in (SQLite: events in the write's transaction; MongoDB: uploads and
suppressions publish while holding the workspace's upload turn), so each number's
`prospect.created` must come before its `do_not_call.added` when its upload added it."""

from __future__ import annotations

import asyncio
import random

import pytest

from server.config import load_config
from tests.helpers import Client, follow_events, test_environ
from tests.webhooks.receiver import until

NUMBERS = [f"+1415555{n:04d}" for n in range(40)]


@pytest.fixture
def config():
    return load_config(environ=test_environ(shared=True, WSAPI_SYNC_SETTLE_SECONDS="0.3"))


async def test_no_contact_is_added_after_its_number_was_suppressed(origin, ws_a, new_list):
    listing = await new_list()
    uploader, suppressor = Client(origin, ws_a.key, 8), Client(origin, ws_a.key, 8)

    async def upload(numbers: list[str]) -> dict:
        contacts = [{"phoneNumber": n, "firstName": n} for n in numbers]
        response = await uploader.post(
            f"/v1/lists/{listing['id']}/contacts", {"contacts": contacts}
        )
        assert response.code == 200, response
        return response.json()

    async def suppress(numbers: list[str]) -> None:
        response = await suppressor.post(
            "/v1/do-not-call", {"entries": [{"phoneNumber": n} for n in numbers]}
        )
        assert response.code == 200, response

    uploads = [NUMBERS[i : i + 4] for i in range(0, 40, 4)]
    shifted = NUMBERS[2:] + NUMBERS[:2]  # suppressions straddle the uploads' groups
    suppressions = [shifted[i : i + 4] for i in range(0, 40, 4)]
    work = [("u", group) for group in uploads] + [("s", group) for group in suppressions]
    random.Random(38).shuffle(work)
    answers = await asyncio.gather(
        *(upload(group) if kind == "u" else suppress(group) for kind, group in work)
    )
    outcome = {}
    for (kind, group), answer in zip(work, answers, strict=True):
        if kind == "u":
            assert answer["acceptedContacts"] + answer["suppressedContacts"] == 4
            for number, result in zip(group, answer["results"], strict=True):
                outcome[number] = result
    assert set(outcome) == set(NUMBERS)
    added = [n for n in NUMBERS if outcome[n]["outcome"] == "created"]
    suppressed = [n for n in NUMBERS if outcome[n]["outcome"] == "suppressed"]
    assert sorted(added + suppressed) == sorted(NUMBERS)

    async def feed() -> list[dict] | None:
        events, _ = await follow_events(
            uploader, "/v1/events?type=prospect.created,do_not_call.added"
        )
        entries = [e for e in events if e["type"] == "do_not_call.added"]
        return events if len(entries) == 40 and len(events) == 40 + len(added) else None

    events = await until(feed, what="every upload's and suppression's events")
    assert isinstance(events, list)
    place = {}
    for index, event in enumerate(events):
        key = "created" if event["type"] == "prospect.created" else "suppressed"
        place[(key, event["data"]["phoneNumber"])] = index
    for number in added:
        assert place[("created", number)] < place[("suppressed", number)], number
    members = (await uploader.get(f"/v1/prospects?listId={listing['id']}&pageSize=100")).json()
    assert sorted(p["phoneNumber"] for p in members["prospects"]) == sorted(added)
    # Each of them became do-not-call when its number was suppressed after it joined.
    assert all(p["doNotCall"] for p in members["prospects"])
    everyone = (await uploader.get("/v1/prospects?pageSize=100")).json()["prospects"]
    assert len(everyone) == len(added)  # a suppressed contact created no prospect
    count = (await uploader.get(f"/v1/lists/{listing['id']}")).json()["list"]["prospectsCount"]
    assert count == len(added)
