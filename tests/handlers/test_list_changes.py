"""Lists changed over HTTP, on a real port: PATCH /v1/lists/{id} (a change moves updatedAt and
records `list.updated`, a no-op records nothing, an owner that is not an active user of the
workspace is 422) and POST /v1/lists/{id}/contacts/remove (members leave the list with a
`list_removed` activity and their events; anything else is `not_member`)."""

from __future__ import annotations

import uuid

import pytest

from server.config import load_config
from tests.helpers import Client, follow_events, test_environ
from tests.webhooks.receiver import until


@pytest.fixture
def config():
    """A short settle period: the feed shows events 0.3 s after they are recorded."""
    return load_config(environ=test_environ(shared=True, WSAPI_SYNC_SETTLE_SECONDS="0.3"))


async def events_of(client: Client, types: str, count: int) -> list[dict]:
    """The events of `types` once at least `count` of them are in the settled feed."""

    async def found() -> list[dict] | None:
        events, _ = await follow_events(client, f"/v1/events?type={types}")
        return events if len(events) >= count else None

    return await until(found, what=f"{count} events of {types}")  # type: ignore[return-value]


async def upload(api: Client, list_id: str, count: int, prefix: str = "p") -> list[str]:
    """Uploads `count` new contacts to the list; their prospect ids, in order."""
    contacts = [
        {"firstName": f"{prefix}{i}", "email": f"{prefix}{i}@contacts.example"}
        for i in range(count)
    ]
    response = await api.post(f"/v1/lists/{list_id}/contacts", {"contacts": contacts})
    assert response.code == 200, response
    return [result["prospectId"] for result in response.json()["results"]]


# PATCH /v1/lists/{id}


async def test_patch_renames_and_reassigns_with_one_event(api, ws_a, new_list, clock):
    listing = await new_list("Q1")
    clock.advance(5)
    path = f"/v1/lists/{listing['id']}"
    owner = ws_a.users[1]["id"]
    response = await api.patch(path, {"name": "  Q1 renewals ", "ownerUserId": owner.upper()})
    assert response.code == 200, response
    changed = response.json()["list"]
    assert changed == {
        **listing,
        "name": "Q1 renewals",
        "ownerUserId": owner,
        "updatedAt": changed["updatedAt"],
    }
    assert changed["updatedAt"] > listing["updatedAt"]
    assert (await api.get(path)).json() == {"list": changed}
    events = await events_of(api, "list.updated", 1)
    assert [e["data"] for e in events] == [changed]


async def test_patch_with_the_values_the_list_has_changes_nothing(api, new_list, clock):
    listing = await new_list("Same")
    clock.advance(5)
    response = await api.patch(f"/v1/lists/{listing['id']}", {"name": " Same "})
    assert response.code == 200, response
    assert response.json() == {"list": listing}
    # A real change after it is the only list.updated of the feed.
    renamed = (await api.patch(f"/v1/lists/{listing['id']}", {"name": "Other"})).json()["list"]
    assert renamed["updatedAt"] > listing["updatedAt"]
    events = await events_of(api, "list.updated", 1)
    assert [e["data"]["name"] for e in events] == ["Other"]


@pytest.mark.parametrize("who", ["unknown", "deleted", "other workspace"])
async def test_patch_to_an_owner_that_is_not_an_active_user_is_422(api, ws_a, ws_b, new_list, who):
    listing = await new_list()
    owner = {
        "unknown": str(uuid.uuid4()),
        "deleted": ws_a.deleted_user["id"],
        "other workspace": ws_b.users[0]["id"],
    }[who]
    response = await api.patch(f"/v1/lists/{listing['id']}", {"ownerUserId": owner})
    assert response.code == 422, response
    problem = response.json()
    assert problem["code"] == "invalid_reference"
    assert problem["errors"][0]["pointer"] == "#/ownerUserId"
    assert (await api.get(f"/v1/lists/{listing['id']}")).json() == {"list": listing}


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({}, "#"),
        ({"color": "red"}, "#/color"),
        ({"name": "x", "workspaceId": "w"}, "#/workspaceId"),
        ({"name": "   "}, "#/name"),
        ({"name": None}, "#/name"),
        ({"ownerUserId": "not-a-uuid"}, "#/ownerUserId"),
        ({"ownerUserId": None}, "#/ownerUserId"),
        ([], "#"),
    ],
)
async def test_patch_rejects_bad_bodies_and_writes_nothing(api, new_list, body, pointer):
    listing = await new_list()
    response = await api.patch(f"/v1/lists/{listing['id']}", body)
    assert response.code == 400, response
    assert pointer in [error["pointer"] for error in response.json()["errors"]]
    assert (await api.get(f"/v1/lists/{listing['id']}")).json() == {"list": listing}


async def test_patch_of_an_unknown_or_other_workspaces_list_is_404(api, api_b, new_list):
    listing = await new_list()
    unknown = await api.patch(f"/v1/lists/{uuid.uuid4()}", {"name": "x"})
    other = await api_b.patch(f"/v1/lists/{listing['id']}", {"name": "x"})
    assert unknown.code == other.code == 404
    assert unknown.json()["detail"] == other.json()["detail"]
    assert (await api.get(f"/v1/lists/{listing['id']}")).json() == {"list": listing}


# POST /v1/lists/{id}/contacts/remove


async def timeline(api: Client, prospect_id: str) -> list[dict]:
    response = await api.get(f"/v1/prospect-activities?prospectId={prospect_id}")
    assert response.code == 200, response
    return response.json()["activities"]


async def test_remove_takes_members_out_with_activity_and_events(api, api_b, new_list, clock):
    listing, other = await new_list("Q1 calls"), await new_list("Other")
    ids = await upload(api, listing["id"], 4)
    await upload(api, other["id"], 1)  # p0 again: a member of both lists
    foreign = await upload(
        api_b,
        (
            await api_b.post(
                "/v1/lists",
                {
                    "name": "B",
                    "ownerUserId": (await api_b.get("/v1/users")).json()["users"][0]["id"],
                },
            )
        ).json()["list"]["id"],
        1,
        "b",
    )
    clock.advance(5)
    kinds = "prospect.updated,activity.created,list.updated"
    before = await events_of(api, kinds, 8)  # the two uploads: 5 list_added, 2 lists, p0
    asked = [ids[0].upper(), ids[2], str(uuid.uuid4()), foreign[0], ids[0]]
    response = await api.post(f"/v1/lists/{listing['id']}/contacts/remove", {"prospectIds": asked})
    assert response.code == 200, response
    body = response.json()
    assert body == {
        "listId": listing["id"],
        "removed": 2,
        "prospectsCount": 2,
        "results": [
            {"index": 0, "prospectId": ids[0], "outcome": "removed"},
            {"index": 1, "prospectId": ids[2], "outcome": "removed"},
            {"index": 2, "prospectId": asked[2], "outcome": "not_member"},
            {"index": 3, "prospectId": foreign[0], "outcome": "not_member"},
            {"index": 4, "prospectId": ids[0], "outcome": "removed"},
        ],
    }
    changed = (await api.get(f"/v1/lists/{listing['id']}")).json()["list"]
    assert changed["prospectsCount"] == 2 and changed["updatedAt"] > listing["updatedAt"]
    members = (await api.get(f"/v1/prospects?listId={listing['id']}")).json()
    assert {p["id"] for p in members["prospects"]} == {ids[1], ids[3]}
    assert members["total"] == 2
    p0 = (await api.get("/v1/prospects?email=p0@contacts.example")).json()["prospects"][0]
    assert p0["listIds"] == [other["id"]]
    p2 = (await api.get("/v1/prospects?email=p2@contacts.example")).json()["prospects"][0]
    assert p2["listIds"] == [] and p2["updatedAt"] > listing["updatedAt"]
    kept = (await api.get("/v1/prospects?email=p1@contacts.example")).json()["prospects"][0]
    assert kept["listIds"] == [listing["id"]]
    removed = [a for a in await timeline(api, ids[2]) if a["type"] == "list_removed"]
    assert [(a["details"], a["summary"], a["userId"]) for a in removed] == [
        ({"listId": listing["id"], "listName": "Q1 calls"}, "Removed from list Q1 calls", None)
    ]
    # B's prospect is untouched.
    b0 = (await api_b.get("/v1/prospects?email=b0@contacts.example")).json()["prospects"][0]
    assert b0["listIds"] != [] and b0["id"] == foreign[0]
    seen = {e["id"] for e in before}
    after = await events_of(api, kinds, len(before) + 5)
    new = [e for e in after if e["id"] not in seen]
    assert sorted((e["type"], e["data"]["id"]) for e in new) == sorted(
        [
            ("prospect.updated", ids[0]),
            ("prospect.updated", ids[2]),
            ("activity.created", removed[0]["id"]),
            (
                "activity.created",
                next(a["id"] for a in await timeline(api, ids[0]) if a["type"] == "list_removed"),
            ),
            ("list.updated", listing["id"]),
        ]
    )
    assert [e["data"] for e in new if e["type"] == "list.updated"] == [changed]


async def test_removing_nothing_that_is_a_member_changes_nothing(api, new_list, clock):
    listing = await new_list()
    ids = await upload(api, listing["id"], 1)
    listing = (await api.get(f"/v1/lists/{listing['id']}")).json()["list"]
    clock.advance(5)
    before, _ = await follow_events(api)
    response = await api.post(
        f"/v1/lists/{listing['id']}/contacts/remove", {"prospectIds": [str(uuid.uuid4())]}
    )
    assert response.code == 200, response
    assert response.json()["removed"] == 0 and response.json()["prospectsCount"] == 1
    assert (await api.get(f"/v1/lists/{listing['id']}")).json() == {"list": listing}
    clock.advance(5)
    assert (await follow_events(api))[0] == before
    assert [a["type"] for a in await timeline(api, ids[0])] == ["list_added"]


async def test_remove_then_add_again_is_a_member_again(api, new_list):
    listing = await new_list()
    ids = await upload(api, listing["id"], 2)
    path = f"/v1/lists/{listing['id']}/contacts/remove"
    assert (await api.post(path, {"prospectIds": ids})).json()["prospectsCount"] == 0
    again = await api.post(path, {"prospectIds": ids})
    assert [r["outcome"] for r in again.json()["results"]] == ["not_member"] * 2
    assert await upload(api, listing["id"], 2) == ids
    assert (await api.get(f"/v1/lists/{listing['id']}")).json()["list"]["prospectsCount"] == 2


async def test_remove_with_an_idempotency_key_replays_and_writes_once(api, new_list):
    listing = await new_list()
    ids = await upload(api, listing["id"], 3)
    path, headers = f"/v1/lists/{listing['id']}/contacts/remove", {"Idempotency-Key": "rm-1"}
    first = await api.post(path, {"prospectIds": ids[:2]}, headers=headers)
    second = await api.post(path, {"prospectIds": ids[:2]}, headers=headers)
    assert first.code == second.code == 200
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert second.json() == first.json() and first.json()["removed"] == 2
    assert [a["type"] for a in await timeline(api, ids[0])].count("list_removed") == 1
    reused = await api.post(path, {"prospectIds": ids}, headers=headers)
    assert reused.code == 422 and reused.json()["code"] == "idempotency_key_reused"


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({}, "#/prospectIds"),
        ({"prospectIds": []}, "#/prospectIds"),
        ({"prospectIds": [str(uuid.uuid4())] * 101}, "#/prospectIds"),
        ({"prospectIds": ["not-a-uuid"]}, "#/prospectIds/0"),
        ({"prospectIds": [None]}, "#/prospectIds/0"),
        ({"prospectIds": [str(uuid.uuid4())], "listId": "x"}, "#/listId"),
    ],
)
async def test_remove_rejects_bad_bodies_and_writes_nothing(api, new_list, body, pointer):
    listing = await new_list()
    ids = await upload(api, listing["id"], 1)
    listing = (await api.get(f"/v1/lists/{listing['id']}")).json()["list"]
    response = await api.post(f"/v1/lists/{listing['id']}/contacts/remove", body)
    assert response.code == 400, response
    assert pointer in [error["pointer"] for error in response.json()["errors"]]
    assert (await api.get(f"/v1/lists/{listing['id']}")).json() == {"list": listing}
    assert [a["type"] for a in await timeline(api, ids[0])] == ["list_added"]


async def test_remove_from_an_unknown_or_other_workspaces_list_is_404(api, api_b, new_list):
    listing = await new_list()
    ids = await upload(api, listing["id"], 1)
    body = {"prospectIds": ids}
    unknown = await api.post(f"/v1/lists/{uuid.uuid4()}/contacts/remove", body)
    other = await api_b.post(f"/v1/lists/{listing['id']}/contacts/remove", body)
    assert unknown.code == other.code == 404
    assert (await api.get(f"/v1/lists/{listing['id']}")).json()["list"]["prospectsCount"] == 1
