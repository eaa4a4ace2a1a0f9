"""The command line as a new user meets it: every option's --help names its default, `make demo`
and WSAPI_PORT choose the demo's port, a MongoDB failure says where and how long it tried (never
the credentials), and `serve` on the embedded store says how to get a key."""

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli import build_parser
from server.cli import HelpFormatter, mongodb_hosts

ROOT = Path(__file__).resolve().parents[2]


def parsers(parser: argparse.ArgumentParser, name: str = "workspace-api"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from parsers(sub, f"{name} {sub_name}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_every_option_of_every_command_shows_its_default_in_help():
    found = list(parsers(build_parser()))
    assert {"workspace-api serve", "workspace-api demo", "workspace-api keys create"} <= {
        name for name, _ in found
    }
    for name, parser in found:
        text = parser.format_help()
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            shown = HelpFormatter("x")._get_help_string(action)
            assert action.help and ("default" in shown or "required" in shown), (name, action)
        assert "(default: 5000)" in text if name.endswith(" demo") else True
    demo = dict(parsers(build_parser()))["workspace-api demo"].format_help()
    assert "$WSAPI_PORT, 8888" in " ".join(demo.split())


def test_make_demo_takes_the_port():
    run = subprocess.run(
        ["make", "-n", "demo", "PORT=9000"], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert run.returncode == 0, run.stderr
    assert "workspace-api demo --port 9000" in run.stdout


def test_the_demo_listens_on_wsapi_port(tmp_path):
    port, keys_file = free_port(), tmp_path / "keys.json"
    log = tmp_path / "demo.log"
    with open(log, "w") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cli",
                "demo",
                "--keys-file",
                str(keys_file),
                "--calls",
                "0",
                "--prospects",
                "20",
                "--timeline",
                "0",
            ],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            env={
                **os.environ,
                "MONGODB_URI": "memory",
                "WSAPI_PORT": str(port),
                "PYTHONPATH": str(ROOT),
            },
        )
    try:
        deadline = time.monotonic() + 60
        while not keys_file.exists():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        base = json.loads(keys_file.read_text())["baseUrl"]
        assert base == f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 10
        while f"Base URL : {base}" not in log.read_text():  # the banner shows the real URL
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(10)


def test_a_mongodb_failure_names_host_port_and_time_out_but_no_credentials():
    env = {
        **os.environ,
        "MONGODB_URI": "mongodb://admin:hunter2secret@127.0.0.1:1/?authSource=x",
        "WSAPI_DB_TIMEOUT_SECONDS": "0.5",
        "WSAPI_SECRET": "s" * 40,
    }
    run = subprocess.run(
        [sys.executable, "-m", "server.cli", "workspaces", "create", "X"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    assert run.returncode == 3
    assert "127.0.0.1:1 within 0.5 s" in run.stderr and "WSAPI_DB_TIMEOUT_SECONDS" in run.stderr
    assert "hunter2" not in run.stderr + run.stdout and "admin" not in run.stderr


def test_mongodb_hosts_never_include_credentials():
    assert mongodb_hosts("mongodb://u:p@db1,db2:27018/x?replicaSet=r") == "db1:27017, db2:27018"
    assert mongodb_hosts("mongodb+srv://u:p@cluster.example") == (
        "the hosts of the DNS SRV record of cluster.example"
    )
    assert mongodb_hosts("mongodb://[::1]:27017") == "[::1]:27017"


@pytest.mark.parametrize("store", ["memory", "sqlite-file"])
def test_serve_on_an_empty_embedded_store_says_how_to_get_a_key(tmp_path, store):
    log = tmp_path / "serve.log"
    env = (
        {"MONGODB_URI": "memory"}
        if store == "memory"
        else {"MONGODB_URI": "", "WSAPI_SECRET": "", "WSAPI_SQLITE_PATH": str(tmp_path / "db")}
    )
    with open(log, "w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--port", str(free_port())],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, **env},
        )
    try:
        deadline = time.monotonic() + 30
        while "keys create" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        text = log.read_text()
        assert "workspace-api demo" in text and "workspace-api workspaces create NAME" in text
        if store == "sqlite-file":
            assert str(tmp_path / "db") in text
    finally:
        process.terminate()
        process.wait(10)
