"""``routes.pages``: the page (its title escaped), the static assets, the favicon and the liveness probe."""

from __future__ import annotations

from pathlib import Path

from quart_trio import QuartTrio
from tests.service.inprocess import BEARER, inprocess_app

from orchestrator.service.routes.pages import pages_blueprint


async def test_page_assets_favicon_and_liveness(tmp_path: Path) -> None:
    async with inprocess_app(tmp_path) as (_, client):
        page = await client.get("/", headers=BEARER)
        assert page.status_code == 200 and "<title>Adaptive Orchestrator</title>" in await page.get_data(as_text=True)
        asset = await client.get("/static/app.js")
        assert asset.status_code == 200 and asset.headers["content-type"].startswith("text/javascript")
        assert asset.headers["cache-control"] == "no-store"
        for name in ("no-such.js", ".hidden", "a%00b"):
            missing = await client.get(f"/static/{name}")
            assert (missing.status_code, await missing.get_json()) == (404, {"ok": False, "error": "not_found"}), name
        favicon = await client.get("/favicon.ico")
        assert (favicon.status_code, await favicon.get_data()) == (204, b"")
        live = await client.get("/healthz")
        assert (live.status_code, await live.get_data()) == (200, b'{"ok":true}')


async def test_the_title_is_escaped_into_the_page() -> None:
    app = QuartTrio(__name__)
    app.register_blueprint(pages_blueprint('<b>"Ops" & co</b>'))
    async with app.test_app() as test_app:
        page = await (await test_app.test_client().get("/")).get_data(as_text=True)
    assert "<title>&lt;b&gt;&quot;Ops&quot; &amp; co&lt;/b&gt;</title>" in page


async def test_the_trust_banner_names_the_ignored_files_escaped_and_is_absent_otherwise() -> None:
    app = QuartTrio(__name__)
    app.register_blueprint(pages_blueprint("T", ["ignored workspace file guild/<x>: changed", "run `trust`"]))
    async with app.test_app() as test_app:
        page = await (await test_app.test_client().get("/")).get_data(as_text=True)
    assert 'data-testid="trust-banner"' in page and "<li>ignored workspace file guild/&lt;x&gt;: changed</li>" in page
    plain = QuartTrio(__name__)
    plain.register_blueprint(pages_blueprint("T"))
    async with plain.test_app() as test_app:
        page = await (await test_app.test_client().get("/")).get_data(as_text=True)
    assert "trust-banner" not in page and "{{TRUST}}" not in page
