"""Tenant isolation, endpoint by endpoint: workspace A's key with workspace B's ids (path, query
or body) behaves exactly like a random id of the same shape, B's data is never changed, and no
response to A contains any of B's data.

Both workspaces are seeded by the demo seeder (users, a deleted user, lists, prospects, calls
with recordings, activities). CASES must name every authenticated route the application serves
(test_every_route_is_covered fails otherwise), so a new endpoint cannot skip this suite.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime as dt
import json
import random
import re
import uuid
from urllib.parse import quote, urlencode

import pytest

from demo.data import Scale
from demo.seeding import anchor, seed
from handlers.base import APIHandler
from server.app import collect_handlers
from server.config import load_config
from server.services import configured_store, open_services
from store.clock import utcnow
from store.paging import Window
from tests.conftest import PREPARED, TIER
from tests.helpers import Client, test_environ
from webhooks.signing import new_secret

TODAY = anchor().date()  # the day the demo seeder anchors its data at
METRICS = f"from={TODAY - dt.timedelta(days=120)}&to={TODAY}"

# A call and a note of workspace A ({a_user}, {a_prospect}: A's own records, not placeholders
# to compare), into which the cases put B's values.
CALL = {
    "userId": "{a_user}",
    "prospectId": "{a_prospect}",
    "direction": "outbound",
    "disposition": "connected",
    "fromNumber": "+12125550142",
    "toNumber": "+14155550111",
    "startedAt": "2026-01-05T10:00:00Z",
    "answeredAt": "2026-01-05T10:00:09Z",
    "endedAt": "2026-01-05T10:03:09Z",
}
NOTE = {
    "prospectId": "{a_prospect}",
    "type": "note",
    "occurredAt": "2026-01-05T10:00:00Z",
    "details": {"text": "hello"},
}
OWN = {"a_list", "a_user", "a_prospect"}  # placeholders for A's own records
# The telephony provider's account, whose callbacks the service accepts.
ACCOUNT = "AC" + "3d" * 16
TOKEN = "8badf00d8badf00d8badf00d8badf00d"
PUBLIC = "https://api.isolation.example"


def dnc_phone(workspace: dict) -> str:
    """The number on each seeded workspace's do-not-call list."""
    return f"+1917555{int(workspace['id'][:4], 16) % 10000:04d}"


def pending_sid(workspace: dict) -> str:
    """The CallSid of the final status kept aside in each seeded workspace."""
    return "CA" + uuid.uuid5(uuid.NAMESPACE_URL, workspace["id"]).hex


# route pattern -> (method, path with {placeholders}, JSON body or None). A placeholder is
# filled once with B's value and once with a fresh value of the same shape; both answers must be
# identical. Cases without placeholders are only scanned for B's data.
CASES: dict[str, list[tuple[str, str, object]]] = {
    r"/v1/do-not-call": [
        ("GET", "/v1/do-not-call", None),
        ("GET", "/v1/do-not-call?phoneNumber={dnc_phone}", None),
        ("POST", "/v1/do-not-call", {"entries": [{"phoneNumber": "{dnc_phone}"}]}),
    ],
    r"/v1/do-not-call/([^/]+)": [("DELETE", "/v1/do-not-call/{dnc_entry}", None)],
    r"/v1/api-key": [("GET", "/v1/api-key", None)],
    r"/v1/users": [
        ("GET", "/v1/users", None),
        # B's user's email is free in A: a new user of A, never a conflict with B's.
        ("POST", "/v1/users", {"email": "{user_email}", "firstName": "New", "lastName": "User"}),
    ],
    r"/v1/users/([^/]+)": [
        ("GET", "/v1/users/{user}", None),
        ("GET", "/v1/users/{deleted_user}", None),
        ("HEAD", "/v1/users/{user}", None),
        ("PATCH", "/v1/users/{user}", {"lastName": "Renamed"}),
        ("PATCH", "/v1/users/{a_user}", {"email": "{user_email}"}),
        ("DELETE", "/v1/users/{user}", None),
        ("DELETE", "/v1/users/{deleted_user}", None),
    ],
    r"/v1/erasures": [
        ("GET", "/v1/erasures", None),
        # B's person's identifiers match nothing of A: a request of A's, never touching B.
        ("POST", "/v1/erasures", {"email": "{email}"}),
        ("POST", "/v1/erasures", {"phoneNumber": "{phone}"}),
        ("POST", "/v1/erasures", {"prospectId": "{prospect}"}),
    ],
    r"/v1/erasures/([^/]+)": [
        ("GET", "/v1/erasures/{erasure}", None),
        ("HEAD", "/v1/erasures/{erasure}", None),
    ],
    r"/v1/lists": [
        ("GET", "/v1/lists?pageSize=100", None),
        ("POST", "/v1/lists", {"name": "mine", "ownerUserId": "{user}"}),
        ("POST", "/v1/lists", {"name": "mine", "ownerUserId": "{deleted_user}"}),
    ],
    r"/v1/lists/([^/]+)": [
        ("GET", "/v1/lists/{list}", None),
        ("HEAD", "/v1/lists/{list}", None),
        ("PATCH", "/v1/lists/{list}", {"name": "Renamed"}),
        ("PATCH", "/v1/lists/{a_list}", {"ownerUserId": "{user}"}),
        ("DELETE", "/v1/lists/{list}", None),
    ],
    r"/v1/lists/([^/]+)/contacts/remove": [
        ("POST", "/v1/lists/{list}/contacts/remove", {"prospectIds": ["{prospect}"]}),
        # B's prospect taken out of A's list: not_member, as a random id is.
        ("POST", "/v1/lists/{a_list}/contacts/remove", {"prospectIds": ["{prospect}"]}),
    ],
    r"/v1/lists/([^/]+)/contacts": [
        ("POST", "/v1/lists/{list}/contacts", {"contacts": [{"email": "new@a.example"}]}),
        # B's prospect's email and phone uploaded into a fresh list of A: a new prospect of A,
        # never B's prospect reused.
        (
            "POST",
            "/v1/lists/{a_list}/contacts",
            {"contacts": [{"email": "{email}", "phoneNumber": "{phone}", "firstName": "Same"}]},
        ),
    ],
    r"/v1/calls": [
        ("POST", "/v1/calls", {**CALL, "userId": "{user}"}),
        ("POST", "/v1/calls", {**CALL, "userId": "{deleted_user}"}),
        ("POST", "/v1/calls", {**CALL, "prospectId": "{prospect}"}),
        ("POST", "/v1/calls", {**CALL, "listId": "{list}"}),
        # B's prospect's email and phone as the call's contact: a new prospect of A.
        (
            "POST",
            "/v1/calls",
            {
                **{k: v for k, v in CALL.items() if k != "prospectId"},
                "prospect": {"email": "{email}", "phoneNumber": "{phone}"},
            },
        ),
        ("GET", "/v1/calls?pageSize=100", None),
        ("GET", "/v1/calls?userId={user}", None),
        ("GET", "/v1/calls?userId={deleted_user}", None),
        ("GET", "/v1/calls?prospectId={prospect}", None),
        ("GET", "/v1/calls?listId={list}", None),
    ],
    r"/v1/calls/batch": [
        ("POST", "/v1/calls/batch", {"calls": [CALL, {**CALL, "prospectId": "{prospect}"}]}),
        ("POST", "/v1/calls/batch", {"calls": [{**CALL, "userId": "{user}"}]}),
    ],
    r"/v1/calls/([^/]+)": [
        ("GET", "/v1/calls/{call}", None),
        ("HEAD", "/v1/calls/{call}", None),
        ("PATCH", "/v1/calls/{call}", {"notes": "mine now"}),
        ("PATCH", "/v1/calls/{call}", {"disposition": "failed", "meetingBooked": True}),
    ],
    r"/v1/calls/([^/]+)/recording": [
        ("GET", "/v1/calls/{call}/recording", None),
        ("HEAD", "/v1/calls/{call}/recording", None),
    ],
    r"/v1/prospects": [
        ("GET", "/v1/prospects?pageSize=100", None),
        ("GET", "/v1/prospects?listId={list}", None),
        ("GET", "/v1/prospects?email={email}", None),
        ("GET", "/v1/prospects?phoneNumber={phone}", None),
    ],
    r"/v1/prospects/([^/]+)": [
        ("GET", "/v1/prospects/{prospect}", None),
        ("HEAD", "/v1/prospects/{prospect}", None),
        ("PATCH", "/v1/prospects/{prospect}", {"jobTitle": "Renamed"}),
        # B's user as the owner of A's prospect: 422 like an unknown user.
        ("PATCH", "/v1/prospects/{a_prospect}", {"ownerUserId": "{user}"}),
        ("DELETE", "/v1/prospects/{prospect}", None),
    ],
    r"/v1/prospect-activities": [
        ("GET", "/v1/prospect-activities?prospectId={prospect}", None),
        ("GET", "/v1/prospect-activities?email={email}", None),
        ("GET", "/v1/prospect-activities?phoneNumber={phone}", None),
        ("POST", "/v1/prospect-activities", {**NOTE, "prospectId": "{prospect}"}),
        ("POST", "/v1/prospect-activities", {**NOTE, "userId": "{user}"}),
        ("POST", "/v1/prospect-activities", {**NOTE, "userId": "{deleted_user}"}),
        (
            "POST",
            "/v1/prospect-activities",
            {
                **NOTE,
                "type": "meeting_booked",
                "details": {"scheduledFor": None},
                "callId": "{call}",
            },
        ),
    ],
    r"/v1/exports/calls": [
        ("GET", "/v1/exports/calls", None),
        ("GET", "/v1/exports/calls?userId={user}", None),
        ("GET", "/v1/exports/calls?userId={deleted_user}", None),
        ("GET", "/v1/exports/calls?prospectId={prospect}", None),
        ("GET", "/v1/exports/calls?listId={list}", None),
    ],
    r"/v1/exports/prospects": [
        ("GET", "/v1/exports/prospects", None),
        ("GET", "/v1/exports/prospects?listId={list}", None),
        ("GET", "/v1/exports/prospects?email={email}", None),
        ("GET", "/v1/exports/prospects?phoneNumber={phone}", None),
    ],
    r"/v1/exports/lists": [("GET", "/v1/exports/lists", None)],
    r"/v1/exports/activities": [("GET", "/v1/exports/activities", None)],
    r"/v1/events": [
        ("GET", "/v1/events?pageSize=100", None),
        ("GET", "/v1/events?cursor={events_cursor}", None),
        ("HEAD", "/v1/events?cursor={events_cursor}", None),
    ],
    r"/v1/webhook-endpoints": [
        ("GET", "/v1/webhook-endpoints", None),
        ("POST", "/v1/webhook-endpoints", {"url": "https://93.184.215.14/mine"}),
    ],
    r"/v1/webhook-endpoints/([^/]+)": [
        ("GET", "/v1/webhook-endpoints/{webhook}", None),
        ("HEAD", "/v1/webhook-endpoints/{webhook}", None),
        ("PATCH", "/v1/webhook-endpoints/{webhook}", {"description": "Taken over"}),
        ("DELETE", "/v1/webhook-endpoints/{webhook}", None),
    ],
    r"/v1/webhook-endpoints/([^/]+)/rotate-secret": [
        ("POST", "/v1/webhook-endpoints/{webhook}/rotate-secret", None),
    ],
    r"/v1/webhook-endpoints/([^/]+)/deliveries": [
        ("GET", "/v1/webhook-endpoints/{webhook}/deliveries", None),
    ],
    r"/v1/webhook-endpoints/([^/]+)/recover": [
        ("POST", "/v1/webhook-endpoints/{webhook}/recover", {"since": "2099-01-01T00:00:00Z"}),
    ],
    r"/v1/provider/pending-calls": [("GET", "/v1/provider/pending-calls", None)],
    r"/v1/provider/pending-calls/([^/]+)/resolve": [
        ("POST", "/v1/provider/pending-calls/{pending_sid}/resolve", {"userId": "{a_user}"}),
        ("POST", "/v1/provider/pending-calls/{pending_sid}/resolve", {"userId": "{user}"}),
    ],
    r"/v1/reporting/dialer-metrics": [
        ("GET", f"/v1/reporting/dialer-metrics?{METRICS}", None),
        ("GET", f"/v1/reporting/dialer-metrics?{METRICS}&userId={{user}}", None),
        ("GET", f"/v1/reporting/dialer-metrics?{METRICS}&userId={{deleted_user}}", None),
    ],
}


def isolation_config(**place):
    """The exports cover every seeded record at once, and events show at once (no settle
    period), so that they show everything there is to leak and each workspace's feed holds its
    own. `place`: where the data lives (by default the store fixtures' own)."""
    return load_config(
        environ=test_environ(
            shared=True,
            WSAPI_SYNC_SETTLE_SECONDS="0",
            WSAPI_PROVIDER_ACCOUNT_ID=ACCOUNT,
            WSAPI_PROVIDER_AUTH_TOKEN=TOKEN,
            WSAPI_PUBLIC_BASE_URL=PUBLIC,
            **place,
        )
    )


@pytest.fixture
def config():
    return isolation_config()


class Demo:
    """The two seeded workspaces and everything the store holds for each."""

    def __init__(self, workspaces, docs):
        self.a, self.b = workspaces
        self.docs = docs  # workspace id -> [documents]

    def of(self, which: str, collection: str) -> list[dict]:
        wid = getattr(self, which)["id"]
        return [d for c, d in self.docs[wid] if c == collection]

    def strings(self, which: str) -> set[str]:
        found: set[str] = set()

        def walk(value):
            if isinstance(value, str):
                found.add(value)
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        for _, doc in self.docs[getattr(self, which)["id"]]:
            walk(doc)
        return found


async def snapshot(store, workspaces) -> dict:
    docs = {w["id"]: [] for w in workspaces}
    for name in await store.collections():
        # feed_horizons (MongoDB): raised by every read of a workspace's own feed (B's reads
        # that make B's cursor), it holds an instant and no data.
        if name in ("rate_limits", "settings", "counters", "feed_horizons"):
            continue
        for doc in await store.documents(name):
            owner = doc.get("workspaceId") or doc["_id"]
            if (
                name == "api_keys"
            ):  # the key's own requests record its last use (B's, for its cursor)
                doc = {k: v for k, v in doc.items() if k != "lastUsedAt"}
            if owner in docs:
                docs[owner].append((name, doc))
    return docs


async def seed_two(store, auth) -> list[dict]:
    """Two workspaces seeded by the demo seeder, then written to as the API would (events in
    both feeds)."""
    workspaces = await seed(store, auth, seed=11, scale=Scale(calls=120, prospects=60, timeline=0))
    for workspace in workspaces:  # writes after the seeding: events in both feeds
        wid = workspace["id"]
        owner = (await store.users.list_active(wid))[0]["id"]
        listing = await store.lists.create(wid, f"Live {workspace['name']}", owner)
        await store.prospects.add_to_list(
            wid, listing, [{"email": f"live@{workspace['name'].lower()}.example"}]
        )
        await store.lists.set_count(wid, listing["id"], 1)
        await store.do_not_call.add(wid, [{"phoneNumber": dnc_phone(workspace)}], "Opt-out")
        call = (await store.calls.page(wid, Window(1, None))).items[0]
        await store.calls.change(wid, call["id"], {"notes": f"Live notes {workspace['name']}"})
        final = {
            "status": "completed",
            "direction": "outbound",
            "from": f"+1646555{int(wid[:4], 16) % 10000:04d}",
            "to": f"+1718555{int(wid[4:8], 16) % 10000:04d}",
            "endedAt": 1_780_000_000_000,
            "duration": 60,
            "answeredBy": None,
            "userId": None,
            "prospectId": None,
            "listId": None,
        }
        now = utcnow()
        await store.provider_calls.keep_pending(
            wid, pending_sid(workspace), final, "missing_user", now, now + dt.timedelta(days=7)
        )
        await store.erasures.create(wid, {}, [], utcnow())
        await store.webhook_endpoints.create(
            wid,
            f"https://93.184.215.14/hooks/{wid}",
            None,
            f"Hook of {workspace['name']}",
            new_secret(),
            utcnow(),
        )
    return workspaces


@pytest.fixture(scope="module")
def seeded_documents() -> dict:
    """On a MongoDB tier: the first write case's seeding, as the workspaces and every document
    it stored, which the other write cases insert again (the same database, byte for byte) instead
    of seeding anew (most of a case's time on the wire tier)."""
    return {}


@pytest.fixture
def demo(io_loop, store, auth, seeded_documents) -> Demo:
    """A fresh seeding of the two workspaces: each write case may change A."""

    async def build():
        if store.embedded or not seeded_documents:
            workspaces = await seed_two(store, auth)
            if not store.embedded:  # the database is emptied after each test
                names = [n for n in await store.collections() if n != PREPARED]
                stored = {name: await store.documents(name) for name in names}
                seeded_documents.update(workspaces=workspaces, stored=stored)
        else:
            workspaces = seeded_documents["workspaces"]
            for name, docs in seeded_documents["stored"].items():
                if docs:
                    await store.db[name].insert_many(copy.deepcopy(docs))
        return Demo(workspaces, await snapshot(store, workspaces))

    return io_loop.run_sync(build)


def b_values(demo: Demo) -> dict[str, str]:
    """One of B's values per placeholder, chosen among those A does not also have."""
    a_strings = demo.strings("a")
    prospects = [
        p
        for p in demo.of("b", "prospects")
        if p.get("email") not in a_strings
        and p.get("phoneE164") not in a_strings
        and p.get("email")
        and p.get("phoneE164")
    ]
    users = demo.of("b", "users")
    return {
        "user": next(u["_id"] for u in users if not u.get("deletedAt")),
        "deleted_user": next(u["_id"] for u in users if u.get("deletedAt")),
        "user_email": next(
            u["email"] for u in users if not u.get("deletedAt") and u["email"] not in a_strings
        ),
        "list": demo.of("b", "lists")[0]["_id"],
        "prospect": prospects[0]["_id"],
        "email": prospects[0]["email"],
        "phone": prospects[0]["phoneE164"],
        "call": next(c["_id"] for c in demo.of("b", "calls") if c.get("recordingRef")),
        "webhook": demo.of("b", "webhook_endpoints")[0]["_id"],
        "pending_sid": pending_sid(demo.b),
        "dnc_phone": dnc_phone(demo.b),
        "dnc_entry": demo.of("b", "do_not_call")[0]["_id"],
        "erasure": demo.of("b", "erasures")[0]["_id"],
    }


def fresh_values(demo: Demo, like: dict[str, str]) -> dict[str, str]:
    """Values of the same shapes that exist in neither workspace."""
    taken = demo.strings("a") | demo.strings("b")
    rng = random.Random(7)
    values = {}
    for name, value in like.items():
        while True:
            if name in ("email", "user_email"):
                local, _, domain = value.partition("@")
                candidate = f"{local[:-2]}{rng.randint(10, 99)}x@{domain}"
            elif name in ("phone", "dnc_phone"):
                candidate = value[:-4] + f"{rng.randint(0, 9999):04d}"
            elif name == "pending_sid":
                candidate = "CA" + rng.randbytes(16).hex()
            elif name == "events_cursor":  # a cursor's shape with a signature of no one's
                payload, _ = value.split(".")
                mac = base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode()
                candidate = f"{payload}.{mac}"
            else:
                candidate = str(uuid.uuid4())
            if candidate not in taken:
                values[name] = candidate
                break
    return values


def fill(template, values: dict[str, str]):
    text = json.dumps(template) if not isinstance(template, str) else template
    for name, value in values.items():
        encoded = value if not isinstance(template, str) else quote(value, safe="@")
        text = text.replace("{" + name + "}", encoded)
    return text if isinstance(template, str) else json.loads(text)


def normalised(response, values: dict[str, str]) -> tuple:
    text = response.body.decode("utf-8", "replace")
    text = re.sub(r'"requestId":"[^"]*"', '"requestId":"-"', text)
    # An upload's results name the prospect it created: a new random id each time.
    text = re.sub(
        r'"prospectId":"[0-9a-f-]{36}","outcome":"created"',
        '"prospectId":"<new>","outcome":"created"',
        text,
    )
    # An export's next link carries a cursor of the moment it started, signed with the filters.
    link = re.sub(r"cursor=[^&>]+", "cursor=<cursor>", response.headers.get("Link", ""))
    for name, value in values.items():
        for form in (value, quote(value, safe="@"), quote(value, safe="")):
            text, link = text.replace(form, f"<{name}>"), link.replace(form, f"<{name}>")
    # What a write creates has a new random id each time (an upload's prospects, a recorded
    # call and its prospect), and the moment it was written.
    text = re.sub(r'"(id|prospectId|callId|Location)":"[0-9a-f-]{36}"', r'"\1":"<new>"', text)
    text = re.sub(r'"(updatedAt|createdAt|requestedAt)":"[^"]*"', r'"\1":"<now>"', text)
    location = re.sub(r"[0-9a-f-]{36}", "<new>", response.headers.get("Location", ""))
    return response.code, response.headers.get("Content-Type"), link, location, text


def identifying(value: str) -> bool:
    """Ids, emails, phone numbers, references: strings that name someone's record (as opposed
    to vocabulary such as "outbound" that every workspace shares)."""
    return len(value) >= 6 and ("@" in value or sum(c.isdigit() for c in value) >= 3)


def placeholders(*templates) -> set[str]:
    return {name for t in templates for name in re.findall(r"\{(\w+)\}", json.dumps(t))}


def case_params(reads: bool) -> list:
    """The cases that only read (GET, HEAD), or the others."""
    return [
        pytest.param(pattern, *case, id=f"{case[0]} {case[1]}")
        for pattern, cases in CASES.items()
        for case in cases
        if (case[0] in READS) == reads
    ]


READS = ("GET", "HEAD")
EVERY = frozenset({"read", "write", "ingest", "admin"})


async def check_case(demo: Demo, key: str, store, origin, method, path, body) -> dict:
    """Asks A's `key` for the case once with B's values and once with fresh values of the same
    shapes: the answers are the same, show none of B's data, and B's data is unchanged; the
    store's documents afterwards (snapshot)."""
    client = Client(origin, key)
    names = placeholders(path, body) - OWN
    values_b = b_values(demo)
    if "events_cursor" in names:  # B's own cursor of its events feed, made for B's key
        b_events = await Client(origin, demo.b["apiKey"]).get("/v1/events")
        values_b["events_cursor"] = b_events.json()["nextCursor"]
    given_b = {k: v for k, v in values_b.items() if k in names}
    given_random = {k: v for k, v in fresh_values(demo, given_b).items() if k in names}
    b_secrets = {s for s in demo.strings("b") - demo.strings("a") if identifying(s)}
    b_secrets |= {demo.b["id"], demo.b["name"], *(x["name"] for x in demo.of("b", "lists"))}

    answers = []
    for values in (given_b, given_random):
        owner = next(u["_id"] for u in demo.of("a", "users") if not u.get("deletedAt"))
        if "a_list" in placeholders(path, body):
            values = {
                **values,
                "a_list": (await store.lists.create(demo.a["id"], "fresh", owner))["id"],
            }
        values = {**values, "a_user": owner, "a_prospect": demo.of("a", "prospects")[0]["_id"]}
        kwargs = {"json_body": fill(body, values)} if body is not None else {}
        response = await client.fetch(fill(path, values), method, **kwargs)
        assert response.code < 500, response
        text = response.body.decode("utf-8", "replace") + json.dumps(dict(response.headers))
        leaked = [s for s in b_secrets if s in text and s not in values.values()]
        assert not leaked, f"{method} {path} showed A some of B's data: {leaked[:3]}"
        answers.append(normalised(response, values))
    if names:
        assert answers[0] == answers[1], f"{method} {path}: B's ids are told apart from random ids"
    after = await snapshot(store, [demo.a, demo.b])
    assert after[demo.b["id"]] == demo.docs[demo.b["id"]], "B's data changed"
    return after


@pytest.mark.parametrize("pattern,method,path,body", case_params(reads=False))
async def test_b_ids_behave_like_random_ids_and_b_data_never_leaks(
    demo, store, auth, origin, pattern, method, path, body
):
    _, key = await auth.create(demo.a["id"], "every scope", EVERY)
    await check_case(demo, key, store, origin, method, path, body)


@pytest.fixture(scope="module")
def shared_place(tmp_path_factory):
    """Where the read cases' seeding lives, for all of them: a file on the embedded tier, a
    database of its own on the others (dropped at the end)."""
    if TIER == "embedded":
        path = tmp_path_factory.mktemp("isolation") / "isolation.sqlite3"
        yield {"MONGODB_URI": "", "WSAPI_SQLITE_PATH": str(path)}
        return
    place = {"WSAPI_DATABASE": "wsapi_isolation_" + uuid.uuid4().hex[:12]}
    yield place

    async def drop() -> None:
        store = configured_store(isolation_config(**place))
        try:
            await store.drop()
        finally:
            await store.close()

    asyncio.run(drop())


@pytest.fixture(scope="module")
def shared_seeding() -> dict:
    """The read cases' Demo and A's key, made by the first of them."""
    return {}


class TestReadsOnOneSeeding:
    """The read cases share one seeding (seeding two workspaces was most of each case's time):
    a read changes neither workspace, which each of them checks."""

    @pytest.fixture
    def config(self, shared_place):
        return isolation_config(**shared_place)

    @pytest.fixture
    def services(self, io_loop, config, clock):
        store, auth = io_loop.run_sync(lambda: open_services(config, clock))
        yield store, auth
        io_loop.run_sync(auth.usage.stop)
        io_loop.run_sync(store.close)

    @pytest.fixture
    def seeded(self, io_loop, store, auth, shared_seeding) -> tuple[Demo, str]:
        async def build() -> None:
            workspaces = await seed_two(store, auth)
            _, key = await auth.create(workspaces[0]["id"], "every scope", EVERY)
            # After the key: A's documents hold it (its last use is left out of snapshots).
            shared_seeding.update(demo=Demo(workspaces, await snapshot(store, workspaces)))
            shared_seeding.update(key=key)

        if not shared_seeding:
            io_loop.run_sync(build)
        return shared_seeding["demo"], shared_seeding["key"]

    @pytest.mark.parametrize("pattern,method,path,body", case_params(reads=True))
    async def test_b_ids_behave_like_random_ids_and_b_data_never_leaks(
        self, seeded, store, origin, pattern, method, path, body
    ):
        demo, key = seeded
        after = await check_case(demo, key, store, origin, method, path, body)
        assert after[demo.a["id"]] == demo.docs[demo.a["id"]], "a read changed A's data"


def test_every_route_is_covered():
    public = set()
    for route in collect_handlers()[:-1]:
        pattern, handler = route[0], route[1]
        if not (issubclass(handler, APIHandler) and handler.auth_required):
            public.add(pattern)
            continue
        assert pattern in CASES, f"{pattern} is missing from tests/test_isolation.py CASES"
        methods = {method for method, _, _ in CASES[pattern]}
        if handler.head is APIHandler.head and "GET" in methods:
            methods.add("HEAD")  # the shared HEAD is the handler's own GET minus the body
        assert set(handler.allowed_methods()) <= methods, f"{pattern}: cover every method"
    assert not public & set(CASES)


async def test_public_routes_show_no_workspace_data(demo, origin):
    """Routes without a key (health, the OpenAPI document, the console) show no one's data,
    even when asked with a key."""
    client = Client(origin, demo.a["apiKey"])
    secrets = {s for w in ("a", "b") for s in demo.strings(w) if identifying(s)}
    for route in collect_handlers()[:-1]:
        pattern, handler = route[0], route[1]
        if issubclass(handler, APIHandler) and handler.auth_required:
            continue
        if "(" in pattern:
            continue  # static files: no data of any workspace by construction
        response = await client.get(pattern)
        text = response.body.decode("utf-8", "replace")
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{pattern} shows workspace data: {leaked[:3]}"


async def test_each_events_feed_holds_its_workspaces_events_only(demo, origin):
    """The events cases above are not vacuous: each feed holds its own workspace's live
    writes, and no record of the other's."""
    for mine, theirs in (("a", "b"), ("b", "a")):
        client = Client(origin, getattr(demo, mine)["apiKey"])
        events = (await client.get("/v1/events?pageSize=100")).json()["events"]
        ids = {event["data"]["id"] for event in events}
        assert {"list.created", "call.updated", "prospect.created"} <= {e["type"] for e in events}
        assert ids <= {doc.get("_id") for _, doc in demo.docs[getattr(demo, mine)["id"]]}
        assert not ids & {doc.get("_id") for _, doc in demo.docs[getattr(demo, theirs)["id"]]}


async def test_one_workspaces_provider_callbacks_never_touch_anothers(demo, store, origin):
    """Callbacks signed for A's URL change A only: B's user, prospect, list and pending CallSid
    in them are unknown to A, and a callback signed for A's URL sent to B's is refused."""
    from twilio.request_validator import RequestValidator

    client = Client(origin, None)
    values = b_values(demo)
    b_sid = pending_sid(demo.b)

    async def callback(workspace_id: str, kind: str, params: dict, query: str = "", to=None):
        path = f"/v1/provider/callbacks/{workspace_id}/{kind}{query}"
        params = {"AccountSid": ACCOUNT, **params}
        signature = RequestValidator(TOKEN).compute_signature(PUBLIC + path, params)
        sent = path if to is None else path.replace(workspace_id, to)
        return await client.fetch(
            sent,
            "POST",
            body=urlencode(params),
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Twilio-Signature": signature,
            },
        )

    final = {
        "CallSid": b_sid,
        "CallStatus": "completed",
        "Direction": "outbound-api",
        "From": "+12125550142",
        "To": values["phone"],
        "CallDuration": "30",
    }
    a_id, b_id = demo.a["id"], demo.b["id"]
    for query in (
        f"?userId={values['user']}",
        f"?userId={demo.of('a', 'users')[0]['_id']}&prospectId={values['prospect']}",
        f"?userId={demo.of('a', 'users')[0]['_id']}&listId={values['list']}",
    ):
        assert (await callback(a_id, "status", final, query)).code == 204
    recording = {
        "CallSid": b_sid,
        "RecordingSid": "RE" + "4a" * 16,
        "RecordingStatus": "completed",
        "RecordingDuration": "25",
    }
    assert (await callback(a_id, "recording", recording)).code == 204
    moved = await callback(a_id, "status", final, f"?userId={values['user']}", to=b_id)
    assert moved.code == 403 and moved.json()["code"] == "invalid_signature"

    after = await snapshot(store, [demo.a, demo.b])
    assert after[b_id] == demo.docs[b_id], "B's data changed"
    a_states = [d for c, d in after[a_id] if c == "provider_calls" and d["callSid"] == b_sid]
    assert len(a_states) == 1 and a_states[0]["pendingReason"] == "unknown_list"
    assert a_states[0]["recordingSid"] == "RE" + "4a" * 16
    b_pending = await store.provider_calls.pending(b_id, utcnow())
    assert [p["callSid"] for p in b_pending] == [b_sid] and not b_pending[0]["hasRecording"]
