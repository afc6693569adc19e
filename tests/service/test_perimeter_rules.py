"""The perimeter's pure rules: Host, Origin, ``Sec-Fetch-*``, content types, the cookie name, the
security headers and the policy read from the environment (the middleware is ``test_perimeter.py``)."""

from __future__ import annotations

import pytest

from orchestrator.service.perimeter_rules import (
    Policy,
    Refuse,
    RequestHeaders,
    SignIn,
    SignInPage,
    admit_http,
    admit_websocket,
    content_type_allowed,
    cookie_name,
    fetch_metadata_allowed,
    host_allowed,
    is_loopback,
    origin_allowed,
    policy_from_env,
    security_headers,
    split_host,
    token_accepted,
)

# --- the checks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", "8765")),
        ("LOCALHOST", ("localhost", None)),
        ("[::1]:80", ("::1", "80")),
        ("[::1]", ("::1", None)),
        ("example.com.:443", ("example.com", "443")),
        ("::1", ("::1", None)),
        ("[::1]evil.example", ("", None)),
        ("[::1]:80evil", ("", None)),
        ("[::1]:", ("::1", None)),
    ],
)
def test_split_host(header: str, expected: tuple[str, str | None]) -> None:
    assert split_host(header) == expected


def test_loopback_names_and_addresses() -> None:
    for host in ("localhost", "app.localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.0.0.1", "evil.example", "localhost.evil.example", ""):
        assert not is_loopback(host), host


def test_host_allow_list() -> None:
    policy = policy_from_env("t", "192.168.1.5", {"ORCHESTRATOR_ALLOWED_HOSTS": "orch.lan, Proxy.Example:8443"})
    assert host_allowed("127.0.0.1:8765", policy)
    assert host_allowed("localhost", policy)
    assert host_allowed("192.168.1.5:8765", policy)  # the bind address
    assert host_allowed("orch.lan:8765", policy)
    assert host_allowed("proxy.example", policy)
    assert not host_allowed("evil.example", policy)
    assert not host_allowed(None, policy)
    assert not host_allowed("", policy)
    wildcard_bind = Policy(token="t", bind_host="0.0.0.0")
    assert not host_allowed("0.0.0.0:80", wildcard_bind)  # a wildcard bind is not a name anyone reaches it by
    assert not host_allowed("10.1.1.1", wildcard_bind)
    assert host_allowed("anything.example", policy_from_env("t", "127.0.0.1", {"ORCHESTRATOR_ALLOWED_HOSTS": "*"}))


def test_origin_rules() -> None:
    policy = policy_from_env("t", "127.0.0.1", {"ORCHESTRATOR_ALLOWED_ORIGINS": "https://tools.example/"})
    assert origin_allowed(None, "http", "127.0.0.1:8765", policy)  # no Origin: not a cross-site browser request
    assert origin_allowed("http://127.0.0.1:8765", "http", "127.0.0.1:8765", policy)
    assert origin_allowed("http://LOCALHOST:8765", "ws", "localhost:8765", policy)  # the WebSocket's own page
    assert origin_allowed("http://localhost:80", "http", "localhost", policy)  # default port
    assert origin_allowed("https://tools.example", "http", "127.0.0.1:8765", policy)
    assert not origin_allowed("http://127.0.0.1:9999", "http", "127.0.0.1:8765", policy)  # another loopback port
    assert not origin_allowed("https://127.0.0.1:8765", "http", "127.0.0.1:8765", policy)  # another scheme
    assert not origin_allowed("null", "http", "127.0.0.1:8765", policy)
    assert not origin_allowed("http://evil.example", "http", "127.0.0.1:8765", policy)
    assert not origin_allowed("http://127.0.0.1:8765/path", "http", "127.0.0.1:8765", policy)


def test_content_types() -> None:
    assert content_type_allowed("POST", "application/json", True)
    assert content_type_allowed("PUT", "Application/JSON; charset=utf-8", True)
    assert content_type_allowed("POST", None, False)  # an empty POST (requeue) declares nothing
    assert content_type_allowed("GET", "text/plain", True)
    assert content_type_allowed("DELETE", None, False)
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""):
        assert not content_type_allowed("POST", kind, True), kind
    assert not content_type_allowed("PATCH", None, True)


def test_fetch_metadata_rule() -> None:
    assert fetch_metadata_allowed(None, None, None)  # curl, API clients, old browsers
    for site in ("same-origin", "none"):
        assert fetch_metadata_allowed(None, site, "no-cors")
    for site in ("cross-site", "same-site", "Cross-Site"):
        assert not fetch_metadata_allowed(None, site, "no-cors"), site
        assert not fetch_metadata_allowed(None, site, None), site
        assert fetch_metadata_allowed(None, site, "navigate"), site  # following a link still works
        assert fetch_metadata_allowed("http://localhost", site, "cors")  # with an Origin, that rule decides


def test_cookie_name_carries_the_port() -> None:
    assert cookie_name("127.0.0.1:8765", "http") == "orchestrator_token_8765"
    assert cookie_name("localhost", "http") == "orchestrator_token_80"
    assert cookie_name("localhost", "wss") == "orchestrator_token_443"


def test_csp_has_no_inline_script_and_forbids_framing() -> None:
    csp = dict(security_headers("127.0.0.1:8765"))[b"content-security-policy"].decode()
    assert "script-src 'self';" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    assert "connect-src 'self' ws://127.0.0.1:8765 wss://127.0.0.1:8765;" in csp
    injected = dict(security_headers("evil; script-src *"))[b"content-security-policy"].decode()
    assert "connect-src 'self';" in injected and "*" not in injected


# --- the verdicts -------------------------------------------------------------------------------------

TOKEN = "t0k3n"
POLICY = Policy(token=TOKEN)
HOST = "127.0.0.1:8765"


def _http(path: str = "/api/runs", method: str = "GET", query: bytes = b"", **headers: str | bool) -> object:
    host_ok, origin_ok = bool(headers.pop("host_ok", True)), bool(headers.pop("origin_ok", True))
    request = RequestHeaders(host=HOST, **headers)  # type: ignore[arg-type]
    return admit_http(
        request,
        scheme="http",
        path=path,
        method=method,
        query_string=query,
        policy=POLICY,
        host_ok=host_ok,
        origin_ok=origin_ok,
    )


def test_http_verdicts_in_the_perimeter_s_order() -> None:
    bearer = f"Bearer {TOKEN}"
    assert _http("http://evil.example/api", host_ok=False) == Refuse(400, "invalid_request")  # the target first
    assert _http("/" + "a" * 3000, authorization=bearer) == Refuse(404, "not_found")
    assert _http(host_ok=False, origin_ok=False) == Refuse(403, "forbidden_host")  # Host before Origin
    assert _http(origin_ok=False, authorization=bearer) == Refuse(403, "forbidden_origin")
    assert _http(fetch_site="cross-site", fetch_mode="no-cors") == Refuse(403, "forbidden_origin")  # before the token
    assert _http() == Refuse(401, "unauthorized")
    assert _http(authorization="Bearer wrong") == Refuse(401, "unauthorized")
    assert _http(authorization=bearer) is None
    assert _http(cookie=f"{cookie_name(HOST, 'http')}={TOKEN}") is None
    assert _http("/static/app.js") is None and _http("/healthz") is None  # public paths


def test_the_page_signs_in_with_the_link_and_shows_the_sign_in_page_otherwise() -> None:
    cookie = cookie_name(HOST, "http")
    assert _http("/", query=f"token={TOKEN}".encode()) == SignIn(cookie, TOKEN)
    assert _http("/", "HEAD", query=f"token={TOKEN}".encode()) == SignIn(cookie, TOKEN)
    assert _http("/", query=b"token=wrong") == SignInPage()
    assert _http("/") == SignInPage()
    assert _http("/", "POST", query=f"token={TOKEN}".encode()) == SignInPage()  # only GET/HEAD sign in
    assert _http("/", authorization=f"Bearer {TOKEN}") is None


def test_a_bearer_header_decides_alone_and_any_same_named_cookie_may_hold_the_token() -> None:
    name = cookie_name(HOST, "http")
    both = RequestHeaders(host=HOST, authorization="Bearer wrong", cookie=f"{name}={TOKEN}")
    assert not token_accepted(both, "http", POLICY)
    tossed = RequestHeaders(host=HOST, cookie=f"{name}=planted; {name}={TOKEN}")
    assert token_accepted(tossed, "http", POLICY)
    assert token_accepted(RequestHeaders(host=HOST), "http", Policy(token=None))


def test_websocket_verdicts() -> None:
    def verdict(path: str = "/ws/stream", **headers: str | bool) -> Refuse | None:
        host_ok, origin_ok = bool(headers.pop("host_ok", True)), bool(headers.pop("origin_ok", True))
        request = RequestHeaders(host=HOST, **headers)  # type: ignore[arg-type]
        return admit_websocket(request, scheme="ws", path=path, policy=POLICY, host_ok=host_ok, origin_ok=origin_ok)

    assert verdict("ws://evil/ws") == Refuse(400, "invalid_request")
    assert verdict(host_ok=False) == Refuse(403, "forbidden_host")
    assert verdict(origin_ok=False) == Refuse(403, "forbidden_origin")
    assert verdict() == Refuse(401, "unauthorized")
    assert verdict(authorization=f"Bearer {TOKEN}") is None
