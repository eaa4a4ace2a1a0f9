"""The address rules of webhook delivery: which addresses are refused and by which rule, in every
form an address can take, and how the operator's allowed networks open them."""

from __future__ import annotations

import ipaddress

import pytest

from webhooks.networks import is_allowed, parse_networks, refusal

REFUSED = [
    # IPv4
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("10.1.2.3", "private (RFC 1918)"),
    ("172.16.0.1", "private (RFC 1918)"),
    ("172.31.255.255", "private (RFC 1918)"),
    ("192.168.1.1", "private (RFC 1918)"),
    ("169.254.169.254", "link-local (includes cloud metadata)"),
    ("100.64.0.1", "shared address space (CGNAT, RFC 6598)"),
    ("100.127.255.254", "shared address space (CGNAT, RFC 6598)"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("192.0.0.8", "reserved (IETF protocol assignments)"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("192.88.99.1", "reserved (6to4 relay anycast)"),
    # IPv6
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fc00::1", "unique-local"),
    ("fd12:3456::1", "unique-local"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fec0::1", "site-local (deprecated)"),
    ("ff02::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("2001:2::1", "benchmarking"),
    ("100::1", "reserved (discard-only)"),
    ("64:ff9b:1::a00:1", "reserved (local-use NAT64)"),
    ("5f00::1", "reserved"),  # SRv6 SIDs: outside 2000::/3, though Python 3.11 calls it global
    ("4000::1", "reserved"),
    # IPv4 inside IPv6: judged by the IPv4 address they carry
    ("::ffff:127.0.0.1", "loopback (IPv4-mapped)"),
    ("::ffff:7f00:1", "loopback (IPv4-mapped)"),
    ("::ffff:10.0.0.1", "private (RFC 1918) (IPv4-mapped)"),
    ("::ffff:169.254.169.254", "link-local (includes cloud metadata) (IPv4-mapped)"),
    ("::ffff:0.0.0.0", "unspecified (IPv4-mapped)"),
    ("::127.0.0.1", "loopback (IPv4-compatible)"),
    ("::8.8.8.8", "reserved (IPv4-compatible)"),  # deprecated form: refused whatever it holds
    ("2002:7f00:1::", "loopback (6to4)"),
    ("2002:a9fe:a9fe::1", "link-local (includes cloud metadata) (6to4)"),
    ("2002:c0a8:101::", "private (RFC 1918) (6to4)"),
    ("64:ff9b::7f00:1", "loopback (NAT64)"),
    ("64:ff9b::a9fe:a9fe", "link-local (includes cloud metadata) (NAT64)"),
    ("64:ff9b::a00:1", "private (RFC 1918) (NAT64)"),
    # Teredo: server 65.54.227.120, client 192.0.2.45 (stored inverted in the low 32 bits)
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "documentation (Teredo)"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback (Teredo)"),
    ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", "reserved (Teredo)"),  # 8.8.8.8: still a tunnel
]

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "172.32.0.1",  # just outside 172.16.0.0/12
    "100.128.0.1",  # just outside 100.64.0.0/10
    "2606:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
]


@pytest.mark.parametrize(("text", "rule"), REFUSED)
def test_refused_by_default(text: str, rule: str) -> None:
    assert refusal(ipaddress.ip_address(text), ()) == rule


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_pass(text: str) -> None:
    assert refusal(ipaddress.ip_address(text), ()) is None


@pytest.mark.parametrize(
    ("text", "networks", "expected"),
    [
        ("127.0.0.1", "127.0.0.0/8", None),
        ("::ffff:127.0.0.1", "127.0.0.0/8", None),  # the mapped form reaches the same address
        ("10.20.30.40", "10.0.0.0/8", None),
        ("10.20.30.40", "10.0.0.0/16", "private (RFC 1918)"),
        ("169.254.169.254", "10.0.0.0/8, 127.0.0.0/8", "link-local (includes cloud metadata)"),
        ("::1", "127.0.0.0/8", "loopback"),
        ("::1", "::1/128", None),
        ("fd00::5", "fd00::/8", None),
        ("127.0.0.1", "::1", "loopback"),
        # A tunnel form is not the address it embeds: opening 127/8 does not open 6to4 to it.
        ("2002:7f00:1::", "127.0.0.0/8", "loopback (6to4)"),
    ],
)
def test_allowed_networks_open_exactly_their_range(
    text: str, networks: str, expected: str | None
) -> None:
    assert refusal(ipaddress.ip_address(text), parse_networks(networks)) == expected


def test_is_allowed_is_membership_only() -> None:
    allowed = parse_networks(["127.0.0.0/8"])
    assert is_allowed(ipaddress.ip_address("127.0.0.1"), allowed)
    assert is_allowed(ipaddress.ip_address("::ffff:127.0.0.1"), allowed)
    assert not is_allowed(ipaddress.ip_address("8.8.8.8"), allowed)  # public, but not inside
    assert not is_allowed(ipaddress.ip_address("8.8.8.8"), ())


def test_parse_networks_forms() -> None:
    v4, v6 = ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8")
    assert parse_networks("10.0.0.0/8, fd00::/8") == (v4, v6)
    assert parse_networks(" 10.0.0.0/8 ,, ") == (v4,)
    assert parse_networks(["10.0.0.0/8", "fd00::/8"]) == (v4, v6)
    assert parse_networks("") == ()
    assert parse_networks("127.0.0.1") == (ipaddress.ip_network("127.0.0.1/32"),)


@pytest.mark.parametrize(
    "bad", ["10.0.0.1/8", "300.0.0.0/8", "localhost", "10.0.0.0/33", "::1/129"]
)
def test_parse_networks_names_the_bad_entry(bad: str) -> None:
    with pytest.raises(ValueError, match=bad.replace(".", r"\.")):
        parse_networks(f"127.0.0.0/8, {bad}")
