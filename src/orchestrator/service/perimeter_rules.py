"""The perimeter's rules as pure functions: what a request's Host, Origin, ``Sec-Fetch-*``, token
headers and body type decide, the headers every response carries, and the ``Policy`` they apply.

No I/O and no ASGI here: ``perimeter.Perimeter`` reads the headers off the connection, asks
``admit_http`` / ``admit_websocket`` what to do (an instruction: ``Refuse``, ``SignIn``, ``SignInPage``, or
``None`` to pass the request on) and does it. The order of the checks is documented there.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from orchestrator.service.token import token_matches

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "ALLOWED_ORIGINS_ENV",
    "BODY_METHODS",
    "COOKIE_MAX_AGE",
    "COOKIE_PREFIX",
    "MAX_BODY_BYTES",
    "MAX_PATH_CHARS",
    "Admission",
    "Policy",
    "Refuse",
    "RequestHeaders",
    "SignIn",
    "SignInPage",
    "admit_http",
    "admit_websocket",
    "bearer_token",
    "content_type_allowed",
    "cookie_name",
    "cookie_values",
    "fetch_metadata_allowed",
    "host_allowed",
    "is_loopback",
    "is_public",
    "normal_origin",
    "origin_allowed",
    "policy_from_env",
    "read_headers",
    "security_headers",
    "split_host",
    "token_accepted",
]

ALLOWED_HOSTS_ENV = "ORCHESTRATOR_ALLOWED_HOSTS"
ALLOWED_ORIGINS_ENV = "ORCHESTRATOR_ALLOWED_ORIGINS"
COOKIE_PREFIX = "orchestrator_token_"
#: A year: the token survives restarts, so the cookie may too.
COOKIE_MAX_AGE = 365 * 24 * 3600
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: Same-named cookies compared per request, at most (see :func:`cookie_values`).
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
    origins = frozenset(o for o in (normal_origin(v) for v in _split_list(env.get(ALLOWED_ORIGINS_ENV))) if o)
    return Policy(token=token, bind_host=bind_host.lower(), allowed_hosts=hosts, allowed_origins=origins)


# --- the checks -------------------------------------------------------------------------------------


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


def normal_origin(value: str) -> str | None:
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
    normal = normal_origin(origin)
    if normal is None:  # "null" (sandboxed frames, file: pages) and anything malformed
        return False
    if normal in policy.allowed_origins:
        return True
    own_scheme = "https" if scheme in ("https", "wss") else "http"
    return host_header is not None and normal == normal_origin(f"{own_scheme}://{host_header}")


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
    if method not in BODY_METHODS:
        return True
    if content_type is None:
        return not has_body
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def cookie_name(host_header: str | None, scheme: str) -> str:
    """Cookies ignore ports, so two servers on one host would overwrite each other's cookie: the name
    carries the port the server was reached at."""
    _, port = split_host(host_header or "")
    return COOKIE_PREFIX + (port or ("443" if scheme in ("https", "wss") else "80"))


def cookie_values(header: str | None, name: str) -> list[str]:
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


def bearer_token(header: str | None) -> str | None:
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


#: Longer request paths name nothing: 404 before any route (file lookups break at PATH_MAX).
MAX_PATH_CHARS = 2048
#: Request bodies above this size are refused with 413 (Quart's own default limit; tasks are text).
MAX_BODY_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class RequestHeaders:
    """The few request headers the perimeter reads (decoded latin-1, as HTTP defines them)."""

    host: str | None = None
    origin: str | None = None
    authorization: str | None = None
    cookie: str | None = None
    content_type: str | None = None
    fetch_site: str | None = None
    fetch_mode: str | None = None


def read_headers(raw: Iterable[tuple[bytes, bytes]]) -> RequestHeaders:
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
    return RequestHeaders(host, origin, authorization, cookie, content_type, fetch_site, fetch_mode)


def is_public(path: str) -> bool:
    """Paths served without the token: the sign-in page's assets and the container's liveness probe."""
    return path.startswith("/static/") or path in ("/favicon.ico", "/healthz")


def token_accepted(request: RequestHeaders, scheme: str, policy: Policy) -> bool:
    """The token is off, or the request presents it: as ``Authorization: Bearer`` (which then decides
    alone), else as any of the cookies named for the port it came in on."""
    expected = policy.token
    if expected is None:
        return True
    presented = bearer_token(request.authorization)
    if presented is not None:
        return token_matches(presented, expected)
    matches = [
        token_matches(value, expected) for value in cookie_values(request.cookie, cookie_name(request.host, scheme))
    ]
    return any(matches)


# --- the verdicts -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refuse:
    """Answer ``status`` with the JSON error body ``{"ok": false, "error": code}`` (a WebSocket handshake:
    closed before it is accepted, or — 401 — accepted and closed with 1008)."""

    status: int
    code: str


@dataclass(frozen=True, slots=True)
class SignInPage:
    """Answer ``/`` with the sign-in page and 401: no token, or a wrong one in the link."""


@dataclass(frozen=True, slots=True)
class SignIn:
    """The link's ``?token=`` is right: set it as the cookie ``cookie`` and redirect to ``/``."""

    cookie: str
    token: str


#: What the perimeter does before the app runs; ``None``: pass the request on.
Admission = Refuse | SignInPage | SignIn | None


def admit_http(
    request: RequestHeaders,
    *,
    scheme: str,
    path: str,
    method: str,
    query_string: bytes,
    policy: Policy,
    host_ok: bool,
    origin_ok: bool,
) -> Admission:
    """The verdict on an HTTP request's target and headers, in the perimeter's order (the body rules
    come after, once the body is read). ``host_ok``/``origin_ok`` are ``host_allowed``/``origin_allowed``
    for this request (the middleware memoizes them)."""
    if not path.startswith("/"):  # absolute-form ("GET http://evil.example/…"), "*": Host would not rule
        return Refuse(400, "invalid_request")
    if len(path) > MAX_PATH_CHARS:  # a run id past PATH_MAX made the file lookups raise (500)
        return Refuse(404, "not_found")
    if not host_ok:
        return Refuse(403, "forbidden_host")
    if not origin_ok or not fetch_metadata_allowed(request.origin, request.fetch_site, request.fetch_mode):
        return Refuse(403, "forbidden_origin")
    if path == "/" and policy.token is not None:
        link_token = parse_qs(query_string.decode("latin-1")).get("token", [None])[-1]
        if link_token is not None and method in ("GET", "HEAD"):
            if token_matches(link_token, policy.token):
                return SignIn(cookie_name(request.host, scheme), link_token)
            return SignInPage()
        if not token_accepted(request, scheme, policy):
            return SignInPage()
    elif not is_public(path) and not token_accepted(request, scheme, policy):
        return Refuse(401, "unauthorized")
    return None


def admit_websocket(
    request: RequestHeaders, *, scheme: str, path: str, policy: Policy, host_ok: bool, origin_ok: bool
) -> Refuse | None:
    """The verdict on a WebSocket handshake: the HTTP checks but the link sign-in (no public paths). Any
    refusal but 401 closes the handshake before it is accepted (the server answers 403)."""
    if not path.startswith("/"):
        return Refuse(400, "invalid_request")
    if not host_ok:
        return Refuse(403, "forbidden_host")
    if not origin_ok or not fetch_metadata_allowed(request.origin, request.fetch_site, request.fetch_mode):
        return Refuse(403, "forbidden_origin")
    if not token_accepted(request, scheme, policy):
        return Refuse(401, "unauthorized")
    return None
