"""Cursors: opaque, signed, stateless continuation tokens of a paginated resource.

A cursor carries the resource, the order, the filters it was made with and the position of the
last record returned (store.paging.Position), as compact JSON in base64url, followed by an HMAC
over the workspace id and that JSON. Nothing is kept on the server, so cursors never expire; a
cursor that was altered, is malformed, belongs to another resource, or was made for another
workspace fails its signature check (InvalidCursor).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import json
from typing import Any

from store.paging import SORTS, Position

EPOCH = dt.datetime(1970, 1, 1)
MAC_BYTES = 16


class InvalidCursor(ValueError):
    """The cursor cannot be used: malformed, altered, or not made for this workspace/resource."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _ms(value: dt.datetime) -> int:
    return (value - EPOCH) // dt.timedelta(milliseconds=1)


def _plain(value: Any) -> Any:
    """Filter values as JSON: instants as {"t": milliseconds}."""
    return {"t": _ms(value)} if isinstance(value, dt.datetime) else value


def _typed(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"t"} and isinstance(value["t"], int):
        return EPOCH + dt.timedelta(milliseconds=value["t"])
    if value is None or isinstance(value, str | int):
        return value
    raise InvalidCursor("unexpected filter value")


class Cursors:
    def __init__(self, key: bytes):
        self._key = key

    def _mac(self, workspace_id: str, payload: bytes) -> bytes:
        message = workspace_id.encode() + b"\0" + payload
        return hmac.new(self._key, message, hashlib.sha256).digest()[:MAC_BYTES]

    def encode(
        self, workspace_id: str, resource: str, sort: str, filters: dict, position: Position | None
    ) -> str:
        body = {
            "r": resource,
            "s": sort,
            "f": {
                name: _plain(value) for name, value in sorted(filters.items()) if value is not None
            },
            "p": [_ms(position.value), position.id] if position else None,
        }
        payload = json.dumps(body, separators=(",", ":")).encode()
        return _b64(payload) + "." + _b64(self._mac(workspace_id, payload))

    def decode(
        self, workspace_id: str, resource: str, token: str
    ) -> tuple[str, dict, Position | None]:
        """(sort, filters, position) of a cursor made by `encode` for this workspace."""
        try:
            payload_text, mac_text = token.split(".")
            payload, mac = _unb64(payload_text), _unb64(mac_text)
        except (ValueError, binascii.Error):
            raise InvalidCursor("the cursor is malformed") from None
        # Only the exact text `encode` makes: base64 decoding alone would let other texts
        # through to the same bytes (characters outside the alphabet, padding, the unused low
        # bits of a last character).
        if _b64(payload) != payload_text or _b64(mac) != mac_text:
            raise InvalidCursor("the cursor is malformed")
        if not hmac.compare_digest(mac, self._mac(workspace_id, payload)):
            raise InvalidCursor("the cursor was altered or was not made for this workspace")
        try:
            body = json.loads(payload)
            resource_of, sort, filters, position = body["r"], body["s"], body["f"], body["p"]
            if resource_of != resource or sort not in SORTS or not isinstance(filters, dict):
                raise ValueError
            if position is not None:
                value, ident = position
                if not isinstance(value, int) or not isinstance(ident, str):
                    raise ValueError
                position = Position(EPOCH + dt.timedelta(milliseconds=value), ident)
            return sort, {name: _typed(value) for name, value in filters.items()}, position
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
            # OverflowError: an instant past datetime's range; RecursionError: JSON nested too
            # deeply. Neither can come from `encode`, but only InvalidCursor may leave here.
            raise InvalidCursor("the cursor is not one of this resource") from None
