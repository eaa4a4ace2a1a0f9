"""Page-number paging on MongoDB: one page and the total count, fetched concurrently."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from store.paging import MAX_SKIP, Page


async def page_query(col, query: dict, sort: list, page: int, page_size: int,
                     projection: dict, record: Callable[[dict], dict]) -> Page:
    """One page of `query` in `sort` order plus the total count, fetched concurrently.

    `sort` must end in a unique key (_id) so that the order is total and pages never overlap.
    """
    skip = (page - 1) * page_size

    async def items() -> list[dict]:
        if skip >= MAX_SKIP:
            return []
        cursor = col.find(query, projection).sort(sort).skip(skip).limit(page_size)
        return [record(doc) async for doc in cursor]

    found, total = await asyncio.gather(items(), col.count_documents(query))
    return Page(found, total, page, page_size)
