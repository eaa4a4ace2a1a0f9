"""GET /v1/prospect-activities: one prospect with its whole activity timeline, streamed; and
POST /v1/prospect-activities: the dialer logs an activity on a prospect's timeline.

The timeline is unbounded, so the body is written as it is read: the prospect, then the
activities in batches of `batch_size` from one database cursor, encoded and flushed to the
client in slices of `slice_size`, each slice flushed before the next is encoded. Memory stays
flat whatever the timeline's length, and a slow client slows the cursor down instead of filling
the server's buffers. Between slices the handler yields to the event loop, and timelines take
turns at the database (handlers.streams), so that many long timelines streaming at once still
leave room for every other request. When the client goes
away, or takes nothing for `stream_stall_seconds` (handlers.streams), the next flush fails and
the cursor is closed.

Errors before the first flush are ordinary problem responses. After it the status (200) has
been sent, so a failure can only cut the body short: the connection is closed without the
final `]}` (and without the terminating chunk), which every JSON parser reports as an error.
"""

import asyncio
import logging
from contextlib import aclosing

from tornado.iostream import StreamClosedError

from handlers import jsonio
from handlers.base import APIError, invalid
from handlers.idempotency import IdempotentHandler, Reply, idempotent
from handlers.ingest import activity_input, refused
from handlers.params import phone, problem, uuid_param
from handlers.streams import StreamingHandler, stream_slots
from store.ingest import Logged, Refused

log = logging.getLogger("workspace_api")

SELECTORS = ("prospectId", "email", "phoneNumber")


class ProspectActivitiesHandler(StreamingHandler, IdempotentHandler):
    scopes = {"GET": "read", "HEAD": "read", "POST": "ingest"}
    query_schemas = {"GET": "/schemas/queries/prospect-activities.json"}
    body_schemas = {"POST": "/schemas/requests/activity-create.json"}
    batch_size = 200  # per database round trip
    slice_size = 50  # activities encoded and flushed at a time, between yields to the loop

    async def get(self) -> None:
        prospect = await self.selected_prospect()
        self.set_header("Content-Type", "application/json; charset=utf-8")
        if self.request.method == "HEAD":
            self.finish()  # the length is unknown until streamed: no body, no cursor
            return
        self.open_stream()
        timeline = self.store.activities.timeline(
            self.workspace_id, prospect["id"], self.batch_size
        )
        self.write('{"prospect":' + jsonio.dumps(prospect) + ',"activities":[')
        flushed = False
        turns = stream_slots(self.settings).database_turns
        async with aclosing(timeline) as batches:
            try:
                separator = ""
                while True:
                    async with turns:  # timelines take turns at the database
                        batch = await anext(batches, None)
                    if batch is None:
                        break
                    for start in range(0, len(batch), self.slice_size):
                        items = batch[start : start + self.slice_size]
                        self.write(separator + ",".join(jsonio.dumps(item) for item in items))
                        separator = ","
                        flushed = True
                        await self.flush()
                        if self.connection.stream.closed():
                            return
                        await asyncio.sleep(0)  # a flush that completes at once does not yield
            except StreamClosedError:
                return  # the client went away; aclosing closes the cursor
            except Exception:
                if not flushed:
                    raise  # nothing sent yet: an ordinary problem response
                log.exception(
                    "timeline stream failed after the status was sent (request %s)", self.request_id
                )
                self.connection.stream.close()
                return
        self.write("]}")
        try:
            await self.flush()  # still under the stall watchdog, like every slice before it
        except StreamClosedError:
            return
        self.finish()

    @idempotent
    async def post(self) -> None:
        activity, problems = activity_input(self.body, self.now())
        if problems:
            raise invalid(problems)
        assert activity is not None
        try:
            logged = await self.store.activities.log(self.workspace_id, [activity], once=self.once)
        except Refused as exc:
            raise refused(exc.refusal) from None
        self.answer(logged)

    def reply(self, logged: list[Logged]) -> Reply:
        activity = logged[0].activity
        assert activity is not None
        location = f"/v1/prospect-activities?prospectId={self.body['prospectId'].lower()}"
        return Reply(201, {"activity": activity}, location)

    async def selected_prospect(self) -> dict:
        given = [name for name in SELECTORS if name in self.query]
        if len(given) != 1:
            detail = (
                "is required (or email, or phoneNumber)"
                if not given
                else f"cannot be combined with {given[0]}: give exactly one of prospectId, "
                "email, phoneNumber"
            )
            raise problem(given[1] if given else "prospectId", detail)
        prospects = self.store.prospects
        found = await prospects.lookup(
            self.workspace_id,
            prospect_id=uuid_param(self.query, "prospectId"),
            email=self.query.get("email"),
            phone=phone(self.query, "phoneNumber", prospects.normalize_phone),
        )
        what = {"prospectId": "id", "email": "email", "phoneNumber": "phone number"}[given[0]]
        if not found:
            raise APIError("not_found", f"there is no prospect with this {what} in your workspace")
        if len(found) > 1:
            raise APIError(
                "invalid_reference",
                f"{given[0]} matches several prospects; select one by prospectId "
                f"(GET /prospects?{given[0]}=... lists them)",
                [
                    {
                        "parameter": given[0],
                        "pointer": f"#/query/{given[0]}",
                        "detail": "matches several prospects",
                    }
                ],
            )
        return found[0]


default_handlers = [(r"/v1/prospect-activities", ProspectActivitiesHandler)]
