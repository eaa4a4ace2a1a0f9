"""Standard Webhooks signatures (standardwebhooks.com): endpoint secrets and the
`webhook-signature` header, so that the specification's published verifiers work unchanged.

A secret is `whsec_` + base64 of 32 random bytes; the HMAC key is those bytes. A signature is
`v1,` + base64(HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")); the header holds one
per secret valid at the time of the attempt, space-separated (both during a rotation's overlap).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import secrets
from collections.abc import Iterable

PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def derived_secret(seed: str, purpose: str) -> str:
    """A secret made from a random `seed` (an Idempotency-Key claim's, kept in the database):
    the same for every attempt of one request."""
    digest = hashlib.sha256(f"{seed}\x1fwebhook-secret\x1f{purpose}".encode()).digest()
    return PREFIX + base64.b64encode(digest).decode()


@functools.lru_cache(maxsize=4096)
def _keyed(secret: str) -> hmac.HMAC:
    """An HMAC-SHA256 keyed with the secret's bytes and fed nothing yet, copied for each
    signature: the key is decoded and padded once (the dispatcher signs with a few secrets
    often), and a copy costs less than keying a new one."""
    return hmac.new(base64.b64decode(secret.removeprefix(PREFIX)), digestmod=hashlib.sha256)


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """One `v1,<base64>` signature of a message with `secret`."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    # An HMAC object, not the one-shot hmac.digest: that one lets go of the GIL for any size,
    # and getting it back from the store's writer thread costs more than the hash.
    mac = _keyed(secret).copy()
    mac.update(signed)
    return "v1," + base64.b64encode(mac.digest()).decode()


def headers(
    secrets_now: Iterable[str], message_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt, signed with every secret valid now."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            signature(secret, message_id, timestamp, body) for secret in secrets_now
        ),
        "content-type": "application/json",
    }
