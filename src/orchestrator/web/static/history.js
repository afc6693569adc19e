// The history screen: every run, threads newest first — a run and the runs continuing it grouped, each
// continuation indented under the run it continues. A row is one link to the watch screen (`#watch/<id>`):
// status in plain words, the one-line summary as plain text (Markdown marks stripped; else the task's first
// line), start date and time, duration and effort; "Details" expands the task and outcome, with Continue.

import { duration, firstLine, h, isTerminal, keepFocus, statusBadge } from "./dom.js";
import { markdownBlock } from "./optional.js";
import { routeHash } from "./routes.js";
import { runStatus } from "./status.js";

/** `text`'s first line without Markdown marks (emphasis, code, links, headings, quotes, list bullets). */
export function plainLine(text, limit = 160) {
  const line = firstLine(text, 100000)
    .replace(/^(?:#{1,6}\s+|>\s*|[-*+]\s+|\d+[.)]\s+)+/, "")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<(https?:[^>\s]+)>/g, "$1")
    .replace(/(\*\*|__|~~)(?=\S)(.+?)(?<=\S)\1/g, "$2")
    .replace(/(^|[^\w*])([*_])(?=\S)(.+?)(?<=\S)\2(?![\w*])/g, "$1$3")
    .replace(/`+([^`]*)`+/g, "$1")
    .replace(/\s+/g, " ")
    .trim();
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const pad = (n) => String(n).padStart(2, "0");

/** A local start time: "Today 14:02", "Yesterday 09:15", "1 Dec 09:15", "1 Dec 2025 09:15". */
export function startedAt(value, now = new Date()) {
  const date = new Date(value || "");
  if (!value || Number.isNaN(date.getTime())) return "";
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}`;
  const day = new Date(date.getFullYear(), date.getMonth(), date.getDate());
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const days = Math.round((today - day) / 86400000);
  if (days === 0) return `Today ${time}`;
  if (days === 1) return `Yesterday ${time}`;
  const year = date.getFullYear() === now.getFullYear() ? "" : ` ${date.getFullYear()}`;
  return `${date.getDate()} ${MONTHS[date.getMonth()]}${year} ${time}`;
}

/** How long the run took ("2m 05s"; "< 1s"), how long it has run so far when live, else "". */
export function runDuration(run, now = Date.now()) {
  const start = Date.parse((run && run.startTime) || "");
  const end = run && run.endTime ? Date.parse(run.endTime) : run && run.status === "running" ? now : NaN;
  if (!Number.isFinite(start) || !Number.isFinite(end)) return "";
  return end - start < 1000 ? "< 1s" : duration((end - start) / 1000);
}

/**
 * The runs as threads, newest thread first (by its newest run), each origin followed by its
 * continuations depth-first, oldest first: `[{run, depth, thread}]`. A run whose `continuesFrom` is not
 * in the list starts its own thread.
 */
export function threads(runs) {
  const byId = new Map(runs.map((r) => [r.runId, r]));
  const children = new Map();
  const roots = [];
  for (const run of runs) {
    const parent = run.continuesFrom && run.continuesFrom !== run.runId && byId.has(run.continuesFrom) ? run.continuesFrom : null;
    if (parent) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(run);
    } else roots.push(run);
  }
  const out = [];
  const seen = new Set();
  const walk = (run, depth, thread, rows) => {
    if (seen.has(run.runId)) return;
    seen.add(run.runId);
    rows.push({ run, depth, thread });
    const next = (children.get(run.runId) || []).slice().sort((a, b) => a.runId.localeCompare(b.runId));
    next.forEach((child) => walk(child, depth + 1, thread, rows));
  };
  const groups = roots.map((root) => {
    const rows = [];
    walk(root, 0, root.runId, rows);
    return { rows, newest: rows.reduce((m, r) => (r.run.runId > m ? r.run.runId : m), "") };
  });
  groups.sort((a, b) => b.newest.localeCompare(a.newest));
  for (const group of groups) out.push(...group.rows);
  for (const run of runs) if (!seen.has(run.runId)) out.push({ run, depth: 0, thread: run.runId }); // cycles
  return out;
}

export function createHistory(root, app) {
  const list = h("ol", { class: "history-list", testid: "history-list" });
  const empty = h("p", { class: "muted empty", testid: "history-empty" }, "No runs yet — add a task to start one.");
  root.append(h("h2", { class: "screen-title" }, "History"), empty, list);
  const expanded = new Set();
  let key = "";

  function row({ run, depth, thread }) {
    const id = run.runId;
    const open = expanded.has(id);
    const line = plainLine(run.summary || run.task || id);
    const shown = runStatus(run, app.state.queue, app.state.questions);
    const when = startedAt(run.startTime);
    const took = runDuration(run);
    const main = h("a", {
      href: routeHash({ screen: "watch", runId: id }), class: "history-open", testid: "history-open",
      "data-key": `${id}:open`, "aria-label": `Watch ${id}: ${line}`,
    },
    depth > 0 ? h("span", { class: "history-thread-mark", "aria-hidden": "true", title: "continues the run above" }, "↳") : null,
    statusBadge(shown, "history-status"),
    h("span", { class: "history-summary", testid: "history-summary", title: line }, line),
    run.effort ? h("span", { class: "badge tone-plain effort", testid: "history-effort" }, run.effort) : null,
    h("span", { class: "history-when muted", testid: "history-when" }, when),
    h("span", { class: "history-duration muted", testid: "history-duration" }, took));
    main.addEventListener("click", (event) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      app.navigate("watch", id);
    });
    const toggle = h("button", {
      type: "button", class: "icon-btn small history-more", testid: "history-expand", "data-key": `${id}:more`,
      "aria-expanded": String(open), "aria-controls": `history-detail-${id}`, "aria-label": `Details of ${id}`,
    }, open ? "▾" : "▸");
    toggle.addEventListener("click", () => {
      if (expanded.has(id)) expanded.delete(id);
      else expanded.add(id);
      key = "";
      render();
    });
    const li = h("li", {
      class: `history-row status-${run.status}${depth > 0 ? " continuation" : ""}`, testid: "history-row",
      "data-run-id": id, "data-status": run.status, "data-depth": String(depth), "data-thread": thread,
    }, h("div", { class: "history-line" }, main, toggle));
    li.style.setProperty("--depth", String(Math.min(depth, 6)));
    if (open) li.append(detail(run, when, took));
    return li;
  }

  function detail(run, when, took) {
    const result = run.result || {};
    const errorText = (run.error && run.error.message) || (result.error && result.error.message) || "";
    const cont = h("button", { type: "button", class: "btn small", testid: "history-continue",
      "data-key": `${run.runId}:cont`, "aria-label": `Continue from ${run.runId}` }, "Continue");
    cont.addEventListener("click", () => app.continueFrom(run.runId));
    return h("div", { class: "history-detail", id: `history-detail-${run.runId}`, testid: "history-detail" },
      h("dl", { class: "facts" },
        h("dt", {}, "Run"), h("dd", {}, h("code", {}, run.runId)),
        h("dt", {}, "Started"), h("dd", {}, when || "—"),
        h("dt", {}, "Took"), h("dd", {}, took || "—"),
        run.continuesFrom ? [h("dt", {}, "Continues"), h("dd", {}, h("code", {}, run.continuesFrom))] : null,
        (run.continuedBy || []).length
          ? [h("dt", {}, "Continued in"), h("dd", {}, run.continuedBy.map((c, i) => [i ? ", " : "", h("code", {}, c)]))]
          : null),
      h("h4", {}, "Task"),
      h("p", { class: "task-text", testid: "history-task" }, run.task || ""),
      result.summary ? [h("h4", {}, "Result"), markdownBlock(result.summary, "md", "history-result")] : null,
      errorText ? h("p", { class: "q-error" }, errorText) : null,
      isTerminal(run.status) ? h("div", { class: "actions" }, cont) : null);
  }

  function render() {
    if (app.state.screen !== "history") return; // rebuilt when shown (a live run's duration ticks)
    const runs = app.state.runs;
    const live = runs.some((r) => r.status === "running");
    const next = JSON.stringify([runs, [...expanded], app.state.queue.filter((i) => i.continuesFrom).map((i) => [i.continuesFrom, i.status]),
      live ? Math.floor(Date.now() / 1000) : 0]);
    if (next === key) return;
    key = next;
    empty.hidden = runs.length > 0;
    keepFocus(root, () => list.replaceChildren(...threads(runs).map(row)));
  }

  return { render };
}
