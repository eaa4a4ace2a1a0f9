"""docs/deployment.md's systemd unit is one that systemd accepts as printed and a hardened one:
`systemd-analyze verify` has nothing to say about it (with ExecStart pointing at the command this
checkout installed, since /opt/workspace-api does not exist here), and `systemd-analyze
security` rates its exposure OK. Without systemd-analyze (Debian's systemd package) the tests
skip locally and fail when CI is set."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.markdown import code_blocks, read, section

DOC = "docs/deployment.md"
INSTALLED = "/opt/workspace-api/bin/workspace-api"
# systemd-analyze security's scale: 0 (SAFE) to 10 (UNSAFE); up to 2 is "OK", a service with
# the usual sandboxing. A default unit scores 9.6.
MOST_EXPOSURE = 2.0


def unit() -> str:
    [text] = code_blocks(section(read(DOC), "### systemd on a bare host"), "ini")
    return text


def directives(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


@pytest.fixture
def analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        reason = "systemd-analyze is missing (Debian's systemd package; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return tool


@pytest.fixture
def unit_file(tmp_path) -> Path:
    command = Path(sys.prefix) / "bin" / "workspace-api"
    assert command.exists(), f"{command}: the checkout's installed command"
    assert INSTALLED in unit()
    path = tmp_path / "workspace-api.service"
    path.write_text(unit().replace(INSTALLED, str(command)))
    return path


def test_systemd_accepts_the_unit_as_printed(analyze, unit_file):
    result = subprocess.run(
        [analyze, "verify", "--man=no", str(unit_file)], capture_output=True, text=True
    )
    # An unknown or misspelt directive is only a warning ("ignoring"): none may be printed.
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_the_unit_is_sandboxed(analyze, unit_file):
    result = subprocess.run(
        [analyze, "security", "--offline=yes", "--no-pager", str(unit_file)],
        capture_output=True,
        text=True,
    )
    found = re.search(r"Overall exposure level for workspace-api\.service: ([\d.]+)", result.stdout)
    assert found, result.stdout + result.stderr
    assert float(found[1]) <= MOST_EXPOSURE, result.stdout


def test_the_unit_runs_unprivileged_writing_only_its_data_directory():
    found = directives(unit())
    assert found["User"] == ["workspace-api"] and found["Group"] == ["workspace-api"]
    assert found["NoNewPrivileges"] == ["yes"] and found["ProtectSystem"] == ["strict"]
    assert found["ReadWritePaths"] == ["/var/lib/workspace-api"]
    assert found["StateDirectory"] == ["workspace-api"]  # /var/lib/workspace-api, created
    assert found["Restart"] == ["on-failure"]
    assert found["ExecStart"][0].startswith(f"{INSTALLED} serve ")
    # The sandbox's data directory is the one the documented environment puts the file in.
    assert "WSAPI_SQLITE_PATH=/var/lib/workspace-api/workspace-api.sqlite3" in read(DOC)
