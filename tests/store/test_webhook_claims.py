"""Claiming webhook deliveries (store.contract.WebhookDeliveries.claim and release) on every
backend: never more than `per_endpoint` in flight per endpoint across owners, claims `ahead` only
for an owner no other owner shares the endpoint with (SQLite; MongoDB never claims ahead), and a
released claim is due again at once with its attempt not counted. The dispatcher that uses them:
tests/webhooks/test_delivery.py."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import pytest

from store.clock import new_id, utcnow
from store.database import open_store
from store.events import StoredEvent
from store.sqlite.schema import ms
from store.webhooks import Attempt, allowance
from webhooks.signing import new_secret

LEASE = dt.timedelta(seconds=60)


async def endpoint_with(store, workspace: str, count: int) -> str:
    now = utcnow()
    endpoint = await store.webhook_endpoints.create(
        workspace, "https://hooks.example.com/in", None, None, new_secret(), now
    )
    events = [
        StoredEvent(
            new_id(),
            "list.created",
            now - dt.timedelta(seconds=count - n),
            json.dumps({"n": n}),
        )
        for n in range(count)
    ]
    assert await store.webhook_deliveries.add(workspace, endpoint["id"], 0, events, now) == count
    return endpoint["id"]


def per(claims, endpoint_id: str) -> int:
    return sum(claim.endpoint_id == endpoint_id for claim in claims)


def delivered(claims) -> list:
    now = utcnow()
    return [(claim, Attempt(now, 200, 3, None, None, True)) for claim in claims]


@pytest.mark.parametrize(
    "own, others, expected",
    [
        (0, 0, (4, 4)),  # alone: its slots, then as many ahead
        (4, 0, (0, 4)),
        (6, 0, (0, 2)),
        (8, 0, (0, 0)),
        (0, 1, (3, 0)),  # shared: what the others leave, nothing ahead
        (2, 1, (1, 0)),
        (0, 5, (0, 0)),  # another owner took ahead: nothing
    ],
)
def test_the_allowance(own, others, expected):
    assert allowance(4, 4, own, others) == expected
    assert allowance(4, 0, own, others)[1] == 0  # no ahead asked: none given


async def test_an_owner_alone_claims_ahead_and_another_waits(store):
    endpoint = await endpoint_with(store, "ws-a", 20)
    deliveries = store.webhook_deliveries
    first = await deliveries.claim(utcnow(), LEASE, 64, 4, owner="one", ahead=4)
    ahead = 4 if store.backend == "sqlite" else 0
    assert per(first, endpoint) == 4 + ahead
    assert all(claim.token.startswith("one.") for claim in first)
    assert await deliveries.claim(utcnow(), LEASE, 64, 4, owner="two", ahead=4) == []
    # Four end: the first owner takes four more (it holds every lease); the second still waits.
    again = await deliveries.claim(
        utcnow(), LEASE, 64, 4, delivered(first[:4]), owner="one", ahead=4
    )
    assert per(again, endpoint) == 4
    assert await deliveries.claim(utcnow(), LEASE, 64, 4, owner="two", ahead=4) == []
    # Every one ends: the second owner gets its turn.
    held = first[4:] + again
    turn = await deliveries.claim(utcnow(), LEASE, 64, 4, delivered(held), owner="two", ahead=4)
    assert per(turn, endpoint) == 4 + ahead


async def test_a_shared_endpoint_is_never_claimed_ahead(store):
    endpoint = await endpoint_with(store, "ws-a", 20)
    deliveries = store.webhook_deliveries
    one = await deliveries.claim(utcnow(), LEASE, 1, 4, owner="one", ahead=4)  # limit 1
    assert per(one, endpoint) == 1
    two = await deliveries.claim(utcnow(), LEASE, 64, 4, owner="two", ahead=4)
    assert per(two, endpoint) == 3  # the slots left; nothing ahead beside another owner
    assert await deliveries.claim(utcnow(), LEASE, 64, 4, owner="one", ahead=4) == []
    assert await deliveries.claim(utcnow(), LEASE, 64, 4) == []  # nor without an owner


async def test_every_due_endpoint_gets_its_slots_before_any_claims_ahead(store):
    endpoints = [await endpoint_with(store, "ws-a", 10) for _ in range(3)]
    claims = await store.webhook_deliveries.claim(utcnow(), LEASE, 14, 4, owner="one", ahead=4)
    assert len(claims) == (14 if store.backend == "sqlite" else 12)
    assert all(per(claims, endpoint) >= 4 for endpoint in endpoints)


async def test_a_released_claim_is_due_again_with_its_attempt_uncounted(store):
    endpoint = await endpoint_with(store, "ws-a", 2)
    deliveries = store.webhook_deliveries
    claims = await deliveries.claim(utcnow(), LEASE, 64, 4, owner="one")
    assert [claim.attempt for claim in claims] == [1, 1]
    await deliveries.release(claims, utcnow())
    await deliveries.release(claims, utcnow())  # a second time: nothing more happens
    again = await deliveries.claim(utcnow(), LEASE, 64, 4, owner="two")
    assert sorted(claim.delivery_id for claim in again) == sorted(c.delivery_id for c in claims)
    assert [claim.attempt for claim in again] == [1, 1]
    assert per(again, endpoint) == 2
    # A stale release (the lease is another owner's now) leaves the new claim alone.
    await deliveries.release(claims, utcnow())
    assert await deliveries.claim(utcnow(), LEASE, 64, 4, owner="three") == []


async def test_the_backlog_counts_pending_deliveries_of_every_workspace(store):
    """webhook_deliveries.backlog (the wsapi_webhook_backlog metric): pending deliveries, claimed
    or not, every workspace together; delivered and failed ones are not counted."""
    deliveries = store.webhook_deliveries
    assert await deliveries.backlog() == 0
    await endpoint_with(store, "ws-a", 3)
    await endpoint_with(store, "ws-b", 2)
    assert await deliveries.backlog() == 5
    claims = await deliveries.claim(utcnow(), LEASE, 64, 4, owner="one")
    assert len(claims) == 5
    assert await deliveries.backlog() == 5  # in flight is still pending
    now = utcnow()
    failed = [(claims[0], Attempt(now, 500, 3, "http 500", None, False))]  # no retry left
    await deliveries.finish([*delivered(claims[1:3]), *failed])
    assert await deliveries.backlog() == 2


async def test_a_lease_that_ends_leaves_its_deliveries_due_and_its_late_outcome_unrecorded(store):
    """An attempt whose process died: its deliveries are due again once its lease ends (not
    before), with that attempt counted; the outcome of an attempt that outlived its lease
    records the attempt but changes no delivery, and the new lease's outcome does."""
    endpoint = await endpoint_with(store, "ws-a", 2)
    deliveries = store.webhook_deliveries
    now = utcnow()
    lost = await deliveries.claim(now, LEASE, 64, 4, owner="one")
    assert [claim.attempt for claim in lost] == [1, 1]
    assert await deliveries.claim(now + LEASE / 2, LEASE, 64, 4, owner="two") == []
    later = now + LEASE + dt.timedelta(seconds=1)
    again = await deliveries.claim(later, LEASE, 64, 4, owner="two")
    assert sorted(claim.delivery_id for claim in again) == sorted(c.delivery_id for c in lost)
    assert [claim.attempt for claim in again] == [2, 2]
    await deliveries.finish(delivered(lost))  # late: the deliveries are the second owner's
    assert await deliveries.backlog() == 2
    await deliveries.finish(delivered(again))
    assert await deliveries.backlog() == 0
    attempts = await deliveries.page("ws-a", endpoint, None, 10)
    assert sorted(row["attempt"] for row in attempts.attempts) == [1, 1, 2, 2]


@pytest.mark.sqlite
async def test_a_claim_writes_no_delivery_row(store):
    """On SQLite a claim's lease is a row of webhook_leases per endpoint (the ids it holds):
    the deliveries' rows are written when added and when their attempts end, not between."""
    await endpoint_with(store, "ws-a", 3)
    deliveries = store.webhook_deliveries
    before = await store.documents("webhook_deliveries")
    claims = await deliveries.claim(utcnow(), LEASE, 64, 4, owner="one")
    assert await store.documents("webhook_deliveries") == before
    [lease] = await store.documents("webhook_leases")
    assert sorted(json.loads(lease["deliveries"])) == sorted(c.delivery_id for c in claims)
    await deliveries.finish(delivered(claims[:2]))
    [lease] = await store.documents("webhook_leases")
    assert json.loads(lease["deliveries"]) == [claims[2].delivery_id]
    await deliveries.release(claims[2:], utcnow())
    assert await store.documents("webhook_leases") == []
    states = sorted(row["state"] for row in await store.documents("webhook_deliveries"))
    assert states == ["delivered", "delivered", "pending"]


@pytest.mark.sqlite
async def test_an_older_sqlite_file_keeps_its_leases_apart(tmp_path):
    """A file whose deliveries held their leases in columns of their own (leaseToken,
    leaseUntil, and the indexes of that time) opens: the retired indexes go, the leases table
    and the new indexes come, and a delivery that was in flight there is due when its lease
    ends, not before."""
    path = tmp_path / "older.sqlite3"
    store = open_store("", "unused", sqlite_path=str(path))
    try:
        await store.ensure_indexes()
        await endpoint_with(store, "ws-a", 1)
    finally:
        await store.close()
    ends = utcnow() + LEASE
    with sqlite3.connect(path) as conn:  # as that version left it, mid-attempt
        conn.execute("DROP TABLE webhook_leases")
        for index in ("ended", "by_endpoint", "pending_due"):
            conn.execute(f"DROP INDEX webhook_deliveries_{index}")
        conn.execute(
            "CREATE INDEX webhook_deliveries_due_endpoint ON webhook_deliveries "
            "(state, endpointId, nextAttemptAt)"
        )
        conn.execute("ALTER TABLE webhook_deliveries ADD COLUMN leaseToken TEXT")
        conn.execute("ALTER TABLE webhook_deliveries ADD COLUMN leaseUntil INTEGER")
        conn.execute(
            "CREATE INDEX webhook_deliveries_done ON webhook_deliveries (state, updatedAt)"
        )
        conn.execute(
            "CREATE INDEX webhook_deliveries_ws_endpoint ON webhook_deliveries "
            "(workspaceId, endpointId, state, leaseUntil)"
        )
        conn.execute(
            "UPDATE webhook_deliveries SET attempts = 1, leaseToken = 'old.1', leaseUntil = ?, "
            "nextAttemptAt = ?",
            (ms(ends), ms(ends)),
        )
    conn.close()
    store = open_store("", "unused", sqlite_path=str(path))
    try:
        await store.ensure_indexes()
        deliveries = store.webhook_deliveries
        assert await deliveries.claim(utcnow(), LEASE, 64, 4, owner="new") == []
        [claim] = await deliveries.claim(ends, LEASE, 64, 4, owner="new")
        assert claim.attempt == 2
        await deliveries.finish(delivered([claim]))
        assert await deliveries.backlog() == 0
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema")}
    conn.close()
    assert {"webhook_leases", "webhook_deliveries_pending_due", "webhook_deliveries_ended"} <= names
    retired = {"done", "ws_endpoint", "due_endpoint"}
    assert not {f"webhook_deliveries_{name}" for name in retired} & names
