"""Host names that DNS cannot hold (an empty label, a label over 63 characters, a name over 253)
are refused by the URL rules with the rule's name, and never raise from a name lookup: neither
where a URL is checked nor where a delivery connects (a URL stored before these rules existed
still reaches the resolver)."""

from __future__ import annotations

import socket

import pytest

from webhooks.transport import CheckedResolver, Policy, Transport, check_url, system_getaddrinfo

LABEL_RULE = "each label of the URL's host name (between dots) must be 1 to 63 characters long"
LENGTH_RULE = "the URL's host name must be at most 253 characters"
# The issue's examples, and the limits' edges.
BAD_HOSTS = {
    "a..b.com": LABEL_RULE,
    ".example.com": LABEL_RULE,
    "example.com..": LABEL_RULE,
    "a" * 64 + ".example.com": LABEL_RULE,
    ".".join(["a" * 60] * 5): LENGTH_RULE,  # 304 characters of labels within the limit
    "b" * 300: LENGTH_RULE,
}


@pytest.mark.parametrize(("host", "rule"), BAD_HOSTS.items(), ids=lambda v: v[:20])
async def test_check_url_names_the_host_name_rule(host: str, rule: str) -> None:
    assert await check_url(f"https://{host}/hook", Policy()) == rule


@pytest.mark.parametrize(
    "host", ["a" * 63 + ".example.com", ".".join(["a" * 63] * 3) + "." + "b" * 61, "example.com."]
)
async def test_names_at_the_limits_are_looked_up(host: str) -> None:
    seen: list[str] = []

    async def lookup(name: str, port: int):
        seen.append(name)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]

    assert await check_url(f"https://{host}/hook", Policy(), getaddrinfo=lookup) is None
    assert seen == [host]


async def test_a_lookup_that_raises_unicode_error_is_a_name_that_does_not_resolve() -> None:
    async def idna_refuses(host: str, port: int):
        raise UnicodeError("encoding with 'idna' codec failed (label empty or too long)")

    reason = await check_url("https://hooks.example.com/x", Policy(), getaddrinfo=idna_refuses)
    assert reason == "the host does not resolve"


@pytest.mark.parametrize(("host", "rule"), BAD_HOSTS.items(), ids=lambda v: v[:20])
async def test_a_delivery_to_such_a_host_is_a_failed_attempt(host: str, rule: str) -> None:
    client = Transport(Policy())
    try:
        outcome = await client.post(f"https://{host}/hook", b"{}", {})
    finally:
        await client.close()
    assert (outcome.status_code, outcome.error) == (None, f"invalid url: {rule}")


@pytest.mark.parametrize("host", list(BAD_HOSTS)[:4], ids=lambda v: v[:20])
async def test_the_delivery_resolver_answers_a_lookup_failure(host: str) -> None:
    """aiohttp turns the resolver's OSError into "dns lookup failed"; the IDNA codec's
    UnicodeError would escape the attempt as an error of the dispatcher."""
    resolver = CheckedResolver(Policy(), system_getaddrinfo, "https")
    with pytest.raises(socket.gaierror):
        await resolver.resolve(host, 443)
