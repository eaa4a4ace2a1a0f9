"""JSON encoders measured on the API's real pages: which one `handlers/jsonio.py` should
use. Seeds the embedded store as the bench server does, takes a /users page, a /calls
page of 100 and a batch of 500 prospect activities as the store returns them, and times each
candidate encoder on each page (best of several repeats, in alternating order). Every
candidate must produce exactly the bytes of the current encoder, or it is reported as WRONG.

    python -m bench.jsonenc [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import time
from contextlib import aclosing

from bench import seeding
from bench.server import bench_config
from store.paging import Window


def strftime_stamp(value: dt.datetime) -> str:
    """The standard library encoder with strftime per timestamp (what jsonio.py replaced)."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def iso_stamp(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat(timespec="milliseconds") + "Z"


def _default(stamp):
    def default(value):
        if isinstance(value, dt.datetime):
            return stamp(value)
        if isinstance(value, dt.date):
            return value.isoformat()
        raise TypeError(type(value).__name__)

    return default


def candidates() -> dict:
    strftime_default, iso_default = _default(strftime_stamp), _default(iso_stamp)
    found = {
        "json + strftime (before)": lambda v: json.dumps(
            v, default=strftime_default, ensure_ascii=False, separators=(",", ":")
        ),
        "json + isoformat": lambda v: json.dumps(
            v, default=iso_default, ensure_ascii=False, separators=(",", ":")
        ),
    }
    try:
        import orjson
    except ImportError:
        return found
    option = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS
    found["orjson + isoformat"] = lambda v: orjson.dumps(
        v, default=iso_default, option=option
    ).decode()
    found["orjson, its own datetimes (not our format)"] = lambda v: orjson.dumps(
        v, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z
    ).decode()
    from handlers import jsonio

    found["handlers.jsonio.dumps (now)"] = jsonio.dumps
    return found


async def pages() -> dict:
    from server.services import open_services

    class Args:
        rate_limit, provider_url, provider_account, provider_token = 10**9, "", "", ""

    store, auth = await open_services(bench_config(Args))
    info = await seeding.seed(store, auth, users=25, calls=300, activities=600)
    wid = info["workspaceId"]
    result = {"users (25)": {"users": await store.users.list_active(wid)}}
    page = await store.calls.page(wid, Window(100))
    result["calls page (100)"] = {
        "calls": page.items,
        "total": page.total,
        "page": 1,
        "pageSize": 100,
        "hasMore": page.has_more,
    }
    prospect_id = info["activitiesPath"].rsplit("=", 1)[1]
    async with aclosing(store.activities.timeline(wid, prospect_id, 500)) as batches:
        async for batch in batches:
            result["activities batch (500)"] = batch
            break
    return result


def measure(encode, value, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(20):
            encode(value)
        best = min(best, (time.perf_counter() - started) / 20)
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.jsonenc")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    real = asyncio.run(pages())
    encoders = candidates()
    names = list(encoders)
    print("| page | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for title, value in real.items():
        expected = encoders[names[0]](value)
        times = {name: float("inf") for name in names}
        for round_index in range(3):
            for name in names if round_index % 2 == 0 else names[::-1]:
                times[name] = min(times[name], measure(encoders[name], value, args.repeat))
        cells = []
        for name in names:
            same = encoders[name](value) == expected
            cells.append(
                f"{times[name] * 1e6:,.0f} us (x{times[names[0]] / times[name]:.1f})"
                + ("" if same else " WRONG")
            )
        print(f"| {title}, {len(expected) // 1024} KiB | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
