"""Derived ids (store.activities.derived_id) are uuid5 of their parts, exactly: ids stored by
earlier versions (SID calls, timeline entries, list_added activities) must keep matching."""

import random
import uuid

from store.activities import DERIVED_IDS, derived_id


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
