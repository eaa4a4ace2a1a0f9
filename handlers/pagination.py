"""Paginated GETs (lists, calls, prospects): page numbers or cursors, the envelope of
CONVENTIONS.md and an RFC 8288 Link header.

- Page numbers (`page`, `pageSize`): `{"<records>": [...], "total", "page", "pageSize",
  "hasMore", "nextCursor"}`; Link first/prev/next/last.
- Cursors (`cursor`, from a previous `nextCursor`): `{"<records>": [...], "pageSize",
  "hasMore", "nextCursor"}`; Link next. The cursor carries its filters and `sort`: a request
  may repeat them or leave them out, but not change them.
- `sort=updatedAt` (the sync order) shows only records last changed at least
  `sync_settle_seconds` ago, and its `nextCursor` is never null: caught up, it is where the
  next poll resumes.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from handlers.base import APIHandler
from handlers.errors import invalid_cursor
from handlers.params import problem
from store.cursors import InvalidCursor
from store.paging import DEFAULT_SORT, Page, Position, Window

Fetch = Callable[[Window, dict], Awaitable[Page]]
# Checks a request's order and filters once the cursor is decoded (whether it was: `resumed`),
# and gives the filters the page is read and its next cursor made with (handlers/deletions.py).
Prepare = Callable[[str, dict, bool], dict]


def link_header(path: str, query: dict, page: Page) -> str:
    """Relative first/prev/next/last links that keep every other query parameter (each link is
    `urlencode({**query, "page": n, "pageSize": size})`, with the other parameters encoded once)."""
    encoded = {
        name: urlencode({name: value})
        for name, value in query.items()
        if name not in ("page", "pageSize")
    }
    names = list({**query, "page": None, "pageSize": None})

    def url(number: int) -> str:
        own = {"page": f"page={number}", "pageSize": f"pageSize={page.page_size}"}
        return f"{path}?{'&'.join(encoded.get(name) or own[name] for name in names)}"

    total, number = page.total, page.page
    assert total is not None and number is not None  # a page by number, with its count
    last = max(1, math.ceil(total / page.page_size))
    links = [(1, "first")]
    if number > 1:
        links.append((min(number - 1, last), "prev"))
    if page.has_more:
        links.append((number + 1, "next"))
    links.append((last, "last"))
    return ", ".join(f'<{url(n)}>; rel="{rel}"' for n, rel in links)


def decode_cursor(
    handler: APIHandler, resource: str, token: str, sort: str | None, filters: dict
) -> tuple[str, dict, Position | None]:
    """The cursor's order, filters and position, after checking the request agrees with them."""
    if "page" in handler.query:
        raise problem("page", "cannot be combined with cursor (the cursor says where to go on)")
    try:
        made_sort, made_filters, position = handler.settings["cursors"].decode(
            handler.workspace_id, resource, token
        )
    except InvalidCursor as exc:
        raise invalid_cursor(str(exc)) from None
    if sort is not None and sort != made_sort:
        raise problem(
            "sort", f"differs from the cursor's sort ({made_sort}); repeat it or leave it out"
        )
    for name, value in filters.items():
        if value is not None and made_filters.get(name) != value:
            raise problem(
                name, "differs from the value the cursor was made with; repeat it or leave it out"
            )
    return made_sort, made_filters, position


async def serve_page(
    handler: APIHandler,
    resource: str,
    filters: dict,
    fetch: Fetch,
    prepare: Prepare | None = None,
) -> None:
    """Answer a paginated GET of `resource` ("calls", ...): `filters` are the request's filter
    values by parameter name (None when absent), `fetch(window, filters)` reads the store."""
    query = handler.query
    sort, token = query.get("sort"), query.get("cursor")
    position = None
    if token is not None:
        sort, filters, position = decode_cursor(handler, resource, token, sort, filters)
        number = None
    else:
        sort, number = sort or DEFAULT_SORT, query.get("page", 1)
    if prepare is not None:
        filters = prepare(sort, filters, token is not None)
    syncing = sort == "updatedAt"
    settle = handler.settings["config"].sync_settle_seconds
    window = Window(
        query.get("pageSize", 50),
        number,
        sort,
        position,
        handler.now() - dt.timedelta(seconds=settle) if syncing else None,
    )
    page = await fetch(window, filters)
    resume = page.last or (position if number is None else None)
    next_cursor = None
    if page.has_more or syncing:  # the sync order always says where to resume
        next_cursor = handler.settings["cursors"].encode(
            handler.workspace_id, resource, sort, filters, resume
        )
    body: dict[str, object] = {resource: page.items}
    if number is None:
        if next_cursor:
            params = urlencode({"cursor": next_cursor, "pageSize": window.page_size})
            handler.set_header("Link", f'<{handler.request.path}?{params}>; rel="next"')
    else:
        handler.set_header("Link", link_header(handler.request.path, query, page))
        body.update(total=page.total, page=page.page)
    body.update(pageSize=page.page_size, hasMore=page.has_more, nextCursor=next_cursor)
    handler.send_json(body)
