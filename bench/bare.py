"""The "bare" comparison handlers: plain `tornado.web.RequestHandler`s that run the same store
query and the same JSON encoding as the API handler they stand beside, and nothing else (no
authentication, rate limiting, request id, validation or access log). They run in the API's
process on a second port, on the same store, so the ratio API/bare is the cost of the API's
hot path. Also the bench-only endpoints: the database round-trip counters, a call insert
through the store's write path, and the switches of the store's event writing (P8) and of the
writer's secure_delete (D1)."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import tornado.web

from handlers import jsonio
from store.paging import Window

JSON = "application/json; charset=utf-8"


class BareHandler(tornado.web.RequestHandler):
    def initialize(self, store, info: dict) -> None:
        self.store = store
        self.info = info
        self.workspace_id = info["workspaceId"]

    def compute_etag(self) -> None:
        return None  # the API sends no ETag either

    def send(self, value) -> None:
        self.set_header("Content-Type", JSON)
        self.finish(jsonio.dumps(value))


class BareUsers(BareHandler):
    async def get(self) -> None:
        self.send({"users": await self.store.users.list_active(self.workspace_id)})


class BareCalls(BareHandler):
    """GET /calls?pageSize=100 without the API: same store page, same envelope."""

    async def get(self) -> None:
        page = await self.store.calls.page(self.workspace_id, Window(100))
        self.send(
            {
                "calls": page.items,
                "total": page.total,
                "page": page.page,
                "pageSize": page.page_size,
                "hasMore": page.has_more,
            }
        )


class BareRecordingRef(BareHandler):
    """The store lookup that starts GET /calls/{id}/recording, alone: P1 subtracts its time to
    first byte from the API's to show what the handler and the relay add to a seek."""

    async def get(self, call_id: str) -> None:
        self.send({"ref": await self.store.calls.recording_ref(self.workspace_id, call_id)})


class BareCallInsert(BareHandler):
    """POST /bench/call: one finished call recorded through the store's write path
    (`store.calls.create`: the call, its timeline entry, its counts and its events), the write
    P8b measures with event writing on and off."""

    async def post(self) -> None:
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        record = await self.store.calls.create(
            self.workspace_id,
            user_id=self.info["ownerUserId"],
            prospect_id=self.info["calleeId"],
            direction="outbound",
            disposition="connected",
            from_number="+14155550100",
            to_number="+12125550199",
            started_at=now - dt.timedelta(minutes=3),
            answered_at=now - dt.timedelta(minutes=3) + dt.timedelta(seconds=8),
            ended_at=now,
            notes="Interested; send the deck",
        )
        self.set_status(201)
        self.send({"call": record})


class EventWriting(tornado.web.RequestHandler):
    """GET /bench/events?writing=on|off: switch the store's event writing (the bench-only
    mechanism behind P8's comparison; nothing in the service's configuration can do it)."""

    def initialize(self, store) -> None:
        self.store = store

    def get(self) -> None:
        writing = self.get_query_argument("writing")
        if writing not in ("on", "off"):
            raise tornado.web.HTTPError(400)
        self.store.event_writer.enabled = writing == "on"
        self.set_header("Content-Type", JSON)
        self.finish(jsonio.dumps({"writing": self.store.event_writer.enabled}))


class SecureDelete(tornado.web.RequestHandler):
    """GET /bench/secure-delete?on=on|off: switch SQLite's secure_delete on the writer's
    connection (the bench-only mechanism behind D1's comparison: the service always has it on,
    store/sqlite/engine.py)."""

    def initialize(self, store) -> None:
        self.store = store

    async def get(self) -> None:
        on = self.get_query_argument("on")
        if on not in ("on", "off") or not hasattr(self.store, "engine"):
            raise tornado.web.HTTPError(400)

        def switch(conn) -> int:
            conn.execute(f"PRAGMA secure_delete={on.upper()}")
            return conn.execute("PRAGMA secure_delete").fetchone()[0]

        value = await self.store.engine.write(switch)
        self.set_header("Content-Type", JSON)
        self.finish(jsonio.dumps({"secureDelete": bool(value)}))


class DbOps(tornado.web.RequestHandler):
    """GET /bench/dbops: database operations counted since start, per collection.operation."""

    def initialize(self, counts: Counter) -> None:
        self.counts = counts

    def get(self) -> None:
        self.set_header("Content-Type", JSON)
        self.finish(jsonio.dumps(dict(self.counts)))


def make_bare_app(store, info: dict, counts: Counter) -> tornado.web.Application:
    shared = {"store": store, "info": info}
    routes = [
        (r"/bare/users", BareUsers, shared),
        (r"/bench/dbops", DbOps, {"counts": counts}),
        (r"/bench/call", BareCallInsert, shared),
        (r"/bench/events", EventWriting, {"store": store}),
        (r"/bench/secure-delete", SecureDelete, {"store": store}),
    ]
    if hasattr(store, "calls"):
        routes.append((r"/bare/calls", BareCalls, shared))
        routes.append((r"/bare/recording-ref/([^/]+)", BareRecordingRef, shared))
    return tornado.web.Application(routes, log_function=lambda handler: None, debug=False)
