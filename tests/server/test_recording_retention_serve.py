"""The recording retention sweep as `serve` runs it: a real serving process, configured with
`WSAPI_RECORDING_RETENTION_DAYS`, deletes the recording of a call that ended longer ago at the
simulated provider (on loopback, in the test's own event loop) and then its reference in this
tier's database, and leaves a younger one alone."""

from __future__ import annotations

import asyncio
import time

from server.config import load_config
from server.services import open_services
from telephony.simulated_provider import make_ref, start_provider
from tests.helpers import make_workspace, serving, test_environ
from tests.server.test_recording_retention import recorded_call

ACCOUNT_ID = "AC" + "6b" * 16
AUTH_TOKEN = "serve-retention-secret-77"


async def test_serve_deletes_recordings_past_their_retention(tmp_path):
    provider = await start_provider(account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN)
    environ = test_environ(
        WSAPI_EXPIRY_SWEEP_SECONDS="0.2",
        WSAPI_RECORDING_RETENTION_DAYS="30",
        WSAPI_PROVIDER_URL=provider.base_url,
        WSAPI_PROVIDER_ACCOUNT_ID=ACCOUNT_ID,
        WSAPI_PROVIDER_AUTH_TOKEN=AUTH_TOKEN,
        # The provider answers from this test's event loop, which waits while `serving` starts
        # the process: a delete sent meanwhile must not time out.
        WSAPI_PROVIDER_HEADER_TIMEOUT="120",
    )
    if environ["MONGODB_URI"] == "memory":  # a file that the test and `serve` share
        environ.update(MONGODB_URI="", WSAPI_SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    store, auth = await open_services(load_config(environ=environ))
    try:
        workspace = await make_workspace(store, auth, "Retained")
        old_ref, young_ref = make_ref("old call"), make_ref("young call")
        old = (await recorded_call(store, workspace, 31, old_ref))["id"]
        young = (await recorded_call(store, workspace, 29, young_ref))["id"]
        with serving(tmp_path, env=environ) as (_origin, log):
            deadline = time.monotonic() + 60
            while await store.calls.recording_ref(workspace.id, old) is not None:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                await asyncio.sleep(0.1)
        assert provider.stats.deleted == [old_ref]
        assert provider.library.get(old_ref) is None
        assert (await store.calls.get(workspace.id, old))["hasRecording"] is False
        assert await store.calls.recording_ref(workspace.id, young) == young_ref
        assert provider.stats.deletes_of(young_ref) == []
        assert AUTH_TOKEN not in log.read_text()
    finally:
        await provider.stop()
        await auth.usage.stop()
        if store.backend == "mongodb":
            await store.drop()
        await store.close()
