"""Users over HTTP, on a real port: POST /v1/users (409 `user_exists` for an email a non-deleted
user holds, compared case-insensitively; Idempotency-Key), PATCH /v1/users/{id} (a change moves
updatedAt and records `user.updated`, a no-op records nothing), DELETE /v1/users/{id} (the
command line's deletion: hidden from GET /users, refused as an owner, kept by lists and calls,
GET /users/{id} still answers with deletedAt; idempotent), the `admin` scope, another
workspace's users, the events in the feed and delivered by a webhook, and the command line's
user commands recording the same events."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import uuid

import pytest
from standardwebhooks.webhooks import Webhook

from server.admin import run_admin
from server.config import load_config
from server.webhook_dispatch import dispatcher
from tests.helpers import Client, add_call, follow_events, test_environ
from tests.webhooks.receiver import Receiver, until, wait_for

USERS = "/v1/users"
NEW = {"email": "jamie.rivera@alpha.example", "firstName": "Jamie", "lastName": "Rivera"}
RECORD = {"id", "email", "firstName", "lastName", "createdAt", "updatedAt", "deletedAt"}


@pytest.fixture
def config():
    """A short settle period (the feed shows events 0.3 s after they are recorded) and a
    receiver on loopback allowed, polled often."""
    return load_config(
        environ=test_environ(
            shared=True,
            WSAPI_SYNC_SETTLE_SECONDS="0.3",
            WSAPI_WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8",
            WSAPI_WEBHOOK_POLL_SECONDS="0.1",
            WSAPI_WEBHOOK_RETRY_SCHEDULE="1,1,2",
        )
    )


@pytest.fixture
def admin(io_loop, origin, auth, ws_a) -> Client:
    """Client of workspace A with the scopes read and admin."""
    _, key = io_loop.run_sync(lambda: auth.create(ws_a.id, "admin", frozenset({"read", "admin"})))
    return Client(origin, key)


@pytest.fixture
def admin_b(io_loop, origin, auth, ws_b) -> Client:
    _, key = io_loop.run_sync(lambda: auth.create(ws_b.id, "admin", frozenset({"read", "admin"})))
    return Client(origin, key)


async def create(client: Client, **fields) -> dict:
    response = await client.post(USERS, {**NEW, **fields})
    assert response.code == 201, response
    return response.json()["user"]


async def delete(client: Client, user_id: str):
    return await client.fetch(f"{USERS}/{user_id}", "DELETE")


async def user_events(client: Client, count: int) -> list[dict]:
    """The workspace's user events once `count` of them are in the (settled) feed."""

    async def found() -> list[dict] | None:
        events, _ = await follow_events(
            client, "/v1/events?type=user.created,user.updated,user.deleted"
        )
        return events if len(events) >= count else None

    return await until(found, what=f"{count} user events")  # type: ignore[return-value]


async def test_create_answers_201_with_location_and_every_read_shows_it(admin, api):
    response = await admin.post(USERS, {**NEW, "email": "  Jamie.Rivera@Alpha.example "})
    assert response.code == 201, response
    user = response.json()["user"]
    assert set(user) == RECORD
    assert response.headers["Location"] == f"{USERS}/{user['id']}"
    assert user["email"] == "Jamie.Rivera@Alpha.example"  # trimmed, its case kept
    assert (user["firstName"], user["lastName"], user["deletedAt"]) == ("Jamie", "Rivera", None)
    assert user["updatedAt"] == user["createdAt"]
    assert (await api.get(response.headers["Location"])).json() == {"user": user}
    listed = (await api.get(USERS)).json()["users"]
    assert {k: v for k, v in user.items() if k != "deletedAt"} in listed
    owned = await api.post("/v1/lists", {"name": "New rep's", "ownerUserId": user["id"]})
    assert owned.code == 201, owned


@pytest.mark.parametrize(
    "email", ["user0@alpha.example", "USER0@Alpha.Example", "  user1@ALPHA.example  "]
)
async def test_an_email_an_active_user_holds_is_409_and_writes_nothing(admin, api, email):
    before = (await api.get(USERS)).json()
    response = await admin.post(USERS, {**NEW, "email": email})
    assert response.code == 409, response
    problem = response.json()
    assert problem["code"] == "user_exists"
    assert problem["errors"] == [
        {"pointer": "#/email", "detail": "is the email of another user of your workspace"}
    ]
    assert (await api.get(USERS)).json() == before


async def test_a_deleted_users_email_and_another_workspaces_are_free(admin, api, ws_a, ws_b):
    again = await create(admin, email=ws_a.deleted_user["email"].upper())
    assert again["id"] != ws_a.deleted_user["id"]
    assert (await create(admin, email=ws_b.users[0]["email"]))["email"] == ws_b.users[0]["email"]


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"firstName": "A", "lastName": "B"}, "#/email"),
        ({**NEW, "email": "not an email"}, "#/email"),
        ({**NEW, "email": "two@@example.com"}, "#/email"),
        ({**NEW, "email": "nodot@localhost"}, "#/email"),
        ({**NEW, "firstName": "   "}, "#/firstName"),
        ({**NEW, "lastName": ""}, "#/lastName"),
        ({**NEW, "lastName": 5}, "#/lastName"),
        ({**NEW, "workspaceId": str(uuid.uuid4())}, "#/workspaceId"),
        ({**NEW, "role": "admin"}, "#/role"),
    ],
)
async def test_bad_bodies_are_400_and_write_nothing(admin, api, body, pointer):
    before = (await api.get(USERS)).json()
    response = await admin.post(USERS, body)
    assert response.code == 400, response
    assert response.json()["errors"][0]["pointer"] == pointer
    assert (await api.get(USERS)).json() == before


async def test_patch_changes_what_it_is_given_and_a_no_op_records_nothing(admin, api):
    user = await create(admin)
    path = f"{USERS}/{user['id']}"
    response = await admin.patch(path, {"lastName": " Rivera-Stone ", "email": "JR@alpha.example"})
    assert response.code == 200, response
    changed = response.json()["user"]
    assert changed == {
        **user,
        "lastName": "Rivera-Stone",
        "email": "JR@alpha.example",
        "updatedAt": changed["updatedAt"],
    }
    assert changed["updatedAt"] > user["updatedAt"]
    assert (await api.get(path)).json() == {"user": changed}
    # The same values again (an email differing in case only is another value): no change.
    same = await admin.patch(path, {"lastName": "Rivera-Stone", "firstName": "Jamie"})
    assert same.code == 200 and same.json() == {"user": changed}
    events = await user_events(api, 2)
    assert [e["type"] for e in events] == ["user.created", "user.updated"]
    assert events[1]["data"] == changed
    # Its own email in another case is its own: no conflict.
    recased = await admin.patch(path, {"email": "jr@ALPHA.example"})
    assert recased.code == 200 and recased.json()["user"]["email"] == "jr@ALPHA.example"
    assert [e["type"] for e in await user_events(api, 3)][2] == "user.updated"


@pytest.mark.parametrize(
    ("body", "status", "pointer"),
    [
        ({}, 400, "#"),
        ({"nickname": "JR"}, 400, "#/nickname"),
        ({"email": None}, 400, "#/email"),
        ({"email": "nope"}, 400, "#/email"),
        ({"firstName": " "}, 400, "#/firstName"),
        ({"email": "USER1@alpha.example"}, 409, "#/email"),
    ],
)
async def test_bad_patches_are_refused_and_write_nothing(admin, api, ws_a, body, status, pointer):
    path = f"{USERS}/{ws_a.users[0]['id']}"
    before = (await api.get(path)).json()
    response = await admin.patch(path, body)
    assert response.code == status, response
    assert response.json()["errors"][0]["pointer"] == pointer
    if status == 409:
        assert response.json()["code"] == "user_exists"
    assert (await api.get(path)).json() == before


async def test_delete_is_the_command_lines_deletion(admin, api, dialer, store, ws_a):
    user = await create(admin)
    listing = (await api.post("/v1/lists", {"name": "Owned", "ownerUserId": user["id"]})).json()
    owned = listing["list"]
    call = await add_call(store, type("W", (), {"id": ws_a.id, "users": [user]})(), None)
    response = await delete(admin, user["id"])
    assert response.code == 204 and response.body == b""
    # Hidden from GET /users, shown with deletedAt at GET /users/{id}.
    assert user["id"] not in {u["id"] for u in (await api.get(USERS)).json()["users"]}
    shown = (await api.get(f"{USERS}/{user['id']}")).json()["user"]
    assert shown["deletedAt"] is not None and shown["updatedAt"] == shown["deletedAt"]
    assert shown == {**user, "deletedAt": shown["deletedAt"], "updatedAt": shown["updatedAt"]}
    # Refused as a new owner; what refers to it keeps it.
    refused = await api.post("/v1/lists", {"name": "Late", "ownerUserId": user["id"]})
    assert refused.code == 422 and refused.json()["code"] == "invalid_reference"
    assert (await api.get(f"/v1/lists/{owned['id']}")).json()["list"]["ownerUserId"] == user["id"]
    assert (await api.get(f"/v1/calls/{call}")).json()["call"]["userId"] == user["id"]
    # Deleted again: 204, and one user.deleted. A deleted user cannot be changed.
    assert (await delete(admin, user["id"])).code == 204
    assert (await admin.patch(f"{USERS}/{user['id']}", {"lastName": "Z"})).code == 404
    assert (await api.get(f"{USERS}/{user['id']}")).json()["user"] == shown
    events = await user_events(api, 2)
    assert [e["type"] for e in events] == ["user.created", "user.deleted"]
    assert events[1]["data"] == {"id": user["id"], "deletedAt": shown["deletedAt"]}


async def test_a_user_the_command_line_deleted_is_204_and_unknown_ids_are_404(admin, ws_a):
    assert (await delete(admin, ws_a.deleted_user["id"])).code == 204
    for unknown in (str(uuid.uuid4()), "not-a-uuid"):
        for response in (
            await delete(admin, unknown),
            await admin.get(f"{USERS}/{unknown}"),
            await admin.patch(f"{USERS}/{unknown}", {"lastName": "Z"}),
        ):
            assert response.code == 404 and response.json()["code"] == "not_found", response


async def test_another_workspaces_user_is_like_an_unknown_one(admin, admin_b, api_b, ws_b):
    theirs = ws_b.users[0]["id"]
    before = (await api_b.get(f"{USERS}/{theirs}")).json()
    unknown = str(uuid.uuid4())
    for method, body in (("GET", None), ("PATCH", {"lastName": "Mine"}), ("DELETE", None)):
        kwargs = {} if body is None else {"json_body": body}
        answers = [
            await admin.fetch(f"{USERS}/{some}", method, **kwargs) for some in (theirs, unknown)
        ]
        assert [a.code for a in answers] == [404, 404]
        assert answers[0].json()["detail"] == answers[1].json()["detail"]
        assert theirs not in answers[0].body.decode()
    assert (await api_b.get(f"{USERS}/{theirs}")).json() == before
    assert theirs in {u["id"] for u in (await api_b.get(USERS)).json()["users"]}


@pytest.mark.parametrize(
    "scopes", [{"read"}, {"read", "write"}, {"ingest"}, {"read", "write", "ingest"}]
)
async def test_only_an_admin_key_creates_changes_and_deletes(origin, auth, api, ws_a, scopes):
    _, key = await auth.create(ws_a.id, "not admin", frozenset(scopes))
    client = Client(origin, key)
    target = f"{USERS}/{ws_a.users[0]['id']}"
    before = (await api.get(USERS)).json()
    for method, path, body in (
        ("POST", USERS, NEW),
        ("PATCH", target, {"lastName": "Z"}),
        ("DELETE", target, None),
    ):
        kwargs = {} if body is None else {"json_body": body}
        response = await client.fetch(path, method, **kwargs)
        assert response.code == 403, response
        assert response.json()["code"] == "insufficient_scope"
        assert 'scope="admin"' in response.headers["WWW-Authenticate"]
    assert (await api.get(USERS)).json() == before
    if "read" in scopes:
        assert (await client.get(target)).code == 200


async def test_an_idempotency_key_creates_the_user_once(admin, api):
    headers = {"Idempotency-Key": "new-rep-1"}
    first = await admin.post(USERS, NEW, headers=headers)
    again = await admin.post(USERS, NEW, headers=headers)
    assert first.code == again.code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.body == first.body and again.headers["Location"] == first.headers["Location"]
    emails = [u["email"] for u in (await api.get(USERS)).json()["users"]]
    assert emails.count(NEW["email"]) == 1
    # Another body with the same key is refused; a conflict is answered the same on replay.
    other = await admin.post(USERS, {**NEW, "lastName": "Else"}, headers=headers)
    assert other.code == 422 and other.json()["code"] == "idempotency_key_reused"
    conflict = [await admin.post(USERS, NEW, headers={"Idempotency-Key": "dup"}) for _ in "12"]
    assert [c.code for c in conflict] == [409, 409]
    assert [e["type"] for e in await user_events(api, 1)] == ["user.created"]


async def test_the_events_are_delivered_by_a_webhook(admin, api, io_loop, store, config):
    receiver = Receiver().start()
    running = None
    try:
        endpoint = await api.post(
            "/v1/webhook-endpoints",
            {"url": receiver.url(), "eventTypes": ["user.created", "user.updated", "user.deleted"]},
        )
        assert endpoint.code == 201, endpoint
        secret = endpoint.json()["webhookEndpoint"]["secret"]
        running = dispatcher(store, config).start()
        user = await create(admin)
        assert (await admin.patch(f"{USERS}/{user['id']}", {"firstName": "Jay"})).code == 200
        assert (await delete(admin, user["id"])).code == 204
        await wait_for(lambda: len(receiver.requests) >= 3, what="three deliveries")
        feed = {e["id"]: e for e in await user_events(api, 3)}
        delivered = []
        for request in receiver.requests:
            headers = {
                "webhook-id": request.webhook_id,
                "webhook-timestamp": request.timestamp,
                "webhook-signature": request.signature,
            }
            payload = Webhook(secret).verify(request.body, headers)
            assert json.loads(request.body) == feed[request.webhook_id] == payload
            delivered.append(payload["type"])
        assert sorted(delivered) == ["user.created", "user.deleted", "user.updated"]
    finally:
        if running is not None:
            await running.stop(5)
        await receiver.stop()


async def test_the_command_lines_user_commands_record_the_events(config, store, auth, api, ws_a):
    def args(*words: str, **options) -> argparse.Namespace:
        return argparse.Namespace(command="users", action=words[0], json=True, **options)

    created = args(
        "create", workspace=ws_a.id, email="cli@alpha.example", first_name="Cli", last_name="Rep"
    )
    assert await run_admin(config, created, services=(store, auth)) == 0
    user = next(
        u for u in (await api.get(USERS)).json()["users"] if u["email"] == "cli@alpha.example"
    )
    # The same email again, in another case: refused as the API refuses it.
    again = args(
        "create", workspace=ws_a.id, email="CLI@alpha.example", first_name="C", last_name="R"
    )
    assert await run_admin(config, again, services=(store, auth)) == 1
    assert await run_admin(config, args("delete", user_id=user["id"]), services=(store, auth)) == 0
    events = await user_events(api, 2)
    assert [e["type"] for e in events] == ["user.created", "user.deleted"]
    assert events[0]["data"]["id"] == events[1]["data"]["id"] == user["id"]
    deleted = (await api.get(f"{USERS}/{user['id']}")).json()["user"]["deletedAt"]
    assert events[1]["data"]["deletedAt"] == deleted
    assert dt.datetime.fromisoformat(deleted.replace("Z", "+00:00")) > dt.datetime(
        2020, 1, 1, tzinfo=dt.UTC
    )
