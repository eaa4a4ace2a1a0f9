"""`workspace-api import` and lines longer than the API's body limit: each is rejected with its
number and the reason, read past to the next newline, and the import goes on; the command's
memory stays flat whatever the length (a 200 MB line, from standard input and from a file)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from server.importer import Summary, import_file
from tests.helpers import test_environ
from tests.server.test_import import call, call_body, workspace_with_user

MB = 1024 * 1024
LIMIT = 2000  # the import's line limit in the tests of its loop


def padded(body: dict, size: int) -> bytes:
    """The body as a line of exactly `size` bytes before its newline (JSON allows the spaces)."""
    text = json.dumps(body).encode()
    assert len(text) <= size
    return text[:-1] + b" " * (size - len(text)) + b"}"


async def test_over_long_lines_are_rejected_and_the_import_goes_on(store, ws_a):
    prospect = await store.prospects.create(ws_a.id, {"email": "p@a.example"})
    good = [call(ws_a, prospect["id"], n, providerCallSid=f"CA{n:032x}") for n in range(5)]
    lines = [
        padded(good[0], LIMIT),  # 1: exactly the limit
        padded(good[1], LIMIT + 1),  # 2: one byte over
        json.dumps(good[2]).encode(),  # 3
        b"[" + b" " * (50 * LIMIT) + b"]",  # 4: many times the limit
        json.dumps(good[3]).encode(),  # 5
        b"x" * (LIMIT * 3 + 17),  # 6: the last line, with no newline after it
    ]
    text = b"\n".join(lines)
    rejects = io.StringIO()
    summary = Summary("calls", ws_a.id, rejects)
    await import_file(store, "calls", ws_a.id, io.BytesIO(text), len(text), summary, max_line=LIMIT)
    rejected = [json.loads(line) for line in rejects.getvalue().splitlines()]
    assert [r["line"] for r in rejected] == [2, 4, 6]
    for entry in rejected:
        assert entry["reasons"] == [
            f"#: the line is longer than {LIMIT} bytes, the API's body limit (max_body_bytes); "
            "it was skipped unread"
        ]
    assert (summary.lines, summary.created, summary.rejected) == (6, 3, 3)
    calls = [c for c in await store.documents("calls") if c["workspaceId"] == ws_a.id]
    assert len(calls) == 3


def command_env(tmp_path: Path) -> dict:
    """The environment of the command on this tier's database (a fresh one)."""
    env = {**os.environ, **test_environ()}
    if not env["MONGODB_URI"].startswith("mongodb"):
        env.pop("MONGODB_URI")
        env["WSAPI_SQLITE_PATH"] = str(tmp_path / "data.sqlite3")
    return env


def peak_rss_of_import(env: dict, workspace: str, feed, tmp_path: Path, path: str = "-"):
    """Run `workspace-api import calls --workspace W PATH`, with `feed(pipe)` writing standard
    input from a thread; (exit code, summary, its peak resident set size in bytes)."""
    out, err = tmp_path / "out.json", tmp_path / "err.txt"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "import", "calls", "--workspace", workspace, path],
            env=env,
            stdin=subprocess.PIPE if path == "-" else subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
        )
    writer = None
    if path == "-":
        assert process.stdin is not None
        writer = threading.Thread(target=feed, args=(process.stdin,))
        writer.start()
    try:
        # wait4 gives this child's own resource usage: ru_maxrss, its peak RSS in KiB.
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:
        process.kill()
        raise
    process.returncode = os.waitstatus_to_exitcode(status)
    if writer is not None:
        writer.join(60)
    assert process.returncode in (0, 1), err.read_text()
    return process.returncode, json.loads(out.read_text()), usage.ru_maxrss * 1024


@pytest.mark.parametrize("source", ["stdin", "file"])
def test_a_200_mb_line_leaves_the_import_s_memory_flat(tmp_path, source):
    env = command_env(tmp_path)
    workspace, user = workspace_with_user(env)
    contact = {"prospect": {"email": "a@x.example"}}
    first = json.dumps({**call_body(user), **contact, "providerCallSid": f"CA{uuid.uuid4().hex}"})
    last = json.dumps({**call_body(user), **contact, "providerCallSid": f"CA{uuid.uuid4().hex}"})
    endless = 200 * MB

    def write(target, long: bool) -> None:
        try:
            target.write(first.encode() + b"\n")
            if long:
                chunk = b"x" * MB
                for _ in range(endless // MB):
                    target.write(chunk)
                target.write(b"\n")
            target.write(last.encode() + b"\n")
        finally:
            target.close()

    def run(long: bool):
        if source == "stdin":
            return peak_rss_of_import(env, workspace, lambda pipe: write(pipe, long), tmp_path)
        path = tmp_path / f"calls-{long}.ndjson"
        with open(path, "wb") as file:
            write(file, long)
        return peak_rss_of_import(env, workspace, None, tmp_path, str(path))

    code, summary, baseline = run(False)
    assert code == 0 and summary["created"] == 2, summary
    code, summary, peak = run(True)
    assert code == 1, summary
    assert (summary["lines"], summary["existing"], summary["rejected"]) == (3, 2, 1)
    assert [r["line"] for r in summary["rejects"]] == [2]
    assert "longer than 1048576 bytes" in summary["rejects"][0]["reasons"][0]
    # Holding the line once would add 200 MB; the bound leaves room for the allocator's noise.
    assert peak - baseline < 48 * MB, (peak // MB, baseline // MB)
