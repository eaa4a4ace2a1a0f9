"""Paging on MongoDB: a page by number with its total count (fetched concurrently), or the
records after a keyset position (store.paging.Window)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pymongo.asynchronous.collection import AsyncCollection

from store.paging import MAX_SKIP, Page, Window


def window_query(query: dict, window: Window) -> tuple[dict, list]:
    """`query` narrowed to the window (settled records, after a position) and its sort, which
    ends in _id so that the order is total and pages never overlap."""
    field, direction = window.field, 1 if window.ascending else -1
    conditions: list[dict] = []
    if window.settled_before is not None:
        conditions.append({field: {"$lte": window.settled_before}})
    if window.after is not None:
        op = "$gt" if window.ascending else "$lt"
        after = window.after
        conditions.append(
            {"$or": [{field: {op: after.value}}, {field: after.value, "_id": {op: after.id}}]}
        )
    if conditions:
        query = {"$and": [query, *conditions]}
    return query, [(field, direction), ("_id", direction)]


async def page_query(
    col: AsyncCollection,
    query: dict,
    window: Window,
    projection: dict,
    record: Callable[[dict], dict],
) -> Page:
    query, sort = window_query(query, window)
    size = window.page_size
    if window.page is None:  # keyset: one more record than asked tells whether more follow
        cursor = col.find(query, projection).sort(sort).limit(size + 1)
        found = [record(doc) async for doc in cursor]
        return Page(found[:size], None, None, size, len(found) > size, window.sort)
    skip = (window.page - 1) * size

    async def items() -> list[dict]:
        if skip >= MAX_SKIP:
            return []
        cursor = col.find(query, projection).sort(sort).skip(skip).limit(size)
        return [record(doc) async for doc in cursor]

    found, total = await asyncio.gather(items(), col.count_documents(query))
    return Page(found, total, window.page, size, window.page * size < total, window.sort)
