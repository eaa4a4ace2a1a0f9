"""An installed (non-editable) package runs with no checkout beside it: the wheel carries the
defaults of config.yaml inside the `server` package, and `load_config` finds them there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROOMS = (
    "cli",
    "server",
    "handlers",
    "store",
    "console",
    "schemas",
    "telephony",
    "webhooks",
    "demo",
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The project's wheel, built from this tree and unpacked into a directory of its own (the
    dependencies come from the test environment)."""
    out = tmp_path_factory.mktemp("wheel")
    # A copy of what the build reads (the build writes build/ and *.egg-info into its source).
    source = out / "source"
    source.mkdir()
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "config.yaml"):
        shutil.copy2(ROOT / name, source / name)
    for room in ROOMS:
        shutil.copytree(ROOT / room, source / room, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
        cwd=out,
    )
    (wheel,) = (out / "dist").glob("*.whl")
    target = out / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    return target


def test_the_wheel_carries_the_checkouts_defaults(installed):
    assert (installed / "server" / "config.yaml").read_text() == (ROOT / "config.yaml").read_text()
    assert not (installed / "config.yaml").exists()


def test_an_installed_package_loads_its_defaults_without_a_checkout(installed, tmp_path):
    script = (
        "import json, server.config as c; cfg = c.load_config(environ={}); "
        "print(json.dumps([c.__file__, cfg.port, cfg.sqlite_path, cfg.rate_limit_per_minute]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    module, port, sqlite_path, rate = json.loads(result.stdout)
    assert Path(module).is_relative_to(installed)  # the installed copy, not the checkout
    assert (port, sqlite_path) == (8888, "data/workspace-api.sqlite3") and rate > 0
