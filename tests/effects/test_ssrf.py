"""The SSRF guard refuses every non-global range, by name or by address, explicitly."""

from __future__ import annotations

import ipaddress

import pytest

from reportexport.webhooks.ssrf import UnsafeDestinationError, check_destination, refusal

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
