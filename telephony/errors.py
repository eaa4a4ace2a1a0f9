"""The failures the provider client reports to its callers (handlers/recordings.py maps them to
the API's problems). Their messages never name the provider's host, path or credentials."""

from __future__ import annotations


class UpstreamNotFound(Exception):
    """The provider has no such recording (the API answers 404)."""


class UpstreamRangeNotSatisfiable(Exception):
    """The provider refused the range (the API answers 416)."""

    def __init__(self, complete_length: int | None):
        super().__init__("range not satisfiable")
        self.complete_length = complete_length


class UpstreamError(Exception):
    """The provider failed or misbehaved (the API answers 502, or aborts mid-body)."""


class DownstreamClosed(Exception):
    """The socket a body was spliced to failed or was closed (the client went away)."""
