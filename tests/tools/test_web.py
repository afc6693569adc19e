"""fetch_url and web_search against loopback servers only (Kagi, markdown.new and a plain site); no secret
leaves through a request, and `fetchUrl.allowHosts` bounds where it goes."""

from __future__ import annotations

import base64
import dataclasses
import json
import socket
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from quart import Response, request
from quart_trio import QuartTrio
from tests.tools.support import make_ctx

from orchestrator.config.redaction import Redactor
from orchestrator.tools import ToolContext
from orchestrator.tools.web import CONTENT_CAP, fetch_url, web_search

KEY = "kagi-test-key-0123456789"
#: A secret the run knows (as the value of a variable withheld from tools would be).
SECRET = "gh-pat-value-0001"
PAGE = "<html><head><title>Docs</title></head><body><h1>Hello</h1><p>A <a href='/x'>link</a>.</p></body></html>"


class FakeWeb:
    """One Quart-Trio app playing Kagi (``/kagi``), markdown.new (``/mdnew``) and a plain site."""

    def __init__(self) -> None:
        self.base = ""
        self.calls: list[dict[str, Any]] = []
        self.markdown_new_status = 200
        self.kagi_status = 200
        self.search_items = [
            {"url": f"https://example.com/{i}", "title": f"Result {i}", "snippet": f"About {i}", "time": "2025-01-01"}
            for i in range(12)
        ]

    def app(self) -> QuartTrio:
        app = QuartTrio(__name__)

        async def record(service: str) -> dict[str, Any]:
            body = await request.get_json(silent=True)
            self.calls.append({"service": service, "auth": request.headers.get("Authorization"), "body": body})
            return body or {}

        @app.post("/kagi/extract")
        async def extract() -> Response:
            body = await record("kagi-extract")
            if self.kagi_status != 200:
                return Response("{}", status=self.kagi_status, content_type="application/json")
            url = body["pages"][0]["url"]
            document = {"meta": {}, "data": [{"url": url, "markdown": "# From Kagi\n"}]}
            return Response(json.dumps(document), content_type="application/json")

        @app.post("/kagi/search")
        async def search() -> Response:
            body = await record("kagi-search")
            if self.kagi_status != 200:
                return Response('{"error": "nope"}', status=self.kagi_status, content_type="application/json")
            items = self.search_items[: body.get("limit", 10)]
            return Response(json.dumps({"meta": {}, "data": {"search": items}}), content_type="application/json")

        @app.post("/mdnew/")
        async def markdown_new() -> Response:
            await record("markdown-new")
            if self.markdown_new_status != 200:
                return Response("busy", status=self.markdown_new_status)
            return Response(json.dumps({"content": "# From markdown.new\n"}), content_type="application/json")

        @app.get("/page.html")
        async def page() -> Response:
            return Response(PAGE, content_type="text/html; charset=utf-8")

        @app.get("/data.json")
        async def data() -> Response:
            return Response('{"a": 1}', content_type="application/json")

        @app.get("/image.png")
        async def image() -> Response:
            return Response(b"\x89PNG\x00\x00\x00", content_type="image/png")

        @app.get("/big.txt")
        async def big() -> Response:
            return Response("y" * (CONTENT_CAP + 100), content_type="text/plain")

        @app.get("/moved")
        async def moved() -> Response:
            return Response("", status=302, headers={"Location": "/data.json"})

        @app.get("/to-loopback")
        async def to_loopback() -> Response:
            port = self.base.rsplit(":", 1)[1]
            return Response("", status=302, headers={"Location": f"http://127.0.0.2:{port}/data.json"})

        @app.get("/to-metadata")
        async def to_metadata() -> Response:
            return Response("", status=307, headers={"Location": "http://169.254.169.254/latest/meta-data/"})

        @app.get("/collect")
        async def collect() -> Response:
            self.calls.append({"service": "collect", "path": request.full_path})
            return Response("thanks", content_type="text/plain")

        @app.get("/to-collect-secret")
        async def to_collect_secret() -> Response:
            return Response("", status=302, headers={"Location": f"/collect?t={SECRET}"})

        @app.get("/slow")
        async def slow() -> Response:
            await trio.sleep(30)
            return Response("late")

        return app

    def ctx(self, tmp_path: Path, *, key: bool = False, **env: str) -> ToolContext:
        variables = {
            "ORCHESTRATOR_KAGI_BASE_URL": f"{self.base}/kagi",
            "ORCHESTRATOR_MARKDOWN_NEW_BASE_URL": f"{self.base}/mdnew",
            **env,
        }
        if key:
            variables["ORCHESTRATOR_KAGI_API_KEY"] = KEY
        secrets = tmp_path / "secrets"
        secrets.mkdir(exist_ok=True)
        # The direct fetch's address rule lets this loopback server through, and only it.
        return make_ctx(tmp_path, env=variables, secrets_dir=secrets, fetch_exempt_addresses=("127.0.0.1",))


@pytest.fixture
async def web() -> AsyncIterator[FakeWeb]:
    fake = FakeWeb()
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.graceful_timeout = 0.2
    config.accesslog = None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(serve, fake.app(), config, shutdown_trigger=stop.wait))
        fake.base = binds[0]
        try:
            yield fake
        finally:
            stop.set()
            nursery.cancel_scope.cancel()


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _keyless_ctx(tmp_path: Path) -> ToolContext:
    dead = _closed_port_url()
    env = {"ORCHESTRATOR_KAGI_BASE_URL": dead, "ORCHESTRATOR_MARKDOWN_NEW_BASE_URL": dead}
    (tmp_path / "secrets").mkdir(exist_ok=True)
    return make_ctx(tmp_path, env=env, secrets_dir=tmp_path / "secrets")


# --- without a key --------------------------------------------------------------------------------


async def test_web_search_without_a_key_says_how_to_configure_one(tmp_path: Path) -> None:
    result = await web_search(_keyless_ctx(tmp_path), {"query": "trio nurseries"})
    assert result.kind == "unavailable"
    assert "ORCHESTRATOR_KAGI_API_KEY" in str(result.message) and "/run/secrets/kagi_api_key" in str(result.message)
    assert "fetch_url" in str(result.message)


async def test_fetch_url_forced_to_kagi_without_a_key_is_unavailable(tmp_path: Path) -> None:
    result = await fetch_url(_keyless_ctx(tmp_path), {"url": "https://example.com", "method": "kagi"})
    assert result.kind == "unavailable" and "ORCHESTRATOR_KAGI_API_KEY" in str(result.message)


async def test_every_backend_failing_is_unavailable_with_each_reason(tmp_path: Path) -> None:
    url = _closed_port_url() + "/page"
    result = await fetch_url(_keyless_ctx(tmp_path), {"url": url})
    assert result.kind == "unavailable"
    assert [attempt.split(":")[0] for attempt in result.details["attempts"]] == ["markdown_new", "direct"]


@pytest.mark.parametrize("url", ["ftp://example.com/x", "file:///etc/passwd", "example.com", "", "http://"])
async def test_fetch_url_accepts_only_http_and_https(tmp_path: Path, url: str) -> None:
    result = await fetch_url(_keyless_ctx(tmp_path), {"url": url})
    assert result.kind == "invalid_arguments"


async def test_web_search_limit_bounds(tmp_path: Path) -> None:
    ctx = _keyless_ctx(tmp_path)
    for limit in (0, 11, "5", True):
        assert (await web_search(ctx, {"query": "q", "limit": limit})).kind == "invalid_arguments"
    assert (await web_search(ctx, {"query": "  "})).kind == "invalid_arguments"


# --- against the loopback backends ------------------------------------------------------------------


async def test_web_search_through_kagi(tmp_path: Path, web: FakeWeb) -> None:
    result = await web_search(web.ctx(tmp_path, key=True), {"query": "trio"})
    assert result.kind == "success" and result.data["query"] == "trio"
    assert len(result.data["results"]) == 5
    assert result.data["results"][0] == {
        "title": "Result 0",
        "url": "https://example.com/0",
        "snippet": "About 0",
        "time": "2025-01-01",
    }
    assert web.calls == [{"service": "kagi-search", "auth": f"Bearer {KEY}", "body": {"query": "trio", "limit": 5}}]
    ten = await web_search(web.ctx(tmp_path, key=True), {"query": "trio", "limit": 10})
    assert len(ten.data["results"]) == 10


async def test_the_key_may_come_from_the_secret_file(tmp_path: Path, web: FakeWeb) -> None:
    ctx = web.ctx(tmp_path)
    (tmp_path / "secrets" / "kagi_api_key").write_text(f"  {KEY}\n")
    result = await web_search(ctx, {"query": "q", "limit": 1})
    assert result.kind == "success" and web.calls[0]["auth"] == f"Bearer {KEY}"


async def test_a_rejected_key_is_unavailable_and_never_echoed(tmp_path: Path, web: FakeWeb) -> None:
    web.kagi_status = 401
    result = await web_search(web.ctx(tmp_path, key=True), {"query": "q"})
    assert result.kind == "unavailable" and "401" in str(result.message)
    assert KEY not in repr(result)


async def test_auto_prefers_kagi_when_a_key_is_configured(tmp_path: Path, web: FakeWeb) -> None:
    result = await fetch_url(web.ctx(tmp_path, key=True), {"url": "https://example.com/doc"})
    assert result.kind == "success"
    assert result.data["method"] == "kagi" and result.data["content"] == "# From Kagi\n"
    assert web.calls[0]["body"] == {"pages": [{"url": "https://example.com/doc"}]}


async def test_auto_without_a_key_uses_markdown_new(tmp_path: Path, web: FakeWeb) -> None:
    result = await fetch_url(web.ctx(tmp_path), {"url": "https://example.com/doc"})
    assert result.data["method"] == "markdown_new" and result.data["content"] == "# From markdown.new\n"
    assert [call["service"] for call in web.calls] == ["markdown-new"]
    assert web.calls[0]["body"] == {"url": "https://example.com/doc"}


async def test_auto_falls_back_to_a_direct_fetch_converted_to_markdown(tmp_path: Path, web: FakeWeb) -> None:
    web.kagi_status = 500
    web.markdown_new_status = 503
    result = await fetch_url(web.ctx(tmp_path, key=True), {"url": f"{web.base}/page.html"})
    assert result.kind == "success" and result.data["method"] == "direct"
    assert result.data["content"] == "# Hello\n\nA [link](/x).\n"
    assert result.data["contentType"] == "text/markdown"
    assert [f.split(":")[0] for f in result.data["fallbacks"]] == ["kagi", "markdown_new"]


async def test_direct_returns_the_raw_document(tmp_path: Path, web: FakeWeb) -> None:
    ctx = web.ctx(tmp_path, key=True)
    html = await fetch_url(ctx, {"url": f"{web.base}/page.html", "method": "direct"})
    assert html.data["content"] == PAGE and html.data["contentType"] == "text/html"
    moved = await fetch_url(ctx, {"url": f"{web.base}/moved", "method": "direct"})
    assert moved.data["content"] == '{"a": 1}' and moved.data["url"].endswith("/data.json")
    assert web.calls == []  # direct never touches the conversion services


async def test_direct_failures_and_caps(tmp_path: Path, web: FakeWeb) -> None:
    ctx = web.ctx(tmp_path)
    binary = await fetch_url(ctx, {"url": f"{web.base}/image.png", "method": "direct"})
    assert binary.kind == "unavailable" and "binary" in str(binary.message)
    missing = await fetch_url(ctx, {"url": f"{web.base}/nothing", "method": "direct"})
    assert missing.kind == "unavailable" and "404" in str(missing.message)
    big = await fetch_url(ctx, {"url": f"{web.base}/big.txt", "method": "direct"})
    assert big.data["truncated"] is True and len(big.data["content"]) == CONTENT_CAP


async def test_markdown_new_forced_and_failing(tmp_path: Path, web: FakeWeb) -> None:
    web.markdown_new_status = 429
    result = await fetch_url(web.ctx(tmp_path), {"url": "https://example.com", "method": "markdown_new"})
    assert result.kind == "unavailable" and "429" in str(result.message)


async def test_a_slow_server_is_given_up_before_the_calls_deadline(tmp_path: Path, web: FakeWeb) -> None:
    with trio.move_on_after(1.5) as engine_budget:
        result = await fetch_url(web.ctx(tmp_path), {"url": f"{web.base}/slow", "method": "direct"})
    assert not engine_budget.cancelled_caught
    assert result.kind == "unavailable" and "timed out" in str(result.message)


# --- third-party converters only when configured; the direct fetch's address rule --------------------


async def test_without_markdown_new_configured_auto_goes_straight_to_the_page(tmp_path: Path, web: FakeWeb) -> None:
    ctx = web.ctx(tmp_path, ORCHESTRATOR_MARKDOWN_NEW_BASE_URL="")
    result = await fetch_url(ctx, {"url": f"{web.base}/page.html"})
    assert result.kind == "success" and result.data["method"] == "direct" and "fallbacks" not in result.data
    assert web.calls == []  # no third party saw the URL
    forced = await fetch_url(ctx, {"url": f"{web.base}/page.html", "method": "markdown_new"})
    assert forced.kind == "unavailable" and "ORCHESTRATOR_MARKDOWN_NEW_BASE_URL" in str(forced.message)
    assert web.calls == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/",
        "http://localhost:9/",  # a name: refused after resolution
        "http://[::1]:9/",
        "http://0.0.0.0:9/",
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://[::ffff:127.0.0.1]:9/",
        "http://100.100.100.200/",
    ],
)
async def test_direct_fetch_refuses_non_public_addresses(tmp_path: Path, url: str) -> None:
    ctx = make_ctx(tmp_path, env={})
    for method in ("direct", "auto"):
        result = await fetch_url(ctx, {"url": url, "method": method})
        assert result.kind == "unavailable", (url, method, result)
        assert "only reaches public addresses" in str(result.message)
        assert "ORCHESTRATOR_FETCH_ALLOW_PRIVATE=1" in str(result.message)


async def test_a_name_resolving_to_loopback_is_named_with_its_address(tmp_path: Path) -> None:
    result = await fetch_url(make_ctx(tmp_path, env={}), {"url": "http://localhost:9/", "method": "direct"})
    assert "localhost resolves to" in str(result.message) and "loopback" in str(result.message)


async def test_every_redirect_hop_is_checked(tmp_path: Path, web: FakeWeb) -> None:
    ctx = web.ctx(tmp_path)
    hop = await fetch_url(ctx, {"url": f"{web.base}/to-loopback", "method": "direct"})
    assert hop.kind == "unavailable" and "127.0.0.2 is loopback" in str(hop.message)
    metadata = await fetch_url(ctx, {"url": f"{web.base}/to-metadata", "method": "direct"})
    assert metadata.kind == "unavailable" and "cloud metadata" in str(metadata.message)


async def test_allow_private_lets_the_direct_fetch_reach_loopback(tmp_path: Path, web: FakeWeb) -> None:
    env = {"ORCHESTRATOR_FETCH_ALLOW_PRIVATE": "1"}
    result = await fetch_url(make_ctx(tmp_path, env=env), {"url": f"{web.base}/data.json", "method": "direct"})
    assert result.kind == "success" and result.data["content"] == '{"a": 1}'
    refused = await fetch_url(make_ctx(tmp_path, env={}), {"url": f"{web.base}/data.json", "method": "direct"})
    assert refused.kind == "unavailable" and "127.0.0.1 is loopback" in str(refused.message)


# --- no secret leaves through a request -------------------------------------------------------------


def _encodings() -> dict[str, str]:
    raw = SECRET.encode()
    return {
        "raw": SECRET,
        "url-encoded": quote(f"token={SECRET}", safe=""),
        "base64": base64.b64encode(b"token=" + raw).decode(),
        "base64url": base64.urlsafe_b64encode(b"t:" + raw).decode().rstrip("="),
        "hex": raw.hex(),
        "hex upper": raw.hex().upper(),
    }


@pytest.mark.parametrize("encoding", list(_encodings()))
async def test_a_url_carrying_a_known_secret_is_refused_before_any_request(
    tmp_path: Path, web: FakeWeb, encoding: str
) -> None:
    ctx = dataclasses.replace(web.ctx(tmp_path), redactor=Redactor([SECRET]))
    for method in ("direct", "markdown_new", "auto"):
        url = f"{web.base}/collect?d={_encodings()[encoding]}"
        result = await fetch_url(ctx, {"url": url, "method": method})
        assert result.kind == "permission_denied", (method, result)
        assert "carries a known secret" in str(result.message) and "was not made" in str(result.message)
        assert _encodings()[encoding] not in str(result.message) and web.base not in str(result.message)
    assert web.calls == []  # neither the site nor a converter saw anything


async def test_a_credential_shape_or_url_credentials_are_refused_without_knowing_them(
    tmp_path: Path, web: FakeWeb
) -> None:
    ctx = web.ctx(tmp_path)  # no redactor: the shapes still count
    token = "ghp_" + "a1B2c3D4e5" * 4
    shaped = await fetch_url(ctx, {"url": f"{web.base}/collect?t={token}", "method": "direct"})
    assert shaped.kind == "permission_denied" and "a GitHub or GitLab token" in str(shaped.message)
    host = web.base.split("//", 1)[1]
    userinfo = await fetch_url(ctx, {"url": f"http://u:hunter2@{host}/collect", "method": "direct"})
    assert userinfo.kind == "permission_denied" and "credentials" in str(userinfo.message)
    assert web.calls == []


async def test_a_redirect_to_a_url_carrying_a_secret_is_not_followed(tmp_path: Path, web: FakeWeb) -> None:
    ctx = dataclasses.replace(web.ctx(tmp_path), redactor=Redactor([SECRET]))
    result = await fetch_url(ctx, {"url": f"{web.base}/to-collect-secret", "method": "direct"})
    assert result.kind == "unavailable" and "a redirect's URL carries a known secret" in str(result.message)
    assert web.calls == []


async def test_allow_hosts_limits_where_fetch_url_goes(tmp_path: Path, web: FakeWeb) -> None:
    allowed = dataclasses.replace(web.ctx(tmp_path), fetch_allow_hosts=("127.0.0.1",))
    page = await fetch_url(allowed, {"url": f"{web.base}/data.json", "method": "direct"})
    assert page.kind == "success"
    port = web.base.rsplit(":", 1)[1]
    elsewhere = dataclasses.replace(web.ctx(tmp_path), fetch_allow_hosts=("docs.python.org", "*.example.com"))
    refused = await fetch_url(elsewhere, {"url": f"http://localhost:{port}/collect", "method": "auto"})
    assert refused.kind == "permission_denied"
    assert "localhost is not among the hosts" in str(refused.message) and "docs.python.org, *.example.com" in str(
        refused.message
    )
    nothing = dataclasses.replace(web.ctx(tmp_path), fetch_allow_hosts=())
    assert (await fetch_url(nothing, {"url": f"{web.base}/data.json"})).kind == "permission_denied"
    assert [call["service"] for call in web.calls] == []
