"""The store's notion of now: naive UTC datetimes with millisecond precision (BSON's precision)."""

from __future__ import annotations

import datetime as dt
import uuid


def utcnow() -> dt.datetime:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def new_id() -> str:
    """A new resource id: a random UUID string."""
    return str(uuid.uuid4())
