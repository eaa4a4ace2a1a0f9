"""GET /v1/exports/{calls,prospects,lists,activities}: a resource's every record in one response.

The backfill of an integration in one request: NDJSON (`application/x-ndjson`), one record per
line exactly as the resource's API responses show it, in the sync order (`updatedAt`, then id;
activities in the order they were stored), covering every record settled when the request
started: last changed at or before the horizon, the start minus `sync_settle_seconds`, the
settle rule of `sort=updatedAt` (handlers/pagination.py). The same filters as the resource's
list endpoint; no paging parameters.

- `Link: <...>; rel="next"`, sent with the response head: the sync-order request that
  continues right after the export (`/v1/calls?sort=updatedAt&cursor=...`, a cursor positioned
  at the horizon after every id: store.exports.continuation). A record changed while the export
  runs leaves it for that continuation, so following it misses nothing and repeats nothing.
  Activities have no list endpoint, and so no such link.
- `Link: <...>; rel="events"` (every export): the events feed from the export's horizon
  (`/v1/events?cursor=...`, the position (horizon, before every id)). Every change after the
  horizon has its event there (an event is recorded after its change lands), so a client that
  backfills with the export and then follows the feed misses nothing; an event of a change the
  export already holds may come again (upsert by id).
- `Accept-Encoding: gzip` gets the stream gzip-encoded (compressed on a worker thread).
- One request for the rate limit; one stream against `max_streams_per_workspace`, cut like any
  stalled stream (handlers.streams). The store reads bounded keyset batches, taking turns at the
  database with the other streams, the next batch read while the previous one is written, so
  memory stays flat whatever the export's size.
- A failure before the first batch is an ordinary problem response (503). After it the status
  has been sent, so a failure closes the connection without the end of the chunked body (and of
  the gzip stream): the body ends cleanly only when the export is complete, with every line
  whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import re
import zlib
from collections.abc import AsyncGenerator
from urllib.parse import urlencode

from tornado.iostream import StreamClosedError

from handlers import calls, deletions, lists, prospects
from handlers.jsonio import dumps_bytes
from handlers.params import instant, problem
from handlers.streams import StreamingHandler, stream_slots
from store import events
from store.activities import to_ms
from store.exports import BATCH_SIZE, Batch, Lines, continuation
from store.paging import Position

log = logging.getLogger("workspace_api")

NDJSON = "application/x-ndjson"
PAGING = ("page", "pageSize", "cursor", "sort")
GZIP_LEVEL = 1  # 5x smaller NDJSON at 240 MB/s a core; level 6: 6x at 90 MB/s
CODING = re.compile(r"^\s*([A-Za-z0-9*-]+)\s*(?:;\s*q\s*=\s*([0-9.]+))?\s*$")


def accepts_gzip(header: str) -> bool:
    """Whether an Accept-Encoding header accepts gzip (by name, not with q=0)."""
    for part in header.split(","):
        match = CODING.match(part)
        if match and match.group(1).lower() in ("gzip", "x-gzip"):
            try:
                return float(match.group(2) or 1) > 0
            except ValueError:
                return False
    return False


class ExportHandler(StreamingHandler):
    """One export: `filters` reads the request's filters, `batches` opens the store's export,
    `resource` names the list endpoint whose sync order continues it (None: no next link)."""

    resource: str | None = None
    batch_size = BATCH_SIZE
    # The continuation walks with includeDeleted=true: a record deleted during the backfill
    # arrives as its tombstone (handlers/deletions.py).
    tombstones = False

    def validated_query(self) -> dict:
        for name in PAGING:
            if name in self.request.query_arguments:
                raise problem(
                    name,
                    "is not a parameter of an export, which sends every record in one response; "
                    'after it, follow its Link rel="next" (the sync order, by cursor)',
                )
        return super().validated_query()

    def filters(self) -> dict:
        """The request's filters by parameter name (None when absent)."""
        raise NotImplementedError

    def batches(self, horizon: dt.datetime, filters: dict) -> AsyncGenerator[Batch, None]:
        """The store's export of the records settled at `horizon`, with `filters`."""
        raise NotImplementedError

    def links(self, horizon: dt.datetime, filters: dict) -> list[str]:
        """The response's links: the sync-order request that continues after the export, and
        the events feed from the export's horizon."""
        cursors = self.settings["cursors"]
        links = []
        if self.resource is not None:
            walk = {"sort": "updatedAt"}
            if self.tombstones:
                filters = {**filters, deletions.INCLUDE: True, deletions.ISSUED: self.now()}
                walk[deletions.INCLUDE] = "true"
            cursor = cursors.encode(
                self.workspace_id, self.resource, "updatedAt", filters, continuation(horizon)
            )
            query = urlencode({**walk, "cursor": cursor})
            links.append(f'</v1/{self.resource}?{query}>; rel="next"')
        feed = cursors.encode(
            self.workspace_id,
            events.RESOURCE,
            events.SORT,
            {"type": None, "since": None},
            Position(to_ms(horizon), ""),
        )
        links.append(f'</v1/events?{urlencode({"cursor": feed})}>; rel="events"')
        return links

    async def get(self) -> None:
        filters = self.filters()
        settle = dt.timedelta(seconds=self.settings["config"].sync_settle_seconds)
        horizon = self.now() - settle
        self.set_header("Content-Type", NDJSON)
        self.set_header("Vary", "Accept-Encoding")
        if links := self.links(horizon, filters):
            self.set_header("Link", ", ".join(links))
        gzip = accepts_gzip(self.request.headers.get("Accept-Encoding", ""))
        if gzip:
            self.set_header("Content-Encoding", "gzip")
        if self.request.method == "HEAD":
            self.finish()  # the length is unknown until streamed: no body, no database read
            return
        self.open_stream()
        await self.stream(self.batches(horizon, filters), gzip)

    async def stream(self, source: AsyncGenerator[Batch, None], gzip: bool) -> None:
        compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31) if gzip else None
        sent = False
        async with contextlib.aclosing(self.read_ahead(source)) as batches:
            try:
                async for batch in batches:
                    data = lines(batch)
                    if compressor is not None:
                        data = await asyncio.to_thread(compress, compressor, data)
                    self.write(data)
                    sent = True
                    await self.flush()
                    if self.connection.stream.closed():
                        return
            except StreamClosedError:
                return  # the client went away (or was cut); aclosing ends the reading
            except Exception:
                if not sent:
                    raise  # nothing sent yet: an ordinary problem response
                log.exception(
                    "export failed after the status was sent (request %s)", self.request_id
                )
                self.connection.stream.close()  # never the end of the body: the client knows
                return
        if compressor is not None:
            self.write(compressor.flush())
        try:
            await self.flush()  # still under the stall watchdog, like every batch before it
        except StreamClosedError:
            return
        self.finish()

    async def read_ahead(self, source: AsyncGenerator[Batch, None]) -> AsyncGenerator[Batch, None]:
        """The source's batches, the next one read (taking its turn at the database) while the
        caller writes the current one."""
        turns = stream_slots(self.settings).database_turns

        async def read() -> Batch | None:
            async with turns:
                return await anext(source, None)

        pending = asyncio.ensure_future(read())
        try:
            while (batch := await pending) is not None:
                pending = asyncio.ensure_future(read())
                yield batch
        finally:
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(BaseException):
                    await pending
            await source.aclose()


def lines(batch: Batch) -> bytes:
    """A batch as NDJSON bytes."""
    if isinstance(batch, Lines):
        return batch.text
    return b"".join(dumps_bytes(record) + b"\n" for record in batch)


def compress(compressor: zlib._Compress, data: bytes) -> bytes:
    """`data` compressed and flushed to a byte boundary, so the client can decode every line
    sent so far."""
    return compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)


class CallsExportHandler(ExportHandler):
    query_schemas = {"GET": "/schemas/queries/export-calls.json"}
    resource = "calls"

    def filters(self) -> dict:
        return calls.call_filters(self.query)

    def batches(self, horizon: dt.datetime, filters: dict) -> AsyncGenerator[Batch, None]:
        return self.store.calls.export(
            self.workspace_id, horizon, batch_size=self.batch_size, **calls.store_args(filters)
        )


class ProspectsExportHandler(ExportHandler):
    query_schemas = {"GET": "/schemas/queries/export-prospects.json"}
    resource = "prospects"
    tombstones = True

    def filters(self) -> dict:
        return prospects.prospect_filters(self.query, self.store.prospects.normalize_phone)

    def batches(self, horizon: dt.datetime, filters: dict) -> AsyncGenerator[Batch, None]:
        return self.store.prospects.export(
            self.workspace_id,
            horizon,
            batch_size=self.batch_size,
            **prospects.store_args(filters),
        )


class ListsExportHandler(ExportHandler):
    query_schemas = {"GET": "/schemas/queries/export-lists.json"}
    resource = "lists"
    tombstones = True

    def filters(self) -> dict:
        return lists.list_filters(self.query)

    def batches(self, horizon: dt.datetime, filters: dict) -> AsyncGenerator[Batch, None]:
        return self.store.lists.export(
            self.workspace_id,
            horizon,
            batch_size=self.batch_size,
            updated_since=filters["updatedSince"],
        )


class ActivitiesExportHandler(ExportHandler):
    """Every activity with its prospectId, in the order they were stored; `updatedSince`
    filters on that moment (`storedAt`). No list endpoint continues it: no next link."""

    query_schemas = {"GET": "/schemas/queries/export-activities.json"}

    def filters(self) -> dict:
        return {"updatedSince": instant(self.query, "updatedSince")}

    def batches(self, horizon: dt.datetime, filters: dict) -> AsyncGenerator[Batch, None]:
        return self.store.activities.export(
            self.workspace_id,
            horizon,
            batch_size=self.batch_size,
            stored_since=filters["updatedSince"],
        )


default_handlers = [
    (r"/v1/exports/calls", CallsExportHandler),
    (r"/v1/exports/prospects", ProspectsExportHandler),
    (r"/v1/exports/lists", ListsExportHandler),
    (r"/v1/exports/activities", ActivitiesExportHandler),
]
