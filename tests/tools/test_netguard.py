"""The direct fetch's address rule, over every class of address it must refuse or let through."""

from __future__ import annotations

import ipaddress

import pytest

from orchestrator.tools.netguard import address_refusal


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("172.31.255.255", "private"),
        ("192.168.0.10", "private"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("169.254.169.254", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("100.64.0.1", "not publicly routable"),
        ("192.0.2.1", "private"),
        ("::ffff:127.0.0.1", "loopback, wrapped in IPv6"),
        ("::ffff:10.0.0.1", "private, wrapped in IPv6"),
        ("2002:7f00:1::", "loopback, wrapped in IPv6"),
        ("2002:a9fe:a9fe::", "a cloud metadata address, wrapped in IPv6"),
    ],
)
def test_non_public_addresses_are_refused_with_their_category(address: str, reason: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "8.8.8.8", "2606:4700:4700::1111", "::ffff:1.1.1.1"])
def test_public_addresses_pass(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None
