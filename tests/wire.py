"""The wire tier's database: FerretDB 1.24 on its SQLite backend (tests/ferretdb/, a small Go
program of ours that embeds it), a real MongoDB-compatible server speaking wire version 21
(MongoDB 7.0), run as a process on a free loopback port that the suite starts, stops, kills and
restarts itself.

The server is built with `go build` (Go 1.24 or later) the first time and cached in
tests/ferretdb/build/ until its sources (main.go, go.mod, go.sum) change; the Go module cache
keeps the modules, so a rebuild is a link. Starting a server then costs a few milliseconds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent / "ferretdb"
BINARY = PROJECT / "build" / "wire-server"
# This file too: it holds the backend's patch (below).
SOURCES = [PROJECT / "main.go", PROJECT / "go.mod", PROJECT / "go.sum", Path(__file__)]
GO_MINIMUM = (1, 24)  # FerretDB 1.24's go.mod
# The PostgreSQL backend is left out of the build (the tier uses SQLite): a smaller binary.
BUILD_TAGS = "ferretdb_no_postgresql"


def go_version(go: str) -> tuple[int, int] | None:
    """(major, minor) of the Go toolchain `go`, or None when it cannot say."""
    try:
        result = subprocess.run(
            [go, "env", "GOVERSION"], capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"go(\d+)\.(\d+)", result.stdout.strip())
    return (int(found[1]), int(found[2])) if found else None


# The patch of FerretDB's SQLite backend that the build applies (to a copy of the module, which
# the build's go.mod replaces it with). FerretDB reads only the row of the `_id` when the filter
# is that `_id` alone; with any other field beside it, the whole table. Its handlers then filter
# every document the backend read, whatever the backend's query was (find, update, delete,
# findAndModify, count, distinct, aggregate). So the patch reads only the rows of the filter's
# `_id` whenever it has one, a string or an ObjectID, or `{"$in": [strings]}`: each command
# answers the same documents, and a lookup by id scoped to a workspace (`{_id, workspaceId}`,
# every one of the store's) reads a row instead of a table, as it does on MongoDB.
PATCHED = "internal/backends/sqlite/collection.go"
# And the expression its queries name `_id` by: `_ferretdb_sjson->'$._id'`, where the unique
# index of every collection's `_id` is on `_ferretdb_sjson->"_id"`. The two give the same value,
# but SQLite uses an index only for the expression it was built on, so every lookup, update and
# delete by `_id` scanned the whole table. The patch names it as the index does.
ID_PATCHED = "internal/backends/sqlite/metadata/metadata.go"
ID_FROM = """IDColumn = DefaultColumn + "->'$._id'"\n"""
ID_TO = """IDColumn = DefaultColumn + "->'_id'"\n"""
# And one of its update handler (every update and findAndModify): it wrote each changed document
# in a transaction of its own (an update of 4,000 documents: 1.2 s); the patch writes them in one
# transaction once the command has read and changed them all (0.85 s). The documents written and
# the answer are the same, but for an update that fails part-way, which now writes none of its
# documents instead of those before the failure (the store never depends on either).
UPDATE_PATCHED = "internal/handler/common/update.go"
UPDATE_FROM = (
    """\
	result := new(UpdateResult)
""",
    """\
			if !upsert {
				return result, nil
			}
""",
    """\
			_, err := c.UpdateAll(ctx, &backends.UpdateAllParams{Docs: []*types.Document{doc}})
			if err != nil {
				return nil, lazyerrors.Error(err)
			}
""",
)
UPDATE_TO = (
    """\
	result := new(UpdateResult)
	var changed []*types.Document // written together once the iteration ends
""",
    """\
			if !upsert {
				if len(changed) > 0 {
					_, err = c.UpdateAll(ctx, &backends.UpdateAllParams{Docs: changed})
					if err != nil {
						return nil, lazyerrors.Error(err)
					}
				}
				return result, nil
			}
""",
    """\
			changed = append(changed, doc)
""",
)
PUSHDOWN_FROM = """\
	if params.Filter.Len() == 1 {
		v, _ := params.Filter.Get("_id")
		switch v.(type) {
		case string, types.ObjectID:
			whereClause = fmt.Sprintf(` WHERE %s = ?`, metadata.IDColumn)
			args = []any{string(must.NotFail(sjson.MarshalSingleValue(v)))}
		}
	}

	q += whereClause
"""
PUSHDOWN_TO = """\
	if params.Filter.Len() >= 1 {
		v, _ := params.Filter.Get("_id")
		switch v := v.(type) {
		case string, types.ObjectID:
			whereClause = fmt.Sprintf(` WHERE %s = ?`, metadata.IDColumn)
			args = []any{string(must.NotFail(sjson.MarshalSingleValue(v)))}
		case *types.Document:
			whereClause, args = pushdownIn(v)
		}
	}

	q += whereClause
"""
PUSHDOWN_IN = """
// pushdownIn is the WHERE clause of an _id condition that is {$in: [strings]} alone (none for
// any other): the rows of those ids, which the handler then filters.
func pushdownIn(condition *types.Document) (string, []any) {
	v, _ := condition.Get("$in")
	in, ok := v.(*types.Array)
	if condition.Len() != 1 || !ok || in.Len() == 0 {
		return "", nil
	}
	placeholders := make([]string, 0, in.Len())
	args := make([]any, 0, in.Len())
	for i := 0; i < in.Len(); i++ {
		value := must.NotFail(in.Get(i))
		if _, ok := value.(string); !ok {
			return "", nil
		}
		placeholders = append(placeholders, "?")
		args = append(args, string(must.NotFail(sjson.MarshalSingleValue(value))))
	}
	where := fmt.Sprintf(` WHERE %s IN (%s)`, metadata.IDColumn, strings.Join(placeholders, ", "))
	return where, args
}
"""


def patch(source: Path, replacements: list[tuple[str, str]], appended: str = "") -> None:
    """Each `old` of `replacements` replaced by its `new` in `source`, then `appended` added;
    fails loudly when an `old` is not there exactly once (another FerretDB than the patch's)."""
    text = source.read_text()
    for old, new in replacements:
        if text.count(old) != 1:
            raise RuntimeError(f"{source} is not the file the wire tier's patch was made for")
        text = text.replace(old, new)
    source.write_text(text + appended)


def patched_module(go: str, env: dict[str, str], suffix: str) -> Path:
    """The build's go.mod (`-modfile`): the project's, with FerretDB replaced by a patched copy
    of its module (in build/, beside it)."""
    found = subprocess.run(
        [go, "mod", "download", "-json", "github.com/FerretDB/FerretDB"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    if found.returncode != 0:
        raise RuntimeError("fetching FerretDB's sources failed:\n" + found.stdout + found.stderr)
    copy = BINARY.with_name(f"ferretdb{suffix}")
    shutil.rmtree(copy, ignore_errors=True)
    # The module cache's files and folders are read-only: copied without their modes.
    shutil.copytree(json.loads(found.stdout)["Dir"], copy, copy_function=shutil.copyfile)
    for folder, _, _ in os.walk(copy):
        os.chmod(folder, 0o755)
    patch(copy / PATCHED, [(PUSHDOWN_FROM, PUSHDOWN_TO)], PUSHDOWN_IN)
    patch(copy / ID_PATCHED, [(ID_FROM, ID_TO)])
    patch(copy / UPDATE_PATCHED, list(zip(UPDATE_FROM, UPDATE_TO, strict=True)))
    modfile = BINARY.with_name(f"wire{suffix}.mod")
    replace = f"\nreplace github.com/FerretDB/FerretDB => {copy}\n"
    modfile.write_text((PROJECT / "go.mod").read_text() + replace)
    shutil.copyfile(PROJECT / "go.sum", modfile.with_suffix(".sum"))
    return modfile


def binary() -> Path:
    """The server's executable, built with Go when missing or older than its sources."""
    newest = max(source.stat().st_mtime for source in SOURCES)
    if BINARY.exists() and BINARY.stat().st_mtime >= newest:
        return BINARY
    go = shutil.which("go")
    version = go_version(go) if go else None
    if go is None or version is None or version < GO_MINIMUM:
        found = f"found go{version[0]}.{version[1]}" if version else "found no Go toolchain"
        raise RuntimeError(
            f"the wire tier builds its server (FerretDB) with Go {'.'.join(map(str, GO_MINIMUM))} "
            f"or later on PATH ({found}); .ci/run installs one"
        )
    BINARY.parent.mkdir(exist_ok=True)
    partial = BINARY.with_name(f"{BINARY.name}.{os.getpid()}.partial")
    env = {**os.environ, "GOFLAGS": "-mod=readonly", "CGO_ENABLED": "0"}
    suffix = f".{os.getpid()}"
    modfile = patched_module(go, env, suffix)
    building = ["-modfile", str(modfile), "-o", str(partial), "."]
    try:
        result = subprocess.run(
            [go, "build", "-trimpath", "-buildvcs=false", "-tags", BUILD_TAGS, *building],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
        )
    finally:
        shutil.rmtree(BINARY.with_name(f"ferretdb{suffix}"), ignore_errors=True)
        modfile.unlink(missing_ok=True)
        modfile.with_suffix(".sum").unlink(missing_ok=True)
    if result.returncode != 0:
        raise RuntimeError(
            "building the wire tier's server failed:\n"
            + result.stdout[-4000:]
            + result.stderr[-4000:]
        )
    partial.replace(BINARY)  # atomically: a half-written binary is never taken as built
    return BINARY


# FerretDB 1.24's known limits that tests on the wire tier meet. A test that one of them stops
# is marked `@pytest.mark.server_limit(NAME)` and skipped on the wire tier with this reason.
LIMITS = {
    "ttl": 'TTL indexes are not implemented ("Index option expireAfterSeconds is not '
    'implemented yet"); the expiry sweep alone removes expired records',
    "scan": "no query but one on _id uses an index (patched: PUSHDOWN_TO): every other query "
    "reads the whole collection (and sorts it in memory), so reading a large collection, or "
    "many such queries in a row, outlasts the API's time limits (the first batch of a "
    "100,000-activity timeline the 5 s database timeout; 20 concurrent uploads to one "
    "workspace, which take turns, the 10 s an upload waits for its turn)",
    "update_batch": "an update command of 100 or more operations that match a document "
    "deadlocks (each operation keeps one of the connections of its pool of 100 until the "
    "command ends)",
}


def limit(name: str) -> str | None:
    """The skip reason of FerretDB limit `name` on the wire tier; None on the other tiers."""
    if os.environ.get("WSAPI_TEST_TIER") != "wire":
        return None
    return f"server limit of FerretDB 1.24 (the wire tier): {LIMITS[name]}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class WireServer:
    """One FerretDB process on 127.0.0.1 with its SQLite files in `data_dir`. `stop()` (SIGTERM)
    or `kill()` (SIGKILL) and `start()` again keep the port and the data: the backend commits
    every acknowledged write to its write-ahead log (synchronous=NORMAL) before answering."""

    def __init__(self, log_path: Path, data_dir: Path, port: int | None = None):
        self.port = port or free_port()
        self.data_dir = data_dir
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def start(self, timeout: float = 60) -> WireServer:
        command = [str(binary()), str(self.port), str(self.data_dir)]
        with open(self.log_path, "a") as log:
            # stdin is a pipe that only this process holds: if the test run dies, the pipe ends
            # and the server exits (main.go), so no server outlives its run.
            self.process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the wire server exited:\n{self.log_path.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        "the wire server did not accept connections in "
                        f"{timeout} s:\n{self.log_path.read_text()}"
                    ) from None
                time.sleep(0.02)

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM: the server stops listening, closes its connections and then its SQLite
        files, as a database's own clean shutdown does."""
        self._end(signal.SIGTERM, timeout)

    def kill(self, timeout: float = 20) -> None:
        """SIGKILL: the process ends at once, as in a crash or an out-of-memory kill; only what
        SQLite committed to its files is there when it starts again."""
        self._end(signal.SIGKILL, timeout)

    def _end(self, signum: signal.Signals, timeout: float) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signum)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        finally:
            if self.process.stdin:
                self.process.stdin.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None
