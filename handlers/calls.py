"""Calls: GET /v1/calls (paginated, filtered), the dialer's POST /v1/calls and
POST /v1/calls/batch, and GET/PATCH /v1/calls/{id}.

A dialer records a call once it has ended (POST, scope `ingest`), idempotent on its provider
SID and on an Idempotency-Key, and changes it later (PATCH: notes, disposition, a meeting, the
recording the provider finishes after the call). The rules of a body live in handlers/ingest.py,
shared with the import command; the write itself is one store call (store/ingest.py).
"""

from __future__ import annotations

from handlers.base import APIHandler, invalid, not_found, path_uuid
from handlers.idempotency import IdempotentHandler, Reply, idempotent
from handlers.ingest import call_changes, call_input, refused
from handlers.pagination import serve_page
from handlers.params import instant, problem, uuid_param
from store.ingest import CREATED, NewCall, Recorded, Refused
from store.paging import Page, Window

STORE_ARGS = {
    "userId": "user_id",
    "prospectId": "prospect_id",
    "listId": "list_id",
    "direction": "direction",
    "disposition": "disposition",
    "createdFrom": "created_from",
    "createdTo": "created_to",
    "updatedSince": "updated_since",
}


def call_filters(query: dict) -> dict:
    """The filters of GET /calls (and its export) by parameter name, None when absent."""
    return {
        "userId": uuid_param(query, "userId"),
        "prospectId": uuid_param(query, "prospectId"),
        "listId": uuid_param(query, "listId"),
        "direction": query.get("direction"),
        "disposition": query.get("disposition"),
        "createdFrom": instant(query, "createdFrom"),
        "createdTo": instant(query, "createdTo"),
        "updatedSince": instant(query, "updatedSince"),
    }


def store_args(filters: dict) -> dict:
    """The store's arguments for the filters (a cursor's, or the request's); 400 when
    createdTo is before createdFrom."""
    start, end = filters.get("createdFrom"), filters.get("createdTo")
    if start and end and end < start:
        raise problem("createdTo", "must not be before createdFrom")
    return {STORE_ARGS[name]: value for name, value in filters.items()}


def call_value(recorded: Recorded) -> dict:
    """The response value of one recorded call: the call, and what its contact became."""
    value: dict = {"call": recorded.call}
    if recorded.match is not None:
        value["prospectMatch"] = recorded.match
    return value


class Recording(IdempotentHandler):
    """A POST that records calls: the bodies' rules, then one store write."""

    def checked(self, bodies: list[dict], batch: bool) -> list[NewCall]:
        normalize, now = self.store.prospects.normalize_phone, self.now()
        calls, problems = [], []
        for index, body in enumerate(bodies):
            call, found = call_input(body, normalize, now, f"/calls/{index}" if batch else "")
            problems += found
            if call is not None:
                calls.append(call)
        if problems:
            raise invalid(problems)
        return calls

    async def record(self, calls: list[NewCall]) -> None:
        try:
            recorded = await self.store.calls.record(self.workspace_id, calls, once=self.once)
        except Refused as exc:
            raise refused(exc.refusal) from None
        if (metrics := self.settings.get("metrics")) is not None:
            metrics.imported("calls", (one.outcome for one in recorded))
        self.answer(recorded)


class CallsHandler(Recording):
    scopes = {"GET": "read", "HEAD": "read", "POST": "ingest"}
    query_schemas = {"GET": "/schemas/queries/calls.json"}
    body_schemas = {"POST": "/schemas/requests/call-create.json"}

    async def get(self) -> None:
        calls = self.store.calls

        async def fetch(window: Window, filters: dict) -> Page:
            return await calls.page(self.workspace_id, window, encoded=True, **store_args(filters))

        await serve_page(self, "calls", call_filters(self.query), fetch)

    @idempotent
    async def post(self) -> None:
        await self.record(self.checked([self.body], batch=False))

    def reply(self, recorded: list[Recorded]) -> Reply:
        one = recorded[0]
        assert one.call is not None
        if one.outcome == CREATED:
            return Reply(201, call_value(one), f"/v1/calls/{one.call['id']}")
        return Reply(200, call_value(one))


class CallsBatchHandler(Recording):
    scopes = {"POST": "ingest"}
    body_schemas = {"POST": "/schemas/requests/calls-batch.json"}

    @idempotent
    async def post(self) -> None:
        await self.record(self.checked(self.body["calls"], batch=True))

    def reply(self, recorded: list[Recorded]) -> Reply:
        results = []
        for index, one in enumerate(recorded):
            assert one.call is not None
            result = {"index": index, "callId": one.call["id"], "outcome": one.outcome}
            if one.match is not None:
                result["prospectMatch"] = one.match
            results.append(result)
        return Reply(200, {"results": results})


class CallHandler(APIHandler):
    scopes = {"GET": "read", "HEAD": "read", "PATCH": "ingest"}
    body_schemas = {"PATCH": "/schemas/requests/call-update.json"}

    async def get(self, call_id: str) -> None:
        found = await self.store.calls.get(self.workspace_id, path_uuid(call_id, "call"))
        if found is None:
            raise not_found("call")
        self.send_json({"call": found})

    async def patch(self, call_id: str) -> None:
        call_id = path_uuid(call_id, "call")
        changes, problems = call_changes(self.body)
        if problems:
            raise invalid(problems)
        changed = await self.store.calls.change(self.workspace_id, call_id, changes)
        if changed is None:
            raise not_found("call")
        self.send_json({"call": changed})


default_handlers = [
    (r"/v1/calls", CallsHandler),
    (r"/v1/calls/batch", CallsBatchHandler),
    (r"/v1/calls/([^/]+)", CallHandler),
]
