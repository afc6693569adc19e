"""The address rule of ``fetch_url``'s direct fetch: public internet addresses only.

``address_refusal`` is the pure rule: loopback, private (RFC 1918, unique-local), link-local, cloud
metadata, unspecified, multicast and every other non-global address are refused, including IPv4
addresses wrapped in IPv6 (``::ffff:127.0.0.1``, 6to4, Teredo). ``guarded_client`` is an httpx client
whose every TCP connection resolves the host itself, checks *every* address it resolves to, and then
connects to a checked address — so a redirect to a private host, a name that resolves to one, and a
DNS answer that changes between check and connect (rebinding) are all refused. It ignores proxy
variables: a proxy would make the check see the proxy, not the target.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable

import httpcore
import httpx
import trio
from httpcore import AsyncNetworkBackend, AsyncNetworkStream

__all__ = ["ALLOW_PRIVATE_VARIABLE", "AddressRefused", "address_refusal", "guarded_client"]

#: Set to 1 to let the direct fetch reach private, loopback and link-local addresses.
ALLOW_PRIVATE_VARIABLE = "ORCHESTRATOR_FETCH_ALLOW_PRIVATE"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Instance-metadata endpoints reachable without being link-local or RFC 1918 (Alibaba, AWS IPv6).
_METADATA = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),
        ipaddress.ip_address("169.254.170.2"),
        ipaddress.ip_address("100.100.100.200"),
        ipaddress.ip_address("fd00:ec2::254"),
    }
)


class AddressRefused(Exception):
    """A connection the address rule refused; ``str(exc)`` names the host, the address and why."""


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def address_refusal(ip: IPAddress) -> str | None:
    """Why the direct fetch may not connect to ``ip`` (a short category), or ``None`` when it may."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            reason = address_refusal(inner)
            return f"{reason}, wrapped in IPv6" if reason else None
    if ip in _METADATA:
        return "a cloud metadata address"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_multicast:
        return "multicast"
    if ip.is_private:
        return "private"
    if not ip.is_global:
        return "not publicly routable"
    return None


def _addresses(infos: Iterable[tuple[object, ...]]) -> list[IPAddress]:
    seen: list[IPAddress] = []
    for info in infos:
        sockaddr = info[4]
        assert isinstance(sockaddr, tuple)
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in seen:
            seen.append(ip)
    return seen


class _GuardedBackend(AsyncNetworkBackend):
    """httpcore's trio backend behind the address rule: resolve, check every address, connect to one."""

    def __init__(self, exempt: frozenset[IPAddress]) -> None:
        from httpcore._backends.trio import TrioBackend

        self._inner = TrioBackend()
        self._exempt = exempt

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> AsyncNetworkStream:
        with trio.fail_after(timeout if timeout is not None else float("inf")):
            try:
                infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                raise httpcore.ConnectError(f"cannot resolve {host}: {exc.strerror or exc}") from None
        addresses = _addresses(infos)
        for ip in addresses:
            reason = None if ip in self._exempt else address_refusal(ip)
            if reason is not None:
                shown = host if host == str(ip) else f"{host} resolves to {ip}, which"
                raise AddressRefused(
                    f"{shown} is {reason}; the direct fetch only reaches public addresses "
                    f"(the operator may set {ALLOW_PRIVATE_VARIABLE}=1 to allow private ones)"
                )
        last: Exception | None = None
        for ip in addresses:
            try:
                return await self._inner.connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                last = exc
        raise last or httpcore.ConnectError(f"{host} resolves to no address")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> AsyncNetworkStream:
        raise AddressRefused("fetch_url does not connect to Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, exempt: frozenset[IPAddress]) -> None:
        super().__init__()
        # httpx has no public hook for the network backend; its pool is rebuilt with ours.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=_GuardedBackend(exempt)
        )


def guarded_client(
    seconds: float,
    headers: dict[str, str],
    max_redirects: int,
    exempt: Iterable[str] = (),
    request_hooks: list[Callable[[httpx.Request], Awaitable[None]]] | None = None,
) -> httpx.AsyncClient:
    """An httpx client (redirects followed, each hop checked) whose connections obey the address rule.

    ``exempt``: addresses the rule lets through (tests reach a loopback server this way, and only the
    listed ones). ``request_hooks``: httpx request hooks run before every request (each redirect hop).
    """
    allowed = frozenset(ipaddress.ip_address(address) for address in exempt)
    return httpx.AsyncClient(
        transport=_GuardedTransport(allowed),
        timeout=httpx.Timeout(seconds),
        follow_redirects=True,
        max_redirects=max_redirects,
        headers=headers,
        trust_env=False,
        event_hooks={"request": request_hooks or []},
    )
