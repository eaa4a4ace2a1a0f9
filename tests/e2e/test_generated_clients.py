"""Generated clients, proven: the served /v1/openapi.json is linted by Redocly CLI (0 errors, 0
warnings), a Python client is generated with openapi-python-client and a TypeScript one with
openapi-typescript + openapi-fetch, a script in each language that calls every operation is
type-checked (`mypy --strict`, `tsc --strict`) and run against a live demo: every typed field is
read through its generated attribute, a recording is saved as bytes, a 404 is a typed problem.

Tool versions are pinned: openapi-python-client and mypy in setup.py (extras "test"), the npm
tools in tests/clients/package.json + package-lock.json (installed here with `npm ci`).
Without node/npm the tests skip locally and fail under CI. Marked `clients`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from schemas.openapi import operations
from tests.helpers import running_demo

pytestmark = [pytest.mark.clients, pytest.mark.long, pytest.mark.own_store]

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "tests" / "clients"
BIN = Path(sys.executable).parent
# openapi-python-client reads a response body as bytes only for application/octet-stream: the
# recording's audio/mpeg and the exports' application/x-ndjson are mapped to it, the generator's
# documented way for binary media types.
PYTHON_CLIENT_CONFIG = """\
project_name_override: workspace-api-client
package_name_override: workspace_api_client
content_type_overrides:
  audio/mpeg: application/octet-stream
  application/x-ndjson: application/octet-stream
"""
QUIET_NODE = {
    "REDOCLY_TELEMETRY": "off",
    "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true",
    "NO_UPDATE_NOTIFIER": "1",
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
}


def run(*command: str, cwd: Path = ROOT, env: dict | None = None, timeout: int = 300) -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **QUIET_NODE, **(env or {})},
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{output[-8000:]}"
    return output


@pytest.fixture(scope="module")
def npm_tools() -> Path:
    """The pinned npm tools, installed exactly as locked."""
    missing = [tool for tool in ("node", "npm", "npx") if shutil.which(tool) is None]
    if missing:
        reason = f"{', '.join(missing)} not found (apt-get install nodejs npm)"
        if os.environ.get("CI"):
            pytest.fail(f"generated-client tests cannot run in CI: {reason}")
        pytest.skip(reason)
    run("npm", "ci", "--no-audit", "--no-fund", cwd=CLIENTS, timeout=600)
    return CLIENTS / "node_modules" / ".bin"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    # A short settle period: the scripts read the events of their own writes.
    with running_demo(tmp_path_factory.mktemp("demo"), "--sync-settle-seconds", "1") as (
        _,
        keys,
        _log,
    ):
        first = keys["workspaces"][0]
        provider = keys["provider"]
        yield (
            keys["baseUrl"].removesuffix("/v1"),
            first["apiKey"],
            first["ingestApiKey"],
            first["id"],
            provider["accountSid"],
            provider["authToken"],
            first["adminApiKey"],
        )


@pytest.fixture(scope="module")
def document(demo, tmp_path_factory) -> tuple[dict, Path]:
    """The OpenAPI document as the live service serves it, and a file holding it."""
    origin = demo[0]
    with urllib.request.urlopen(f"{origin}/v1/openapi.json", timeout=10) as response:
        body = response.read()
    path = tmp_path_factory.mktemp("openapi") / "openapi.json"
    path.write_bytes(body)
    return json.loads(body), path


# The events of the scripts' own writes: a list, a contact, the dialer's calls and their changes,
# a user created, changed and deleted, a prospect changed and deleted (leaving its list).
EVENT_TYPES = {
    "list.created",
    "prospect.created",
    "activity.created",
    "call.created",
    "call.updated",
    "user.created",
    "user.updated",
    "user.deleted",
    "prospect.updated",
    "prospect.deleted",
    "list.updated",
}


def operation_ids(document: dict) -> set[str]:
    return {op["operationId"] for _, _, op in operations(document)}


def recording_of(demo, name: str) -> bytes:
    origin, key = demo[0], demo[1]
    call_id = name.removeprefix("call-").removesuffix(".mp3")
    request = urllib.request.Request(
        f"{origin}/v1/calls/{call_id}/recording", headers={"Authorization": f"Bearer {key}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


def test_redocly_lints_the_document_without_errors_or_warnings(npm_tools, document):
    _, path = document
    output = run(
        str(npm_tools / "redocly"),
        "lint",
        "--extends",
        "recommended",
        "--format",
        "json",
        str(path),
        cwd=path.parent,
    )
    report = json.loads(output[output.index("{") : output.rindex("}") + 1])
    assert report["totals"] == {"errors": 0, "warnings": 0, "ignored": 0}, report["problems"]


def test_generated_python_client_calls_every_operation(demo, document, tmp_path):
    spec, path = document
    config = tmp_path / "config.yaml"
    config.write_text(PYTHON_CLIENT_CONFIG)
    generated = tmp_path / "generated"
    package = generated / "workspace_api_client"
    output = run(
        str(BIN / "openapi-python-client"),
        "generate",
        "--path",
        str(path),
        "--config",
        str(config),
        "--output-path",
        str(package),
        "--meta",
        "none",
        env={"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    assert "Warning" not in output and "Unsupported" not in output, output  # nothing dropped
    script = CLIENTS / "python" / "call_every_operation.py"
    checked = run(
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--follow-imports=silent",
        "--no-incremental",
        str(script),
        env={"MYPYPATH": str(generated)},
    )
    assert "Success: no issues found" in checked, checked

    origin, key, ingest, workspace, account, token, admin = demo
    saved = tmp_path / "saved"
    saved.mkdir()
    report = json.loads(
        run(
            sys.executable,
            str(script),
            origin,
            key,
            str(saved),
            ingest,
            workspace,
            account,
            token,
            admin,
            env={"PYTHONPATH": str(generated)},
        )
        .strip()
        .splitlines()[-1]
    )
    assert set(report["called"]) == operation_ids(spec)
    assert report["untyped"] == []  # every field arrived in a typed attribute
    assert "call" in report["activityTypes"]
    assert set(report["eventTypes"]) >= EVENT_TYPES
    recording = Path(report["recording"])
    assert recording.read_bytes() == recording_of(demo, recording.name)


def test_generated_typescript_client_calls_every_operation(npm_tools, demo, document, tmp_path):
    spec, path = document
    generated = CLIENTS / "generated"
    shutil.rmtree(generated, ignore_errors=True)
    generated.mkdir()
    run(
        str(npm_tools / "openapi-typescript"),
        str(path),
        "-o",
        str(generated / "schema.d.ts"),
        cwd=CLIENTS,
    )
    run(str(npm_tools / "tsc"), "-p", "tsconfig.json", cwd=CLIENTS)  # strict: see tsconfig

    origin, key, ingest, workspace, account, token, admin = demo
    output = run(
        "node",
        str(generated / "dist" / "call-every-operation.js"),
        origin,
        key,
        str(tmp_path),
        ingest,
        workspace,
        account,
        token,
        admin,
        cwd=CLIENTS,
    )
    report = json.loads(output.strip().splitlines()[-1])
    assert set(report["called"]) == operation_ids(spec)
    assert "call" in report["activityTypes"]
    assert set(report["eventTypes"]) >= EVENT_TYPES
    recording = Path(report["recording"])
    assert recording.read_bytes() == recording_of(demo, recording.name)
