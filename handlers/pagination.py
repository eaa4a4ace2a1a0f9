"""Rendering a store Page: the envelope of CONVENTIONS.md and an RFC 8288 Link header."""

from __future__ import annotations

import math
from urllib.parse import urlencode

from store.paging import Page


def link_header(path: str, query: dict, page: Page) -> str:
    """Relative first/prev/next/last links that keep every other query parameter."""

    def url(number: int) -> str:
        params = {**query, "page": number, "pageSize": page.page_size}
        return f"{path}?{urlencode(params)}"

    last = max(1, math.ceil(page.total / page.page_size))
    links = [(1, "first")]
    if page.page > 1:
        links.append((min(page.page - 1, last), "prev"))
    if page.has_more:
        links.append((page.page + 1, "next"))
    links.append((last, "last"))
    return ", ".join(f'<{url(n)}>; rel="{rel}"' for n, rel in links)


def send_page(handler, key: str, page: Page) -> None:
    handler.set_header("Link", link_header(handler.request.path, handler.query, page))
    handler.send_json({key: page.items, "total": page.total, "page": page.page,
                       "pageSize": page.page_size, "hasMore": page.has_more})


def page_args(query: dict) -> tuple[int, int]:
    return query.get("page", 1), query.get("pageSize", 50)
