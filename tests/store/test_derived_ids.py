"""Derived ids (store.activities.derived_id, store.webhooks.delivery_id) are uuid5 of their
parts, exactly: ids stored by earlier versions (SID calls, timeline entries, list_added
activities, webhook deliveries) must keep matching."""

import random
import uuid

from store.activities import DERIVED_IDS, derived_id
from store.webhooks import DELIVERY_IDS, delivery_id


def test_a_derived_id_is_the_uuid5_of_its_parts():
    rng = random.Random(5)
    for _ in range(2000):
        parts = [
            str(uuid.UUID(int=rng.getrandbits(128))),
            rng.choice(["call", "list_added", "providerCallSid", "import"]),
            f"CA{rng.getrandbits(128):032x}",
            "é€" * rng.randint(0, 3),
        ][: rng.randint(1, 4)]
        assert derived_id(*parts) == str(uuid.uuid5(DERIVED_IDS, "/".join(parts)))


def test_a_delivery_id_is_the_uuid5_of_endpoint_event_and_generation():
    rng = random.Random(7)
    for _ in range(500):
        endpoint, event = (str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(2))
        generation = rng.randint(0, 50)
        assert delivery_id(endpoint, event, generation) == str(
            uuid.uuid5(DELIVERY_IDS, f"{endpoint}/{event}/{generation}")
        )
