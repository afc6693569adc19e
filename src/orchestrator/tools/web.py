"""``fetch_url`` and ``web_search`` over httpx (under trio), with bounded size and time.

Backends and their base URLs (overridable, so tests talk to loopback servers only):

* Kagi (``ORCHESTRATOR_KAGI_BASE_URL``, default ``https://kagi.com/api/v1``): ``POST /search`` for
  web_search, ``POST /extract`` for the ``kagi`` fetch backend. Key: ``ORCHESTRATOR_KAGI_API_KEY``,
  else the Docker secret ``/run/secrets/kagi_api_key`` (then ``ORCHESTRATOR_KAGI_API_KEY`` there).
* markdown.new (``ORCHESTRATOR_MARKDOWN_NEW_BASE_URL``, e.g. ``https://markdown.new``): ``POST /``.
  Used only when that variable is set: a third-party converter sees every URL it is given.
* direct: a plain GET of the URL itself, public addresses only (``tools/netguard.py``), unless
  ``ORCHESTRATOR_FETCH_ALLOW_PRIVATE=1``.

Before anything is sent, ``fetch_url`` refuses (``permission_denied``) a URL that carries a secret — a
known value raw, URL-encoded, base64- or hex-encoded, or a credential shape (``config.redaction``) — and,
when the deployment sets ``fetchUrl.allowHosts``, a host it does not list; every redirect hop of the direct
fetch is held to both rules. The refusal never repeats the URL. Every other failure is an ``unavailable``
result with the reason; the key never appears in one.
``ctx.env`` / ``ctx.secrets_dir`` replace ``os.environ`` / ``/run/secrets``;
``ctx.fetch_exempt_addresses`` lists addresses the direct fetch may reach anyway (tests).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import trio

from orchestrator.config.deployment import fetch_host_allowed
from orchestrator.config.redaction import Redactor
from orchestrator.config.secrets import DEFAULT_SECRETS_DIR, KAGI_KEY_FILES, KAGI_KEY_VARIABLE, read_secret
from orchestrator.conversation import ToolResult
from orchestrator.tools.base import ToolContext, ToolError, failure, success
from orchestrator.tools.htmlmd import html_to_markdown
from orchestrator.tools.netguard import ALLOW_PRIVATE_VARIABLE, AddressRefused, guarded_client

#: An httpx request event hook (raises to stop the request before it is sent).
RequestHook = Callable[[httpx.Request], Awaitable[None]]

__all__ = [
    "KAGI_BASE_VARIABLE",
    "KAGI_KEY_FILES",
    "KAGI_KEY_VARIABLE",
    "MARKDOWN_NEW_BASE_VARIABLE",
    "fetch_url",
    "web_search",
]

KAGI_BASE_VARIABLE = "ORCHESTRATOR_KAGI_BASE_URL"
MARKDOWN_NEW_BASE_VARIABLE = "ORCHESTRATOR_MARKDOWN_NEW_BASE_URL"
_KAGI_DEFAULT = "https://kagi.com/api/v1"

#: Bytes read from any one response; content returned to the model is cut at CONTENT_CAP characters.
DOWNLOAD_CAP = 2_000_000
CONTENT_CAP = 100_000
#: The longest one backend attempt may take (less when the call's deadline is nearer).
ATTEMPT_SECONDS = 20.0
SEARCH_DEFAULT_LIMIT = 5
SEARCH_MAX_LIMIT = 10
_USER_AGENT = "orchestrator-fetch/0.1"
_TEXTUAL = ("text/", "json", "xml", "javascript", "x-www-form-urlencoded", "yaml", "toml")
_NO_KEY = (
    "{tool} needs a Kagi API key: set ORCHESTRATOR_KAGI_API_KEY or mount it as the Docker secret "
    "/run/secrets/kagi_api_key. Without it, work from known URLs with fetch_url (method auto or direct)."
)
_NO_MARKDOWN_NEW = (
    "fetch_url with method markdown_new needs the converter configured: the operator sets "
    "ORCHESTRATOR_MARKDOWN_NEW_BASE_URL (e.g. https://markdown.new). Use method auto or direct meanwhile."
)
_REDIRECTS = 5


class _BackendFailed(Exception):
    """One backend could not deliver; ``str(exc)`` is the reason (never containing the key)."""


def _env(ctx: ToolContext) -> Mapping[str, str]:
    return ctx.env if ctx.env is not None else os.environ


def _base(ctx: ToolContext, variable: str, default: str) -> str:
    return (_env(ctx).get(variable, "").strip() or default).rstrip("/")


def kagi_key(ctx: ToolContext) -> str | None:
    """The Kagi key from the environment or the secrets folder; ``ToolError`` if a secret is unreadable."""
    secrets_dir = ctx.secrets_dir or Path(DEFAULT_SECRETS_DIR)
    secret, problems = read_secret(_env(ctx), KAGI_KEY_VARIABLE, KAGI_KEY_FILES, secrets_dir)
    if problems:
        raise ToolError("unavailable", "; ".join(problems))
    return secret.value if secret is not None else None


def _attempt_seconds(share: float) -> float:
    """A backend attempt's time: ``share`` of what is left before the call's deadline, capped."""
    remaining = trio.current_effective_deadline() - trio.current_time()
    if math.isinf(remaining):
        return ATTEMPT_SECONDS
    return max(min(ATTEMPT_SECONDS, remaining * share), 0.05)


def _client(seconds: float, hooks: list[RequestHook] | None = None) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=httpx.Timeout(seconds),
        follow_redirects=True,
        max_redirects=_REDIRECTS,
        headers={"User-Agent": _USER_AGENT},
        event_hooks={"request": hooks or []},
    )


class _Refused(Exception):
    """A request ``fetch_url`` will not send; ``str(exc)`` says why without repeating the URL."""


def _refusal(ctx: ToolContext, url: str) -> str | None:
    """Why ``fetch_url`` must not request ``url`` (a secret in it, a host the deployment does not allow)."""
    carried = (ctx.redactor or Redactor()).outbound_secret(url)
    if carried is not None:
        return (
            f"refused: the URL carries {carried}, and fetch_url never sends a secret off this machine "
            "(the request was not made)"
        )
    allowed = ctx.fetch_allow_hosts
    if allowed is not None:
        host = httpx.URL(url).host
        if not fetch_host_allowed(host, list(allowed)):
            listed = ", ".join(allowed) or "none"
            return (
                f"refused: {host} is not among the hosts the deployment lets fetch_url reach "
                f"(fetchUrl.allowHosts: {listed}; the request was not made)"
            )
    return None


def _hop_check(ctx: ToolContext) -> RequestHook:
    """Every request the direct fetch sends (each redirect hop) is held to :func:`_refusal`."""

    async def check(request: httpx.Request) -> None:
        reason = _refusal(ctx, str(request.url))
        if reason is not None:
            raise _Refused(reason.replace("the URL", "a redirect's URL", 1))

    return check


def _direct_client(ctx: ToolContext) -> Callable[[float], httpx.AsyncClient]:
    """The direct fetch's client: public addresses only, unless ``ORCHESTRATOR_FETCH_ALLOW_PRIVATE=1``;
    every hop checked for secrets and the allowed hosts."""
    hooks = [_hop_check(ctx)]
    if _env(ctx).get(ALLOW_PRIVATE_VARIABLE, "").strip() == "1":
        return lambda seconds: _client(seconds, hooks)
    exempt = list(ctx.fetch_exempt_addresses)
    return lambda seconds: guarded_client(seconds, {"User-Agent": _USER_AGENT}, _REDIRECTS, exempt, hooks)


def _markdown_new_base(ctx: ToolContext) -> str | None:
    """markdown.new's base URL, or ``None``: the converter is used only when the operator configures it."""
    return _env(ctx).get(MARKDOWN_NEW_BASE_VARIABLE, "").strip().rstrip("/") or None


async def _bounded(response: httpx.Response) -> tuple[bytes, bool]:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        room = DOWNLOAD_CAP - len(body)
        body.extend(chunk[:room])
        if len(chunk) > room:
            return bytes(body), True
    return bytes(body), False


async def _request(
    method: str, url: str, seconds: float, client: Callable[[float], httpx.AsyncClient] = _client, **kwargs: Any
) -> tuple[httpx.Response, bytes, bool]:
    """One bounded request: ``(response, body, cut)``; raises ``_BackendFailed`` with the reason."""
    with trio.move_on_after(seconds) as attempt:
        try:
            async with client(seconds) as session, session.stream(method, url, **kwargs) as response:
                body, cut = await _bounded(response)
                return response, body, cut
        except (AddressRefused, _Refused) as exc:
            raise _BackendFailed(str(exc)) from None
        except httpx.TooManyRedirects:
            raise _BackendFailed("too many redirects") from None
        except httpx.TimeoutException:
            raise _BackendFailed(f"timed out after {seconds:.3g}s") from None
        except httpx.HTTPError as exc:
            raise _BackendFailed(f"{type(exc).__name__}: {exc}") from None
    assert attempt.cancelled_caught
    raise _BackendFailed(f"timed out after {seconds:.3g}s")


def _status(response: httpx.Response, service: str) -> None:
    if response.status_code in (401, 403) and service == "Kagi":
        raise _BackendFailed(f"Kagi refused the request (HTTP {response.status_code}): check the API key")
    if not 200 <= response.status_code < 300:
        raise _BackendFailed(f"{service} answered HTTP {response.status_code} {response.reason_phrase}".rstrip())


def _json(body: bytes, service: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise _BackendFailed(f"{service} did not answer with JSON") from None


def _text(body: bytes, response: httpx.Response) -> str:
    return body.decode(response.charset_encoding or "utf-8", "replace")


def _page(url: str, method: str, content: str, content_type: str, cut: bool) -> dict[str, Any]:
    return {
        "url": url,
        "method": method,
        "contentType": content_type,
        "content": content[:CONTENT_CAP],
        "truncated": cut or len(content) > CONTENT_CAP,
    }


async def _kagi_extract(ctx: ToolContext, url: str, key: str, seconds: float) -> dict[str, Any]:
    endpoint = _base(ctx, KAGI_BASE_VARIABLE, _KAGI_DEFAULT) + "/extract"
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
    response, body, _ = await _request("POST", endpoint, seconds, json={"pages": [{"url": url}]}, headers=headers)
    _status(response, "Kagi")
    document = _json(body, "Kagi")
    pages = document.get("data") if isinstance(document, dict) else None
    page = pages[0] if isinstance(pages, list) and pages and isinstance(pages[0], dict) else {}
    markdown = page.get("markdown")
    if not isinstance(markdown, str) or not markdown.strip():
        errors = document.get("errors") if isinstance(document, dict) else None
        first = errors[0] if isinstance(errors, list) and errors else None
        detail = first.get("message") if isinstance(first, dict) else None
        raise _BackendFailed(f"Kagi extracted nothing{f': {detail}' if detail else ''}")
    return _page(url, "kagi", markdown, "text/markdown", False)


async def _markdown_new(ctx: ToolContext, url: str, seconds: float) -> dict[str, Any]:
    endpoint = f"{_markdown_new_base(ctx)}/"
    headers = {"Accept": "application/json, text/markdown"}
    response, body, cut = await _request("POST", endpoint, seconds, json={"url": url}, headers=headers)
    _status(response, "markdown.new")
    if "json" in response.headers.get("content-type", ""):
        document = _json(body, "markdown.new")
        content = document.get("content", document.get("markdown")) if isinstance(document, dict) else None
        if not isinstance(content, str):
            error = document.get("error") if isinstance(document, dict) else None
            raise _BackendFailed(f"markdown.new returned no content{f': {error}' if error else ''}")
    else:
        content = _text(body, response)
    if not content.strip():
        raise _BackendFailed("markdown.new returned an empty document")
    return _page(url, "markdown_new", content, "text/markdown", cut)


async def _direct(ctx: ToolContext, url: str, seconds: float, *, convert: bool) -> dict[str, Any]:
    response, body, cut = await _request("GET", url, seconds, _direct_client(ctx))
    _status(response, "the server")
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    textual = not content_type or any(marker in content_type for marker in _TEXTUAL)
    if not textual or b"\x00" in body[:8192]:
        raise _BackendFailed(f"the document is binary ({content_type or 'unknown type'}); fetch_url returns text only")
    text = _text(body, response)
    if convert and ("html" in content_type or (not content_type and "<html" in text[:2048].lower())):
        return _page(str(response.url), "direct", html_to_markdown(text), "text/markdown", cut)
    return _page(str(response.url), "direct", text, content_type or "text/plain", cut)


def _checked_url(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError("invalid_arguments", "url must be a non-empty http or https URL")
    try:
        parsed = httpx.URL(raw.strip())
    except (httpx.InvalidURL, ValueError) as exc:
        raise ToolError("invalid_arguments", f"url is not a valid URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ToolError("invalid_arguments", "url must be an absolute http or https URL")
    return str(parsed)


async def fetch_url(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{url, method?}`` → ``{url, method, contentType, content, truncated[, fallbacks]}``.

    ``auto`` (default): Kagi Extract when a key is configured, then markdown.new when configured, then a
    direct GET (HTML converted to Markdown locally). ``direct``: the raw document, unconverted. ``kagi``
    / ``markdown_new``: that backend only (``unavailable`` when not configured). All failures →
    ``unavailable`` with each backend's reason.
    """
    method = arguments.get("method", "auto")
    try:
        url = _checked_url(arguments.get("url"))
        if method not in ("auto", "direct", "kagi", "markdown_new"):
            raise ToolError("invalid_arguments", "method must be one of auto, direct, kagi, markdown_new")
        key = kagi_key(ctx) if method in ("auto", "kagi") else None
        if method == "kagi" and key is None:
            raise ToolError("unavailable", _NO_KEY.format(tool="fetch_url with method kagi"))
        if method == "markdown_new" and _markdown_new_base(ctx) is None:
            raise ToolError("unavailable", _NO_MARKDOWN_NEW)
        refusal = _refusal(ctx, url) or _refusal(ctx, str(arguments["url"]))
        if refusal is not None:
            raise ToolError("permission_denied", refusal)
    except ToolError as exc:
        return exc.result()
    reasons: list[str] = []
    plan: list[tuple[str, float]] = []
    if method == "auto":
        plan = [("kagi", 0.35)] if key is not None else []
        plan += [("markdown_new", 0.45)] if _markdown_new_base(ctx) is not None else []
        plan += [("direct", 0.9)]
    else:
        plan = [(method, 0.9)]
    for backend, share in plan:
        seconds = _attempt_seconds(share)
        try:
            if backend == "kagi":
                assert key is not None
                page = await _kagi_extract(ctx, url, key, seconds)
            elif backend == "markdown_new":
                page = await _markdown_new(ctx, url, seconds)
            else:
                page = await _direct(ctx, url, seconds, convert=method == "auto")
        except _BackendFailed as exc:
            reasons.append(f"{backend}: {exc}")
            continue
        if reasons:
            page["fallbacks"] = reasons
        return success(page)
    return failure("unavailable", f"could not fetch {url}: " + "; ".join(reasons), {"url": url, "attempts": reasons})


def _search_results(document: Any, limit: int) -> list[dict[str, Any]]:
    data = document.get("data") if isinstance(document, dict) else None
    if isinstance(data, dict):  # v1: results grouped by kind
        items = data.get("search") or []
    elif isinstance(data, list):  # v0: a flat list, t == 0 for web results
        items = [item for item in data if isinstance(item, dict) and item.get("t", 0) == 0]
    else:
        raise _BackendFailed("Kagi answered without a data field")
    results = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        results.append(
            {
                "title": str(item.get("title") or ""),
                "url": item["url"],
                "snippet": str(item.get("snippet") or ""),
                "time": item.get("time") or item.get("published"),
            }
        )
        if len(results) >= limit:
            break
    return results


async def web_search(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{query, limit?}`` → ``{query, results: [{title, url, snippet, time}]}`` through Kagi.

    Without a key → ``unavailable`` saying how to configure one. ``limit``: default 5, at most 10.
    """
    query, limit = arguments.get("query"), arguments.get("limit", SEARCH_DEFAULT_LIMIT)
    try:
        if not isinstance(query, str) or not query.strip():
            raise ToolError("invalid_arguments", "query must be a non-empty string")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= SEARCH_MAX_LIMIT:
            raise ToolError("invalid_arguments", f"limit must be an integer from 1 to {SEARCH_MAX_LIMIT}")
        key = kagi_key(ctx)
        if key is None:
            raise ToolError("unavailable", _NO_KEY.format(tool="web_search"))
    except ToolError as exc:
        return exc.result()
    endpoint = _base(ctx, KAGI_BASE_VARIABLE, _KAGI_DEFAULT) + "/search"
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
    try:
        body_json = {"query": query, "limit": limit}
        response, body, _ = await _request("POST", endpoint, _attempt_seconds(0.9), json=body_json, headers=headers)
        _status(response, "Kagi")
        results = _search_results(_json(body, "Kagi"), limit)
    except _BackendFailed as exc:
        return failure("unavailable", f"web search failed: {exc}", {"query": query})
    return success({"query": query, "results": results})
