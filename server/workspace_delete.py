"""`workspace-api workspaces delete ID --confirm NAME`: erase a workspace whole, for a customer
who leaves. The steps, in this order, each idempotent, so that running the command again after
a crash, a kill or a provider failure carries on where it stopped
(store/workspace_deletion.py):

1. the workspace is marked as being deleted, its API keys deleted and its webhook endpoints
   disabled: the API stops serving it (its keys answer 401 once each process's key cache,
   `key_cache_seconds`, lapses), the provider's callbacks for it are refused, nothing more is
   sent to its endpoints;
2. a grace of `key_cache_seconds` plus `db_timeout_seconds` from that moment, so that requests
   a process authenticated just before have ended;
3. every recording the store refers to is deleted at the provider (a failure stops the command
   with the provider's reason; what was confirmed gone is forgotten, the rest waits for the
   next run);
4. every record of the workspace is deleted, in bounded batches;
5. on SQLite the scrub truncates the write-ahead log; then the workspace's own record is removed
   and the log truncated again.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sys
from collections.abc import Awaitable, Callable
from typing import Protocol

from server.config import Config
from store.contract import Store

PURGE_BATCH = 1000
RECORDINGS_PAGE = 100


class RecordingDeleter(Protocol):
    """The provider's side of step 3 (telephony.upstream.UpstreamClient)."""

    async def delete_recording(self, ref: str) -> None: ...


class DeleteRefused(Exception):
    """The workspace cannot be (or was not completely) deleted; the message says why and what
    to do."""


def _say(text: str) -> None:
    print(f"workspace-api: {text}", file=sys.stderr, flush=True)


async def delete_workspace(
    store: Store,
    config: Config,
    upstream: RecordingDeleter | None,
    workspace_id: str,
    confirm: str,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> dict:
    """Run the steps above; what was deleted, or DeleteRefused (nothing deleted when the id is
    unknown or `confirm` is not the workspace's current name)."""
    found = await store.workspaces.find(workspace_id)
    if found is None:
        raise DeleteRefused(f"no workspace {workspace_id}")
    if confirm != found["name"]:
        raise DeleteRefused(
            f"--confirm must be the workspace's current name, exactly: nothing was deleted "
            f"(workspace {workspace_id} is named {found['name']!r})"
        )
    workspace = await store.workspaces.begin_delete(workspace_id, store.clock.now())
    if workspace is None:  # removed meanwhile by another run
        raise DeleteRefused(f"no workspace {workspace_id}")
    _say(f"deleting workspace {workspace_id}: keys deleted, webhook endpoints disabled")

    grace = (
        workspace["deletingAt"]
        - store.clock.now()
        + dt.timedelta(seconds=config.key_cache_seconds + config.db_timeout_seconds)
    ).total_seconds()
    if grace > 0:
        await sleep(grace)

    recordings = await _delete_recordings(store, upstream, workspace_id)
    records = 0
    while deleted := await store.workspaces.purge(workspace_id, PURGE_BATCH):
        records += deleted
    _say(f"{recordings} recordings deleted at the provider, {records} records deleted")
    if await store.scrub() is False:
        raise DeleteRefused(
            "every record is deleted, but readers kept the database's write-ahead log from "
            "being truncated: run the command again to finish"
        )
    await store.workspaces.remove(workspace_id)
    scrubbed = await store.scrub()
    if scrubbed is False:
        raise DeleteRefused(
            f"workspace {workspace_id} is deleted, but readers kept the write-ahead log from "
            "being truncated: the workspace's own record (its id and name) stays in the log "
            "until the next checkpoint truncates it"
        )
    return {
        "deleted": {
            "workspace": workspace_id,
            "recordings": recordings,
            "records": records,
            # SQLite: the log truncated; MongoDB: nothing to do for bytes (docs/deployment.md)
            "scrubbed": scrubbed,
        }
    }


async def _delete_recordings(
    store: Store, upstream: RecordingDeleter | None, workspace_id: str
) -> int:
    """Delete at the provider every recording the workspace's records refer to, a page at a
    time, forgetting each page's once the provider confirmed them gone; how many."""
    from telephony.errors import UpstreamError, UpstreamNotFound

    deleted, after = 0, ""
    while page := await store.workspaces.recordings(workspace_id, after, RECORDINGS_PAGE):
        if upstream is None:
            raise DeleteRefused(
                "the workspace has recordings at the telephony provider, but no provider is "
                "configured (provider_url, WSAPI_PROVIDER_URL): configure it and run the "
                "command again (nothing more was deleted)"
            )
        gone = []
        try:
            for key, ref in page:
                # A reference the provider could never have (malformed) has nothing to delete.
                with contextlib.suppress(UpstreamNotFound):
                    await upstream.delete_recording(ref)
                gone.append(key)
        except (UpstreamError, OSError, TimeoutError) as exc:
            why = str(exc) or type(exc).__name__
            raise DeleteRefused(
                f"the telephony provider did not delete a recording ({why}): "
                f"{deleted + len(gone)} recordings deleted so far, no other record deleted yet; "
                "run the command again to carry on"
            ) from None
        finally:
            if gone:
                await store.workspaces.forget_recordings(workspace_id, gone)
        deleted += len(gone)
        after = page[-1][0]
    return deleted
