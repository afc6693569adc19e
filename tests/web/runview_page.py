"""A bare host for the run-view modules, so their browser tests do not depend on the shell's code.

``open_host(page)`` loads the real ``/`` page but answers its ``/static/app.js`` request with a host
script instead of the shell: the document stays a genuine loopback page (Chromium's local-network
checks let its WebSocket reach the server, which a route-fulfilled document would not), ``/static/*`` and
``/api/*`` are the real ones, and nothing of the shell runs. The host script empties the body, imports
``runview.js``, ``stream.js`` and ``markdown.js`` and exposes ``window.rvHost``:

- ``rvHost.mount(runId, {interval})`` creates the stream (subscribed to the run) and the run view, then
  polls ``GET /api/runs/:id/flow`` and ``GET /api/runs/:id`` every ``interval`` ms like the shell does,
  timing each poll's main-thread work (JSON parse + render + the style/layout it causes, forced by
  reading ``offsetHeight``) into ``rvHost.stats``;
- ``rvHost.view`` is the run view (``setMode``, ``setTier``, ``focusOperation``); its "Show all"
  (``showAllOperations``) switches the polls to ``?window=all`` as the shell does;
- ``rvHost.markdown`` is the imported ``markdown.js`` module.
"""

from __future__ import annotations

from typing import Any

HOST_SCRIPT = """
import { createRunView } from "/static/runview.js";
import { createStream } from "/static/stream.js";
import * as markdown from "/static/markdown.js";

async function get(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

const stats = { polls: 0, work: [], longTasks: [], errors: 0 };
try {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) stats.longTasks.push({ at: entry.startTime, ms: entry.duration });
  }).observe({ type: "longtask", buffered: true });
} catch (error) {}

async function mount(runId, { interval = 250, flowQuery = "" } = {}) {
  const config = await get("/api/config");
  const stream = createStream({ url: "/ws/stream" });
  stream.subscribe(runId);
  const view = createRunView(document.getElementById("host"), {
    runId, config, api: { get }, stream, getTier: () => "detailed",
    showAllOperations: () => { flowQuery = "?window=all"; },
  });
  window.rvHost.view = view;
  window.rvHost.stream = stream;
  const base = `/api/runs/${encodeURIComponent(runId)}`;
  async function poll() {
    try {
      const [flowText, viewText] = await Promise.all([
        fetch(`${base}/flow${flowQuery}`, { cache: "no-store" }).then((r) => r.text()),
        fetch(base, { cache: "no-store" }).then((r) => r.text()),
      ]);
      const start = performance.now();
      const flow = JSON.parse(flowText);
      const run = JSON.parse(viewText);
      const parsed = performance.now();
      view.render(flow, run);
      void document.body.offsetHeight; // style and layout of what render changed belong to the poll
      const end = performance.now();
      stats.work.push({
        at: start, ms: end - start, parse: parsed - start, render: end - parsed,
        mode: view.mode, ops: flow.operations.length, bytes: flowText.length,
      });
      stats.polls += 1;
    } catch (error) {
      stats.errors += 1;
    }
    window.rvHost.timer = setTimeout(poll, interval);
  }
  await poll();
}

const host = document.createElement("main");
host.id = "host";
host.style.cssText = "padding: 12px; display: block; flex: 1;";
document.body.replaceChildren(host);
window.rvHost = { mount, stats, markdown, view: null };
document.body.dataset.ready = "1";
"""


def open_host(page: Any) -> None:
    """Open ``/`` with the host script in place of the shell and wait until its modules are loaded."""
    page.route(
        "**/static/app.js", lambda route: route.fulfill(status=200, content_type="text/javascript", body=HOST_SCRIPT)
    )
    page.goto("/")
    page.wait_for_selector("body[data-ready='1']", state="attached")


def mount(page: Any, run_id: str, interval_ms: int = 250, flow_query: str = "") -> None:
    """Mount the run view for ``run_id`` in the host page and start polling (``flow_query`` e.g.
    ``"?window=all"`` is appended to the flow URL)."""
    page.evaluate(
        "([id, ms, query]) => window.rvHost.mount(id, { interval: ms, flowQuery: query })",
        [run_id, interval_ms, flow_query],
    )
