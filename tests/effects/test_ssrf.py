"""The SSRF guard refuses every non-global range, by name or by address, explicitly."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schemathesis.core.jsonschema.patterns import pin_pattern_length
from schemathesis.generation.hypothesis.examples import generate_one

from reportexport.webhooks.ssrf import (
    PORT_RULE,
    UnsafeDestinationError,
    check_destination,
    check_webhook_url,
    embedded_ipv4,
    parse_webhook_url,
    refusal,
    system_resolver,
    webhook_url_pattern,
)

REFUSED = [
    "0.0.0.1", "10.1.2.3", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.5.4",
    "192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.51.100.7",
    "203.0.113.9", "224.0.0.251", "239.255.255.250", "240.0.0.1", "255.255.255.255",
    "::", "::1", "100::1", "2001:db8::1", "fc00::1", "fd12:3456::1", "fe80::1", "fec0::1",
    "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:a00:1::1",
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",
]  # fmt: skip


@pytest.mark.parametrize("address", REFUSED)
def test_each_non_global_range_is_refused(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is not None
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(UnsafeDestinationError):
        check_destination(f"http://{host}/hook")


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
def test_global_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


def test_a_name_that_resolves_to_a_private_address_is_refused() -> None:
    def resolver(host: str, port: int) -> list[str]:
        assert (host, port) == ("hooks.example.com", 443)
        return ["93.184.216.34", "10.0.0.5"]  # one bad answer is enough

    with pytest.raises(UnsafeDestinationError, match=r"10\.0\.0\.5 is private"):
        check_destination("https://hooks.example.com/x", resolver=resolver)


def test_the_connection_goes_to_the_checked_address() -> None:
    destination = check_destination(
        "https://hooks.example.com:8443/in?x=1", resolver=lambda host, port: ["93.184.216.34"]
    )
    assert (destination.address, destination.host, destination.port, destination.target) == (
        "93.184.216.34",
        "hooks.example.com",
        8443,
        "/in?x=1",
    )


def test_loopback_and_private_ranges_can_be_allowed_for_development() -> None:
    assert check_destination("http://127.0.0.1:9/x", allow_private=True).address == "127.0.0.1"
    assert refusal(ipaddress.ip_address("10.0.0.1"), allow_private=True) is None
    assert refusal(ipaddress.ip_address("169.254.169.254"), allow_private=True) is not None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "http or https"),
        ("http:///x", "no host"),
        ("http://user:pw@example.com/x", "credentials"),
    ],
)
def test_malformed_urls_are_refused(url: str, message: str) -> None:
    with pytest.raises(UnsafeDestinationError, match=message):
        check_destination(url, resolver=lambda host, port: ["93.184.216.34"])


def test_a_name_that_does_not_resolve_is_refused_naming_the_failure() -> None:
    def resolver(host: str, port: int) -> list[str]:
        raise OSError("Name or service not known")

    with pytest.raises(UnsafeDestinationError) as raised:
        check_destination("https://hooks.example.com/x", resolver=resolver)
    assert str(raised.value) == "hooks.example.com does not resolve: Name or service not known"


def test_a_name_with_an_empty_answer_is_refused() -> None:
    with pytest.raises(UnsafeDestinationError) as raised:
        check_destination("https://hooks.example.com/x", resolver=lambda host, port: [])
    assert str(raised.value) == "hooks.example.com resolves to no address"


def test_every_answer_is_checked_not_only_the_first() -> None:
    with pytest.raises(UnsafeDestinationError) as raised:
        check_destination(
            "https://hooks.example.com/x",
            resolver=lambda host, port: ["93.184.216.34", "93.184.216.35", "fe80::1%eth0"],
        )
    assert str(raised.value) == "hooks.example.com resolves to fe80::1 is link-local"


def test_the_first_answer_is_the_address_connected_to() -> None:
    destination = check_destination(
        "https://hooks.example.com/x",
        resolver=lambda host, port: ["93.184.216.35", "2606:2800:220:1:248:1893:25c8:1946"],
    )
    assert destination.address == "93.184.216.35"


def test_the_system_resolver_is_the_default() -> None:
    """localhost resolves through the machine's own resolver, to a loopback address."""
    with pytest.raises(UnsafeDestinationError, match=r"^localhost resolves to \S+ is loopback$"):
        check_destination("http://localhost:8080/x")
    destination = check_destination("http://localhost:8080/x", allow_private=True)
    assert ipaddress.ip_address(destination.address).is_loopback
    assert (destination.host, destination.port) == ("localhost", 8080)


def test_the_system_resolver_gives_each_address_once() -> None:
    answers = system_resolver("localhost", 80)
    assert answers
    assert all(ipaddress.ip_address(a).is_loopback for a in answers)
    assert len(answers) == len(set(answers))


@pytest.mark.parametrize(
    ("url", "port", "target"),
    [
        ("http://hooks.example.com", 80, "/"),
        ("https://hooks.example.com", 443, "/"),
        ("http://hooks.example.com:8080/a/b?c=d&e", 8080, "/a/b?c=d&e"),
        ("https://hooks.example.com/?", 443, "/"),
    ],
)
def test_the_port_defaults_to_the_schemes(url: str, port: int, target: str) -> None:
    parsed = parse_webhook_url(url)
    assert (parsed.host, parsed.port, parsed.target, parsed.literal) == (
        "hooks.example.com",
        port,
        target,
        None,
    )
    assert parsed.scheme == url.partition(":")[0]


@pytest.mark.parametrize(
    "url",
    [
        "https://token@hooks.example.com/",
        "https://:secret@hooks.example.com/",
        "https://user:pw@hooks.example.com/",
    ],
)
def test_a_user_name_or_a_password_alone_is_refused(url: str) -> None:
    with pytest.raises(UnsafeDestinationError) as raised:
        parse_webhook_url(url)
    assert str(raised.value) == "credentials in webhook URLs are not accepted"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "webhook URLs must be http or https, not 'ftp'"),
        ("http:///x", "the webhook URL has no host"),
        ("https://hooks.example.com/x#part", "a webhook URL has no fragment (#...)"),
        ("https://hooks.example.com:0/x", PORT_RULE),
        ("https://hooks.example.com:65536/x", PORT_RULE),
        ("https://hooks.example.com:x/", PORT_RULE),
        ("https://[::1/x", "the webhook URL cannot be read: Invalid IPv6 URL"),
        (
            "https://hooks.example.com/\x00",
            "the webhook URL contains a NUL character (U+0000) at position 26",
        ),
        (
            "https://hooks.example.com/a b",
            "the webhook URL must be http(s)://host[:port][/path][?query] with an ASCII host "
            "name (labels of letters, digits and hyphens; IDN as xn--) and plain URL characters",
        ),
    ],
)
def test_each_malformed_url_is_refused_with_its_reason(url: str, message: str) -> None:
    with pytest.raises(UnsafeDestinationError) as raised:
        check_webhook_url(url)
    assert str(raised.value) == message


def test_the_port_rule_says_its_range() -> None:
    assert PORT_RULE == "the webhook URL's port must be a number 1 to 65535"


def test_an_address_is_refused_where_private_ranges_are_not_allowed() -> None:
    with pytest.raises(UnsafeDestinationError) as raised:
        check_webhook_url("http://127.0.0.1:9/x")
    assert str(raised.value) == (
        "127.0.0.1 is an address: webhook URLs name their host (addresses are for "
        "development, with webhooks_allow_private)"
    )


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://169.254.169.254/x", "169.254.169.254 is link-local"),
        ("http://93.184.216.34/x", "93.184.216.34 is a global address"),
        ("http://[fe80::1]/x", "fe80::1 is link-local"),
        ("http://[fd00::1]/x", "fd00::1 is unique local (private)"),
    ],
)
def test_in_development_only_loopback_and_private_addresses_pass(url: str, why: str) -> None:
    with pytest.raises(UnsafeDestinationError) as raised:
        check_webhook_url(url, allow_private=True)
    assert str(raised.value) == (
        f"{why}: in development a webhook URL may name a loopback or private address "
        "(127/8, 10/8, 172.16/12, 192.168/16, [::1]), other hosts by name"
    )


@pytest.mark.parametrize("url", ["http://10.1.2.3:8080/x", "http://[::1]/x", "http://172.31.0.1/"])
def test_a_private_address_is_taken_as_it_is_in_development(url: str) -> None:
    parsed = check_webhook_url(url, allow_private=True)
    assert parsed.literal == ipaddress.ip_address(parsed.host)
    destination = check_destination(url, allow_private=True, resolver=_no_dns)
    assert destination.address == parsed.host


def _no_dns(host: str, port: int) -> list[str]:
    raise AssertionError("an address is not resolved")


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1 is loopback (embedded in ::ffff:7f00:1)"),
        ("2002:a00:1::1", "10.0.0.1 is private (embedded in 2002:a00:1::1)"),
        ("64:ff9b::a00:1", "10.0.0.1 is private (embedded in 64:ff9b::a00:1)"),
        (
            "2001:0:4136:e378:8000:63bf:f5ff:fffe",
            "10.0.0.1 is private (embedded in 2001:0:4136:e378:8000:63bf:f5ff:fffe)",
        ),
        ("100.64.0.1", "100.64.0.1 is carrier-grade NAT"),
        ("fd12:3456::1", "fd12:3456::1 is unique local (private)"),
    ],
)
def test_a_refusal_names_the_range(address: str, why: str) -> None:
    assert refusal(ipaddress.ip_address(address)) == why


@pytest.mark.parametrize(
    ("address", "inner"),
    [
        ("::ffff:93.184.216.34", "93.184.216.34"),
        ("2002:5db8:d822::1", "93.184.216.34"),
        ("64:ff9b::5db8:d822", "93.184.216.34"),
        ("2001:db8::1", None),
        ("2606:2800:220:1:248:1893:25c8:1946", None),
    ],
)
def test_ipv4_embedded_in_ipv6_is_found(address: str, inner: str | None) -> None:
    found = embedded_ipv4(ipaddress.IPv6Address(address))
    assert found == (ipaddress.IPv4Address(inner) if inner else None)


def test_an_embedded_global_address_passes() -> None:
    assert refusal(ipaddress.ip_address("::ffff:93.184.216.34")) is None
    assert refusal(ipaddress.ip_address("::ffff:10.0.0.1"), allow_private=True) is None


def test_allowing_private_ranges_never_allows_the_others() -> None:
    for address in ["169.254.169.254", "100.64.0.1", "224.0.0.1", "fe80::1", "::ffff:169.254.1.1"]:
        assert refusal(ipaddress.ip_address(address), allow_private=True) is not None
    for address in ["127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.0.1", "::1", "fd00::1"]:
        assert refusal(ipaddress.ip_address(address), allow_private=True) is None


def test_the_system_resolver_asks_for_the_host_given() -> None:
    assert system_resolver("127.0.0.2", 443) == ["127.0.0.2"]
    assert system_resolver("::1", 443) == ["::1"]


def test_the_published_pattern_takes_addresses_only_where_private_ranges_are_allowed() -> None:
    strict = re.compile(webhook_url_pattern(allow_private=False))
    development = re.compile(webhook_url_pattern(allow_private=True))
    for url in ["http://10.0.0.1:8080/x", "http://[::1]/", "http://192.168.1.1"]:
        assert strict.fullmatch(url) is None
        assert development.fullmatch(url) is not None
    for url in ["https://hooks.example.com/x?y=1", "http://localhost:9/"]:
        assert strict.fullmatch(url) is not None
        assert development.fullmatch(url) is not None
    assert strict.fullmatch("https://hooks.example.com/\n") is None


def test_a_host_name_is_at_most_253_characters_in_the_pattern_and_the_check() -> None:
    labels = ["a" * 63, "b" * 63, "c" * 63, "d" * 61]  # 253 characters with the dots
    longest = ".".join(labels)
    for private in (False, True):
        pattern = re.compile(webhook_url_pattern(allow_private=private))
        for url in (f"https://{longest}/x", f"https://{longest}:8443", f"https://{longest}"):
            assert pattern.fullmatch(url) is not None
            assert parse_webhook_url(url, allow_private=private).host == longest
        too_long = f"https://{longest}e/x"
        assert pattern.fullmatch(too_long) is None
        with pytest.raises(UnsafeDestinationError):
            parse_webhook_url(too_long, allow_private=private)


@pytest.mark.parametrize("private", [False, True])
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_what_a_generator_draws_from_the_published_pattern_the_check_takes(
    private: bool, data: st.DataObject
) -> None:
    pattern = webhook_url_pattern(allow_private=private)
    url = data.draw(st.from_regex(pattern, fullmatch=True))
    parts = parse_webhook_url(url, allow_private=private)
    assert url.lower().startswith(f"{parts.scheme}://")


@pytest.mark.parametrize("private", [False, True])
@pytest.mark.parametrize("length", [2000, 1999, 100])
def test_a_url_of_the_documents_length_can_be_generated_from_the_pattern(
    private: bool, length: int
) -> None:
    """schemathesis' coverage phase draws a URL of exactly the document's maxLength (and one
    less) by rewriting the pattern to that length; each such draw must find one quickly. With
    a positive lookahead in the pattern none was found, and each search cost half a minute."""
    pattern = webhook_url_pattern(allow_private=private)
    pinned = pin_pattern_length(pattern, length, length)
    drawn = st.from_regex(pinned, fullmatch=True).filter(lambda url: len(url) == length)
    url = generate_one(drawn)
    assert re.fullmatch(pattern, url) is not None
    assert parse_webhook_url(url, allow_private=private).target


@pytest.mark.parametrize("url", ["HTTP://hooks.example.com/x", "Https://hooks.example.com/"])
def test_a_scheme_in_capitals_is_the_same_scheme(url: str) -> None:
    """Schemes are case-insensitive: the check, the published pattern and the connection agree."""
    assert parse_webhook_url(url).scheme == url.partition(":")[0].lower()
    assert re.fullmatch(webhook_url_pattern(allow_private=False), url) is not None
    resolve = _answers("93.184.216.34")
    assert check_destination(url, resolver=resolve).scheme == url.partition(":")[0].lower()


def test_addresses_are_refused_unless_private_ranges_are_allowed_explicitly() -> None:
    with pytest.raises(UnsafeDestinationError, match=r"^10\.0\.0\.1 is an address: "):
        parse_webhook_url("http://10.0.0.1/x")
    assert parse_webhook_url("http://10.0.0.1/x", allow_private=True).port == 80


def test_a_destination_keeps_the_scheme() -> None:
    resolve = _answers("93.184.216.34")
    assert check_destination("https://hooks.example.com/", resolver=resolve).scheme == "https"
    assert check_destination("http://hooks.example.com/", resolver=resolve).scheme == "http"


def _answers(*addresses: str) -> Callable[[str, int], list[str]]:
    return lambda host, port: list(addresses)
