"""schemas/fastcall.py gives the JSON Schema's verdict: it never accepts a call body that
requests/call-create.json refuses, and it accepts the bodies a dialer sends (so the import's
fast path is taken). Checked on every single-field change of a valid body and on seeded random
combinations of them."""

from __future__ import annotations

import random

import pytest

from schemas import Schemas
from schemas.fastcall import certainly_valid

SCHEMA = "/schemas/requests/call-create.json"
UUID = "7a0e4b7c-5f3e-4d2a-9c1b-2f8d6e4a1b30"
VALID = {
    "userId": UUID,
    "prospectId": UUID.upper(),
    "listId": None,
    "direction": "outbound",
    "disposition": "connected",
    "fromNumber": "+12125550142",
    "toNumber": "(415) 555-0101",
    "startedAt": "2026-11-21T09:30:00Z",
    "answeredAt": "2026-11-21T09:30:05.250+01:00",
    "endedAt": "2026-11-21T09:34:00.123456789z",
    "meetingBooked": True,
    "notes": "Called back ✓",
    "providerCallSid": "CA" + "aB" * 16,
    "recordingSid": "RE" + "0f" * 16,
    "recordingDurationSeconds": 235,
}
ODD_VALUES = [
    None,
    0,
    1,
    -1,
    1.0,
    2.5,
    True,
    False,
    "",
    " ",
    "x",
    "\n",
    [],
    {},
    [UUID],
    {"a": 1},
    UUID,
    UUID + "\n",
    UUID[:-1],
    "2026-11-21T09:30:00Z",
    "2026-11-21T09:30:00",
    "2026-11-21T09:30:00Z\n",
    "2026-11-21 09:30:00Z",
    "2026-11-21T09:30:00+0100",
    "CA" + "1" * 32,
    "ca" + "1" * 32,
    "CA" + "1" * 31,
    "RE" + "1" * 32,
    "RE" + "g" * 32,
    "outbound",
    "inbound",
    "voicemail",
    "connected ",
    "x" * 64,
    "x" * 65,
    "x" * 10001,
    86400,
    86401,
    10**20,
    "+14155550101",
    {"email": "a@b.example"},
    {"email": " "},
]
FIELDS = [*VALID, "prospect", "workspaceId", "id"]


@pytest.fixture(scope="module")
def schemas():
    return Schemas()


def variants():
    yield dict(VALID)
    for field in FIELDS:
        without = {k: v for k, v in VALID.items() if k != field}
        yield without
        for value in ODD_VALUES:
            yield {**VALID, field: value}
            yield {**without, field: value}


def test_the_bodies_a_dialer_sends_take_the_fast_path(schemas):
    minimal = {
        k: VALID[k]
        for k in (
            "userId",
            "direction",
            "disposition",
            "fromNumber",
            "toNumber",
            "startedAt",
            "endedAt",
            "prospectId",
        )
    }
    for body in (VALID, minimal, {**minimal, "answeredAt": None, "notes": None}):
        assert not schemas.errors(SCHEMA, body)
        assert certainly_valid(body)


def test_the_fast_path_never_accepts_what_the_schema_refuses(schemas):
    accepted = 0
    for body in variants():
        if certainly_valid(body):
            accepted += 1
            assert not schemas.errors(SCHEMA, body), body
    assert accepted > 100  # many single changes are valid, and the fast path sees them


def test_random_combinations_agree(schemas):
    rng = random.Random(24)
    fast_valid = 0
    for _ in range(3000):
        body = dict(VALID)
        for _ in range(rng.randint(1, 4)):
            field = rng.choice(FIELDS)
            if rng.random() < 0.2:
                body.pop(field, None)
            else:
                body[field] = rng.choice(ODD_VALUES)
        if certainly_valid(body):
            fast_valid += 1
            assert not schemas.errors(SCHEMA, body), body
    assert fast_valid > 50
