"""The perimeter's per-request cost on ``GET /api/runs/:id/log``, checks on vs off, in one process.

Two apps over one ``Service`` and one workspace holding a synthetic run: ``create_app(service, policy)``
(Host, Origin, token, JSON-only, security headers) and ``create_app(service, None)`` (no perimeter).
Both are measured side by side, in interleaved rounds, two ways:

- **through Hypercorn** — both apps served on loopback ports in this process, one keep-alive
  ``httpx`` client each; what a client sees (the client's own work is in both sides alike);
- **ASGI direct** — the app called with an in-memory request, no sockets: the middleware against
  the route's own work only, the strictest view of the same cost; a third app without checks against
  the second gives the noise floor of this measurement on this machine (through Hypercorn too).

Each block is timed in this process's CPU time (server and client are both in it), which a busy shared
machine disturbs far less than wall-clock time. The headline is the median over rounds of
(checks on)/(checks off) through Hypercorn; goal <= 1.05x.
``--quick`` runs a few rounds in seconds (what ``./dev test`` runs); timings are noisy on a busy machine.
Run: ``.venv/bin/python bench/perimeter_cost.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import httpx
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]  # bench/log_window/ (synthetic run, CPU pressure); tests/

from log_window.measure import cpu_pressure, pressure_note  # noqa: E402
from log_window.synthetic import write_synthetic_run  # noqa: E402
from tests.helpers import make_settings  # noqa: E402

from orchestrator.service.app import create_app  # noqa: E402
from orchestrator.service.core import Service  # noqa: E402
from orchestrator.service.perimeter_rules import Policy  # noqa: E402

TOKEN = "bench-token-0123456789abcdefghijklmnop"
RUN_ID = "run-20260101-000000"
PATH = f"/api/runs/{RUN_ID}/log?offset=100&limit=50"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Origin": "http://127.0.0.1"}  # Origin: the check runs fully
GOAL = 1.05


async def _timed_block(request: Callable[[], Awaitable[None]], count: int) -> float:
    """Mean CPU seconds of this process per request over ``count`` requests. Server and client both live
    in this process, so its CPU time is the whole cost, and it does not count the time other processes
    on a shared machine hold the cores (wall-clock ratios there swing by ±15 %)."""
    started = time.process_time()
    for _ in range(count):
        await request()
    return (time.process_time() - started) / count


def _asgi_request(app: Callable[..., Awaitable[None]], host: str) -> Callable[[], Awaitable[None]]:
    """One in-memory GET of PATH to ``app`` (an ASGI callable), answered into a list."""
    query = PATH.split("?", 1)[1].encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": PATH.split("?", 1)[0], "raw_path": PATH.split("?", 1)[0].encode(), "query_string": query,
        "root_path": "", "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80), "extensions": {},
        "headers": [(b"host", host.encode()), *((k.lower().encode(), v.encode()) for k, v in HEADERS.items())],
    }  # fmt: skip

    async def request() -> None:
        sent: list[dict[str, object]] = []
        given = False

        async def receive() -> dict[str, object]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await trio.sleep_forever()
            raise AssertionError  # pragma: no cover

        async def send(message: dict[str, object]) -> None:
            sent.append(message)

        await app(dict(scope), receive, send)
        assert sent and sent[0].get("status") == 200, sent[:1]

    return request


async def _http_request(client: httpx.AsyncClient) -> None:
    response = await client.get(PATH, headers=HEADERS | {"Origin": str(client.base_url).rstrip("/")})
    assert response.status_code == 200, response.text[:200]


def _ratios(on: list[float], off: list[float]) -> tuple[float, float, float]:
    """(median per-round ratio, median on µs, median off µs)."""
    ratio = statistics.median(a / b for a, b in zip(on, off, strict=True))
    return ratio, statistics.median(on) * 1e6, statistics.median(off) * 1e6


async def main(rounds: int, per_block: int) -> float:
    with tempfile.TemporaryDirectory(prefix="perimeter-bench-") as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        write_synthetic_run(workspace, RUN_ID, 4000)
        settings = make_settings(root, "http://127.0.0.1:9/v1", roles={"lead": ["finish"]})
        service = Service(settings, workspace)
        checked = create_app(service, Policy(token=TOKEN))
        open_app = create_app(service, None)
        control_app = create_app(service, None)  # a second app without checks: the noise floor
        pressure = cpu_pressure()
        began = time.perf_counter()
        async with trio.open_nursery() as nursery:
            service.attach(nursery)
            binds = []
            for app in (checked, open_app, control_app):
                config = Config()
                config.bind = ["127.0.0.1:0"]
                config.accesslog = None
                config.errorlog = None
                binds.append((await nursery.start(partial(serve, app, config)))[0])
            async with (
                httpx.AsyncClient(base_url=binds[0], timeout=30) as on_client,
                httpx.AsyncClient(base_url=binds[1], timeout=30) as off_client,
                httpx.AsyncClient(base_url=binds[2], timeout=30) as control_client,
                checked.test_app(),
                open_app.test_app(),
                control_app.test_app(),
            ):
                contenders = {
                    "http": (partial(_http_request, on_client), partial(_http_request, off_client)),
                    "http control": (partial(_http_request, control_client), partial(_http_request, off_client)),
                    "asgi": (_asgi_request(checked, "127.0.0.1"), _asgi_request(open_app, "127.0.0.1")),
                    "control": (_asgi_request(control_app, "127.0.0.1"), _asgi_request(open_app, "127.0.0.1")),
                }
                for on, off in contenders.values():  # warm-up: index builds, connections, caches
                    await _timed_block(on, 30)
                    await _timed_block(off, 30)
                times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in contenders}
                for name, (on, off) in contenders.items():  # one way at a time: no spill-over between them
                    for round_number in range(rounds):
                        pair = [(on, times[name][0]), (off, times[name][1])]
                        for request, sink in pair if round_number % 2 == 0 else reversed(pair):
                            sink.append(await _timed_block(request, per_block))
            nursery.cancel_scope.cancel()
        print(f"GET {PATH} on a 4,000-event run; {rounds} interleaved rounds of {per_block} requests each")
        headline = 0.0
        rows = (
            ("asgi", "ASGI direct (no sockets)"),
            ("control", "ASGI, no checks vs no checks"),
            ("http", "through Hypercorn, loopback"),
            ("http control", "Hypercorn, no checks vs none"),
        )
        for name, label in rows:
            ratio, on_us, off_us = _ratios(*times[name])
            print(f"  {label:30} checks on {on_us:8.1f} us CPU   off {off_us:8.1f} us CPU   {ratio:5.3f}x")
            if name == "http":
                headline = ratio
        asgi_ratio, asgi_on, asgi_off = _ratios(*times["asgi"])
        print(f"  the checks' own cost per request (ASGI): {asgi_on - asgi_off:+.1f} us")
        print(f"perimeter checks on/off per request, through Hypercorn: {headline:.3f}x (goal <= {GOAL}x)")
        print(f"perimeter checks on/off per request, ASGI direct: {asgi_ratio:.3f}x")
        floors = _ratios(*times["http control"])[0], _ratios(*times["control"])[0]
        print(f"noise floor (two apps without checks): through Hypercorn {floors[0]:.3f}x, ASGI {floors[1]:.3f}x")
        print(pressure_note(pressure, time.perf_counter() - began))
        return headline


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a few rounds (seconds), for ./dev test")
    parser.add_argument("--rounds", type=int, default=31, help="interleaved rounds (default 31)")
    args = parser.parse_args()
    rounds, per_block = (9, 30) if args.quick else (args.rounds, 100)
    trio.run(main, rounds, per_block)
