"""The service's perimeter: one ASGI middleware in front of the whole app, so no route can forget it.

Every HTTP request and WebSocket handshake passes, in order (a target not starting with ``/`` — the
absolute form, ``*`` — is refused first with 400):

1. **Host** — loopback, the bind address, or ``ORCHESTRATOR_ALLOWED_HOSTS``; else 403 ``forbidden_host``.
2. **Origin** — when present, the server's own (scheme and ``Host``) or ``ORCHESTRATOR_ALLOWED_ORIGINS``;
   else 403 ``forbidden_origin``. When absent, a browser's ``Sec-Fetch-Site: cross-site``/``same-site``
   is refused the same way unless the request is a navigation (see ``perimeter_rules.fetch_metadata_allowed``).
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

import sys
from importlib import resources
from typing import TypeVar

from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGIReceiveEvent,
    ASGISendCallable,
    ASGISendEvent,
    Scope,
)

from orchestrator.service.perimeter_rules import (
    BODY_METHODS,
    COOKIE_MAX_AGE,
    MAX_BODY_BYTES,
    Policy,
    Refuse,
    SignIn,
    SignInPage,
    admit_http,
    admit_websocket,
    content_type_allowed,
    host_allowed,
    origin_allowed,
    read_headers,
    security_headers,
)

__all__ = ["Perimeter"]


def _signin_page() -> bytes:
    return resources.files("orchestrator.web").joinpath("static", "signin.html").read_bytes()


class Perimeter:
    """ASGI middleware applying a ``perimeter_rules.Policy`` in front of ``app`` (see the module docstring)."""

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

    async def _http(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        request = read_headers(scope["headers"])
        scheme, path, method = scope["scheme"], scope["path"], scope["method"]  # type: ignore[typeddict-item]
        extra = self._extra_headers(request.host)
        # a refusal leaves the body unread: tell the client this connection ends, so it sends nothing more on it
        refusal = [*extra, (b"connection", b"close")] if method in BODY_METHODS else extra
        drainable = receive if method in BODY_METHODS else None
        admission = admit_http(
            request,
            scheme=scheme,
            path=path,
            method=method,
            query_string=scope["query_string"],  # type: ignore[typeddict-item]
            policy=self.policy,
            host_ok=self._host_ok(request.host),
            origin_ok=self._origin_ok(request.origin, scheme, request.host),
        )
        if isinstance(admission, Refuse):
            return await _deny(send, admission.status, admission.code, refusal, drainable)
        if isinstance(admission, SignIn):
            return await _sign_in(send, admission.cookie, admission.token, scheme, extra)
        if isinstance(admission, SignInPage):
            return await _page(send, 401, _signin_page(), extra)
        if method in BODY_METHODS:
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
        request = read_headers(scope["headers"])
        scheme = scope["scheme"]  # type: ignore[typeddict-item]
        refusal = admit_websocket(
            request,
            scheme=scheme,
            path=scope["path"],
            policy=self.policy,
            host_ok=self._host_ok(request.host),
            origin_ok=self._origin_ok(request.origin, scheme, request.host),
        )
        if refusal is not None and refusal.status != 401:
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": ""})  # before accept: HTTP 403
            return
        if refusal is not None:
            await receive()
            await send({"type": "websocket.accept", "subprotocol": None, "headers": []})
            await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
            return
        await self.app(scope, receive, send)


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
