"""`workspace-api events tail`: prints a workspace's events as they arrive, one JSON object per
line, for people trying the API. It follows the feed from `--since` (default: now) either in the
configured store (`--workspace ID`), the way GET /v1/events reads it, or through a running API
(`--base-url URL --api-key KEY`), the way any client does. Ctrl-C ends it (exit code 0)."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from server.config import Config, ConfigError
from server.services import open_services
from store.clock import utcnow
from store.events import TYPES
from store.paging import Position

PAGE = 100


def add_events_commands(sub: argparse._SubParsersAction) -> None:
    events = sub.add_parser("events", help="follow a workspace's change events").add_subparsers(
        dest="action", required=True
    )
    tail = events.add_parser(
        "tail",
        help="print a workspace's events as they arrive (JSON lines)",
        description="Print a workspace's change events as they arrive, one JSON object per "
        "line: from the configured store (--workspace) or from a running API (--base-url and "
        "--api-key). Ctrl-C ends it.",
    )
    tail.add_argument("--workspace", metavar="ID", help="read the configured store's feed")
    tail.add_argument(
        "--base-url", metavar="URL", help="read GET /v1/events of a running API (…/v1)"
    )
    tail.add_argument("--api-key", metavar="KEY", help="the API key for --base-url")
    tail.add_argument(
        "--type",
        metavar="TYPES",
        help="only these event types, comma-separated (default: every type)",
    )
    tail.add_argument(
        "--since",
        metavar="INSTANT",
        help="start at this ISO 8601 instant, inclusive (default: now: only new events)",
    )
    tail.add_argument(
        "--poll-seconds",
        type=float,
        default=1.0,
        metavar="N",
        help="how long to wait between polls once caught up",
    )


def _since(text: str | None) -> dt.datetime:
    if text is None:
        return utcnow()
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--since must be an ISO 8601 instant, not {text!r}") from None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _types(text: str | None) -> list[str] | None:
    if text is None:
        return None
    given = text.split(",")
    unknown = [name for name in given if name not in TYPES]
    if unknown:
        raise ConfigError(f"--type: {unknown[0]!r} is not an event type ({', '.join(TYPES)})")
    return given


def run_events(config: Config, args: argparse.Namespace) -> int:
    """Run `events tail` until Ctrl-C (0), or until it cannot go on (1)."""
    if (args.workspace is None) == (args.base_url is None):
        raise ConfigError("events tail needs --workspace ID, or --base-url URL with --api-key")
    if args.base_url is not None and not args.api_key:
        raise ConfigError("--base-url needs --api-key")
    if args.workspace is not None and config.throwaway:
        raise ConfigError(
            "MONGODB_URI=memory is a throwaway store of one process: nothing can be read from "
            "it here; use --base-url and --api-key against the process that serves it"
        )
    since, types = _since(args.since), _types(args.type)
    follow: Callable[[], Awaitable[int]]
    if args.workspace is not None:

        async def follow() -> int:
            return await tail_store(config, args.workspace, since, types, args.poll_seconds)
    else:

        async def follow() -> int:
            return await tail_api(args.base_url, args.api_key, since, types, args.poll_seconds)

    try:
        return asyncio.run(follow())
    except KeyboardInterrupt:  # Ctrl-C is how a tail ends
        return 0


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def tail_store(
    config: Config,
    workspace_id: str,
    since: dt.datetime,
    types: list[str] | None,
    poll: float,
) -> int:
    """Follow the feed in the store, as GET /v1/events does (from `since`)."""
    store, _ = await open_services(config)
    try:
        if await store.workspaces.get(workspace_id) is None:
            print(f"workspace-api: no workspace {workspace_id}", file=sys.stderr)
            return 1
        after = Position(since, "")
        retention = dt.timedelta(days=config.event_retention_days)
        while True:
            now = store.clock.now()
            if after.value < now - retention:  # as GET /v1/events: events_expired
                print("workspace-api: --since is older than the events are kept", file=sys.stderr)
                return 1
            settled = now - dt.timedelta(seconds=config.sync_settle_seconds)
            page = await store.events.page(workspace_id, after, settled, PAGE, types)
            for event in page.events:
                emit(event.text)
            after = page.resume(after)
            if not page.has_more:
                await asyncio.sleep(poll)
    finally:
        await store.close()


async def tail_api(
    base_url: str, api_key: str, since: dt.datetime, types: list[str] | None, poll: float
) -> int:
    """Follow GET /v1/events of a running API by its cursors, as any client does."""
    client = AsyncHTTPClient(force_instance=True)
    params = {"pageSize": PAGE, "since": since.isoformat(timespec="milliseconds") + "Z"}
    if types:
        params["type"] = ",".join(types)
    url = f"{base_url.rstrip('/')}/events?{urlencode(params)}"
    headers = {"Authorization": f"Bearer {api_key}"}
    try:
        while True:
            try:
                response = await client.fetch(
                    HTTPRequest(url, headers=headers, request_timeout=30), raise_error=False
                )
            except (OSError, HTTPClientError) as exc:
                print(f"workspace-api: {exc}; trying again", file=sys.stderr)
                await asyncio.sleep(max(poll, 1))
                continue
            if response.code in (429, 503) or response.code == 599:
                await asyncio.sleep(float(response.headers.get("Retry-After", max(poll, 1))))
                continue
            if response.code != 200:
                detail = response.body.decode("utf-8", "replace")[:500]
                print(f"workspace-api: {response.code} {detail}", file=sys.stderr)
                return 1
            body = json.loads(response.body)
            for event in body["events"]:
                emit(json.dumps(event, separators=(",", ":"), ensure_ascii=False))
            url = f"{base_url.rstrip('/')}/events?" + urlencode(
                {"cursor": body["nextCursor"], "pageSize": PAGE}
            )
            if not body["hasMore"]:
                await asyncio.sleep(poll)
    finally:
        client.close()
