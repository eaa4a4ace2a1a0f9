"""Webhook delivery end to end, on a real port with a real receiver: what is sent (the feed's
event, byte for byte, signed the Standard Webhooks way and verified with the `standardwebhooks`
package), retries on the schedule with Retry-After, 410, disabling and re-enabling, recovery,
rotation, and a slow endpoint beside a fast one. The retry tests freeze the service's clock
(tests/helpers.py FakeClock) and move it to each planned attempt: attempt times read from the
deliveries listing are then exactly the schedule's, and nobody waits for a retry gap."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import logging

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from store.webhooks import rotated, secrets_at
from tests.helpers import follow_events
from tests.webhooks.receiver import MARKER, Answer, until, wait_for
from webhooks.signing import new_secret


def instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


async def create_endpoint(api, url: str, **fields) -> tuple[dict, str]:
    response = await api.post("/v1/webhook-endpoints", {"url": url, **fields})
    assert response.code == 201, response
    endpoint = response.json()["webhookEndpoint"]
    assert response.headers["Location"] == f"/v1/webhook-endpoints/{endpoint['id']}"
    return endpoint, endpoint.pop("secret")


async def attempts(api, endpoint_id: str) -> list[dict]:
    """Every attempt of the endpoint, newest first, following nextCursor."""
    found, path = [], f"/v1/webhook-endpoints/{endpoint_id}/deliveries?pageSize=3"
    for _ in range(200):
        response = await api.get(path)
        assert response.code == 200, response
        assert MARKER not in response.body.decode()
        body = response.json()
        found += body["deliveries"]
        if not body["hasMore"]:
            assert body["nextCursor"] is None
            return found
        path = f"/v1/webhook-endpoints/{endpoint_id}/deliveries?cursor={body['nextCursor']}"
    raise AssertionError("the deliveries listing did not end")


async def attempted(api, endpoint_id: str, count: int) -> list[dict]:
    """The endpoint's attempts once at least `count` are listed (each is recorded after its
    answer arrived)."""

    async def listed() -> list[dict] | None:
        found = await attempts(api, endpoint_id)
        return found if len(found) >= count else None

    return await until(listed, what=f"{count} attempts listed")  # type: ignore[return-value]


async def retried(api, clock, endpoint_id: str, count: int) -> list[dict]:
    """With the clock frozen: move it to the newest attempt's nextAttemptAt, then the
    endpoint's attempts (newest first) once `count` are listed."""
    [newest, *_] = await attempts(api, endpoint_id)
    planned = instant(newest["nextAttemptAt"])
    assert planned > clock.now()  # not due before the clock gets there
    clock.set(planned)
    return await attempted(api, endpoint_id, count)


async def feed(api) -> dict[str, bytes]:
    """The workspace's events by id, each as the JSON text GET /v1/events serves."""
    events, _ = await follow_events(api)
    return {event["id"]: event for event in events}


def verify(secret: str, request) -> dict:
    return Webhook(secret).verify(
        request.body,
        {
            "webhook-id": request.webhook_id,
            "webhook-timestamp": request.timestamp,
            "webhook-signature": request.signature,
        },
    )


async def test_an_event_arrives_signed_and_as_the_feed_serves_it(
    api, new_list, receiver, start_dispatcher, caplog
):
    caplog.set_level(logging.DEBUG, logger="workspace_api")
    await new_list("Before the endpoint")  # occurred before it was created: not sent
    endpoint, secret = await create_endpoint(api, receiver.url(), description="CRM")
    assert secret.startswith("whsec_") and len(secret) == 50
    assert endpoint["status"] == "enabled" and endpoint["eventTypes"] is None
    start_dispatcher()
    created = await new_list("After the endpoint")
    await wait_for(lambda: len(receiver.requests) >= 1, what="a delivery")
    [request] = receiver.requests
    payload = verify(secret, request)  # raises unless the signature is right
    assert payload["type"] == "list.created" and payload["data"]["id"] == created["id"]
    assert request.content_type == "application/json"
    assert abs(int(request.timestamp) - dt.datetime.now(dt.UTC).timestamp()) < 60
    # The body is the event of GET /v1/events, byte for byte, and webhook-id is its id.
    [event] = [e for e in (await feed(api)).values() if e["data"]["id"] == created["id"]]
    assert request.webhook_id == event["id"]
    assert json.loads(request.body) == event
    raw = (await api.get(f"/v1/events?type=list.created&since={event['occurredAt']}")).body
    assert request.body.decode() in raw.decode()
    # The listing shows the attempt; nothing shows a secret or the receiver's body.
    listing = await attempted(api, endpoint["id"], 1)
    assert [(a["eventId"], a["attempt"], a["statusCode"], a["error"]) for a in listing] == [
        (event["id"], 1, 200, None)
    ]
    assert listing[0]["eventType"] == "list.created" and listing[0]["nextAttemptAt"] is None
    shown = (await api.get(f"/v1/webhook-endpoints/{endpoint['id']}")).json()["webhookEndpoint"]
    assert shown == {**endpoint, "updatedAt": shown["updatedAt"]} and "secret" not in shown
    everything = (await api.get("/v1/webhook-endpoints")).body.decode()
    assert (
        secret not in everything and "secret" not in json.loads(everything)["webhookEndpoints"][0]
    )
    assert MARKER not in caplog.text and secret not in caplog.text


async def test_event_types_choose_what_is_sent(api, new_list, receiver, start_dispatcher, clock):
    endpoint, _ = await create_endpoint(
        api, receiver.url(), eventTypes=["prospect.created", "list.updated"]
    )
    assert endpoint["eventTypes"] == ["list.updated", "prospect.created"]
    start_dispatcher()
    listing = await new_list("Typed")
    upload = await api.post(
        f"/v1/lists/{listing['id']}/contacts", {"contacts": [{"email": "a@typed.example"}]}
    )
    assert upload.code == 200, upload
    await wait_for(lambda: len(receiver.requests) >= 2, what="two deliveries")
    clock.advance(1)  # past the settle period: the feed below holds every event sent
    events = await feed(api)
    wanted = {i for i, e in events.items() if e["type"] in ("prospect.created", "list.updated")}
    await wait_for(lambda: set(receiver.ids()) == wanted, what="every event of those types")
    assert len(receiver.ids()) == len(wanted)  # each once
    all_types = {event["type"] for event in events.values()}
    assert {"list.created", "activity.created"} <= all_types  # in the feed, not sent


async def test_failures_are_retried_on_the_schedule_then_delivered(
    api, new_list, receiver, start_dispatcher, clock
):
    receiver.plan = lambda request, number: Answer(500 if number <= 2 else 204)
    endpoint, secret = await create_endpoint(api, receiver.url())
    clock.freeze()
    start_dispatcher()  # schedule 1, 1, 2 seconds
    await new_list()
    clock.advance(0.5)  # past the settle period (0.3 s) and a poll (0.1 s)
    await attempted(api, endpoint["id"], 1)
    for count in (2, 3):
        await retried(api, clock, endpoint["id"], count)
    assert len(receiver.requests) == 3
    assert len(set(receiver.ids())) == 1  # one event, the same webhook-id on every attempt
    for request in receiver.requests:
        verify(secret, request)
    listing = list(reversed(await attempts(api, endpoint["id"])))
    assert [(a["attempt"], a["statusCode"]) for a in listing] == [(1, 500), (2, 500), (3, 204)]
    assert listing[0]["error"] == "http 500" and listing[2]["error"] is None
    for earlier, later in itertools.pairwise(listing):
        assert instant(later["at"]) == instant(earlier["nextAttemptAt"])  # sent when planned
        gap = (instant(later["at"]) - instant(earlier["at"])).total_seconds()
        assert 1.0 <= gap <= 1.2, gap  # the 1 s step and up to 20% jitter
    assert listing[2]["nextAttemptAt"] is None


async def test_retry_after_is_honoured_up_to_the_next_step(
    api, new_list, receiver, start_dispatcher, clock
):
    def plan(request, number):
        if number == 1:
            return Answer(429, {"Retry-After": "2"})
        if number == 2:
            return Answer(503, {"Retry-After": "100"})  # capped at the next step: 4 s
        return Answer(200)

    receiver.plan = plan
    endpoint, _ = await create_endpoint(api, receiver.url())
    clock.freeze()
    start_dispatcher(webhook_retry_schedule="1,3,4")
    await new_list()
    clock.advance(0.5)  # past the settle period and a poll
    await attempted(api, endpoint["id"], 1)
    await retried(api, clock, endpoint["id"], 2)
    first, second, third = reversed(await retried(api, clock, endpoint["id"], 3))
    assert (first["statusCode"], second["statusCode"], third["statusCode"]) == (429, 503, 200)
    gap = (instant(second["at"]) - instant(first["at"])).total_seconds()
    assert gap == 2.0  # later than the 1 s step (at most 1.2 s): Retry-After
    gap = (instant(third["at"]) - instant(second["at"])).total_seconds()
    assert gap == 4.0  # Retry-After 100 s, but never past the next step


async def test_out_of_retries_the_delivery_fails_and_recover_sends_it_again(
    api, new_list, receiver, start_dispatcher
):
    receiver.plan = lambda request, number: Answer(500)
    endpoint, _ = await create_endpoint(api, receiver.url())
    since = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    start_dispatcher(webhook_retry_schedule="0.5,0.5")
    await new_list()
    await wait_for(lambda: len(receiver.requests) >= 3, what="three attempts")
    listing = await attempted(api, endpoint["id"], 3)
    assert [a["attempt"] for a in listing] == [3, 2, 1]
    assert listing[0]["nextAttemptAt"] is None  # out of retries: failed
    first_id = receiver.requests[0].webhook_id
    # The receiver is back: recover re-sends with the same webhook-id.
    receiver.plan = lambda request, number: Answer(200)
    response = await api.post(f"/v1/webhook-endpoints/{endpoint['id']}/recover", {"since": since})
    assert response.code == 202, response
    assert response.json()["recovery"]["endpointId"] == endpoint["id"]
    await wait_for(lambda: len(receiver.requests) >= 4, what="the recovered delivery")
    assert receiver.requests[3].webhook_id == first_id
    assert (await api.get(f"/v1/webhook-endpoints/{endpoint['id']}")).json()["webhookEndpoint"][
        "status"
    ] == "enabled"


async def test_410_disables_the_endpoint_and_enabling_it_resumes(
    api, new_list, receiver, start_dispatcher
):
    receiver.plan = lambda request, number: Answer(410 if request.path == "hook" else 200)
    endpoint, _ = await create_endpoint(api, receiver.url())
    start_dispatcher()
    first = await new_list("Gone")
    path = f"/v1/webhook-endpoints/{endpoint['id']}"

    async def disabled() -> dict | None:
        shown = (await api.get(path)).json()["webhookEndpoint"]
        return shown if shown["status"] == "disabled" else None

    await wait_for(lambda: len(receiver.requests) == 1, what="the attempt")
    shown = await until(disabled, what="the endpoint disabled")
    assert shown["status"] == "disabled" and "410" in shown["disabledReason"]
    assert shown["disabledAt"] is not None
    [attempt] = await attempts(api, endpoint["id"])
    assert attempt["statusCode"] == 410 and "disabled" in attempt["error"]
    assert attempt["nextAttemptAt"] is None
    # Disabled: a new event gets no attempt. A witness endpoint, enabled, gets it: by then the
    # event has settled and been fanned out.
    await create_endpoint(api, receiver.url("witness"))
    between = await new_list("While disabled")
    receiver.plan = lambda request, number: Answer(200)

    def witnessed(list_id: str) -> bool:
        return any(
            json.loads(r.body)["data"]["id"] == list_id
            for r in receiver.requests
            if r.path == "witness"
        )

    await wait_for(lambda: witnessed(between["id"]), what="the witness's delivery")
    assert len(receiver.ids("hook")) == 1
    # Enabled again: events from then on are sent (the one in between only by recover).
    response = await api.fetch(path, "PATCH", json_body={"status": "enabled"})
    assert response.code == 200 and response.json()["webhookEndpoint"]["status"] == "enabled"
    assert response.json()["webhookEndpoint"]["disabledReason"] is None
    latest = await new_list("After enabling")
    await wait_for(lambda: len(receiver.ids("hook")) == 2, what="the delivery after enabling")
    await wait_for(lambda: witnessed(latest["id"]), what="the witness's last delivery")
    sent = [json.loads(r.body)["data"]["id"] for r in receiver.requests if r.path == "hook"]
    assert sent == [first["id"], latest["id"]]  # never the event of the disabled time


async def test_rotation_signs_with_both_secrets_during_the_overlap(
    api, new_list, receiver, start_dispatcher
):
    endpoint, old = await create_endpoint(api, receiver.url())
    response = await api.post(f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret")
    assert response.code == 200, response
    new = response.json()["webhookEndpoint"]["secret"]
    assert new != old and new.startswith("whsec_")
    start_dispatcher()
    await new_list()
    await wait_for(lambda: len(receiver.requests) >= 1, what="a delivery")
    request = receiver.requests[0]
    signatures = request.signature.split(" ")
    assert len(signatures) == 2 and all(s.startswith("v1,") for s in signatures)
    verify(new, request)
    verify(old, request)
    with pytest.raises(WebhookVerificationError):
        verify(new_secret(), request)
    # The new secret signs first; once the overlap has passed, only it signs.
    now = dt.datetime(2026, 11, 21, 9, 30)
    secrets = rotated([{"secret": old, "expiresAt": None}], new, now, dt.timedelta(hours=24))
    assert secrets_at(secrets, now + dt.timedelta(hours=23)) == [new, old]
    assert secrets_at(secrets, now + dt.timedelta(hours=24, seconds=1)) == [new]


async def test_a_slow_endpoint_holds_back_neither_another_nor_the_api(
    api, new_list, receiver, start_dispatcher
):
    def plan(request, number):
        return Answer(200, delay=3.0 if request.path == "slow" else 0.0)

    receiver.plan = plan
    await create_endpoint(api, receiver.url("slow"))
    await create_endpoint(api, receiver.url("fast"))
    start_dispatcher(webhook_max_in_flight_per_endpoint=3)
    for number in range(8):
        await new_list(f"List {number}")
    await wait_for(lambda: len(receiver.ids("fast")) >= 8, timeout=8, what="the fast deliveries")
    # While the slow receiver holds its 3 attempts: the fast one got everything, and the API
    # answers.
    assert len(receiver.ids("slow")) <= 6
    assert (await api.get("/v1/webhook-endpoints")).code == 200
    await wait_for(lambda: len(receiver.ids("slow")) >= 8, timeout=30, what="the slow ones")
    assert receiver.max_in_flight["slow"] == 3  # never more than the limit at once


async def test_slow_endpoints_of_one_host_leave_its_other_endpoints_connections(
    api, new_list, receiver, start_dispatcher
):
    """Endpoints often share a host (one receiver service, a path per integration): three slow
    ones holding their 4 attempts each (12 connections to one host and port) never make a
    fourth endpoint there wait for a connection."""

    def plan(request, number):
        return Answer(200, delay=4.0 if request.path.startswith("slow") else 0.0)

    receiver.plan = plan
    slow_endpoints = [
        (await create_endpoint(api, receiver.url(f"slow{number}")))[0] for number in range(3)
    ]
    await create_endpoint(api, receiver.url("fast"))
    running = start_dispatcher(webhook_max_in_flight_per_endpoint=4)
    for number in range(6):
        await new_list(f"List {number}")
    await wait_for(lambda: receiver.in_flight >= 12, timeout=8, what="the slow attempts")
    await wait_for(lambda: len(receiver.ids("fast")) >= 6, timeout=2, what="the fast deliveries")
    assert receiver.in_flight >= 12  # while the slow ones still hold their connections
    slow = [f"slow{number}" for number in range(3)]
    await wait_for(
        lambda: all(len(receiver.ids(path)) >= 6 for path in slow), timeout=20, what="the rest"
    )
    await running.stop()  # lets the attempts in flight end: nothing is sent after this
    # Each attempt had its connection at once: none timed out waiting for one and was sent
    # again, so each endpoint got its 6 events once, 4 at a time, each attempt a 200.
    for path, endpoint in zip(slow, slow_endpoints, strict=True):
        assert len(receiver.ids(path)) == len(set(receiver.ids(path))) == 6, path
        assert receiver.max_in_flight[path] == 4, path
        assert [a["statusCode"] for a in await attempts(api, endpoint["id"])] == [200] * 6


async def test_two_dispatchers_share_an_endpoint_s_in_flight_limit(
    api, new_list, receiver, start_dispatcher
):
    """Each dispatcher claims ahead only while it is alone with an endpoint: two processes
    together never send more than the limit at once, and each event once."""
    receiver.plan = lambda request, number: Answer(200, delay=0.3)
    await create_endpoint(api, receiver.url("slow"))
    running = [start_dispatcher(webhook_max_in_flight_per_endpoint=3) for _ in range(2)]
    for number in range(16):
        await new_list(f"List {number}")
    await wait_for(lambda: len(receiver.ids("slow")) >= 16, timeout=30, what="every delivery")
    for each in running:  # lets the attempts in flight end: nothing is sent after this
        await each.stop()
    assert len(receiver.ids("slow")) == len(set(receiver.ids("slow"))) == 16
    assert receiver.max_in_flight["slow"] == 3


async def test_a_redirect_is_never_followed(api, new_list, receiver, start_dispatcher):
    def plan(request, number):
        if request.path == "hook":
            return Answer(302, {"Location": receiver.url("inside")})
        return Answer(200)

    receiver.plan = plan
    endpoint, _ = await create_endpoint(api, receiver.url())
    start_dispatcher(webhook_retry_schedule="30")
    await new_list()
    await wait_for(lambda: len(receiver.requests) >= 1, what="the attempt")
    listing = await attempted(api, endpoint["id"], 1)
    assert [(a["statusCode"], a["nextAttemptAt"] is not None) for a in listing] == [(302, True)]
    assert "redirect" in listing[0]["error"]
    assert receiver.ids("inside") == []  # the Location was not followed


async def test_the_address_is_checked_again_at_delivery(api, new_list, receiver, start_dispatcher):
    endpoint, _ = await create_endpoint(api, receiver.url())  # allowed when created
    start_dispatcher(webhook_allowed_networks="", webhook_retry_schedule="30")
    await new_list()
    [attempt] = await attempted(api, endpoint["id"], 1)
    assert attempt["statusCode"] is None and "loopback" in attempt["error"]
    assert "127.0.0.1" not in attempt["error"]
    assert receiver.requests == []


async def test_a_receiver_down_past_the_retries_gets_everything_through_recover(
    api, new_list, receiver, start_dispatcher, clock
):
    endpoint, secret = await create_endpoint(api, receiver.url())
    port = receiver.port
    await receiver.stop()  # down: connections are refused
    start_dispatcher(webhook_retry_schedule="0.3,0.3")
    for number in range(5):
        await new_list(f"While down {number}")
    clock.advance(1)  # settled
    wanted = {e["id"] for e in (await feed(api)).values() if e["type"] == "list.created"}
    listing = await attempted(api, endpoint["id"], 3 * len(wanted))
    assert {a["eventId"] for a in listing} == wanted
    assert all(a["statusCode"] is None and a["error"] for a in listing)
    last = [a for a in listing if a["attempt"] == 3]
    assert len(last) == len(wanted) and all(a["nextAttemptAt"] is None for a in last)  # failed
    receiver.start(port)  # back
    response = await api.post(
        f"/v1/webhook-endpoints/{endpoint['id']}/recover", {"since": endpoint["createdAt"]}
    )
    assert response.code == 202
    await wait_for(lambda: set(receiver.ids()) == wanted, what="every event recovered")
    for request in receiver.requests:
        verify(secret, request)


@pytest.mark.parametrize("cut_short", [False, True])
async def test_a_dispatcher_stopped_mid_fan_out_leaves_nothing_claimed_for_the_next(
    api, new_list, receiver, start_dispatcher, store, clock, monkeypatch, cut_short
):
    """Stopped while it fans out (held inside its read of the feed): the step ends before the
    loop does, or, when stop's timeout runs out first, the loop is cancelled and gives back
    the fan-out it had claimed. Either way the next dispatcher fans out at once: the clock is
    frozen short of the claim's lease, so a claim left to run out would never let it."""
    await create_endpoint(api, receiver.url())
    await new_list("Before")
    entered, go_on = asyncio.Event(), asyncio.Event()
    page = store.events.page

    async def held(*args, **kwargs):
        entered.set()
        await go_on.wait()
        return await page(*args, **kwargs)

    monkeypatch.setattr(store.events, "page", held)
    first = start_dispatcher()
    await wait_for(entered.is_set, what="the first dispatcher inside its fan-out")
    if cut_short:
        await first.stop(0.1)  # it never gets out of the read: cancelled
    else:
        stopping = asyncio.ensure_future(first.stop(5))
        await asyncio.sleep(0)  # stop begins (it must wait for the step, not cut it short)
        go_on.set()
        await stopping
    monkeypatch.setattr(store.events, "page", page)
    made = await new_list("After")
    clock.advance(1)  # past the settle period and the next look, well short of the lease
    clock.freeze()
    start_dispatcher()

    def sent() -> bool:
        return any(made["id"].encode() in request.body for request in receiver.requests)

    await wait_for(sent, what="the new list's event delivered by the next dispatcher")


async def test_a_write_is_sent_without_waiting_for_the_settle_period(
    api, new_list, receiver, start_dispatcher
):
    """The feed needs no settle period (docs/api.md, "Events"), so the fan-out sends a write
    at its next poll, however long the settle period (here an hour)."""
    _, secret = await create_endpoint(api, receiver.url())
    start_dispatcher(sync_settle_seconds=3600)
    first = await new_list("Sent at once")
    await wait_for(lambda: len(receiver.requests) >= 1, what="the first delivery")
    second = await new_list("And the next")
    await wait_for(lambda: len(receiver.requests) >= 2, what="the second delivery")
    sent = [verify(secret, request)["data"]["id"] for request in receiver.requests]
    assert sent == [first["id"], second["id"]]
