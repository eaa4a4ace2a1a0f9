"""Errors every backend raises the same way, so handlers never depend on the backend."""

from __future__ import annotations


class StoreError(Exception):
    """The database refused or failed an operation (a conflict, a broken invariant): not the
    client's fault, and retrying it as it is will not help (500; an operator has to look)."""


class StoreUnavailable(StoreError, TimeoutError):
    """The database did not answer in time; the request should be retried later (503)."""


class StoreBusy(StoreUnavailable):
    """The work waited longer than allowed for its turn (a lease, a lock): retry later (503)."""
