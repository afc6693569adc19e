"""The service's perimeter: one ASGI middleware in front of the whole app, so no route can forget it.

Every HTTP request and WebSocket handshake passes, in order (a target not starting with ``/`` — the
absolute form, ``*`` — is refused first with 400):

1. **Host** — loopback, the bind address, or ``ORCHESTRATOR_ALLOWED_HOSTS``; else 403 ``forbidden_host``.
2. **Origin** — when present, the server's own (scheme and ``Host``) or ``ORCHESTRATOR_ALLOWED_ORIGINS``;
   else 403 ``forbidden_origin``. When absent, a browser's ``Sec-Fetch-Site: cross-site``/``same-site``
   is refused the same way unless the request is a navigation (see :func:`fetch_metadata_allowed`).
3. **Token** — everything but ``/static/…``, ``/favicon.ico`` and ``/healthz``, as ``Authorization:
   Bearer …`` or the cookie ``GET /?token=…`` sets; else 401 ``unauthorized`` (the WebSocket: accepted,
   closed with 1008; ``/``: the sign-in page).
4. **JSON only** — a POST/PUT/PATCH body must be ``application/json``; else 415 (over 16 MiB: 413). The
   body is read whole before the app runs.

A refused handshake (Host, Origin) is closed before it is accepted, which the server answers with 403.
Every HTTP response leaves with the security headers, and an exception that escapes the app becomes
the JSON 500 body, never a traceback.
"""

from __future__ import annotations

import ipaddress
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import TypeVar
from urllib.parse import parse_qs

from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGIReceiveEvent,
    ASGISendCallable,
    ASGISendEvent,
    Scope,
)

from orchestrator.service.token import token_matches

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "ALLOWED_ORIGINS_ENV",
    "COOKIE_PREFIX",
    "Perimeter",
    "Policy",
    "content_type_allowed",
    "cookie_name",
    "fetch_metadata_allowed",
    "host_allowed",
    "is_loopback",
    "origin_allowed",
    "policy_from_env",
    "security_headers",
    "split_host",
]

ALLOWED_HOSTS_ENV = "ORCHESTRATOR_ALLOWED_HOSTS"
ALLOWED_ORIGINS_ENV = "ORCHESTRATOR_ALLOWED_ORIGINS"
COOKIE_PREFIX = "orchestrator_token_"
#: A year: the token survives restarts, so the cookie may too.
COOKIE_MAX_AGE = 365 * 24 * 3600
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: Same-named cookies compared per request, at most (see :func:`_cookies`).
_MAX_COOKIE_VALUES = 8
_SAFE_HOST = re.compile(r"[A-Za-z0-9.\-:\[\]]{1,300}")


@dataclass(frozen=True)
class Policy:
    """What the perimeter enforces. ``token=None`` turns the token off (loopback binds only; the caller
    checks that). ``allowed_hosts`` holds lower-case host names; ``"*"`` there turns the Host check off."""

    token: str | None
    bind_host: str = "127.0.0.1"
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)
    allowed_origins: frozenset[str] = field(default_factory=frozenset)


def _split_list(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def policy_from_env(token: str | None, bind_host: str, env: Mapping[str, str]) -> Policy:
    hosts = frozenset(split_host(h)[0] if h != "*" else "*" for h in _split_list(env.get(ALLOWED_HOSTS_ENV)))
    origins = frozenset(o for o in (_normal_origin(v) for v in _split_list(env.get(ALLOWED_ORIGINS_ENV))) if o)
    return Policy(token=token, bind_host=bind_host.lower(), allowed_hosts=hosts, allowed_origins=origins)


# --- pure checks -------------------------------------------------------------------------------------


def split_host(value: str) -> tuple[str, str | None]:
    """``Host`` header → (lower-case host name without brackets or trailing dot, port or ``None``);
    a malformed bracketed form gives an empty host name."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        host, rest = value[1:end], value[end + 1 :]
        if rest not in ("", ":") and not (rest.startswith(":") and rest[1:].isdigit()):
            return "", None  # "[::1]evil.example": not a host, so no host name to allow
        return host, rest[1:] or None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or ":" in host:
        return value.rstrip("."), None
    return host.rstrip("."), port


def is_loopback(host: str) -> bool:
    """A loopback name (``localhost``, ``*.localhost``) or address (127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_allowed(host_header: str | None, policy: Policy) -> bool:
    if "*" in policy.allowed_hosts:
        return True
    if not host_header:
        return False
    host, _ = split_host(host_header)
    if not host:
        return False
    if is_loopback(host) or host in policy.allowed_hosts:
        return True
    return host == policy.bind_host.strip("[]") and policy.bind_host not in ("0.0.0.0", "::", "")


def _normal_origin(value: str) -> str | None:
    """``scheme://host[:port]`` lower-cased, default ports dropped; ``None`` when it is not an origin."""
    value = value.strip().lower().rstrip("/")
    scheme, sep, authority = value.partition("://")
    if not sep or scheme not in ("http", "https") or not authority or "/" in authority:
        return None
    host, port = split_host(authority)
    if port == {"http": "80", "https": "443"}[scheme]:
        port = None
    bracketed = f"[{host}]" if ":" in host else host
    return f"{scheme}://{bracketed}" + (f":{port}" if port else "")


def origin_allowed(origin: str | None, scheme: str, host_header: str | None, policy: Policy) -> bool:
    """No ``Origin`` passes (not a browser's cross-site request); else the server's own or a listed one."""
    if origin is None:
        return True
    normal = _normal_origin(origin)
    if normal is None:  # "null" (sandboxed frames, file: pages) and anything malformed
        return False
    if normal in policy.allowed_origins:
        return True
    own_scheme = "https" if scheme in ("https", "wss") else "http"
    return host_header is not None and normal == _normal_origin(f"{own_scheme}://{host_header}")


def fetch_metadata_allowed(origin: str | None, site: str | None, mode: str | None) -> bool:
    """Without ``Origin``, a browser's non-navigation request from another site or another port of this
    host (``Sec-Fetch-Site: cross-site``/``same-site``; the cookie goes along) is refused: an ``<img>`` or
    ``<script>`` there could only probe. No ``Sec-Fetch-*`` (API clients) passes; an ``Origin`` decides."""
    if origin is not None or site is None:
        return True
    return site.strip().lower() not in ("cross-site", "same-site") or (mode or "").strip().lower() == "navigate"


def content_type_allowed(method: str, content_type: str | None, has_body: bool) -> bool:
    """POST/PUT/PATCH: a declared type must be ``application/json`` (parameters such as charset allowed);
    no declared type is accepted only without a body."""
    if method not in _BODY_METHODS:
        return True
    if content_type is None:
        return not has_body
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def cookie_name(host_header: str | None, scheme: str) -> str:
    """Cookies ignore ports, so two servers on one host would overwrite each other's cookie: the name
    carries the port the server was reached at."""
    _, port = split_host(host_header or "")
    return COOKIE_PREFIX + (port or ("443" if scheme in ("https", "wss") else "80"))


def _cookies(header: str | None, name: str) -> list[str]:
    """Every value sent under ``name`` (a few at most): a page on another port can plant one with a
    longer Path, which the browser sends first, so taking the first would let it lock the user out."""
    if not header:
        return []
    values = []
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            values.append(value.strip().strip('"'))
    return values[:_MAX_COOKIE_VALUES]


def _bearer(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def security_headers(host_header: str | None, *, inline_styles: bool = False) -> list[tuple[bytes, bytes]]:
    """The headers every response carries. ``connect-src`` is the server itself, over HTTP and WS."""
    own = ""
    if host_header and _SAFE_HOST.fullmatch(host_header):
        own = f" ws://{host_header} wss://{host_header}"
    style = "'self' 'unsafe-inline'" if inline_styles else "'self'"
    csp = (
        "default-src 'none'; script-src 'self'; "
        f"style-src {style}; img-src 'self' data:; font-src 'self'; media-src 'self' data: blob:; "
        f"connect-src 'self'{own}; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    return [
        (b"content-security-policy", csp.encode("latin-1")),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"x-frame-options", b"DENY"),
        (b"cross-origin-opener-policy", b"same-origin"),
        (b"cross-origin-resource-policy", b"same-origin"),
    ]


# --- the middleware -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Request:
    """The few request headers the perimeter reads (decoded latin-1, as HTTP defines them)."""

    host: str | None = None
    origin: str | None = None
    authorization: str | None = None
    cookie: str | None = None
    content_type: str | None = None
    fetch_site: str | None = None
    fetch_mode: str | None = None


def _read_headers(raw: Iterable[tuple[bytes, bytes]]) -> _Request:
    """A repeated ``Host`` or ``Origin`` (which no browser sends) reads as the empty value, which both
    checks refuse: whichever copy a proxy or the app would believe, the checks must not see the other."""
    host = origin = authorization = cookie = content_type = fetch_site = fetch_mode = None
    for name, value in raw:
        if name == b"host":
            host = value.decode("latin-1") if host is None else ""
        elif name == b"origin":
            origin = value.decode("latin-1") if origin is None else ""
        elif name == b"authorization":
            authorization = value.decode("latin-1")
        elif name == b"cookie":
            text = value.decode("latin-1")
            cookie = text if cookie is None else f"{cookie}; {text}"
        elif name == b"content-type":
            content_type = value.decode("latin-1")
        elif name == b"sec-fetch-site":
            fetch_site = value.decode("latin-1")
        elif name == b"sec-fetch-mode":
            fetch_mode = value.decode("latin-1")
    return _Request(host, origin, authorization, cookie, content_type, fetch_site, fetch_mode)


def _public(path: str) -> bool:
    """Paths served without the token: the sign-in page's assets and the container's liveness probe."""
    return path.startswith("/static/") or path in ("/favicon.ico", "/healthz")


def _signin_page() -> bytes:
    return resources.files("orchestrator.web").joinpath("static", "signin.html").read_bytes()


class Perimeter:
    """ASGI middleware applying a :class:`Policy` in front of ``app`` (see the module docstring)."""

    def __init__(self, app: ASGIFramework, policy: Policy, *, inline_styles: bool = False) -> None:
        self.app = app
        self.policy = policy
        self.inline_styles = inline_styles
        # The Host/Origin verdicts and the header block are pure functions of a few header values that
        # repeat on every request: memoized here (bounded: a flood of odd values only resets them).
        self._hosts: dict[str | None, bool] = {}
        self._origins: dict[tuple[str | None, str, str | None], bool] = {}
        self._headers: dict[str | None, list[tuple[bytes, bytes]]] = {}

    def _host_ok(self, host: str | None) -> bool:
        verdict = self._hosts.get(host)
        if verdict is None:
            verdict = _remember(self._hosts, host, host_allowed(host, self.policy))
        return verdict

    def _origin_ok(self, origin: str | None, scheme: str, host: str | None) -> bool:
        if origin is None:
            return True
        key = (origin, scheme, host)
        verdict = self._origins.get(key)
        if verdict is None:
            verdict = _remember(self._origins, key, origin_allowed(origin, scheme, host, self.policy))
        return verdict

    def _extra_headers(self, host: str | None) -> list[tuple[bytes, bytes]]:
        headers = self._headers.get(host)
        if headers is None:
            headers = _remember(self._headers, host, security_headers(host, inline_styles=self.inline_styles))
        return headers

    async def __call__(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _token_ok(self, request: _Request, scheme: str) -> bool:
        expected = self.policy.token
        if expected is None:
            return True
        presented = _bearer(request.authorization)
        if presented is not None:
            return token_matches(presented, expected)
        matches = [
            token_matches(value, expected) for value in _cookies(request.cookie, cookie_name(request.host, scheme))
        ]
        return any(matches)

    async def _http(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        request = _read_headers(scope["headers"])
        scheme, path, method = scope["scheme"], scope["path"], scope["method"]  # type: ignore[typeddict-item]
        extra = self._extra_headers(request.host)
        # a refusal leaves the body unread: tell the client this connection ends, so it sends nothing more on it
        refusal = [*extra, (b"connection", b"close")] if method in _BODY_METHODS else extra
        drainable = receive if method in _BODY_METHODS else None
        if not path.startswith("/"):  # absolute-form ("GET http://evil.example/…"), "*": Host would not rule
            return await _deny(send, 400, "invalid_request", refusal, drainable)
        if len(path) > MAX_PATH_CHARS:  # a run id past PATH_MAX made the file lookups raise (500)
            return await _deny(send, 404, "not_found", refusal, drainable)
        if not self._host_ok(request.host):
            return await _deny(send, 403, "forbidden_host", refusal, drainable)
        if not self._origin_ok(request.origin, scheme, request.host) or not fetch_metadata_allowed(
            request.origin, request.fetch_site, request.fetch_mode
        ):
            return await _deny(send, 403, "forbidden_origin", refusal, drainable)
        if path == "/" and self.policy.token is not None:
            query = parse_qs(scope["query_string"].decode("latin-1"))  # type: ignore[typeddict-item]
            link_token = query.get("token", [None])[-1]
            if link_token is not None and method in ("GET", "HEAD"):
                if token_matches(link_token, self.policy.token):
                    return await _sign_in(send, cookie_name(request.host, scheme), link_token, scheme, extra)
                return await _page(send, 401, _signin_page(), extra)
            if not self._token_ok(request, scheme):
                return await _page(send, 401, _signin_page(), extra)
        elif not _public(path) and not self._token_ok(request, scheme):
            return await _deny(send, 401, "unauthorized", refusal, drainable)
        if method in _BODY_METHODS:
            # The whole body is read before the app runs: the content-type rule sees whether there is one
            # (chunked or not), and the app can never answer before the request is complete (hypercorn
            # then stalls the next request on that kept-alive connection).
            body = await _read_body(receive, MAX_BODY_BYTES)
            if body is None:
                return await _deny(send, 413, "too_large", refusal, drainable)
            if not content_type_allowed(method, request.content_type, bool(body)):
                return await _deny(send, 415, "unsupported_media_type", refusal)
            receive = _replay(body, receive)

        started = False

        async def send_with_headers(message: ASGISendEvent) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [*message.get("headers", ()), *extra]  # type: ignore[typeddict-unknown-key]
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:  # the app's own 500 handler missed it: still JSON, still no traceback
            print(f"orchestrator: internal error on {method} {path!r}: {exc.__class__.__name__}", file=sys.stderr)
            if not started:
                await _deny(send, 500, "internal_error", extra)

    async def _websocket(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        request = _read_headers(scope["headers"])
        scheme = scope["scheme"]  # type: ignore[typeddict-item]
        allowed = (
            scope["path"].startswith("/")
            and self._host_ok(request.host)
            and self._origin_ok(request.origin, scheme, request.host)
            and fetch_metadata_allowed(request.origin, request.fetch_site, request.fetch_mode)
        )
        if not allowed:
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": ""})  # before accept: HTTP 403
            return
        if not self._token_ok(request, scheme):
            await receive()
            await send({"type": "websocket.accept", "subprotocol": None, "headers": []})
            await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
            return
        await self.app(scope, receive, send)


#: Longer request paths name nothing: 404 before any route (file lookups break at PATH_MAX).
MAX_PATH_CHARS = 2048
#: Request bodies above this size are refused with 413 (Quart's own default limit; tasks are text).
MAX_BODY_BYTES = 16 << 20


_MEMO_LIMIT = 256
_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(memo: dict[_K, _V], key: _K, value: _V) -> _V:
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value


async def _read_body(receive: ASGIReceiveCallable, limit: int) -> bytes | None:
    """The whole request body, or ``None`` once it exceeds ``limit`` (the rest is then left unread)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # the client went away; the app sees the disconnect next
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: ASGIReceiveCallable) -> ASGIReceiveCallable:
    """A ``receive`` that gives the app the already-read body once, then the real channel (the disconnect)."""
    given = False

    async def replay() -> ASGIReceiveEvent:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _drain(receive: ASGIReceiveCallable) -> None:
    """Read and drop (never keep) a refused request's body, up to the size limit, before the refusal goes out."""
    read = 0
    while read <= MAX_BODY_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


async def _deny(
    send: ASGISendCallable,
    status: int,
    code: str,
    extra: list[tuple[bytes, bytes]],
    drain: ASGIReceiveCallable | None = None,
) -> None:
    if drain is not None:
        await _drain(drain)
    body = b'{"ok":false,"error":"' + code.encode("ascii") + b'"}'
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="orchestrator"'))
    await send({"type": "http.response.start", "status": status, "headers": headers, "trailers": False})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _page(send: ASGISendCallable, status: int, body: bytes, extra: list[tuple[bytes, bytes]]) -> None:
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers, "trailers": False})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _sign_in(
    send: ASGISendCallable, name: str, token: str, scheme: str, extra: list[tuple[bytes, bytes]]
) -> None:
    """Set the HttpOnly SameSite=Strict cookie and redirect to ``/`` (the token leaves the address bar)."""
    secure = "; Secure" if scheme == "https" else ""
    cookie = f"{name}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={COOKIE_MAX_AGE}{secure}"
    headers = [
        (b"location", b"/"),
        (b"set-cookie", cookie.encode("latin-1")),
        (b"cache-control", b"no-store"),
        (b"content-length", b"0"),
        *extra,
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers, "trailers": False})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
