"""`workspace-api demo`: the API on the embedded store, seeded with deterministic demo data.

Writes the keys file {"baseUrl", "workspaces": [{"id", "name", "apiKey"}]} and prints a banner.
The data (server/demo_data.py) scales with --calls, --prospects and --timeline; seeding that
takes more than a second shows a progress bar on stderr. The same --seed (and scale) always
gives the same data. With --live-calls-per-minute N, a LiveWriter keeps adding calls that have
just ended to every workspace while the demo runs (and now and then changes a call's notes).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import os
import random
import secrets
import shlex
import sys
import threading
import time
from pathlib import Path

from tornado.netutil import bind_sockets

from server.app import freeze_heap, http_server, make_app, open_services
from server.config import Config, ConfigError, env_name
from server.demo_data import (
    LIVE_NOTES,
    LIVE_NOTES_SHARE,
    LONG_TIMELINE_CONTACT,
    MISSING_RECORDING_REF,
    Scale,
    build_calls,
    build_prospects,
    build_timelines,
    call_timeline,
    demo_uuid,
    live_call,
    long_timeline,
    meeting_activity,
)
from server.expiry import ExpirySweeper
from server.logs import secrets_of, setup_logging
from store.clock import utcnow
from store.identity import normalize_phone
from store.paging import Window
from telephony.simulated_provider import ProviderLibrary, start_provider

__all__ = [
    "LONG_TIMELINE_CONTACT",
    "MISSING_RECORDING_REF",
    "LiveWriter",
    "Scale",
    "anchor",
    "run_demo",
    "seed",
]

log = logging.getLogger("workspace_api")

FIRST = [
    "Ava",
    "Liam",
    "Mia",
    "Noah",
    "Zoe",
    "Ethan",
    "Lena",
    "Omar",
    "Iris",
    "Hugo",
    "Nora",
    "Raj",
    "Sofia",
    "Tom",
    "Yara",
    "Felix",
    "Greta",
    "Ivan",
    "Julia",
    "Kenji",
]
LAST = [
    "Nguyen",
    "Schmidt",
    "Garcia",
    "Okafor",
    "Rossi",
    "Kowalski",
    "Haddad",
    "Silva",
    "Andersen",
    "Tanaka",
    "Dubois",
    "Murphy",
    "Novak",
    "Costa",
    "Ahmed",
    "Larsen",
]
WORKSPACES = [
    {
        "name": "Acme Outbound",
        "users": 5,
        "lists": ["Q4 Enterprise", "SMB Re-engage", "Webinar Leads"],
        "share": 1.0,
    },
    {"name": "Globex Sales", "users": 3, "lists": ["Inbound Trials"], "share": 0.1},
]
WRITE_BATCH = 5000
# From this many calls on, the seeding builds the indexes of calls and activities at the end.
BULK_LOAD_CALLS = 100_000
ANCHOR_ENV = "WSAPI_DEMO_ANCHOR"


def anchor(environ: dict | None = None) -> dt.datetime:
    """The instant the demo data is anchored at (naive UTC): midnight UTC of the day in
    WSAPI_DEMO_ANCHOR (YYYY-MM-DD) when set, otherwise of today. The calls cover the 90 days
    before it; tests move it to prove that nothing depends on today's date."""
    environ = os.environ if environ is None else environ
    value = environ.get(ANCHOR_ENV, "").strip()
    if not value:
        return dt.datetime.now(dt.UTC).replace(
            tzinfo=None, hour=0, minute=0, second=0, microsecond=0
        )
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"{ANCHOR_ENV} must be a date, YYYY-MM-DD: {value!r}") from None
    return dt.datetime(day.year, day.month, day.day)


class Progress:
    """A progress bar on `stream` that appears only once the work has taken over `delay`
    seconds: redrawn in place (at most 10 times a second) on a terminal, a line per tenth
    otherwise."""

    def __init__(
        self, total: int, stream=None, delay: float = 1.0, clock=time.monotonic, width: int = 30
    ):
        self.total, self.done, self.width = max(total, 1), 0, width
        self.stream = stream if stream is not None else sys.stderr
        self.delay, self.clock = delay, clock
        self.started = clock()
        self.drawn_at: float | None = None
        self.shown_tenth = -1
        self.tty = getattr(self.stream, "isatty", lambda: False)()

    def advance(self, count: int, label: str = "") -> None:
        self.done = min(self.total, self.done + count)
        now = self.clock()
        if now - self.started < self.delay:
            return
        if self.tty:
            if self.drawn_at is None or now - self.drawn_at >= 0.1 or self.done == self.total:
                self.stream.write("\r" + self.line(label))
                self.drawn_at = now
        elif self.done * 10 // self.total > self.shown_tenth:
            self.shown_tenth = self.done * 10 // self.total
            self.stream.write(self.line(label) + "\n")
        self.stream.flush()

    def line(self, label: str) -> str:
        filled = self.done * self.width // self.total
        percent = self.done * 100 // self.total
        return (
            f"Seeding demo data [{'#' * filled}{'.' * (self.width - filled)}] "
            f"{percent:3d}% {label:<12}"
        )

    def close(self) -> None:
        if self.tty and self.drawn_at is not None:
            self.stream.write("\r" + self.line("done") + "\n")
            self.stream.flush()


def _scaled(scale: Scale, share: float) -> Scale:
    if share == 1.0:
        return scale
    return Scale(
        calls=int(scale.calls * share), prospects=max(20, int(scale.prospects * share)), timeline=0
    )


def estimate(scale: Scale) -> int:
    """Documents to write, for the progress bar: calls count twice (each writes its timeline
    entry), plus roughly two activities per prospect and one per call, plus the long
    timeline."""
    total = 0
    for spec in WORKSPACES:
        part = _scaled(scale, spec["share"])
        total += 3 * part.prospects + 3 * part.calls + part.timeline
    return total


async def _write(progress: Progress, label: str, insert, workspace_id: str, docs: list) -> None:
    for start in range(0, len(docs), WRITE_BATCH):
        batch = docs[start : start + WRITE_BATCH]
        await insert(workspace_id, batch)
        progress.advance(len(batch) * (2 if label == "calls" else 1), label)


async def _write_calls(
    progress: Progress, store, workspace_id: str, calls: list[dict], activities: list[dict]
) -> None:
    """Write calls and the meetings and status changes they caused."""
    await _write(progress, "calls", store.calls.insert_documents, workspace_id, calls)
    await _write(
        progress, "activities", store.activities.insert_documents, workspace_id, activities
    )


async def seed(
    store,
    auth,
    seed: int = 42,
    now: dt.datetime | None = None,
    scale: Scale | None = None,
    progress: Progress | None = None,
) -> list[dict]:
    """Create the demo workspaces; returns [{"id", "name", "apiKey"}]. Same seed, same data.

    The first workspace gets `scale`, the second about a tenth of it. In the first, the
    prospect LONG_TIMELINE_CONTACT has `scale.timeline` extra activities, and the workspace's
    third-newest call with a recording carries MISSING_RECORDING_REF.
    """
    scale = scale or Scale()
    # A large load builds the indexes of calls and activities once at the end (store.bulk_load).
    async with store.bulk_load() if scale.calls >= BULK_LOAD_CALLS else contextlib.nullcontext():
        return await _seed(store, auth, seed, now, scale, progress)


async def _seed(
    store, auth, seed: int, now: dt.datetime | None, scale: Scale, progress: Progress | None
) -> list[dict]:
    rng = random.Random(seed)
    # Anchored at today's UTC midnight (or WSAPI_DEMO_ANCHOR's): the last 90 days stay recent,
    # and two runs on the same day with the same seed give the same data.
    now = now or anchor()
    progress = progress or Progress(estimate(scale), delay=float("inf"))
    result = []
    for index, spec in enumerate(WORKSPACES):
        part = _scaled(scale, spec["share"])
        workspace = await store.workspaces.create(
            spec["name"], demo_uuid(rng), now - dt.timedelta(days=400 - index)
        )
        wid = workspace["id"]
        users = []
        for i in range(spec["users"] + 1):
            first, last = FIRST[(i * 7 + index) % len(FIRST)], LAST[i % len(LAST)]
            users.append(
                await store.users.create(
                    wid,
                    f"{first}.{last}@{spec['name'].split()[0].lower()}.example".lower(),
                    first,
                    last,
                    now - dt.timedelta(days=300 - i),
                    demo_uuid(rng),
                )
            )
        await store.users.delete(wid, users[-1]["id"])  # one deleted user per workspace
        active, deleted = users[:-1], users[-1]
        lists = []
        for number, name in enumerate(spec["lists"]):
            created = now - dt.timedelta(days=60 - 15 * number, hours=rng.randint(0, 23))
            lists.append(
                await store.lists.create(
                    wid,
                    name,
                    active[number % len(active)]["id"],
                    created_at=created,
                    list_id=demo_uuid(rng),
                )
            )
        prospects = build_prospects(rng, wid, part.prospects, lists, now, part.timeline > 0)
        await _write(progress, "prospects", store.prospects.insert_documents, wid, prospects)
        for listing in lists:
            await store.lists.set_count(
                wid, listing["id"], await store.prospects.count_in_list(wid, listing["id"])
            )
        activities = build_timelines(rng, wid, active, prospects, lists, now)
        if part.timeline:
            activities += long_timeline(rng, wid, prospects[0], active, part.timeline, now)
        await _write(progress, "activities", store.activities.insert_documents, wid, activities)
        del activities
        # Calls are made and written a chunk at a time (bounded memory at any scale), one chunk
        # behind, so that the newest chunk is still at hand to mark the missing recording.
        status: dict[str, str] = {}
        pending: list[dict] = []
        writing = None
        chunks = build_calls(rng, wid, active, deleted, prospects, part.calls, now)
        # The next chunk is made on a thread while the store writes the previous one.
        while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
            if writing:
                await writing
            writing = asyncio.ensure_future(
                _write_calls(
                    progress, store, wid, pending, call_timeline(rng, wid, pending, status)
                )
            )
            pending = chunk
        if writing:
            await writing
        if index == 0:
            recorded = [call for call in pending if call["hasRecording"]]
            if recorded:
                # The third-newest: the console pre-fills the newest call, which should play.
                recorded[-min(3, len(recorded))]["recordingRef"] = MISSING_RECORDING_REF
        await _write_calls(progress, store, wid, pending, call_timeline(rng, wid, pending, status))
        _, key = await auth.create(wid, "demo key")
        result.append({"id": wid, "name": spec["name"], "apiKey": key})
    progress.advance(progress.total, "done")
    progress.close()
    return result


class LiveWriter:
    """Live demo writes: `per_minute` new calls a minute to each workspace, each with its
    `call` activity (the store writes it) and, when it booked a meeting, its `meeting_booked`
    activity; after about one call in ten (LIVE_NOTES_SHARE), a recent call's notes change
    (which moves its updatedAt). Calls are written in batches when the rate is above what one
    write per tick can keep up with; the rate is kept on average, without drift."""

    TICK = 0.05  # shortest pause between writes, in seconds
    SAMPLE = 2000  # prospects (newest first) a workspace's live calls are made to
    RECENT = 500  # newest calls whose notes may change
    REFRESH = 60  # seconds between re-reads of the workspaces' users and prospects

    def __init__(
        self,
        store,
        workspace_ids: list[str],
        per_minute: int,
        rng: random.Random | None = None,
        clock=time.monotonic,
        region: str = "US",
    ):
        self.store, self.workspace_ids, self.per_minute = store, workspace_ids, per_minute
        self.region = region  # of phone numbers uploaded without +country
        self.rng = rng or random.Random()  # not the seed's stream: a kept file gets new ids
        self.clock = clock
        self.people: dict[str, tuple[list[dict], list[dict]]] = {}
        self.recent: dict[str, list[str]] = {}
        self.written = 0  # calls per workspace so far

    async def prepare(self) -> None:
        """Read each workspace's active users, a sample of its prospects with a phone number
        and its newest calls; a workspace without users or such prospects gets no live calls."""
        for wid in self.workspace_ids:
            users = await self.store.users.list_active(wid)
            page = await self.store.prospects.page(wid, Window(self.SAMPLE, page=None))
            prospects = [
                {**p, "phoneNumber": phone}
                for p in page.items
                if (phone := normalize_phone(p["phoneNumber"], self.region))
            ]
            if users and prospects:
                self.people[wid] = users, prospects
            else:
                self.people.pop(wid, None)
            calls = await self.store.calls.page(wid, Window(self.RECENT, page=None))
            self.recent[wid] = [call["id"] for call in calls.items]

    async def write(self, count: int) -> None:
        """Write `count` new calls to every workspace (and their side effects)."""
        rng = self.rng
        for wid, (users, prospects) in self.people.items():
            calls = [live_call(rng, wid, users, prospects, utcnow()) for _ in range(count)]
            await self.store.calls.insert_documents(wid, calls)
            meetings = [meeting_activity(rng, wid, call) for call in calls if call["meetingBooked"]]
            if meetings:
                await self.store.activities.insert_documents(wid, meetings)
            recent = self.recent[wid]
            recent.extend(call["_id"] for call in calls)
            del recent[: -self.RECENT]
            for _ in range(count):
                if rng.random() < LIVE_NOTES_SHARE and recent:
                    await self.store.calls.update_notes(
                        wid, rng.choice(recent), rng.choice(LIVE_NOTES)
                    )

    async def run(self) -> None:
        """Write until cancelled. A failed write is logged and the writer goes on."""
        try:
            await self.prepare()
        except Exception:  # the demo itself goes on
            log.exception("live demo writes: reading the workspaces failed; none are written")
            return
        if not self.people or self.per_minute <= 0:
            return
        log.info(
            "live demo writes: %d new calls a minute in each of %d workspaces",
            self.per_minute,
            len(self.people),
        )
        interval = 60 / self.per_minute
        started = refreshed = self.clock()
        while True:
            if self.clock() - refreshed >= self.REFRESH:  # users and prospects added meanwhile
                refreshed = self.clock()
                try:
                    await self.prepare()
                except Exception:
                    log.exception("live demo writes: reading the workspaces failed")
            due = int((self.clock() - started) / interval) + 1 - self.written
            if due > 0:
                due = min(due, 1000)  # far behind (a stalled disk): catch up in steps
                try:
                    await self.write(due)
                except Exception:  # a live write must never end the demo
                    log.exception("live demo write failed")
                    await asyncio.sleep(1)
                self.written += due
            pause = started + self.written * interval - self.clock()
            await asyncio.sleep(max(pause, self.TICK))


async def stop(task: asyncio.Task | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


# The demo's per-workspace limit unless --rate-limit or WSAPI_RATE_LIMIT_PER_MINUTE says
# otherwise: high enough for exploring and for test suites run against the demo.
DEMO_RATE_LIMIT = 60_000


def run_demo(config: Config, args) -> int:
    rate_limit = args.rate_limit or (
        config.rate_limit_per_minute
        if env_name("rate_limit_per_minute") in os.environ
        else DEMO_RATE_LIMIT
    )
    store = (
        {"mongodb_uri": "", "sqlite_path": args.data} if args.data else {"mongodb_uri": "memory"}
    )
    settle = getattr(args, "sync_settle_seconds", None)
    config = config.replace(
        **store,
        host=args.host,
        port=args.port,
        rate_limit_per_minute=rate_limit,
        sync_settle_seconds=config.sync_settle_seconds if settle is None else settle,
    )
    setup_logging(config.log_level)
    anchor()  # a malformed WSAPI_DEMO_ANCHOR is a configuration error before anything starts
    try:
        asyncio.run(_demo(config, args))
    except KeyboardInterrupt:  # Ctrl-C is how a demo ends: no traceback
        kept = f"its data is kept in {args.data}" if args.data else "its data is gone"
        print(f"\nDemo stopped; {kept}.", file=sys.stderr)
    return 0


async def _demo(config: Config, args) -> None:
    store, auth = await open_services(config)
    existing = await store.workspaces.list()
    if existing:  # a kept data file: nothing is seeded again; every workspace gets a new key
        log.info(
            "using the data in %s (%d workspaces); issuing fresh demo keys",
            args.data,
            len(existing),
        )
        workspaces = []
        for workspace in existing:
            _, key = await auth.create(workspace["id"], "demo key")
            workspaces.append({"id": workspace["id"], "name": workspace["name"], "apiKey": key})
    else:
        scale = Scale(calls=args.calls, prospects=args.prospects, timeline=args.timeline)
        progress = Progress(estimate(scale))
        workspaces = await seed(store, auth, args.seed, scale=scale, progress=progress)
    config = await start_simulated_provider(config)
    setup_logging(config.log_level, secrets_of(config))  # now also scrubs the provider's
    sockets = bind_sockets(config.port, config.host)
    port = sockets[0].getsockname()[1]
    http_server(make_app(config, store, auth), config).add_sockets(sockets)
    sweeper = ExpirySweeper(store, config.expiry_sweep_seconds).start()
    freeze_heap()
    host = f"[{config.host}]" if ":" in config.host else config.host
    # Listening on every address: name the loopback one, a URL that works from this machine.
    origin = reachable(f"http://{host}:{port}")
    write_private(
        Path(args.keys_file),
        json.dumps({"baseUrl": f"{origin}/v1", "workspaces": workspaces}, indent=2),
    )
    live = getattr(args, "live_calls_per_minute", 0)
    writer = None
    if live:
        writer = asyncio.ensure_future(
            LiveWriter(
                store, [w["id"] for w in workspaces], live, region=config.default_region
            ).run()
        )
    print(banner(origin, workspaces, args.keys_file, args.data, live), flush=True)
    try:
        await admin_console(config, store, auth)
        await asyncio.Event().wait()
    finally:  # the demo stops (Ctrl-C): so do its live writes and the expiry sweep
        await stop(writer)
        await sweeper.stop()


def write_private(path: Path, text: str) -> None:
    """Write the keys file atomically (a reader never sees it half written), owner-only."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as output:
        output.write(text + "\n")
    os.replace(temporary, path)


def reads_commands(stdin) -> bool:
    """Whether to read admin commands: from a pipe or file, or from a terminal the demo has in
    the foreground (a background job reading its terminal would be stopped by the shell)."""
    if stdin is None or stdin.closed:
        return False
    try:
        if not stdin.isatty():
            return True
        return os.tcgetpgrp(stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


async def admin_console(config: Config, store, auth) -> None:
    """Run admin commands typed on the demo's standard input against its embedded store (the
    only place they can reach it), e.g. `keys revoke KEY_ID`. Returns at end of input."""
    from server.admin import ADMIN_COMMANDS, admin_parser, run_admin

    loop, lines = asyncio.get_running_loop(), asyncio.Queue()

    def read() -> None:  # a daemon thread: a blocked read never holds up exit
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, None)

    if not reads_commands(sys.stdin):
        return
    threading.Thread(target=read, name="demo-admin", daemon=True).start()
    while (line := await lines.get()) is not None:
        try:
            words = shlex.split(line)
            if not words:
                continue
            if words[0] not in ADMIN_COMMANDS:
                raise ValueError("only admin commands (workspaces, users, keys) run here")
            args = admin_parser().parse_args(words)
        except SystemExit:  # argparse has printed the usage
            continue
        except ValueError as exc:
            print(f"workspace-api: {exc}", file=sys.stderr, flush=True)
            continue
        try:
            await run_admin(config, args, services=(store, auth))
        except Exception:  # a failed command must not end the demo
            log.exception("admin command failed: %s", words[:2])
        sys.stdout.flush()


async def start_simulated_provider(config: Config) -> Config:
    """Run the simulated telephony provider on loopback with throwaway credentials; the demo's
    recordings come from it (and MISSING_RECORDING_REF is missing there)."""
    account_id = "AC" + secrets.token_hex(16)
    auth_token = secrets.token_hex(16)
    provider = await start_provider(
        "127.0.0.1",
        0,
        account_id=account_id,
        auth_token=auth_token,
        library=ProviderLibrary(missing=[MISSING_RECORDING_REF]),
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
    origin: str, workspaces: list[dict], keys_file: str, data: str | None = None, live: int = 0
) -> str:
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
        f"  API key  : {key}  ({workspaces[0]['name']})",
        f"  All keys : {keys_file}",
        *([f"  Live     : {live} new calls a minute in each workspace"] if live else []),
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
