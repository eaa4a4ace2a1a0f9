"""Reading query parameters the schema layer leaves as strings: ids, instants, dates, time zones.

The query schema has already checked presence, length and patterns; these turn the strings
into values for the store, or raise a 400 that points at the parameter (`#/query/<name>`).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import zoneinfo
from collections.abc import Callable

from handlers.base import APIError, invalid

# A date alone (midnight UTC), or a date-time with seconds, an optional fraction of up to six
# digits and an optional Z or offset (none: UTC). Matched whole (fullmatch: no trailing newline),
# ASCII digits only, before fromisoformat, which would also take other ISO 8601 forms.
INSTANT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+ -][0-9]{2}:[0-9]{2})?)?"
)
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
INSTANT_FORM = (
    "must be an ISO 8601 date YYYY-MM-DD (midnight UTC) or date-time "
    "YYYY-MM-DDThh:mm:ss with an optional fraction and an optional Z or UTC offset "
    "(none: UTC), such as 2026-11-21, 2026-11-21T09:30:00 or 2026-11-21T09:30:00Z"
)


def problem(name: str, detail: str) -> APIError:
    """The 400 for one bad parameter."""
    return invalid([{"parameter": name, "pointer": f"#/query/{name}", "detail": detail}])


def uuid_param(query: dict, name: str) -> str | None:
    """A UUID parameter (pattern-checked by the schema) in canonical lower case."""
    value = query.get(name)
    return value.lower() if value is not None else None


def instant(query: dict, name: str) -> dt.datetime | None:
    """An instant as the store's naive UTC datetime, rounded up to a whole millisecond so that
    inclusive and exclusive bounds keep their meaning at the store's precision. A date alone is
    00:00:00.000 UTC of that day; a date-time without an offset is UTC."""
    raw = query.get(name)
    if raw is None:
        return None
    if not INSTANT.fullmatch(raw):
        raise problem(name, INSTANT_FORM)
    text = raw.replace(" ", "+").replace("Z", "+00:00")  # a + that arrived unencoded
    try:
        value = dt.datetime.fromisoformat(text)  # a date alone: its midnight
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        if value.microsecond % 1000:
            value += dt.timedelta(microseconds=1000 - value.microsecond % 1000)
    except (ValueError, OverflowError):
        raise problem(name, INSTANT_FORM + " (and a real date and time)") from None
    return value


def date(query: dict, name: str) -> dt.date | None:
    """A calendar date YYYY-MM-DD, in years 1900 to 9998 (so that a day's neighbours and its
    midnight in any time zone exist)."""
    raw = query.get(name)
    if raw is None:
        return None
    try:
        if not DATE.match(raw):
            raise ValueError(raw)
        value = dt.date.fromisoformat(raw)
        if not 1900 <= value.year <= 9998:
            raise ValueError(raw)
    except ValueError:
        raise problem(
            name, "must be a date as YYYY-MM-DD in the years 1900 to 9998, such as 2026-11-21"
        ) from None
    return value


@functools.cache
def _zone_names() -> frozenset[str]:
    # "localtime" would be the server's own zone, "Factory" is a placeholder: not for clients.
    return frozenset(zoneinfo.available_timezones()) - {"localtime", "Factory", "posixrules"}


def timezone(query: dict, name: str, default: str = "UTC") -> zoneinfo.ZoneInfo:
    """An IANA time zone by its exact name (only names of the tz database, never paths)."""
    raw = query.get(name, default)
    if raw not in _zone_names():
        raise problem(name, "must be an IANA time zone name such as America/New_York or UTC")
    return zoneinfo.ZoneInfo(raw)


def phone(query: dict, name: str, normalize: Callable[[str], str | None]) -> str | None:
    """A phone number normalised by the store's `normalize`; unreadable numbers are 400."""
    raw = query.get(name)
    if raw is None:
        return None
    if raw[:1] == " " and raw.strip()[:1].isdigit():
        raw = "+" + raw.strip()  # a leading + that arrived unencoded
    value = normalize(raw)
    if value is None:
        raise problem(
            name, "is not a phone number that can be read; send it in E.164, such as +14155550101"
        )
    return value
