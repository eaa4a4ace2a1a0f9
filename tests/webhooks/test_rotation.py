"""Concurrent secret rotations of one endpoint take turns through the store: each answers a
secret that was the current one when it answered, in the order the answers arrive, so that the
two secrets that sign deliveries afterwards are the last two answered, and no rotation works
from a state another one has already replaced (which would bring back a secret rotated out).
Signatures are verified with the `standardwebhooks` package."""

from __future__ import annotations

import asyncio

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.webhooks.receiver import wait_for
from tests.webhooks.test_delivery import create_endpoint, verify

ROTATIONS = 10


def signs(secret: str, request) -> bool:
    try:
        verify(secret, request)
    except WebhookVerificationError:
        return False
    return True


async def test_concurrent_rotations_each_answer_a_secret_in_turn(
    api, new_list, receiver, start_dispatcher
):
    endpoint, original = await create_endpoint(api, receiver.url())
    path = f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret"
    answered: list[str] = []

    async def rotate() -> None:
        response = await api.post(path)
        assert response.code == 200, response
        answered.append(response.json()["webhookEndpoint"]["secret"])  # in arrival order

    await asyncio.gather(*(rotate() for _ in range(ROTATIONS)))
    assert len(set(answered)) == ROTATIONS
    start_dispatcher()
    await new_list()
    await wait_for(lambda: len(receiver.requests) >= 1, what="a delivery")
    request = receiver.requests[0]
    assert len(request.signature.split(" ")) == 2  # the current secret and the one before
    signing = [secret for secret in [original, *answered] if signs(secret, request)]
    assert signing == answered[-2:]
    # The current one is the last answered: the next rotation keeps it as the previous one.
    rotated = await api.post(path)
    newest = rotated.json()["webhookEndpoint"]["secret"]
    await new_list("After")
    await wait_for(lambda: len(receiver.requests) >= 2, what="a second delivery")
    after = receiver.requests[1]
    assert [s for s in [original, *answered, newest] if signs(s, after)] == [answered[-1], newest]
    Webhook(newest).verify(
        after.body,
        {
            "webhook-id": after.webhook_id,
            "webhook-timestamp": after.timestamp,
            "webhook-signature": after.signature,
        },
    )
