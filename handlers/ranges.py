"""Byte ranges (RFC 9110 section 14), for recordings and the console's static assets.

`parse_range` turns a client's Range header into one `ByteRange`, None (send the whole
recording) or `InvalidRange` (416). `ByteRange.delivered` checks that the provider's 206 is
exactly the range that was asked for. Choices where the RFC leaves room:

- Several ranges (``bytes=0-1,5-9``) get the whole recording with 200 rather than a
  multipart/byteranges body, which RFC 9110 allows (a server MAY ignore Range).
- A malformed header (garbage, an unknown unit, an end before its start) and ``bytes=-0``
  get 416 rather than being ignored, so a client's mistake does not pass silently.
- Positions of any length are read. An end past the end of the representation is the last
  byte (RFC 9110 14.1.2), however many digits it has (``bytes=0-9223372036854775807``, what
  a client sends for "to the end", and longer); a suffix longer than the representation is
  all of it; a start of more than MAX_DIGITS digits is past the end of anything (416). Such
  numbers are compared by their digits, never converted (int() of thousands of digits is
  slow, and refused past 4,300).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from handlers.errors import APIError

RANGE_SPEC = re.compile(r"^([0-9]*)-([0-9]*)$")  # ASCII digits only, unlike \d
MAX_DIGITS = 18  # positions of more digits are past the end of any representation
STRONG_ETAG = re.compile(r'^"[\x21\x23-\x7e]*"$')
ETAG = re.compile(r'^(W/)?"[\x21\x23-\x7e]*"$')


class InvalidRange(Exception):
    """The Range header is malformed or cannot be satisfied whatever the length (416)."""


@dataclass(frozen=True)
class ByteRange:
    """One range: ``first``-``last`` (``last`` None: to the end), or, when ``suffix`` is
    set, the final ``suffix`` bytes."""

    first: int = 0
    last: int | None = None
    suffix: int | None = None

    def header(self) -> str:
        """The Range header that asks for exactly this range."""
        if self.suffix is not None:
            return f"bytes=-{self.suffix}"
        return f"bytes={self.first}-{'' if self.last is None else self.last}"

    def resolve(self, length: int) -> tuple[int, int] | None:
        """First and last byte within a representation of `length` bytes (the end clamped),
        or None when the range is unsatisfiable."""
        if self.suffix is not None:
            return (max(0, length - self.suffix), length - 1) if length and self.suffix else None
        if self.first >= length:
            return None
        return self.first, length - 1 if self.last is None else min(self.last, length - 1)

    def delivered(self, start: int, end: int, length: int | None) -> bool:
        """Whether a 206 of bytes start-end/length (None: ``*``) answers this range."""
        if length is not None:
            return self.resolve(length) == (start, end)
        if self.suffix is not None:
            return end - start + 1 <= self.suffix
        return start == self.first and (self.last is None or end <= self.last)


def parse_range(value: str | None) -> ByteRange | None:
    """The single range asked for, or None for the whole recording (no header, or several
    ranges); raises InvalidRange for a malformed header or ``bytes=-0``."""
    if value is None:
        return None
    unit, sep, spec = value.partition("=")
    if not sep or unit.strip().lower() != "bytes":
        raise InvalidRange("only byte ranges are supported")
    ranges = []
    for element in spec.split(","):
        element = element.strip()
        if not element:
            continue  # empty list elements are allowed and ignored (RFC 9110 section 5.6.1)
        match = RANGE_SPEC.match(element)
        if not match:
            raise InvalidRange("malformed range")
        first, last = (digits.lstrip("0") or ("0" if digits else "") for digits in match.groups())
        if first:
            if last and (len(last), last) < (len(first), first):
                raise InvalidRange("a range cannot end before it starts")
            if len(first) > MAX_DIGITS:  # past the end of any representation
                ranges.append(ByteRange(10**MAX_DIGITS))
            else:  # an end of more digits than that is past the end too: to the end
                end = int(last) if last and len(last) <= MAX_DIGITS else None
                ranges.append(ByteRange(int(first), end))
        elif last and last != "0":
            # A suffix of more digits than any length is the whole representation.
            ranges.append(ByteRange(0) if len(last) > MAX_DIGITS else ByteRange(suffix=int(last)))
        else:
            raise InvalidRange("malformed range" if not last else "an empty suffix range")
    if not ranges:
        raise InvalidRange("no range given")
    return ranges[0] if len(ranges) == 1 else None


def unsatisfiable(length: int | None, what: str) -> APIError:
    """The 416 of a Range header that is invalid or outside `what` (of `length` bytes; None:
    unknown)."""
    headers = {"Content-Range": f"bytes */{length}"} if length is not None else {}
    return APIError(
        "range_not_satisfiable", f"the Range header is invalid or outside the {what}", None, headers
    )
