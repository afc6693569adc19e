"""The perimeter middleware through the in-process app (Quart-Trio's test client); its pure rules are
``test_perimeter_rules.py``.

The same middleware against a real ``serve`` process and real Chromium is in ``test_http_perimeter.py``
and ``tests/web/test_attacks.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

from quart import Response
from tests.service.inprocess import BEARER, TOKEN, inprocess_app
from werkzeug.datastructures import Headers

from orchestrator.service.perimeter_rules import Policy

SECURITY_HEADERS = ("content-security-policy", "x-content-type-options", "referrer-policy", "x-frame-options")

# --- through the app ----------------------------------------------------------------------------------


async def test_token_header_cookie_and_the_sign_in_link(tmp_path: Path) -> None:
    async with inprocess_app(tmp_path) as (_, client):
        response = await client.get("/api/config")
        assert response.status_code == 401
        assert await response.get_json() == {"ok": False, "error": "unauthorized"}
        wrong = await client.get("/api/config", headers={"Authorization": "Bearer wrong"})
        assert wrong.status_code == 401
        not_bearer = await client.get("/api/config", headers={"Authorization": f"Basic {TOKEN}"})
        assert not_bearer.status_code == 401
        in_query = await client.get("/api/config", query_string={"token": TOKEN})  # only "/" takes the link
        assert in_query.status_code == 401
        assert (await client.get("/api/config", headers=BEARER)).status_code == 200

        page = await client.get("/")
        assert page.status_code == 401
        text = await page.get_data(as_text=True)
        assert "orchestrator token" in text and "?token=" in text and TOKEN not in text

        bad_link = await client.get("/", query_string={"token": "guess"})
        assert bad_link.status_code == 401 and "set-cookie" not in bad_link.headers

        link = await client.get("/", query_string={"token": TOKEN})
        assert link.status_code == 303 and link.headers["location"] == "/"
        cookie = link.headers["set-cookie"]
        assert cookie.startswith(f"orchestrator_token_80={TOKEN};")
        for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
            assert attribute in cookie
        # the test client kept the cookie: the UI and the API now answer without the header
        ui = await client.get("/")
        assert ui.status_code == 200 and "/static/app.js" in await ui.get_data(as_text=True)
        assert (await client.get("/api/queue")).status_code == 200


async def test_public_assets_need_no_token_and_every_response_has_the_headers(tmp_path: Path) -> None:
    async with inprocess_app(tmp_path) as (_, client):
        for path, status in [("/static/app.js", 200), ("/static/signin.css", 200), ("/favicon.ico", 204),
                             ("/static/nope.js", 404), ("/api/config", 401), ("/", 401)]:  # fmt: skip
            response = await client.get(path)
            assert response.status_code == status, path
            for header in SECURITY_HEADERS:
                assert header in response.headers, (path, header)
            assert response.headers["x-frame-options"] == "DENY"
        ok = await client.get("/api/config", headers=BEARER)
        assert all(h in ok.headers for h in SECURITY_HEADERS)


async def test_host_and_origin_are_checked_before_the_token(tmp_path: Path) -> None:
    async with inprocess_app(tmp_path) as (_, client):
        evil_host = await client.get("/api/config", headers={**BEARER, "host": "evil.example"})
        assert evil_host.status_code == 403
        assert await evil_host.get_json() == {"ok": False, "error": "forbidden_host"}
        foreign = await client.post(
            "/api/queue", json={"task": "pwn"}, headers={**BEARER, "origin": "http://127.0.0.1:9"}
        )
        assert foreign.status_code == 403
        assert await foreign.get_json() == {"ok": False, "error": "forbidden_origin"}
        own = await client.post("/api/queue", json={"task": "fine"}, headers={**BEARER, "origin": "http://localhost"})
        assert own.status_code == 201
        queue = await (await client.get("/api/queue", headers=BEARER)).get_json()
        assert [item["task"] for item in queue] == ["fine"]  # the foreign one left no item


async def test_bodies_must_be_json(tmp_path: Path) -> None:
    async with inprocess_app(tmp_path) as (_, client):
        body = '{"task": "from a form"}'
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"):
            response = await client.post("/api/queue", data=body, headers={**BEARER, "content-type": kind})
            assert response.status_code == 415, kind
            assert await response.get_json() == {"ok": False, "error": "unsupported_media_type"}
        undeclared = await client.put("/api/settings", data='{"effort": "quick"}', headers=BEARER)
        assert undeclared.status_code == 415
        charset = await client.post(
            "/api/queue", data=body, headers={**BEARER, "content-type": "application/json; charset=utf-8"}
        )
        assert charset.status_code == 201
        assert [i["task"] for i in await (await client.get("/api/queue", headers=BEARER)).get_json()] == ["from a form"]


async def test_an_oversized_body_is_refused_before_the_app(tmp_path: Path) -> None:
    async with inprocess_app(tmp_path) as (_, client):
        big = '{"task": "' + "x" * (16 << 20) + '"}'
        response = await client.post("/api/queue", data=big, headers={**BEARER, "content-type": "application/json"})
        assert response.status_code == 413
        assert await response.get_json() == {"ok": False, "error": "too_large"}
        assert await (await client.get("/api/queue", headers=BEARER)).get_json() == []


async def test_token_off_still_checks_host_and_origin(tmp_path: Path) -> None:
    async with inprocess_app(tmp_path, policy=Policy(token=None)) as (_, client):
        assert (await client.get("/api/config")).status_code == 200
        assert (await client.get("/")).status_code == 200
        assert (await client.get("/api/config", headers={"host": "evil.example"})).status_code == 403
        assert (await client.get("/api/config", headers={"origin": "http://evil.example"})).status_code == 403


async def test_a_failing_route_answers_json_500_without_a_traceback(tmp_path: Path) -> None:
    async with inprocess_app(tmp_path) as (app, client):

        @app.get("/api/_explode")
        async def explode() -> Response:
            raise RuntimeError("secret detail that must not reach the client")

        response = await client.get("/api/_explode", headers=BEARER)
        assert response.status_code == 500
        text = await response.get_data(as_text=True)
        assert await response.get_json() == {"ok": False, "error": "internal_error"}
        assert "Traceback" not in text and "secret detail" not in text
        assert all(h in response.headers for h in SECURITY_HEADERS)


async def test_oversized_integers_and_odd_names_answer_4xx(tmp_path: Path) -> None:
    async with inprocess_app(tmp_path) as (_, client):
        assert (await client.post("/api/queue", json={"task": "x"}, headers=BEARER)).status_code == 201
        huge = "9" * 5000
        for query in ({"offset": huge}, {"limit": huge}, {"detail": huge}, {"window": huge}, {"operation": huge}):
            response = await client.get("/api/runs/nope/log", query_string=query, headers=BEARER)
            assert response.status_code == 404, query
            assert await response.get_json() == {"ok": False, "error": "not_found"}
        for path in (f"/api/runs/{huge}", f"/api/runs/{huge}/tree", f"/api/queue/{huge}/answer", f"/api/{huge}"):
            response = await client.get(path, headers=BEARER)  # a 5,000-digit path parameter: no 5xx
            assert response.status_code == 404, path
        for name in ("a\x00b", "..%2f..%2fetc", ".hidden", "app.js\x00.png", "ünï.js", "%ff"):
            response = await client.get(f"/static/{name}")
            assert response.status_code == 404, name
            assert (await response.get_json())["error"] == "not_found"


async def test_a_tossed_cookie_from_another_port_does_not_lock_the_user_out(tmp_path: Path) -> None:
    # A page on another port of this host may set a cookie of the same name with a longer Path; the browser
    # sends it before the real one. The real one must still count, and the tossed one alone must not.
    name = "orchestrator_token_80"
    async with inprocess_app(tmp_path) as (_, client):
        tossed_first = {"cookie": f"{name}=attacker-set; {name}={TOKEN}"}
        assert (await client.get("/api/config", headers=tossed_first)).status_code == 200
        ui = await client.get("/", headers=tossed_first)
        assert ui.status_code == 200
        assert (await client.get("/api/config", headers={"cookie": f"{name}=attacker-set"})).status_code == 401
        several = "; ".join(f"{name}=guess{i}" for i in range(50))
        assert (await client.get("/api/config", headers={"cookie": several})).status_code == 401


async def test_a_repeated_host_or_origin_header_is_refused(tmp_path: Path) -> None:
    # No browser repeats them; a crafted request that does must not pass on whichever copy looks good.
    async with inprocess_app(tmp_path) as (_, client):
        two_origins = Headers([*BEARER.items(), ("origin", "http://evil.example"), ("origin", "http://localhost")])
        response = await client.post("/api/queue", json={"task": "pwn"}, headers=two_origins)
        assert response.status_code == 403
        assert await response.get_json() == {"ok": False, "error": "forbidden_origin"}
        two_hosts = Headers([*BEARER.items(), ("host", "evil.example"), ("host", "localhost")])
        response = await client.get("/api/config", headers=two_hosts)
        assert response.status_code == 403
        assert await response.get_json() == {"ok": False, "error": "forbidden_host"}
        junk_after_bracket = await client.get("/api/config", headers={**BEARER, "host": "[::1]evil.example"})
        assert junk_after_bracket.status_code == 403
        assert await (await client.get("/api/queue", headers=BEARER)).get_json() == []  # nothing was queued


async def test_a_subresource_from_another_site_or_port_without_origin_is_refused(tmp_path: Path) -> None:
    # An <img>/<script> on a page at another loopback port sends the cookie (same site) and no Origin.
    async with inprocess_app(tmp_path) as (_, client):
        for site in ("same-site", "cross-site"):
            probe = {**BEARER, "sec-fetch-site": site, "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image"}
            response = await client.get("/api/queue", headers=probe)
            assert response.status_code == 403, site
            assert await response.get_json() == {"ok": False, "error": "forbidden_origin"}
            link = {**BEARER, "sec-fetch-site": site, "sec-fetch-mode": "navigate", "sec-fetch-dest": "document"}
            assert (await client.get("/", headers=link)).status_code == 200, site
        own = {**BEARER, "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors"}
        assert (await client.get("/api/queue", headers=own)).status_code == 200


async def test_an_overlong_path_is_refused_not_a_500(tmp_path: Path) -> None:
    # Found by the fuzz test: a 5,000-character run id made the run lookup raise OSError (name too long).
    async with inprocess_app(tmp_path) as (_, client):
        for path in ("/api/runs/" + "x" * 5000, "/api/runs/" + "x" * 5000 + "/log", "/static/" + "a" * 3000):
            response = await client.get(path, headers=BEARER)
            assert response.status_code == 404, path[:30]
            assert await response.get_json() == {"ok": False, "error": "not_found"}
            assert "content-security-policy" in response.headers
        assert (await client.get("/api/runs/" + "x" * 1000, headers=BEARER)).status_code == 404


async def test_every_route_of_every_blueprint_is_behind_the_perimeter(tmp_path: Path) -> None:
    """Walk ``url_map`` (so a route a blueprint adds later is walked too): without the token every
    non-public route answers 401, and a foreign ``Host`` is refused on every route, public ones too."""
    public = {"/favicon.ico", "/static/<path:name>", "/healthz"}
    async with inprocess_app(tmp_path) as (app, client):
        rules = [(rule.rule, rule.methods or set()) for rule in app.url_map.iter_rules() if not rule.websocket]
        blueprints = {rule.endpoint.split(".", 1)[0] for rule in app.url_map.iter_rules()}
        assert {"pages", "config", "runs", "rundetail", "questions", "queue", "stream", "errors"} <= blueprints
        assert len(rules) > 20
        for rule, methods in rules:
            path = re.sub(r"<(?:path:)?(\w+)>", lambda m: "app.js" if "path:" in m.group(0) else "x", rule)
            for method in sorted(methods - {"OPTIONS", "HEAD"}):
                body = {"json": {}} if method in ("POST", "PUT", "PATCH") else {}
                foreign = await client.open(path, method=method, headers={"Host": "evil.example", **BEARER}, **body)
                assert foreign.status_code == 403, (method, rule)
                if rule in public:
                    continue
                bare = await client.open(path, method=method, **body)
                assert bare.status_code == 401, (method, rule)
