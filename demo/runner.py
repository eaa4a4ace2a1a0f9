"""The `workspace-api demo` process: the API on the embedded store, seeded with the demo data
(or serving a kept data file), with the simulated telephony provider beside it.

It writes the keys file {"baseUrl", "workspaces": [{"id", "name", "apiKey", "readOnlyApiKey",
"ingestApiKey", "adminApiKey"}], "provider": {"accountSid", "authToken"}} once it serves, prints
the banner, runs the admin console on its standard input and, with `--live-calls-per-minute N`,
the live writer (a dialer writing through the API with the ingest keys, or with
`--live-via provider` placing its calls through the simulated provider, whose signed callbacks
record them: the demo's `public_base_url` is its own base URL); Ctrl-C stops it all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import secrets
import sys
from pathlib import Path

from tornado.netutil import bind_sockets

from demo.console import admin_console
from demo.data import LONG_TIMELINE_CONTACT, MISSING_RECORDING_REF, Scale
from demo.live import LiveWriter, live_writer
from demo.provider_dialer import ProviderRecorder
from demo.seeding import Progress, anchor, demo_keys, estimate, seed
from server.app import freeze_heap, http_server, make_app
from server.config import Config, env_name, validate_webhooks
from server.event_sweep import EventSweeper
from server.expiry import ExpirySweeper
from server.logs import secrets_of, setup_logging
from server.recording_retention import RecordingRetention
from server.services import open_services
from server.webhook_dispatch import dispatcher
from telephony.simulated_calls import CallPlacer
from telephony.simulated_provider import ProviderLibrary, start_provider

log = logging.getLogger("workspace_api")

# The demo's per-workspace limit unless --rate-limit or WSAPI_RATE_LIMIT_PER_MINUTE says
# otherwise: high enough for exploring and for test suites run against the demo.
DEMO_RATE_LIMIT = 60_000
# The demo's webhooks may reach a receiver on this machine (unless the operator set the key).
DEMO_WEBHOOK_NETWORKS = "127.0.0.0/8"
# Real seconds a simulated second of the provider's calls takes (1: real time). For tests.
PACE_ENV = "WSAPI_DEMO_PROVIDER_PACE"


def run_demo(config: Config, args: argparse.Namespace) -> int:
    """Run the demo until Ctrl-C; `args` are the `demo` command's options."""
    rate_limit = args.rate_limit or (
        config.rate_limit_per_minute
        if env_name("rate_limit_per_minute") in os.environ
        else DEMO_RATE_LIMIT
    )
    store = (
        {"mongodb_uri": "", "sqlite_path": args.data} if args.data else {"mongodb_uri": "memory"}
    )
    settle = getattr(args, "sync_settle_seconds", None)
    networks = config.webhook_allowed_networks
    if not networks and env_name("webhook_allowed_networks") not in os.environ:
        networks = DEMO_WEBHOOK_NETWORKS
    config = config.replace(
        webhook_allowed_networks=networks,
        **store,
        host=args.host,
        port=args.port,
        rate_limit_per_minute=rate_limit,
        sync_settle_seconds=config.sync_settle_seconds if settle is None else settle,
    )
    validate_webhooks(config)
    setup_logging(config.log_level)
    anchor()  # a malformed WSAPI_DEMO_ANCHOR is a configuration error before anything starts
    try:
        asyncio.run(_demo(config, args))
    except KeyboardInterrupt:  # Ctrl-C is how a demo ends: no traceback
        kept = f"its data is kept in {args.data}" if args.data else "its data is gone"
        print(f"\nDemo stopped; {kept}.", file=sys.stderr)
    return 0


async def _demo(config: Config, args: argparse.Namespace) -> None:
    store, auth = await open_services(config)
    existing = await store.workspaces.list()
    if existing:  # a kept data file: nothing is seeded again; every workspace gets new keys
        log.info(
            "using the data in %s (%d workspaces); issuing fresh demo keys",
            args.data,
            len(existing),
        )
        workspaces = [
            {"id": w["id"], "name": w["name"], **await demo_keys(auth, w["id"])} for w in existing
        ]
    else:
        scale = Scale(calls=args.calls, prospects=args.prospects, timeline=args.timeline)
        progress = Progress(estimate(scale))
        workspaces = await seed(store, auth, args.seed, scale=scale, progress=progress)
    config = await start_simulated_provider(config)
    setup_logging(config.log_level, secrets_of(config))  # now also scrubs the provider's
    sockets = bind_sockets(config.port, config.host)
    port = sockets[0].getsockname()[1]
    host = f"[{config.host}]" if ":" in config.host else config.host
    # Listening on every address: name the loopback one, a URL that works from this machine.
    origin = reachable(f"http://{host}:{port}")
    config = config.replace(public_base_url=origin)  # the provider calls back this address
    app = make_app(config, store, auth)
    http_server(app, config).add_sockets(sockets)
    sweeper = ExpirySweeper(
        store, config.expiry_sweep_seconds, retention_days=config.tombstone_retention_days
    ).start()
    events = EventSweeper.from_config(store, config).start()
    retention = RecordingRetention.from_config(store, app.settings["upstream"], config)
    if retention is not None:
        retention.start()
    list_work = app.settings["list_work"].start()  # what a list's delete leaves to do
    erasure_work = app.settings["erasure_work"].start()  # what an erasure request asks
    webhooks = dispatcher(store, config).start()
    freeze_heap()
    provider = {"accountSid": config.provider_account_id, "authToken": config.provider_auth_token}
    write_private(
        Path(args.keys_file),
        json.dumps(
            {"baseUrl": f"{origin}/v1", "workspaces": workspaces, "provider": provider}, indent=2
        ),
    )
    live = getattr(args, "live_calls_per_minute", 0)
    via = getattr(args, "live_via", "http")
    writer = None
    if live and via == "provider":
        recorder = ProviderRecorder(
            config.provider_url,
            config.provider_account_id,
            config.provider_auth_token,
            f"{origin}/v1",
            {w["id"]: w["ingestApiKey"] for w in workspaces},
        )
        ids = [w["id"] for w in workspaces]
        placing = LiveWriter(store, ids, live, recorder, region=config.default_region)
        writer = asyncio.ensure_future(placing.run())
    elif live:
        writer = asyncio.ensure_future(
            live_writer(store, f"{origin}/v1", workspaces, live, region=config.default_region).run()
        )
    print(banner(origin, workspaces, args.keys_file, args.data, live, via), flush=True)
    try:
        await admin_console(config, store, auth)
        await asyncio.Event().wait()
    finally:  # the demo stops (Ctrl-C): so do its live writes and the sweeps
        await stop(writer)
        await webhooks.stop(config.shutdown_timeout_seconds)
        await sweeper.stop()
        if retention is not None:
            await retention.stop()
        await auth.usage.stop()
        await events.stop()
        await list_work.stop()
        await erasure_work.stop()


async def stop(task: asyncio.Future[None] | None) -> None:
    """Cancel a background task and wait until it has ended."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def write_private(path: Path, text: str) -> None:
    """Write the keys file atomically (a reader never sees it half written), owner-only."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as output:
        output.write(text + "\n")
    os.replace(temporary, path)


async def start_simulated_provider(config: Config) -> Config:
    """Run the simulated telephony provider on loopback with throwaway credentials; the demo's
    recordings come from it (and MISSING_RECORDING_REF is missing there)."""
    account_id = "AC" + secrets.token_hex(16)
    auth_token = secrets.token_hex(16)
    try:
        pace = float(os.environ.get(PACE_ENV) or 1)
    except ValueError:
        pace = 1.0
    provider = await start_provider(
        "127.0.0.1",
        0,
        account_id=account_id,
        auth_token=auth_token,
        library=ProviderLibrary(missing=[MISSING_RECORDING_REF]),
        calls=CallPlacer(account_id, auth_token, pace=max(pace, 0.001)),
    )
    return config.replace(
        provider_url=provider.base_url,
        provider_account_id=account_id,
        provider_auth_token=auth_token,
    )


def reachable(origin: str) -> str:
    """The origin with a wildcard listen address replaced by the loopback one."""
    return origin.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:")


def banner(
    origin: str,
    workspaces: list[dict],
    keys_file: str,
    data: str | None = None,
    live: int = 0,
    via: str = "http",
) -> str:
    """What the demo prints once it serves: where, with which key, and what to try first."""
    origin = reachable(origin)
    key = workspaces[0]["apiKey"]
    kept = (
        f"SQLite file {data}: the data is kept"
        if data
        else "throwaway SQLite file: nothing is kept; --data PATH keeps it"
    )
    lines = [
        "",
        f"Workspace Data API demo ({kept})",
        f"  Base URL : {origin}/v1",
        f"  Console  : {origin}/reference",
        f"  API key  : {key}  ({workspaces[0]['name']}; scopes read, write)",
        f"  Read-only: {workspaces[0]['readOnlyApiKey']}  (scope read: GETs only)",
        f"  Ingest   : {workspaces[0]['ingestApiKey']}  (scope ingest: a dialer's writes)",
        f"  All keys : {keys_file}",
        *(
            [
                f"  Live     : {live} new calls a minute in each workspace, "
                + (
                    "placed through the simulated provider (its callbacks record them)"
                    if via == "provider"
                    else "recorded through the API"
                )
            ]
            if live
            else []
        ),
        "",
        f"  curl -H 'Authorization: Bearer {key}' {origin}/v1/users",
        f"  curl -H 'Authorization: Bearer {key}' '{origin}/v1/calls?pageSize=100'",
        f"  curl -H 'Authorization: Bearer {key}' "
        f"'{origin}/v1/prospect-activities?email={LONG_TIMELINE_CONTACT['email']}'",
        "",
        "  Admin commands typed here run against the demo's store, for example:",
        f"    keys list --workspace {workspaces[0]['id']}",
        "    keys revoke KEY_ID",
        "",
    ]
    return "\n".join(lines)
