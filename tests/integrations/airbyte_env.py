"""The Airbyte CDK for the tests of integrations/airbyte, in a virtualenv of its own: airbyte-cdk
pins versions of libraries the service also uses (jsonschema, requests, ...) and pulls in many
more, so it never joins the service's environment. The virtualenv is built once with the pinned
integrations/airbyte/requirements.txt and cached in tests/integrations/.airbyte-venv/ until that
file changes (as tests/wire.py caches the FerretDB build)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "integrations" / "airbyte" / "requirements.txt"
VENV = Path(__file__).resolve().parent / ".airbyte-venv"
STAMP = VENV / "requirements.sha256"


# The `source-declarative-manifest` command, run by the virtualenv's interpreter (the script
# itself names the path the virtualenv was built at, before it was moved into place).
COMMAND = "from airbyte_cdk.cli.source_declarative_manifest import run; run()"


def source_declarative_manifest() -> list[str]:
    """The command line of the pinned airbyte-cdk's `source-declarative-manifest` (the
    virtualenv built first if needed)."""
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    command = [str(VENV / "bin" / "python"), "-c", COMMAND]
    if STAMP.exists() and STAMP.read_text() == wanted:
        return command
    partial = VENV.with_name(f"{VENV.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(partial)], check=True, timeout=300)
        pip = [str(partial / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run(
            [*pip, "--disable-pip-version-check", "-r", str(REQUIREMENTS)],
            check=True,
            timeout=1200,
            capture_output=True,
        )
        (partial / STAMP.name).write_text(wanted)
        shutil.rmtree(VENV, ignore_errors=True)
        partial.rename(VENV)  # a virtualenv's scripts name its own path: built where it stays
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return command
