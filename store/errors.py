"""Errors every backend raises the same way, so handlers never depend on the backend."""

from __future__ import annotations


class StoreError(Exception):
    """The database refused or failed an operation (a conflict, a broken invariant): not the
    client's fault, and retrying it as it is will not help (500; an operator has to look)."""


class StoreUnavailable(StoreError, TimeoutError):
    """The database did not answer in time or cannot do the work now (a full disk, an I/O
    error); the request should be retried later (503). The message is the database's own reason
    (never data, never a URI or a credential), for the log."""


class StoreBusy(StoreUnavailable):
    """The work waited longer than allowed for its turn (a lease, a lock): retry later (503)."""


class StoreUnusable(StoreUnavailable):
    """The database cannot be used as it is, and waiting will not change that: it cannot be
    opened, is not a database, is truncated or damaged, or cannot be written. A request gets
    503; at start-up the process ends with exit code 2. The message is one line for the
    operator: what, which file, what to do."""


class StoreDamaged(StoreUnusable):
    """The database's file is damaged (a malformed page, not a database): a request that
    touches it gets 503, readiness fails, and the file has to be restored from a backup."""
