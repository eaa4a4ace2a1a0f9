"""The MongoDB tiers talk to their server through the PyMongo that users install: on the wire
tier a server of a current wire version (FerretDB 1.24 reports 21, MongoDB 7.0), which PyMongo
4.18 and later require at least 9 of (MongoDB 4.4)."""

import os

import pytest

pytestmark = pytest.mark.mongodb


async def test_the_server_speaks_a_current_wire_version(store):
    hello = await store.db.command("hello")
    minimum = 21 if os.environ.get("WSAPI_TEST_TIER") == "wire" else 9
    assert hello["maxWireVersion"] >= minimum, hello
