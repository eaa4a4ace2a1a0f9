"""The cursor codec (store/cursors.py) on its own: every sort and every kind of filter value
comes back as it went in; a cursor altered in any byte, truncated anywhere, made for another
workspace, another resource or under another key, or plain garbage, is InvalidCursor and
nothing else. (Over HTTP: tests/handlers/test_cursors.py.)"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.cursors import Cursors, InvalidCursor
from store.paging import SORTS, Position

KEY = bytes(range(32))
CODEC = Cursors(KEY)
WS = "0b7f6f4e-3d0a-4a55-9c8e-3f2d1b0a9c11"
OTHER_WS = "5d2c1a0b-9e8f-4d7c-8b6a-5f4e3d2c1b0a"
MS = dt.timedelta(milliseconds=1)
ALPHABET = string.ascii_letters + string.digits + "-_"  # base64url, unpadded

FILTERS = {
    "none": {},
    "ids": {"user_id": "9f1c0e4a-0000-4000-8000-000000000001", "list_id": None},
    "text": {"email": "ann.o'neil+x@exämple.com", "phone": "+14155550101", "q": 'a"b\\c\u2028'},
    "instants": {
        "created_from": dt.datetime(2026, 3, 8, 5, 0, 0, 123000),
        "created_to": dt.datetime(9998, 12, 31, 23, 59, 59, 999000),
        "updated_since": dt.datetime(1969, 12, 31, 23, 59, 59, 999000),  # before the epoch
    },
    "numbers": {"page_size": 100, "zero": 0, "negative": -7, "flag": True},
    "strings that look typed": {"a": '{"t": 1}', "b": "2026-01-01T00:00:00Z", "c": ""},
}
POSITIONS = {
    "start": None,
    "epoch": Position(dt.datetime(1970, 1, 1), "id-0"),
    "ms": Position(
        dt.datetime(2026, 11, 21, 9, 30, 0, 1000), "c0ffee00-0000-4000-8000-000000000000"
    ),
    "before the epoch": Position(dt.datetime(1900, 1, 1, 0, 0, 0, 1000), "x"),
}


@pytest.mark.parametrize("position", POSITIONS.values(), ids=POSITIONS)
@pytest.mark.parametrize("filters", FILTERS.values(), ids=FILTERS)
@pytest.mark.parametrize("sort", SORTS)
def test_a_cursor_round_trips_its_sort_filters_and_position(sort, filters, position):
    token = CODEC.encode(WS, "calls", sort, filters, position)
    assert set(token) <= set(ALPHABET + ".")  # safe in a query string as it is
    expected = {name: value for name, value in filters.items() if value is not None}
    assert CODEC.decode(WS, "calls", token) == (sort, expected, position)
    # The same input makes the same cursor (the order of the filters does not matter).
    reordered = dict(reversed(list(filters.items())))
    assert CODEC.encode(WS, "calls", sort, reordered, position) == token


def token() -> str:
    return CODEC.encode(
        WS,
        "calls",
        "-createdAt",
        {"user_id": "u-1", "created_from": dt.datetime(2026, 1, 1)},
        Position(dt.datetime(2026, 1, 2, 3, 4, 5, 6000), "id-1"),
    )


def invalid(text: str, workspace_id: str = WS, resource: str = "calls", codec=CODEC) -> bool:
    try:
        codec.decode(workspace_id, resource, text)
    except InvalidCursor:
        return True
    return False


def test_any_byte_replaced_makes_the_cursor_invalid():
    """Every position, every other base64url character (including the last character of each
    part, whose low bits a lenient decoder would ignore) and characters outside the alphabet."""
    original = token()
    accepted = [
        (index, char)
        for index in range(len(original))
        for char in ALPHABET + ".=+/ !\n\x00é"
        if char != original[index] and not invalid(original[:index] + char + original[index + 1 :])
    ]
    assert accepted == []


def test_any_character_inserted_makes_the_cursor_invalid():
    original = token()
    accepted = [
        (index, char)
        for index in range(len(original) + 1)
        for char in "A.=+/ \n"
        if not invalid(original[:index] + char + original[index:])
    ]
    assert accepted == []


def test_every_truncation_is_invalid():
    original = token()
    assert all(invalid(original[:end]) for end in range(len(original)))
    assert all(invalid(original[start:]) for start in range(1, len(original)))


def test_a_cursor_of_another_workspace_resource_or_key_is_invalid():
    original = token()
    assert not invalid(original)
    assert invalid(original, workspace_id=OTHER_WS)
    assert invalid(original, workspace_id=WS.upper())
    assert invalid(original, resource="prospects")
    assert invalid(original, codec=Cursors(bytes(32)))
    # Another workspace's payload with this workspace's signature part is no better.
    theirs = CODEC.encode(OTHER_WS, "calls", "-createdAt", {}, None)
    assert invalid(theirs.split(".")[0] + "." + original.split(".")[1])
    assert invalid(original.split(".")[0] + "." + theirs.split(".")[1])


GARBAGE = [
    "",
    ".",
    "..",
    "a.b.c",
    "null",
    "é.é",
    "=.=",
    "%2E",
    "eyJyIjoiY2FsbHMifQ",  # a payload without its signature
    "eyJyIjoiY2FsbHMifQ.",
    "." + "A" * 22,
    "A" * 10_000 + "." + "A" * 22,
    "\x00\x01.\x02",
]


@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_is_invalid(text):
    assert invalid(text)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed(payload: bytes) -> str:
    """A cursor with a valid signature around any payload: what only a holder of the key could
    make, checked so that decode's own checks are not all that stands behind the signature."""
    return b64(payload) + "." + b64(CODEC._mac(WS, payload))


GOOD = {"r": "calls", "s": "-createdAt", "f": {}, "p": None}
SIGNED_BUT_WRONG = {
    "not json": b"{r: calls}",
    "not utf-8": b'{"r": "\xff"}',
    "a list": b"[]",
    "missing sort": json.dumps({k: v for k, v in GOOD.items() if k != "s"}).encode(),
    "unknown sort": json.dumps({**GOOD, "s": "name"}).encode(),
    "filters not an object": json.dumps({**GOOD, "f": []}).encode(),
    "a float filter": json.dumps({**GOOD, "f": {"a": 1.5}}).encode(),
    "a list filter": json.dumps({**GOOD, "f": {"a": [1]}}).encode(),
    "an object filter": json.dumps({**GOOD, "f": {"a": {"t": "1"}}}).encode(),
    "an instant out of range": json.dumps({**GOOD, "f": {"a": {"t": 10**20}}}).encode(),
    "a position of three": json.dumps({**GOOD, "p": [1, "a", 2]}).encode(),
    "a position of text": json.dumps({**GOOD, "p": ["1", "a"]}).encode(),
    "a position without id": json.dumps({**GOOD, "p": [1, 2]}).encode(),
    "a position out of range": json.dumps({**GOOD, "p": [-(10**18), "a"]}).encode(),
    "another resource": json.dumps({**GOOD, "r": "prospects"}).encode(),
    "deeply nested": b'{"r": "calls", "s": "-createdAt", "f": {"a": ' + b"[" * 100_000 + b"}}",
}


@pytest.mark.parametrize("payload", SIGNED_BUT_WRONG.values(), ids=SIGNED_BUT_WRONG)
def test_a_signed_payload_of_the_wrong_shape_is_invalid(payload):
    assert not invalid(signed(json.dumps(GOOD).encode()))
    assert invalid(signed(payload))


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(alphabet=ALPHABET + ".=", max_size=200) | st.text(max_size=200))
def test_decoding_any_text_is_a_result_or_invalid_cursor(text):
    with contextlib.suppress(InvalidCursor):
        CODEC.decode(WS, "calls", text)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.fixed_dictionaries(
        {"r": st.sampled_from(["calls", "prospects"]) | JSON, "s": st.sampled_from(list(SORTS))},
        optional={"f": st.dictionaries(st.text(), JSON, max_size=3), "p": JSON},
    )
)
def test_decoding_any_signed_json_is_a_result_or_invalid_cursor(body):
    try:
        sort, filters, position = CODEC.decode(WS, "calls", signed(json.dumps(body).encode()))
    except InvalidCursor:
        return
    assert sort in SORTS and isinstance(filters, dict)
    assert position is None or isinstance(position, Position)
