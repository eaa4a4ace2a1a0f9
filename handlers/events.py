"""GET /v1/events: the workspace's change events, oldest first, followed by cursor.

A position in the feed is (occurredAt, id). The feed starts at the cursor's position, or at
`since` (inclusive: the position (since, "") stands before every event of that instant), or at
the retention horizon. A page holds the events after that position that no later write can
sort before (no settle period: store.contract.Events.page); its `nextCursor` carries the page's
last position, or, once caught up, the instant up to which the page was final, so that a client
polling at least once per retention period never meets `events_expired` however quiet the
workspace is. The cursor carries `type` and `since`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

from handlers import jsonio
from handlers.base import APIError, APIHandler
from handlers.pagination import decode_cursor
from handlers.params import instant, problem
from store.activities import to_ms
from store.events import RESOURCE, SORT, TYPES
from store.paging import Position, RawJSON

# How far ahead of the server's clock a `since` may be (a client's clock may run a little fast).
SINCE_AHEAD = dt.timedelta(minutes=1)


def parse_types(raw: str | None) -> str | None:
    """The `type` filter in its one spelling (sorted, without repeats), or None for all."""
    if raw is None:
        return None
    given = raw.split(",")
    unknown = [name for name in given if name not in TYPES]
    if unknown:
        raise problem("type", f"{unknown[0]!r} is not an event type; one of {', '.join(TYPES)}")
    return ",".join(sorted(set(given)))


class EventsHandler(APIHandler):
    query_schemas = {"GET": "/schemas/queries/events.json"}

    async def get(self) -> None:
        config = self.settings["config"]
        now = self.now()
        horizon = to_ms(now - dt.timedelta(days=config.event_retention_days))
        filters: dict[str, Any] = {
            "type": parse_types(self.query.get("type")),
            "since": instant(self.query, "since"),
        }
        if filters["since"] is not None and filters["since"] > now + SINCE_AHEAD:
            # The feed would start after events that have not happened yet: nothing, ever.
            raise problem(
                "since",
                "must not be more than a minute ahead of the server's clock (it is "
                f"{jsonio.format_timestamp(now)} there); take the current time from the Date "
                "header",
            )
        token = self.query.get("cursor")
        if token is not None:
            _, filters, after = decode_cursor(self, RESOURCE, token, SORT, filters)
            if after is None:  # every events cursor carries a position
                raise problem("cursor", "is not a cursor of GET /events")
            where = "cursor"
        elif filters.get("since") is not None:
            after, where = Position(filters["since"], ""), "since"
        else:
            after, where = Position(horizon, ""), None
        if after.value < horizon:
            raise APIError(
                "events_expired",
                f"{where} is older than the {config.event_retention_days:g} days events are "
                "kept: events after it may have been removed. Note the current time, resync "
                "your records with sort=updatedAt, then restart with since=<that time>",
                [{"parameter": where, "pointer": f"#/query/{where}", "detail": "has expired"}],
            )
        page_size = self.query.get("pageSize", 100)
        types = filters["type"].split(",") if filters.get("type") else None
        page = await self.store.events.page(
            self.workspace_id,
            after,
            now - dt.timedelta(seconds=config.sync_settle_seconds),
            page_size,
            types,
        )
        next_cursor = self.settings["cursors"].encode(
            self.workspace_id, RESOURCE, SORT, filters, page.resume(after)
        )
        link = urlencode({"cursor": next_cursor, "pageSize": page_size})
        self.set_header("Link", f'<{self.request.path}?{link}>; rel="next"')
        events = ",".join(event.text for event in page.events)
        self.send_json(
            {
                "events": RawJSON(f"[{events}]".encode()),
                "pageSize": page_size,
                "hasMore": page.has_more,
                "nextCursor": next_cursor,
            }
        )


default_handlers = [(r"/v1/events", EventsHandler)]
