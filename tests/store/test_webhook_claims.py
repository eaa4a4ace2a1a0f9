"""Claiming webhook deliveries (store.contract.WebhookDeliveries.claim and release) on every
backend: never more than `per_endpoint` in flight per endpoint across owners, claims `ahead` only
for an owner no other owner shares the endpoint with (SQLite; MongoDB never claims ahead), and a
released claim is due again at once with its attempt not counted. The dispatcher that uses them:
tests/webhooks/test_delivery.py."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from store.clock import new_id, utcnow
from store.events import StoredEvent
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
