"""Refuse webhook destinations that resolve to non-global addresses (SSRF guard).

Every resolved address is checked against explicit ranges (Python's `is_global` is not
enough on 3.11: it is true for some multicast and embedded-IPv4 forms), IPv4 embedded in
IPv6 (mapped, NAT64, 6to4, Teredo) is checked as IPv4, and the connection then goes to the
address that was checked, so a second DNS answer cannot rebind it.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[str]]

LOOPBACK_AND_PRIVATE = tuple(
    ipaddress.ip_network(n)
    for n in ("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "::1/128", "fc00::/7")
)

BLOCKED = tuple(
    (ipaddress.ip_network(network), why)
    for network, why in (
        ("0.0.0.0/8", "this network"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("255.255.255.255/32", "broadcast"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("100::/64", "discard-only"),
        ("2001::/23", "IETF protocol assignments"),
        ("2001:db8::/32", "documentation"),
        ("fc00::/7", "unique local (private)"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)


class UnsafeDestinationError(ValueError):
    """The webhook URL is not allowed; the message says why."""


@dataclass(frozen=True, kw_only=True)
class Destination:
    scheme: str
    host: str
    port: int
    address: str  # the checked address to connect to
    target: str  # path and query


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in ipaddress.ip_network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal(address: IPAddress, *, allow_private: bool = False) -> str | None:
    """Why `address` may not receive webhooks, or None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = embedded_ipv4(address)
        if inner is not None:
            why = refusal(inner, allow_private=allow_private)
            return f"{why} (embedded in {address})" if why else None
    if allow_private and any(address in network for network in LOOPBACK_AND_PRIVATE):
        return None
    for network, why in BLOCKED:
        if address.version == network.version and address in network:
            return f"{address} is {why}"
    return None


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_destination(
    url: str, *, resolver: Resolver = system_resolver, allow_private: bool = False
) -> Destination:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UnsafeDestinationError(f"webhook URLs must be http or https, not {parts.scheme!r}")
    if not parts.hostname:
        raise UnsafeDestinationError("the webhook URL has no host")
    if parts.username or parts.password:
        raise UnsafeDestinationError("credentials in webhook URLs are not accepted")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    literal = True
    try:
        addresses = [ipaddress.ip_address(parts.hostname)]
    except ValueError:
        literal = False
        try:
            addresses = [
                ipaddress.ip_address(a.split("%")[0]) for a in resolver(parts.hostname, port)
            ]
        except OSError as exc:
            raise UnsafeDestinationError(f"{parts.hostname} does not resolve: {exc}") from None
    if not addresses:
        raise UnsafeDestinationError(f"{parts.hostname} resolves to no address")
    for address in addresses:
        why = refusal(address, allow_private=allow_private)
        if why is not None:
            raise UnsafeDestinationError(why if literal else f"{parts.hostname} resolves to {why}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Destination(
        scheme=parts.scheme,
        host=parts.hostname,
        port=port,
        address=str(addresses[0]),
        target=target,
    )
