"""API keys: HS256 JWTs carrying a key id and a workspace id, checked against a key record.

The signature proves the key was issued here; the key record (cached for at most
`key_cache_seconds`) proves it has not been revoked and says the key's scopes and expiry. The
hot path costs one JWT verification per distinct key (then remembered, LRU-bounded), at most
one indexed lookup per key per cache period, and a comparison with the key's expiry on every
request (so an expired key is refused at once, cache or not). Each use is noted for the key's
`lastUsedAt` (server.keyuse: at most one write per key per minute, off the request's path).
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import hmac
import secrets
import time

import jwt

from server.config import Config, ConfigError
from server.keyuse import KeyUsage
from store.clock import SYSTEM_CLOCK, Clock
from store.contract import AllKeys
from store.keys import DEFAULT_SCOPES, SCOPES, ActiveKey, KeyExpired

EPOCH = dt.datetime(1970, 1, 1)
NEVER = float("inf")

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


def parse_scopes(text: str) -> frozenset[str]:
    """A comma-separated scope list ("read,write"): one or more of store.keys.SCOPES, else
    ValueError."""
    names = [name.strip() for name in text.split(",")]
    if not any(names) or not all(names):
        raise ValueError(f"give one or more of {','.join(SCOPES)}, separated by commas")
    unknown = [name for name in names if name not in SCOPES]
    if unknown:
        raise ValueError(f"unknown scope {unknown[0]!r} (the scopes are {', '.join(SCOPES)})")
    return frozenset(names)


class KeyService:
    def __init__(
        self,
        secret: str,
        keys_store: AllKeys,
        cache_seconds: float = 2.0,
        clock: Clock = SYSTEM_CLOCK,
        cache_size: int = 10_000,
    ) -> None:
        """`clock`'s monotonic time times the cache; its wall time (seconds since the epoch)
        is what expiry and last use are measured in."""
        self._secret = secret
        self._keys = keys_store
        self._ttl = cache_seconds
        self.clock = clock
        self._clock = clock.monotonic
        self._wall = clock.time
        # key -> (cache deadline, the unrevoked key or None, its expiry in epoch seconds)
        self._cache: collections.OrderedDict[str, tuple[float, ActiveKey | None, float]] = (
            collections.OrderedDict()
        )
        self.usage = KeyUsage(keys_store)
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
        # The real time: PyJWT refuses a token issued in the future by the wall clock it reads.
        claims = {"kid": key_id, "wid": workspace_id, "iat": int(time.time())}
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    def utcnow(self) -> dt.datetime:
        """The clock's instant (naive UTC, whole milliseconds)."""
        return self.clock.now()

    async def create(
        self,
        workspace_id: str,
        name: str,
        scopes: frozenset[str] = DEFAULT_SCOPES,
        expires_in: dt.timedelta | None = None,
    ) -> tuple[dict, str]:
        """A new key record and the plain key, which is shown once and never stored. The key
        expires `expires_in` from now (None: never)."""
        expires_at = None if expires_in is None else self.utcnow() + expires_in
        record = await self._keys.create(workspace_id, name, scopes, expires_at)
        return record, self.sign(record["id"], workspace_id)

    async def authenticate(self, token: str) -> ActiveKey | None:
        """The key a valid, unrevoked, unexpired token stands for, else None; KeyExpired when
        it is past its expiry."""
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
            active = await self._keys.find_active(workspace_id, key_id)
            expires = NEVER
            if active is not None and active.expires_at is not None:
                expires = (active.expires_at - EPOCH).total_seconds()
            cached = (now + self._ttl, active, expires)
            self._cache[cache_key] = cached
            self._cache.move_to_end(cache_key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        key = cached[1]
        if key is None:
            return None
        wall = self._wall()
        if wall >= cached[2]:
            raise KeyExpired(key_id)
        self.usage.note(workspace_id, key_id, wall)
        return key

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
