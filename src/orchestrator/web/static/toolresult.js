// Tool results by type: pure DOM builders for one call's result as the server's view describes it
// (GET /api/runs/:id/log?instance= rows' `toolResults`, GET /api/runs/:id/toolresult; flow/toolview.py).
//
//   renderToolResult(view, {onShowAll?(view) -> Promise<view>, onDiff?(view) -> Promise<diff|null>}) -> Node
//   renderDiff(diff) -> Node
//   commandVerdict(command) -> {severity: "ok"|"warn"|"fail", note}
//
// `view` = {callId, tool, kind (null while pending), severity, note, message, index, callIndex, clipped,
// body: {view: "terminal"|"file"|"write"|"search"|"plain", …}}. A terminal block shows each command with
// an exit badge and its stdout and stderr as text; a file view its path and numbered lines; a write its
// path and the diff against the previous content (fetched through `onDiff`); a search a table; anything
// else plain text. Every string is a text node. A clipped view gets a "Show all" that swaps in the
// untruncated view from `onShowAll`.

import { el } from "./rvdom.js";

const NOT_FOUND_EXIT = 127;

/** The severity of one command's exit status (the server's classifier's rule, per command). */
export function commandVerdict(command) {
  if (command.timedOut) return { severity: "fail", note: "timeout" };
  const code = command.exitCode;
  if (code === null || code === undefined) return { severity: "fail", note: "killed by a signal" };
  if (code === 0) return { severity: "ok", note: "exit 0" };
  if (code === NOT_FOUND_EXIT) return { severity: "fail", note: "exit 127: command not found" };
  return { severity: "warn", note: `exit ${code}` };
}

function badge(severity, text, testid) {
  const node = el("span", `tr-badge sev-${severity}`, text);
  if (testid) node.dataset.testid = testid;
  return node;
}

function statusBadge(view) {
  if (view.kind === null || view.kind === undefined) return badge("pending", "… waiting for the result", "tool-status");
  if (view.severity === "ok") return badge("ok", view.kind === "success" ? "✓ ok" : `✓ ${view.kind}`, "tool-status");
  return badge(view.severity, `${view.severity === "warn" ? "⚠" : "✖"} ${view.note || view.kind}`, "tool-status");
}

function clipNote(shown, total) {
  return total > shown ? el("div", "tr-clip", `showing ${shown.toLocaleString()} of ${total.toLocaleString()} characters`) : null;
}

function stream(label, text, total, className, testid) {
  if (!text && !total) return null;
  const pre = el("pre", `tr-stream ${className}`, text);
  pre.dataset.testid = testid;
  return el("div", "tr-stream-box", el("div", "tr-stream-label", label), pre, clipNote(text.length, total));
}

function terminal(body, view) {
  const box = el("div", "tr-terminal");
  for (const command of body.commands || []) {
    const block = el("div", "tr-command");
    block.dataset.testid = "tool-command";
    const head = el("div", "tr-command-head", el("code", "tr-prompt", `$ ${command.command}`));
    if (view.kind) {
      const verdict = commandVerdict(command);
      head.append(" ", badge(verdict.severity, verdict.note, "tool-exit"));
    }
    const streams = [
      stream("stdout", command.stdout || "", command.stdoutChars || 0, "out", "tool-stdout"),
      stream("stderr", command.stderr || "", command.stderrChars || 0, "err", "tool-stderr"),
    ];
    block.append(head, ...streams.filter(Boolean));
    if (view.kind && !command.stdout && !command.stderr) block.appendChild(el("div", "tr-empty", "(no output)"));
    box.appendChild(block);
  }
  return box;
}

/** Numbered lines: `first` is the number of the first one. */
function numbered(text, first = 1, testid = "tool-file-lines") {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  const box = el("div", "tr-lines");
  box.dataset.testid = testid;
  lines.forEach((line, i) => box.appendChild(el("div", "tr-line", el("span", "tr-ln", String(first + i)), el("span", "tr-code", line))));
  return box;
}

function fileView(body) {
  const facts = [];
  if (Number.isFinite(body.totalLines)) facts.push(`lines ${body.firstLine}–${body.firstLine + Math.max(0, body.content.split("\n").length - 1)} of ${body.totalLines}`);
  if (Number.isFinite(body.size)) facts.push(`${body.size.toLocaleString()} bytes`);
  if (body.truncated) facts.push("the tool read only the head of the file");
  const path = el("div", "tr-path", el("code", "", body.path), facts.length ? el("span", "tr-facts", ` · ${facts.join(" · ")}`) : null);
  path.dataset.testid = "tool-path";
  return el("div", "tr-file", path, numbered(body.content || "", body.firstLine || 1), clipNote((body.content || "").length, body.chars || 0));
}

export function renderDiff(diff) {
  const box = el("div", `tr-diff${diff.known ? "" : " unknown"}`);
  box.dataset.testid = "tool-diff";
  box.appendChild(el("div", "tr-diff-note", `+${diff.added} −${diff.removed} · ${diff.note}`));
  const lines = el("div", "tr-lines");
  for (const line of diff.lines || []) {
    const kind = line.op === "+" ? "add" : line.op === "-" ? "del" : line.op === "…" ? "gap" : "ctx";
    const row = el(
      "div",
      `tr-line ${kind}`,
      el("span", "tr-ln", line.old == null ? "" : String(line.old)),
      el("span", "tr-ln", line.new == null ? "" : String(line.new)),
      el("span", "tr-op", line.op === "…" ? "⋯" : line.op),
      el("span", "tr-code", line.text),
    );
    row.dataset.testid = `diff-${kind}`;
    lines.appendChild(row);
  }
  box.appendChild(lines);
  if (diff.clipped) box.appendChild(el("div", "tr-clip", "the diff is longer than shown"));
  return box;
}

function writeView(body, view, onDiff) {
  const path = el("div", "tr-path", el("code", "", body.path), Number.isFinite(body.bytes) ? el("span", "tr-facts", ` · ${body.bytes.toLocaleString()} bytes written`) : null);
  path.dataset.testid = "tool-path";
  const box = el("div", "tr-write", path);
  if (view.kind === "success" && onDiff && Number.isFinite(view.index)) {
    const slot = el("div", "tr-diff-slot", el("p", "rv-muted", "Loading the diff…"));
    box.appendChild(slot);
    onDiff(view).then(
      (diff) => slot.replaceChildren(diff ? renderDiff(diff) : numbered(body.content || "")),
      () => slot.replaceChildren(el("p", "rv-muted", "The diff could not be loaded; the written content:"), numbered(body.content || "")),
    );
  } else {
    box.append(...[numbered(body.content || ""), clipNote((body.content || "").length, body.chars || 0)].filter(Boolean));
  }
  return box;
}

function searchView(body) {
  const table = el("table", "tr-table");
  table.dataset.testid = "tool-table";
  table.appendChild(el("thead", "", el("tr", "", (body.columns || []).map((c) => el("th", "", c)))));
  const rows = el("tbody");
  for (const row of body.rows || []) rows.appendChild(el("tr", "", row.map((cell) => el("td", "", cell))));
  table.appendChild(rows);
  const facts = [`${body.total} ${body.total === 1 ? "row" : "rows"}`];
  if ((body.rows || []).length < body.total) facts.push(`showing ${(body.rows || []).length}`);
  if (body.truncated) facts.push("the tool stopped at its cap");
  const head = el("div", "tr-path", body.pattern ? el("code", "", body.pattern) : null, el("span", "tr-facts", ` · ${facts.join(" · ")}`));
  return el("div", "tr-search", head, body.rows && body.rows.length ? table : el("div", "tr-empty", "(nothing found)"));
}

function plainView(body) {
  const pre = el("pre", "tr-plain", body.text || "");
  pre.dataset.testid = "tool-plain";
  return el("div", "", body.text ? pre : el("div", "tr-empty", "(no result body recorded)"), clipNote((body.text || "").length, body.chars || 0));
}

export function renderToolResult(view, { onShowAll = null, onDiff = null } = {}) {
  const body = view.body || { view: "plain", text: "" };
  const box = el("div", `tr tr-view-${body.view} sev-${view.kind ? view.severity : "pending"}`);
  box.dataset.testid = "tool-result";
  box.dataset.view = body.view;
  if (view.callId) box.dataset.callId = view.callId;
  const head = el("div", "tr-head", el("span", "tr-title", "Result"), " ", statusBadge(view));
  if (view.clipped && onShowAll && Number.isFinite(view.index ?? view.callIndex)) {
    const all = el("button", "rv-link tr-show-all", "Show all");
    all.type = "button";
    all.dataset.testid = "tool-show-all";
    all.addEventListener("click", async () => {
      all.disabled = true;
      all.textContent = "Loading…";
      try {
        const full = await onShowAll(view);
        box.replaceWith(renderToolResult({ ...full, clipped: false }, { onShowAll, onDiff }));
      } catch {
        all.disabled = false;
        all.textContent = "Show all (failed; retry)";
      }
    });
    head.append(" ", all);
  }
  box.appendChild(head);
  if (view.message && body.view !== "plain") box.appendChild(el("div", "tr-message", view.message));
  if (body.view === "terminal") box.appendChild(terminal(body, view));
  else if (body.view === "file") box.appendChild(fileView(body));
  else if (body.view === "write") box.appendChild(writeView(body, view, onDiff));
  else if (body.view === "search") box.appendChild(searchView(body));
  else box.appendChild(plainView(body));
  return box;
}
