"""`workspace-api import calls|prospects|activities|do-not-call --workspace ID FILE`: load
history from NDJSON (one JSON object per line; `-` reads standard input) through the API's own
rules. A do-not-call file may also hold one phone number or email per line.

Each line is the body the API takes for one record: a call as POST /v1/calls takes it, an
activity as POST /v1/prospect-activities, a contact as an item of POST /lists/{id}/contacts
(with `--list ID` every imported prospect joins that list, as an upload adds it; without it
they join none). Lines are checked like request bodies (the JSON Schema, with a hand-written
fast path for calls: schemas/fastcall.py; then handlers/ingest.py), and written through the
store's own writes in batches of BATCH lines, each batch one transaction on SQLite, so a line
is imported whole or not at all, with totals, metrics, timelines and matching as the API keeps
them. A bad line is rejected alone (its line number and reasons in the summary, and in
`--rejects FILE`), the others go on. A line longer than the API's body limit is rejected
without being read into memory: at most the limit plus one byte of a line is ever held.

Importing a file again creates nothing twice: calls are recorded once per providerCallSid, and
calls without one and activities take ids derived from their line's content; contacts are
matched to the prospects they created. While a batch is written, the next is read and checked.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import IO, Any

from handlers import jsonio
from handlers.ingest import activity_input, call_input
from schemas import Schemas
from schemas.fastcall import certainly_valid
from server.config import Config
from server.services import open_services
from store.activities import derived_id
from store.clock import utcnow
from store.contract import Store
from store.ingest import CREATED, EXISTING, Refusal

KINDS = ("calls", "prospects", "activities", "do-not-call")
SCHEMAS = {
    "calls": "/schemas/requests/call-create.json",
    "prospects": "/schemas/requests/contact.json",
    "activities": "/schemas/requests/activity-create.json",
    "do-not-call": "/schemas/requests/do-not-call-add.json",
}
# Lines per write: a batch of calls is written in about a second a million calls deep, well
# within sync_settle_seconds (a write unit much longer than that could land behind a sync
# client's position); fewer calls a batch cost more pages written a call (docs/performance.md).
BATCH = {"calls": 5000, "activities": 2000, "prospects": 100, "do-not-call": 1000}
# What the store's outcomes count as in the summary (a suppressed contact counts as neither).
OUTCOMES = {"created": CREATED, "reused": EXISTING, "added": CREATED, "existing": EXISTING}
SHOWN_REJECTS = 20  # rejected lines listed in the summary (all of them go to --rejects)
GC_BATCHES = 20  # batches between two garbage collections (import_file)
SLICE = 50  # lines checked between two looks at the writer (import_file's `pace`)
PHONE_CACHE = 100_000  # normalised numbers remembered (dialers call the same numbers often)
# The longest line read by default: config.yaml's max_body_bytes (run_import passes the one
# configured).
MAX_LINE = 1048576
SKIP_CHUNK = 65536  # bytes read at a time past the end of an over-long line


def add_import_command(sub: argparse._SubParsersAction) -> None:
    command = sub.add_parser(
        "import",
        help="import calls, prospects, activities or do-not-call entries from NDJSON",
        description="Import NDJSON (one JSON object per line, the API's body for one record) "
        "into a workspace, through the API's validation, matching and derived data.",
    )
    command.add_argument(
        "kind", choices=KINDS, metavar="KIND", help="what each line is: " + ", ".join(KINDS)
    )
    command.add_argument("file", metavar="FILE", help="the NDJSON file; - reads standard input")
    command.add_argument("--workspace", required=True, help="the workspace to import into")
    command.add_argument(
        "--list",
        metavar="LIST_ID",
        default=None,
        help="prospects only: the list every imported prospect joins (default: none)",
    )
    command.add_argument(
        "--reason",
        default=None,
        help="do-not-call only: the reason kept on every entry the import adds (default: none)",
    )
    command.add_argument(
        "--rejects",
        metavar="PATH",
        default=None,
        help="write every rejected line's number and reasons here, as NDJSON (default: the "
        f"summary lists the first {SHOWN_REJECTS})",
    )


class Progress:
    """A bar on stderr by bytes read (lines when the size is unknown): redrawn in place on a
    terminal at most 5 times a second, a line every 10% otherwise."""

    def __init__(self, total: int | None, stream: IO[str] = sys.stderr) -> None:
        self.total, self.stream = total, stream
        self.tty = stream.isatty()
        self.drawn, self.tenth = 0.0, -1
        self.started = time.monotonic()

    def show(self, done: int, lines: int, final: bool = False) -> None:
        now = time.monotonic()
        if self.total:
            fraction = min(done / self.total, 1.0)
            bar = "#" * int(fraction * 30)
            text = f"Importing [{bar:.<30}] {fraction * 100:3.0f}% {lines:,} lines"
            tenth = int(fraction * 10)
        else:
            text, tenth = f"Importing: {lines:,} lines", lines // 100_000
        text += f" ({now - self.started:.0f} s)"
        if self.tty:
            if final or now - self.drawn >= 0.2:
                self.stream.write("\r" + text + ("\n" if final else ""))
                self.drawn = now
        elif final or tenth > self.tenth:
            self.tenth = tenth
            self.stream.write(text + "\n")
        self.stream.flush()


class Checker:
    """Turns a line into the store's input, or the reasons it is refused."""

    def __init__(self, kind: str, store: Store, workspace_id: str) -> None:
        self.kind, self.workspace_id = kind, workspace_id
        self.schemas = Schemas()
        self.schema = SCHEMAS[kind]
        self.phones: dict[str, str | None] = {}
        self.normalize = store.prospects.normalize_phone
        self.now = utcnow()

    def phone(self, value: str) -> str | None:
        found = self.phones.get(value, self)
        if found is self:
            if len(self.phones) >= PHONE_CACHE:
                self.phones.clear()
            found = self.phones[value] = self.normalize(value)
        return found  # type: ignore[return-value]

    def check(self, raw: bytes) -> tuple[Any, list[str]]:
        body: Any = None
        fast = False
        if self.kind == "calls" and jsonio.ESCAPES_TO_CHECK.search(raw) is None:
            # The fast path: a flat body without surrogate or NUL escapes needs no walk over it.
            try:
                body = jsonio.parse(raw, walk=False)
                fast = certainly_valid(body)
            except jsonio.JSONInputError:
                fast = False
        if self.kind == "do-not-call":
            return self.entry(raw)
        if not fast:
            try:
                body = jsonio.parse(raw)
            except jsonio.JSONInputError as exc:
                return None, [f"{exc.pointer}: {exc}"]
        if not fast:
            errors = self.schemas.errors(self.schema, body)
            if errors:
                return None, [f"{e['pointer']}: {e['detail']}" for e in errors]
        if self.kind == "calls":
            call, problems = call_input(body, self.phone, self.now)
            if call is not None and not call.sid:
                call.call_id = self.content_id("call", body)
            return call, [f"{p['pointer']}: {p['detail']}" for p in problems]
        if self.kind == "activities":
            activity, problems = activity_input(body, self.now)
            return (activity, self.content_id("activity", body)), [
                f"{p['pointer']}: {p['detail']}" for p in problems
            ]
        phone = body.get("phoneNumber")
        if isinstance(phone, str) and phone.strip() and self.phone(phone) is None:
            return None, ["#/phoneNumber: is not a phone number that can be read"]
        return body, []

    def entry(self, raw: bytes) -> tuple[Any, list[str]]:
        """A do-not-call line: an entry as POST /v1/do-not-call takes it (`{"phoneNumber"}` or
        `{"email"}`), or a bare phone number or email."""
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            return None, ["#: is not UTF-8"]
        if text.startswith("{"):
            try:
                body = jsonio.parse(raw)
            except jsonio.JSONInputError as exc:
                return None, [f"{exc.pointer}: {exc}"]
        else:
            body = {"email" if "@" in text else "phoneNumber": text}
        errors = self.schemas.errors(self.schema, {"entries": [body]})
        if errors:
            return None, [
                f"#{e['pointer'].removeprefix('#/entries/0')}: {e['detail']}" for e in errors
            ]
        if "phoneNumber" in body and self.phone(body["phoneNumber"]) is None:
            return None, ["#/phoneNumber: is not a phone number that can be read"]
        return body, []

    def content_id(self, what: str, body: dict) -> str:
        """The id a line's record takes: derived from its content, so that importing the same
        line again finds it."""
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = hashlib.sha256(text.encode()).hexdigest()
        return derived_id(self.workspace_id, "import", what, digest)


def refusal_text(refusal: Refusal) -> str:
    return f"#/{refusal.field}: {refusal.detail} ({refusal.code})"


class Summary:
    def __init__(self, kind: str, workspace_id: str, rejects: IO[str] | None) -> None:
        self.kind, self.workspace_id, self.rejects_file = kind, workspace_id, rejects
        self.lines = self.created = self.existing = self.rejected = 0
        self.shown: list[dict] = []

    def reject(self, line: int, reasons: list[str]) -> None:
        self.rejected += 1
        entry = {"line": line, "reasons": reasons}
        if len(self.shown) < SHOWN_REJECTS:
            self.shown.append(entry)
        if self.rejects_file is not None:
            self.rejects_file.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def count(self, outcome: str | None) -> None:
        if outcome == CREATED:
            self.created += 1
        elif outcome == EXISTING:
            self.existing += 1

    def value(self, seconds: float) -> dict:
        return {
            "import": self.kind,
            "workspaceId": self.workspace_id,
            "lines": self.lines,
            "created": self.created,
            "existing": self.existing,
            "rejected": self.rejected,
            "seconds": round(seconds, 1),
            "rejects": self.shown,
        }


def lines_of(source: IO[bytes], limit: int) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, text, bytes read) of every line that is not blank; the text is None for a
    line longer than `limit` bytes (without its newline), which is read past without being
    kept: at most `limit` + 1 bytes of a line are ever held, however long it is."""
    number = 0
    while line := source.readline(limit + 1):
        number += 1
        if len(line) <= limit or line.endswith(b"\n"):
            if line.strip():
                yield number, line, len(line)
            continue
        size = len(line)
        del line
        while chunk := source.readline(SKIP_CHUNK):  # the rest of the line, dropped
            size += len(chunk)
            if chunk.endswith(b"\n"):
                break
        yield number, None, size


def too_long(limit: int) -> list[str]:
    """The reason a line over the body limit is rejected."""
    return [
        f"#: the line is longer than {limit} bytes, the API's body limit (max_body_bytes); "
        "it was skipped unread"
    ]


async def write_batch(
    store: Store,
    kind: str,
    workspace_id: str,
    batch: list[tuple[int, Any]],
    summary: Summary,
    listing: dict | None,
    pace: Callable[[], Awaitable[None]] | None = None,
    reason: str | None = None,
) -> None:
    """Write one batch of checked lines and count what became of each (after `await pace()`:
    while the writer runs the next batch's statements, this batch's results wait, and so does
    freeing them)."""
    numbers = [number for number, _ in batch]
    if kind == "calls":
        recorded = await store.calls.record(
            workspace_id, [value for _, value in batch], partial=True
        )
        if pace is not None:
            await pace()
        for number, one in zip(numbers, recorded, strict=True):
            if one.refusal is not None:
                summary.reject(number, [refusal_text(one.refusal)])
            summary.count(one.outcome)
    elif kind == "activities":
        logged = await store.activities.log(
            workspace_id,
            [activity for _, (activity, _) in batch],
            ids=[activity_id for _, (_, activity_id) in batch],
            partial=True,
        )
        for number, entry in zip(numbers, logged, strict=True):
            if entry.refusal is not None:
                summary.reject(number, [refusal_text(entry.refusal)])
            summary.count(entry.outcome)
    elif kind == "do-not-call":
        results = await store.do_not_call.add(workspace_id, [v for _, v in batch], reason)
        for result in results:
            summary.count(OUTCOMES[result["outcome"]])
    else:
        contacts = [value for _, value in batch]
        if listing is not None:
            results = (await store.prospects.add_to_list(workspace_id, listing, contacts)).results
        else:
            results = await store.prospects.match(workspace_id, contacts)
        for result in results:  # a suppressed contact (do not call) is neither
            summary.count(OUTCOMES.get(result["outcome"]))


async def import_file(
    store: Store,
    kind: str,
    workspace_id: str,
    source: IO[bytes],
    size: int | None,
    summary: Summary,
    listing: dict | None = None,
    progress: Callable[[int, int, bool], None] | None = None,
    pace: Callable[[], Awaitable[None]] | None = None,
    max_line: int = MAX_LINE,
    reason: str | None = None,
) -> None:
    """Read, check and write every line of `source`, a batch written while the next is read.
    A line longer than `max_line` bytes (the API's body limit: no body it takes is longer) is
    rejected unread, and the import goes on at the next line.
    On SQLite two batches are under way at once: the later one's rows are made (on a worker
    thread) while the earlier one is written, and the writer takes them in order. With `pace`
    (store.heavy_writes), lines are checked in slices of SLICE, each after `await pace()`: the
    checking waits while the writer runs a unit's statements, and goes on while it commits."""
    checker = Checker(kind, store, workspace_id)
    batch: list[tuple[int, Any]] = []
    writes: list[asyncio.Future[None]] = []
    depth = 2 if store.backend == "sqlite" else 1  # writes under way at once
    read = batches = 0
    limit = BATCH[kind]
    # Garbage is collected by hand, every GC_BATCHES batches: the lines in flight are tens of
    # thousands of objects that live for a batch or two, which the automatic collector moved
    # up its generations and walked again and again (docs/performance.md); and what existed
    # before the import (modules, schemas) is never walked.
    automatic = gc.isenabled()
    gc.disable()
    gc.freeze()

    async def flush() -> None:
        nonlocal batch, batches
        while len(writes) >= depth:
            await writes.pop(0)
        writes.append(
            asyncio.ensure_future(
                write_batch(store, kind, workspace_id, batch, summary, listing, pace, reason)
            )
        )
        batch = []
        batches += 1
        if batches % GC_BATCHES == 0:
            gc.collect()
        await asyncio.sleep(0)  # let the write start before the next batch is checked

    try:
        for number, raw, size in lines_of(source, max_line):
            if pace is not None and summary.lines % SLICE == 0:
                await pace()
            read += size
            summary.lines += 1
            value, reasons = checker.check(raw) if raw is not None else (None, too_long(max_line))
            if reasons:
                summary.reject(number, reasons)
            else:
                batch.append((number, value))
            if len(batch) >= limit:
                await flush()
                if progress is not None:
                    progress(read, summary.lines, False)
        if batch:
            await flush()
    finally:
        try:
            for writing in writes:
                await writing
        finally:
            gc.unfreeze()
            if automatic:
                gc.enable()
    if progress is not None:
        progress(size or read, summary.lines, True)


async def run_import(config: Config, args: argparse.Namespace) -> int:
    """The `import` command; 0 when every line was imported, 1 when some were rejected, 2
    when the import could not start."""
    if config.throwaway:
        print(
            "workspace-api import: MONGODB_URI=memory is a throwaway store that lives inside "
            "one process: unset MONGODB_URI to import into the SQLite file at sqlite_path "
            "(WSAPI_SQLITE_PATH), or point it at MongoDB.",
            file=sys.stderr,
        )
        return 2
    if args.list is not None and args.kind != "prospects":
        print("workspace-api import: --list is for prospects only", file=sys.stderr)
        return 2
    if args.reason is not None and (args.kind != "do-not-call" or len(args.reason) > 200):
        print(
            "workspace-api import: --reason is for do-not-call only, at most 200 characters",
            file=sys.stderr,
        )
        return 2
    store, auth = await open_services(config)
    try:
        if await store.workspaces.get(args.workspace) is None:
            print(f"workspace-api import: no workspace {args.workspace}", file=sys.stderr)
            return 2
        listing = None
        if args.list is not None:
            listing = await store.lists.get(args.workspace, args.list.lower())
            if listing is None:
                print(
                    f"workspace-api import: no list {args.list} in the workspace", file=sys.stderr
                )
                return 2
        source: IO[bytes]
        if args.file == "-":
            source, size = sys.stdin.buffer, None
        else:
            try:
                source = open(args.file, "rb")  # noqa: SIM115, ASYNC230 - a CLI; closed below
            except OSError as exc:
                print(
                    f"workspace-api import: cannot read {args.file}: {exc.strerror}",
                    file=sys.stderr,
                )
                return 2
            size = os.fstat(source.fileno()).st_size
        rejects = open(args.rejects, "w") if args.rejects else None  # noqa: SIM115, ASYNC230
        started = time.monotonic()
        summary = Summary(args.kind, args.workspace, rejects)
        bar = Progress(size)
        try:
            async with store.heavy_writes() as pace:
                await import_file(
                    store,
                    args.kind,
                    args.workspace,
                    source,
                    size,
                    summary,
                    listing,
                    bar.show,
                    pace,
                    config.max_body_bytes,
                    args.reason,
                )
        finally:
            if source is not sys.stdin.buffer:
                source.close()
            if rejects is not None:
                rejects.close()
        print(jsonio.dumps(summary.value(time.monotonic() - started), indent=2))
        return 1 if summary.rejected else 0
    finally:
        await auth.usage.stop()
        await store.close()
