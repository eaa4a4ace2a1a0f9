"""APIError, the exception every handler raises for an error reply, and its common shapes.

`handlers.base` re-exports all of these; `APIHandler.write_error` renders them.
"""

from __future__ import annotations

import re

from handlers.problems import PROBLEMS

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)


class APIError(Exception):
    """An error response: a problem code, a detail, optional per-location errors and headers."""

    def __init__(self, code: str, detail: str, errors: list[dict] | None = None,
                 headers: dict | None = None):
        super().__init__(detail)
        self.code, self.detail, self.errors, self.headers = code, detail, errors, headers or {}
        self.status = PROBLEMS[code][0]


def not_found(resource: str) -> APIError:
    """The one 404 for a resource: unknown ids and other workspaces' ids look the same."""
    return APIError("not_found", f"there is no {resource} with this id in your workspace")


def path_uuid(raw: str, resource: str) -> str:
    """A path id in canonical (lower-case) form; a malformed id is simply not found."""
    if not UUID.match(raw):
        raise not_found(resource)
    return raw.lower()


def invalid(errors: list[dict], what: str = "request") -> APIError:
    first = errors[0]
    where = first.get("parameter") or first["pointer"].lstrip("#/") or what
    return APIError("invalid_request", f"{where} {first['detail']}", errors)
