"""API keys: HS256 JWTs carrying a key id and a workspace id, checked against a key record.

The signature proves the key was issued here; the key record (cached for at most
`key_cache_seconds`) proves it has not been revoked. The hot path costs one JWT verification
per distinct key (then remembered, LRU-bounded) and at most one indexed lookup per key per
cache period.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

import jwt

from server.config import Config, ConfigError
from store.contract import Keys

ALGORITHM = "HS256"
MIN_SECRET_LENGTH = 32


def resolve_secret(config: Config) -> str | None:
    """The signing secret: the configured one; a random one for a throwaway store; None on a
    SQLite file without a configured secret (the caller takes the one kept in the file)."""
    if config.secret:
        if len(config.secret) < MIN_SECRET_LENGTH:
            raise ConfigError(f"WSAPI_SECRET must be at least {MIN_SECRET_LENGTH} characters")
        return config.secret
    if config.throwaway:
        return secrets.token_urlsafe(48)
    if config.embedded:
        return None
    raise ConfigError("WSAPI_SECRET must be set when MONGODB_URI points at MongoDB")


class KeyService:
    def __init__(
        self,
        secret: str,
        keys_store: Keys,
        cache_seconds: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        cache_size: int = 10_000,
    ) -> None:
        self._secret = secret
        self._keys = keys_store
        self._ttl = cache_seconds
        self._clock = clock
        self._cache: collections.OrderedDict[str, tuple[float, bool]] = collections.OrderedDict()
        self._cache_size = cache_size
        # Keys whose signature already verified, with their (key id, workspace id): a key's
        # signature cannot stop verifying, so the hot path checks it once per key (revocation
        # stays the job of the timed cache above). Only verified keys get in; LRU-bounded.
        self._verified: collections.OrderedDict[str, tuple[str, str]] = collections.OrderedDict()

    def subkey(self, purpose: str) -> bytes:
        """A key for another signature of the service (cursors), derived from the secret so
        that it is as persistent as the keys and no second secret needs configuring."""
        return hmac.new(
            self._secret.encode(), b"workspace-api:" + purpose.encode(), hashlib.sha256
        ).digest()

    def sign(self, key_id: str, workspace_id: str) -> str:
        claims = {"kid": key_id, "wid": workspace_id, "iat": int(time.time())}
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    async def create(self, workspace_id: str, name: str) -> tuple[dict, str]:
        """A new key record and the plain key, which is shown once and never stored."""
        record = await self._keys.create(workspace_id, name)
        return record, self.sign(record["id"], workspace_id)

    async def authenticate(self, token: str) -> str | None:
        """The workspace id a valid, unrevoked key belongs to, else None."""
        ids = self._verified.get(token)
        if ids is None:
            ids = self._verify(token)
            if ids is None:
                return None
            self._verified[token] = ids
            while len(self._verified) > self._cache_size:
                self._verified.popitem(last=False)
        else:
            self._verified.move_to_end(token)
        key_id, workspace_id = ids
        cache_key = f"{workspace_id}/{key_id}"
        now = self._clock()
        cached = self._cache.get(cache_key)
        if cached is None or cached[0] <= now:
            active = await self._keys.is_active(workspace_id, key_id)
            self._cache[cache_key] = (now + self._ttl, active)
            self._cache.move_to_end(cache_key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            cached = self._cache[cache_key]
        return workspace_id if cached[1] else None

    def _verify(self, token: str) -> tuple[str, str] | None:
        """(key id, workspace id) of a key with a valid signature and claims, else None."""
        try:
            claims = jwt.decode(
                token,
                self._secret,
                algorithms=[ALGORITHM],
                options={"require": ["kid", "wid", "iat"]},
            )
        except jwt.PyJWTError:
            return None
        key_id, workspace_id = claims["kid"], claims["wid"]
        if not (isinstance(key_id, str) and isinstance(workspace_id, str)):
            return None
        return key_id, workspace_id
