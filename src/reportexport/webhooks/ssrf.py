"""Refuse webhook destinations that resolve to non-global addresses (SSRF guard).

Every resolved address is checked against explicit ranges (Python's `is_global` is not
enough on 3.11: it is true for some multicast and embedded-IPv4 forms), IPv4 embedded in
IPv6 (mapped, NAT64, 6to4, Teredo) is checked as IPv4, and the connection then goes to the
address that was checked, so a second DNS answer cannot rebind it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from reportexport.core.text import unsafe_text

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


# The form of a webhook URL, as one regular expression that registration applies and the
# OpenAPI document publishes (ECMA-262 and Python read it alike): http or https, in any case; a
# host name of ASCII labels, the last starting with a letter, 253 characters at most (or, where
# loopback and private ranges are allowed, such an address: 127/8, 10/8, 172.16/12, 192.168/16,
# [::1]); an optional port 1-65535; a path and a query of plain URL characters; no credentials,
# no fragment. The name's length is bounded by a negative lookahead (no 254 name characters in a
# row), not a positive one: generators such as Hypothesis' `from_regex` draw a positive
# lookahead's text as part of the string, so that almost nothing they drew matched, and a
# client generating a 2,000-character URL from the document spent minutes finding none.
_SCHEME = "[Hh][Tt][Tt][Pp][Ss]?"  # schemes are case-insensitive (RFC 3986 3.1)
_END = "(?![\\s\\S])"  # the end of the text in both dialects ($ also matches before a \n)
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TOP = "[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_NAME = f"(?![A-Za-z0-9.-]{{254}})(?:{_LABEL}\\.)*{_TOP}"
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_PRIVATE = (
    f"(?:127(?:\\.{_OCTET}){{3}}|10(?:\\.{_OCTET}){{3}}"
    f"|172\\.(?:1[6-9]|2[0-9]|3[01])(?:\\.{_OCTET}){{2}}|192\\.168(?:\\.{_OCTET}){{2}}|\\[::1\\])"
)
_PORT = (
    "(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?"
)
_TARGET = "(?:/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?(?:\\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?"


PORT_RULE = "the webhook URL's port must be a number 1 to 65535"
DEVELOPMENT_ADDRESSES = tuple(
    ipaddress.ip_network(n)
    for n in ("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "::1/128")
)


def webhook_url_pattern(*, allow_private: bool) -> str:
    """The accepted form of a webhook URL (see above), anchored at both ends."""
    host = f"(?:{_NAME}|{_PRIVATE})" if allow_private else _NAME
    return f"^{_SCHEME}://{host}{_PORT}{_TARGET}{_END}"


def chat_url_pattern(hosts: Sequence[str], *, allow_private: bool) -> str:
    """The accepted form of a chat channel's URL: a webhook URL's whose host is one of `hosts`
    (in any case; an address only where loopback and private ranges are allowed), anchored at
    both ends; none at all when `hosts` is empty."""
    names = []
    for host in hosts:
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            if re.fullmatch(_NAME + _END, host):
                names.append("".join(_literally(c) for c in host))
            continue
        if allow_private and any(literal in n for n in DEVELOPMENT_ADDRESSES):
            names.append("".join(_literally(c) for c in host))
    if not names:
        return "^(?!)"
    return f"^{_SCHEME}://(?:{'|'.join(names)}){_PORT}{_TARGET}{_END}"


def _literally(character: str) -> str:
    """One character of a host name as a pattern both dialects read alike, in any case."""
    if character.isalpha():
        return f"[{character.upper()}{character.lower()}]"
    return "\\." if character == "." else character  # a digit or a hyphen


_FORMS = {
    private: re.compile(webhook_url_pattern(allow_private=private)) for private in (False, True)
}


@dataclass(frozen=True, kw_only=True)
class WebhookUrl:
    """A webhook URL taken apart: what can be known of it without asking DNS."""

    scheme: str
    host: str
    port: int
    target: str  # path and query
    literal: IPAddress | None  # the host, when it is an address rather than a name


def parse_webhook_url(url: str, *, allow_private: bool = False) -> WebhookUrl:
    """The parts of a webhook URL of the accepted form; UnsafeDestinationError says what is
    wrong (the common mistakes by name, anything else by the form it must have)."""
    problem = unsafe_text(url)
    if problem is not None:
        raise UnsafeDestinationError(f"the webhook URL {problem}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        if "port" in str(exc).lower():
            raise UnsafeDestinationError(PORT_RULE) from None
        raise UnsafeDestinationError(f"the webhook URL cannot be read: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise UnsafeDestinationError(f"webhook URLs must be http or https, not {parts.scheme!r}")
    if parts.username is not None or parts.password is not None:
        raise UnsafeDestinationError("credentials in webhook URLs are not accepted")
    if not parts.hostname:
        raise UnsafeDestinationError("the webhook URL has no host")
    if "#" in url:
        raise UnsafeDestinationError("a webhook URL has no fragment (#...)")
    if port == 0:
        raise UnsafeDestinationError(PORT_RULE)
    host = parts.hostname
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None and not allow_private:
        raise UnsafeDestinationError(
            f"{host} is an address: webhook URLs name their host (addresses are for "
            "development, with webhooks_allow_private)"
        )
    if literal is not None and not any(literal in network for network in DEVELOPMENT_ADDRESSES):
        # Name the range of any address that is not global, unique local (fc00::/7) included.
        why = refusal(literal) or f"{literal} is a global address"
        raise UnsafeDestinationError(
            f"{why}: in development a webhook URL may name a loopback or private address "
            "(127/8, 10/8, 172.16/12, 192.168/16, [::1]), other hosts by name"
        )
    if not _FORMS[allow_private].fullmatch(url):
        raise UnsafeDestinationError(
            "the webhook URL must be http(s)://host[:port][/path][?query] with an ASCII host "
            "name (labels of letters, digits and hyphens; IDN as xn--) and plain URL characters"
        )
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return WebhookUrl(
        scheme=parts.scheme,
        host=host,
        port=port or (443 if parts.scheme == "https" else 80),
        target=target,
        literal=literal,
    )


def check_webhook_url(url: str, *, allow_private: bool = False) -> WebhookUrl:
    """What can be refused when an endpoint is registered, without DNS: the URL's form (an
    address only where loopback and private ranges are allowed). A name is resolved, and every
    address it resolves to checked, at each delivery (`check_destination`): DNS answers change,
    so only that check protects."""
    return parse_webhook_url(url, allow_private=allow_private)


def check_destination(
    url: str, *, resolver: Resolver = system_resolver, allow_private: bool = False
) -> Destination:
    """Where to connect for `url`: every resolved address checked, the first one used."""
    parsed = check_webhook_url(url, allow_private=allow_private)
    if parsed.literal is not None:
        addresses = [parsed.literal]
    else:
        try:
            answers = resolver(parsed.host, parsed.port)
        except OSError as exc:
            raise UnsafeDestinationError(f"{parsed.host} does not resolve: {exc}") from None
        addresses = [ipaddress.ip_address(a.split("%")[0]) for a in answers]
        if not addresses:
            raise UnsafeDestinationError(f"{parsed.host} resolves to no address")
        for address in addresses:
            why = refusal(address, allow_private=allow_private)
            if why is not None:
                raise UnsafeDestinationError(f"{parsed.host} resolves to {why}")
    return Destination(
        scheme=parsed.scheme,
        host=parsed.host,
        port=parsed.port,
        address=str(addresses[0]),
        target=parsed.target,
    )
