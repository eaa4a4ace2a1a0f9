"""APIError, the exception every handler raises for an error reply, and its common shapes.

`handlers.base` re-exports all of these; `APIHandler.write_error` renders them.
"""

from __future__ import annotations

import re

from schemas.problems import PROBLEMS

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)


class APIError(Exception):
    """An error response: a problem code, a detail, optional per-location errors and headers,
    and members of the problem body of its own (`extra`, e.g. `callId` of `call_exists`)."""

    def __init__(
        self,
        code: str,
        detail: str,
        errors: list[dict] | None = None,
        headers: dict | None = None,
        extra: dict | None = None,
    ):
        super().__init__(detail)
        self.code, self.detail, self.errors, self.headers = code, detail, errors, headers or {}
        self.extra = extra or {}
        self.status = PROBLEMS[code][0]


def not_found(resource: str) -> APIError:
    """The one 404 for a resource: unknown ids and other workspaces' ids look the same."""
    return APIError("not_found", f"there is no {resource} with this id in your workspace")


def path_uuid(raw: str, resource: str) -> str:
    """A path id in canonical (lower-case) form; a malformed id is simply not found."""
    if not UUID.match(raw):
        raise not_found(resource)
    return raw.lower()


def location(pointer: str) -> str:
    """A JSON pointer in words: #/contacts/3/email -> contacts[3].email."""
    where = ""
    for part in pointer.lstrip("#").strip("/").split("/"):
        where += f"[{part}]" if part.isdigit() else (f".{part}" if where else part)
    return where


def invalid(errors: list[dict], what: str = "request") -> APIError:
    """A 400 whose detail names the first problem; `errors` lists every one."""
    first = errors[0]
    where = first.get("parameter") or location(first["pointer"]) or what
    if len(errors) > 1:
        return APIError(
            "invalid_request",
            f"{where} {first['detail']} (and {len(errors) - 1} more problem(s), see errors)",
            errors,
        )
    return APIError("invalid_request", f"{where} {first['detail']}", errors)


def invalid_cursor(reason: str, parameter: str = "cursor") -> APIError:
    """The 400 `invalid_cursor` for a cursor the API did not make for this workspace and
    resource (malformed, altered, or another's): `reason` says which, never more."""
    return APIError(
        "invalid_cursor",
        f"{parameter}: {reason}; start again without a cursor",
        [{"parameter": parameter, "pointer": f"#/query/{parameter}", "detail": reason}],
    )
