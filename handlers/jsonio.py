"""Strict JSON reading and the API's JSON writing (timestamps as ISO 8601 UTC with ms).

Writing uses orjson: on the API's real pages (a /calls page of 100, a batch of 500
activities, /users) it encodes 3-3.6 times faster than the standard library with the same
bytes out (`python -m bench.jsonenc`, docs/performance.md). orjson writes datetimes itself, but
only with microseconds or none, so they are passed through to `_default`, which formats them
with the C `isoformat` instead of the per-field `strftime` it replaced. Pages the SQLite store
encoded itself (store.paging.RawJSON) are spliced in as they are.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from typing import Any, NoReturn

import orjson

from store.paging import RawJSON

MAX_DEPTH = 16
MAX_INT = 2**63 - 1


SURROGATE = re.compile("[\ud800-\udfff]")


class JSONInputError(ValueError):
    """The body is not JSON this API accepts; the message says why, `pointer` where ("#": the
    body as a whole)."""

    def __init__(self, message: str, pointer: str = "#"):
        super().__init__(message)
        self.pointer = pointer


class _Refused:
    """Stands, in the parsed value, for a member the parser refused (a number out of range, a
    repeated or reserved key): the parser's hooks do not know where they are, so the walk over
    the value raises at the place it finds one."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


NUL_DETAIL = (
    "must not contain U+0000 (NUL): it is not text that every database can store; leave it out"
)


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if "\x00" in key:
            raise JSONInputError(f"a key holds U+0000 (NUL): {key!r} is not allowed")
        if key in result:
            result[key] = _Refused("is a duplicate key: a key may appear once in an object")
        elif key.startswith("$"):
            result[key] = _Refused("is a key that is not allowed (it starts with $)")
        else:
            result[key] = value
    return result


def _int(text: str) -> int | _Refused:
    if len(text) > 20 or abs(int(text)) > MAX_INT:
        return _Refused("is an integer out of range (at most 2^63 - 1 in size)")
    return int(text)


def _float(text: str) -> float | _Refused:
    value = float(text)
    if not math.isfinite(value):
        return _Refused("is a number out of range")
    return value


def _constant(name: str) -> NoReturn:
    raise JSONInputError(f"{name} is not valid JSON")


def _check(value: Any, limit: int, path: str = "#") -> None:
    """Nesting depth, members the parser refused, and strings that cannot be stored (lone
    surrogates from \\ud800-style escapes, U+0000), anywhere in the value; the error points at
    the place."""
    if limit < 0:
        raise JSONInputError(f"nesting deeper than {MAX_DEPTH} levels", path)
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        where = f"{path}/{key}"
        if isinstance(key, str) and SURROGATE.search(key):
            raise JSONInputError(
                "a key holds a lone surrogate (\\ud800 to \\udfff), which is not text", path
            )
        if isinstance(child, str):
            if SURROGATE.search(child):
                raise JSONInputError(
                    "holds a lone surrogate (\\ud800 to \\udfff escape): not "
                    "text that can be stored; send it as UTF-8",
                    where,
                )
            if "\x00" in child:
                raise JSONInputError(NUL_DETAIL, where)
        elif isinstance(child, dict | list):
            _check(child, limit - 1, where)
        elif type(child) is _Refused:
            raise JSONInputError(child.reason, where)


# The only ways a lone surrogate or a NUL gets into parsed JSON: a \ud800-\udfff or \u0000
# escape (UTF-8 text cannot hold the one, JSON strings cannot hold a raw control character).
ESCAPES_TO_CHECK = re.compile(rb"\\u(?:[dD][89a-fA-F]|0000)")


def parse(body: bytes, walk: bool = True) -> Any:
    """Parse a request body strictly: no duplicate or $-keys, NaN, huge numbers, deep nesting,
    lone surrogates or NUL characters. `walk=False` leaves out the walk over the value, for a
    caller that has found neither escape in `body` (ESCAPES_TO_CHECK), checks the depth itself
    and takes only values of the types it expects (a refused member is an object of its own
    type: the import's fast path for flat call bodies)."""
    try:
        value = json.loads(
            body.decode("utf-8"),
            object_pairs_hook=_pairs,
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except JSONInputError:
        raise
    except UnicodeDecodeError as exc:
        raise JSONInputError("body is not valid UTF-8") from exc
    except RecursionError as exc:
        raise JSONInputError(f"nesting deeper than {MAX_DEPTH} levels") from exc
    except ValueError as exc:
        raise JSONInputError(f"body is not valid JSON: {exc}") from exc
    if not walk:
        return value
    if isinstance(value, str) and SURROGATE.search(value):
        raise JSONInputError("the body holds a lone surrogate")
    if isinstance(value, str) and "\x00" in value:
        raise JSONInputError(f"the body {NUL_DETAIL}")
    if type(value) is _Refused:
        raise JSONInputError(f"the body {value.reason}")
    _check(value, MAX_DEPTH)
    return value


def format_timestamp(value: dt.datetime) -> str:
    """2026-11-21T09:30:00.000Z; naive datetimes are UTC (the store's convention)."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat(timespec="milliseconds") + "Z"


def _default(value: object) -> object:
    if type(value) is dt.datetime and value.tzinfo is None:  # the common case, inlined
        return value.isoformat(timespec="milliseconds") + "Z"
    if type(value) is RawJSON:  # records the store encoded already, written as they are
        return orjson.Fragment(value.text)
    if isinstance(value, dt.datetime):
        return format_timestamp(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    raise TypeError(f"cannot encode {type(value).__name__}")


OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS


def dumps_bytes(value: object) -> bytes:
    """The value as compact UTF-8 JSON."""
    return orjson.dumps(value, default=_default, option=OPTIONS)


def dumps(value: object, indent: int | None = None) -> str:
    """The value as compact JSON text (or indented, for people: the admin CLI)."""
    if indent:
        return json.dumps(
            value, default=_default, ensure_ascii=False, separators=(",", ": "), indent=indent
        )
    return orjson.dumps(value, default=_default, option=OPTIONS).decode()
