"""Which addresses a webhook may reach: public ones, and those inside the operator's
`webhook_allowed_networks`. Everything else (loopback, private, link-local, CGNAT, multicast,
reserved, ...) is refused, in IPv4, IPv6 and the IPv6 forms that embed an IPv4 address."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(spec: str | Iterable[str]) -> tuple[Network, ...]:
    """CIDRs from "10.0.0.0/8, 127.0.0.0/8" or a list; a bare address is its /32 or /128.
    ValueError names the first bad entry (host bits set count as bad: 10.0.0.1/8 is a typo)."""
    entries = spec.split(",") if isinstance(spec, str) else list(spec)
    networks: list[Network] = []
    for entry in entries:
        text = str(entry).strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=True))
        except ValueError as exc:
            raise ValueError(f"{text!r} is not a network in CIDR notation ({exc})") from None
    return tuple(networks)


def _table(*rows: tuple[str, str]) -> tuple[tuple[Network, str], ...]:
    return tuple((ipaddress.ip_network(cidr), rule) for cidr, rule in rows)


LINK_LOCAL = "link-local (includes cloud metadata)"

# IANA's special-purpose registries; the first matching row names the rule. Rows that embed an
# IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo) are judged in _embedded.
_IPV4 = _table(
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private (RFC 1918)"),
    ("172.16.0.0/12", "private (RFC 1918)"),
    ("192.168.0.0/16", "private (RFC 1918)"),
    ("100.64.0.0/10", "shared address space (CGNAT, RFC 6598)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", LINK_LOCAL),
    ("192.0.0.0/24", "reserved (IETF protocol assignments)"),
    ("192.0.2.0/24", "documentation"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("192.88.99.0/24", "reserved (6to4 relay anycast)"),
    ("198.18.0.0/15", "benchmarking"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
)
_IPV6 = _table(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "reserved (local-use NAT64)"),
    ("100::/64", "reserved (discard-only)"),
    ("2001:2::/48", "benchmarking"),
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("2001::/23", "reserved (IETF protocol assignments)"),
    ("fc00::/7", "unique-local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated)"),
    ("ff00::/8", "multicast"),
)
_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def is_allowed(address: Address, allowed: tuple[Network, ...]) -> bool:
    """Inside one of the operator's networks (an IPv4-mapped address counts as its IPv4
    address: connecting to it reaches that address)."""
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return any(address in net or (mapped is not None and mapped in net) for net in allowed)


def refusal(address: Address, allowed: tuple[Network, ...] = ()) -> str | None:
    """None when a webhook may contact `address` (inside `allowed`, or public); otherwise the
    short name of the rule that refuses it, e.g. "loopback" or "private (RFC 1918)"."""
    if is_allowed(address, allowed):
        return None
    return _rule(address)


def _rule(address: Address) -> str | None:
    if isinstance(address, ipaddress.IPv4Address):
        for net, rule in _IPV4:
            if address in net:
                return rule
        return None if address.is_global else "reserved"
    if found := _embedded(address):
        form, inner = found
        inner_rule = _rule(inner)
        if inner_rule is None and form in _PASS_THROUGH:
            return None
        return f"{inner_rule or 'reserved'} ({form})"
    for net6, rule6 in _IPV6:
        if address in net6:
            return rule6
    # Python 3.11's is_global calls some non-unicast blocks global; only 2000::/3 is allocated.
    if address not in _GLOBAL_UNICAST or not address.is_global:
        return "reserved"
    return None


# Forms that reach a public IPv4 address through ordinary routing; the deprecated
# IPv4-compatible form and Teredo tunnels are refused whatever they embed.
_PASS_THROUGH = ("IPv4-mapped", "NAT64", "6to4")


def _embedded(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv6 form's name and the IPv4 address it carries, or None for a plain address."""
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return "IPv4-mapped", address.ipv4_mapped
    if address in _NAT64:
        return "NAT64", low32
    if address.sixtofour is not None:
        return "6to4", address.sixtofour
    if address.teredo is not None:
        return "Teredo", address.teredo[1]
    if address in _COMPATIBLE and int(address) > 1:  # :: and ::1 are rules of their own
        return "IPv4-compatible", low32
    return None
