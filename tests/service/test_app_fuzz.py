"""Hypothesis over every route's parameters, query strings and bodies: never a 5xx, always the JSON
error shape on an API refusal. Runs through the in-process app (the route logic) with the perimeter on
and a valid token, so requests reach the handlers; one finished run exists so run-id routes go deep.

Hypothesis drives from a worker thread; each example's request runs on the test's trio loop.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quart.testing import QuartClient
from tests.engine.harness import finish, turn
from tests.helpers import serve_script
from tests.service.inprocess import BEARER, inprocess_app

NASTY = [
    "", "0", "-1", "9" * 5000, "1e309", "NaN", "１２", "..", "../..", "%00", "\x00", "a\x00b", "%ff", "\ud7ff",
    "é", "🙂", " ", "\t", "%2e%2e", "null", "[]", "{}", "all", "text", "lead#1", "op-1", "basic", "x" * 3000,
]  # fmt: skip
QUERY_KEYS = ["offset", "limit", "detail", "window", "operation", "format", "instance", "token", "x"]
CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", None, "text/plain", "application/json;;"]

texts = st.sampled_from(NASTY) | st.text(max_size=12) | st.integers(-(10**30), 10**30).map(str)
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | texts
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3), max_leaves=8
)
FIELDS = ["task", "effort", "logLevel", "continuesFrom", "kind", "message", "id", "answer", "position"]
plausible = st.dictionaries(
    st.sampled_from(FIELDS), json_values | st.sampled_from(["quick", "thorough", "full", "inquiry", "x"]), max_size=4
)
bodies = (
    st.none()
    | json_values.map(lambda v: json.dumps(v).encode())
    | plausible.map(lambda v: json.dumps(v).encode())
    | st.binary(max_size=40)
    | st.just(b"[" * 5000)
)


def _fill(rule: str, values: list[str]) -> str:
    parts = iter(values)
    return re.sub(r"<[^>]+>", lambda _: quote(next(parts), safe=""), rule)


async def test_no_route_answers_5xx(tmp_path: Path) -> None:
    script = {"turns": [turn("lead", finish("ok"), reusable=True), {"content": "summary", "reusable": True}]}
    async with serve_script(script) as sim, inprocess_app(tmp_path, api_base=sim.base_url) as (app, client):
        created = await client.post("/api/runs", json={"task": "seed run"}, headers=BEARER)
        assert created.status_code == 201, await created.get_data()
        run_id = (await created.get_json())["runId"]
        with trio.fail_after(30):
            while True:
                view = await (await client.get(f"/api/runs/{run_id}", headers=BEARER)).get_json()
                if view["status"] != "running":
                    break
                await trio.sleep(0.05)
        rules = [
            (rule.rule, sorted(m for m in rule.methods or () if m not in ("OPTIONS", "HEAD")))
            for rule in app.url_map.iter_rules()
            if not rule.websocket
        ]
        param_values = st.just(run_id) | texts  # half of them: a real id reaches deep
        failures: list[str] = []
        token = trio.lowlevel.current_trio_token()

        @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(
            st.sampled_from(rules).flatmap(
                lambda r: st.tuples(
                    st.just(r[0]),
                    st.sampled_from(r[1]),
                    st.lists(param_values, min_size=r[0].count("<"), max_size=r[0].count("<")),
                )
            ),
            st.dictionaries(st.sampled_from(QUERY_KEYS), texts, max_size=3),
            bodies,
            st.sampled_from(CONTENT_TYPES),
        )
        def example(route: tuple[str, str, list[str]], query: dict[str, str], body: bytes | None, kind: str | None):
            rule, method, values = route
            path = _fill(rule, values)
            outcome = trio.from_thread.run(_request, client, method, path, query, body, kind, trio_token=token)
            status, text = outcome
            if status >= 500:
                failures.append(f"{method} {path!r} {query!r} {body!r:.80} {kind} -> {status} {text[:200]}")
            assert status < 500, failures[-1]
            if path.startswith("/api/") and status >= 400:
                shape = json.loads(text)
                assert shape["ok"] is False and isinstance(shape["error"], str), (path, text)

        await trio.to_thread.run_sync(example)
        assert not failures


async def _request(
    client: QuartClient, method: str, path: str, query: dict[str, str], body: bytes | None, kind: str | None
) -> tuple[int, str]:
    headers: dict[str, Any] = dict(BEARER)
    if kind is not None:
        headers["content-type"] = kind
    if body is not None:
        headers["content-length"] = str(len(body))
    response = await client.open(path, method=method, query_string=query, data=body or b"", headers=headers)
    return response.status_code, await response.get_data(as_text=True)
