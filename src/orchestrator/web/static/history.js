// The history screen: every run newest first with its status (error-toned for error / interrupted), its
// one-line summary (else the task's first line) and effort; rows expand to the task and outcome; open →
// the watch screen for that run; Continue → compose with a continuation chip.

import { duration, firstLine, h, isTerminal, keepFocus, shortTime, statusBadge } from "./dom.js";
import { markdownBlock } from "./optional.js";

function elapsed(run) {
  const start = Date.parse(run.startTime || "");
  const end = Date.parse(run.endTime || "");
  return Number.isFinite(start) && Number.isFinite(end) ? duration((end - start) / 1000) : "";
}

export function createHistory(root, app) {
  const list = h("ul", { class: "history-list", testid: "history-list" });
  const empty = h("p", { class: "muted empty", testid: "history-empty" }, "No runs yet — add a task to start one.");
  root.append(h("h2", { class: "screen-title" }, "History"), empty, list);
  const expanded = new Set();
  let key = "";

  function row(run) {
    const id = run.runId;
    const open = expanded.has(id);
    const line = firstLine(run.summary || run.task || id, 160);
    const main = h("button", {
      type: "button", class: "history-open", testid: "history-open", "data-key": `${id}:open`,
      "aria-label": `Watch ${id}: ${line}`,
    },
    statusBadge(run.status, "history-status"),
    h("span", { class: "history-summary", testid: "history-summary" }, line),
    run.effort ? h("span", { class: "badge tone-plain effort", testid: "history-effort" }, run.effort) : null,
    h("span", { class: "history-time muted" }, shortTime(run.startTime)));
    main.addEventListener("click", () => app.navigate("watch", id));
    const toggle = h("button", {
      type: "button", class: "icon-btn small", testid: "history-expand", "data-key": `${id}:more`,
      "aria-expanded": String(open), "aria-controls": `history-detail-${id}`, "aria-label": `Details of ${id}`,
    }, open ? "▾" : "▸");
    toggle.addEventListener("click", () => {
      if (expanded.has(id)) expanded.delete(id);
      else expanded.add(id);
      key = "";
      render();
    });
    const li = h("li", {
      class: `history-row status-${run.status}`, testid: "history-row", "data-run-id": id, "data-status": run.status,
    }, h("div", { class: "history-line" }, toggle, main));
    if (open) li.append(detail(run));
    return li;
  }

  function detail(run) {
    const result = run.result || {};
    const errorText = (run.error && run.error.message) || (result.error && result.error.message) || "";
    const cont = h("button", { type: "button", class: "btn small", testid: "history-continue",
      "data-key": `${run.runId}:cont`, "aria-label": `Continue from ${run.runId}` }, "Continue");
    cont.addEventListener("click", () => app.continueFrom(run.runId));
    return h("div", { class: "history-detail", id: `history-detail-${run.runId}`, testid: "history-detail" },
      h("dl", { class: "facts" },
        h("dt", {}, "Run"), h("dd", {}, h("code", {}, run.runId)),
        h("dt", {}, "Started"), h("dd", {}, shortTime(run.startTime) || "—"),
        h("dt", {}, "Ended"), h("dd", {}, run.endTime ? `${shortTime(run.endTime)} (${elapsed(run)})` : "—")),
      h("h4", {}, "Task"),
      h("p", { class: "task-text", testid: "history-task" }, run.task || ""),
      result.summary ? [h("h4", {}, "Result"), markdownBlock(result.summary, "md", "history-result")] : null,
      errorText ? h("p", { class: "q-error" }, errorText) : null,
      isTerminal(run.status) ? h("div", { class: "actions" }, cont) : null);
  }

  function render() {
    const runs = app.state.runs;
    const next = JSON.stringify([runs, [...expanded]]);
    if (next === key) return;
    key = next;
    empty.hidden = runs.length > 0;
    keepFocus(root, () => list.replaceChildren(...runs.map(row)));
  }

  return { render };
}
