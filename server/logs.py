"""Logging: one JSON object per line on stderr, for operator messages and the access log alike.

Access lines carry requestId, workspaceId, method, path, status and durationMs, never headers,
bodies or the query string. As a second line of defence every line is scrubbed of bearer
tokens, anything shaped like an API key (a JWT) or a piece of one, credentials in URLs, and the
configured secrets (signing secret, provider credentials and URL), wherever they come from: our
code (a client's X-Request-Id), Tornado's messages about malformed requests, or a traceback.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

import orjson

if TYPE_CHECKING:
    from tornado.web import RequestHandler

    from server.config import Config

access = logging.getLogger("workspace_api.access")
ACCESS_MESSAGE = "%(method)s %(path)s %(status)s"

REDACTED = "[redacted]"
BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")  # our API keys
URL_CREDENTIALS = re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")  # user:password@ in a URL
# A part of a key on its own, such as its signature in a client's X-Request-Id: a run of 40
# or more base64url characters that mixes upper and lower case (hex ids and UUIDs do not; the
# case is looked at in `_piece`).
RUN = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{40,}(?![A-Za-z0-9_-])")
UPPER, LOWER = re.compile(r"[A-Z]"), re.compile(r"[a-z]")
# RUN's characters as "a", every other byte (UTF-8's multi-byte ones too) as a space: a line
# whose translation holds no 40 "a"s in a row has no run to look at. bytes.translate and a
# substring search are C loops, a fraction of the regex's step per position (every line is
# scrubbed, and an access line has no run).
_RUN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_RUN_TABLE = bytes(0x61 if byte in _RUN_BYTES else 0x20 for byte in range(256))
_RUN_FLOOR = b"a" * 40


def _piece(match: re.Match[str]) -> str:
    run = match.group(0)
    return REDACTED if UPPER.search(run) and LOWER.search(run) else run


def scrub(text: str) -> str:
    """`text` without bearer tokens, API keys or URL credentials. Each pattern runs only when a
    substring it cannot match without is there (found in C, a fraction of a regex's scan): an
    access line holds none of them, and is written for every request."""
    lower = text.lower()
    if "bearer" in lower or "basic" in lower:
        text = BEARER.sub(lambda m: m.group(1) + " " + REDACTED, text)
    if "eyJ" in text:
        text = JWT.sub(REDACTED, text)
    if "://" in text:
        text = URL_CREDENTIALS.sub(REDACTED, text)
    if _RUN_FLOOR not in text.encode("utf-8", "surrogatepass").translate(_RUN_TABLE):
        return text
    return RUN.sub(_piece, text)


class JSONFormatter(logging.Formatter):
    def __init__(self, secrets: Iterable[str] = ()):
        super().__init__()
        # As written and as escaped inside a JSON string; longest first, so a secret that
        # contains another one is removed whole.
        forms = {form for s in secrets if s and len(s) >= 6 for form in (s, json.dumps(s)[1:-1])}
        self.secrets = sorted(forms, key=len, reverse=True)
        self._second, self._second_text = -1, ""

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return scrub(text)

    def stamp(self, created: float) -> str:
        """ISO 8601 UTC with milliseconds; the part to the second is made once per second."""
        second = int(created)
        if second != self._second:
            when = dt.datetime.fromtimestamp(second, dt.UTC)
            self._second, self._second_text = second, when.strftime("%Y-%m-%dT%H:%M:%S")
        return f"{self._second_text}.{int((created - second) * 1000):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": self.stamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        try:  # orjson: the same compact-enough UTF-8 JSON at a fraction of the cost per line
            text = orjson.dumps(line, default=str).decode()
        except TypeError:  # e.g. a lone surrogate in an exception's text
            text = json.dumps(line, ensure_ascii=False, default=str)
        return self.redact(text)


def secrets_of(config: Config) -> list[str]:
    """The configured values that must never appear in a log line."""
    from urllib.parse import urlsplit

    values = [
        config.secret,
        config.provider_auth_token,
        config.provider_account_id,
        config.provider_url,
    ]
    if config.provider_url:
        values.append(urlsplit(config.provider_url).netloc)
    return [value for value in values if value]


def setup_logging(
    level: str = "info", secrets: Iterable[str] = (), stream: TextIO | None = None
) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JSONFormatter(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # No line carries a thread's or a multiprocessing process's name: not looking them up for
    # every record is a third of making one (an access line is made for every request).
    logging.logThreads = False
    logging.logMultiprocessing = False
    # The access log is already structured; tornado's own access log would duplicate it.
    logging.getLogger("tornado.access").disabled = True


def access_log(handler: RequestHandler) -> None:
    """The Application's log_function: one line per request."""
    request = handler.request
    line = {
        "requestId": getattr(handler, "request_id", None),
        "workspaceId": getattr(handler, "workspace_id", None),
        "method": request.method,
        "path": scrub(request.path),  # a client may put anything there, even its key
        "status": handler.get_status(),
        "durationMs": round(request.request_time() * 1000, 2),
    }
    # The formatter writes `fields`; the message is only for other handlers (formatted lazily).
    # The record is made here rather than by access.info(), which would walk the stack for the
    # caller's file and line on every request (no line shows them): half of the line's cost.
    if access.isEnabledFor(logging.INFO):
        access.handle(
            access.makeRecord(
                access.name,
                logging.INFO,
                __file__,
                0,
                ACCESS_MESSAGE,
                (line,),
                None,
                extra={"fields": line},
            )
        )
