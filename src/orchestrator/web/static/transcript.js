// Transcript rows of the inspector (inspector.js): one DOM block per scoped log event, and the
// "on the wire" body of a turn. Agent prose (tasks, replies, summaries, user inputs) goes through
// renderMarkdown; everything machine-made (tool arguments and results, wire messages, usage, error
// messages) is a text node.
//
//   renderTurn(event, {instanceId, callNames: Map<callId, toolName>, onWire(target, index), onCopy(text),
//              onShowAll?(view), onDiff?(view), onJump?(callId)})
//
// A model turn's tool calls carry their results underneath (the row's server-paired `toolResults`, drawn
// by toolresult.js by type); when the window pairs results (rows carry `toolResults`), the next turn's tool messages are
// only compact references to them ("shown under its call"), so nothing is repeated.
//   renderWire(detailSections) -> Node

import { renderMarkdown } from "./markdown.js";
import { clock, compact, el } from "./rvdom.js";
import { renderToolResult } from "./toolresult.js";

function text(value) {
  if (value == null) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** A JSON string pretty-printed when it parses; anything else as text. */
function pretty(value) {
  if (typeof value !== "string") return text(value);
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}

function pre(value, className = "rv-pre") {
  return el("pre", className, text(value));
}

function md(value) {
  return el("div", "md", renderMarkdown(text(value)));
}

function firstLine(value, limit = 140) {
  const line = String(value || "").split("\n").map((l) => l.trim()).find(Boolean) || "";
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

function toolCalls(calls, callNames, results, options) {
  const byId = new Map((Array.isArray(results) ? results : []).filter((r) => r && r.callId).map((r) => [r.callId, r]));
  const out = [];
  for (const call of Array.isArray(calls) ? calls : []) {
    const fn = (call && call.function) || {};
    if (call && call.id && fn.name) callNames.set(call.id, fn.name);
    const block = el("div", "rv-call", el("div", "rv-call-head", "→ ", el("code", "", String(fn.name || "?"))));
    block.dataset.testid = "transcript-tool-call";
    if (call && call.id) block.dataset.callId = String(call.id);
    const view = call && call.id ? byId.get(call.id) : undefined;
    if (view) {
      // the result under its call; the raw arguments stay one click away
      block.appendChild(el("details", "rv-args", el("summary", "", "Arguments"), pre(pretty(fn.arguments))));
      block.appendChild(renderToolResult(view, { onShowAll: options.onShowAll, onDiff: options.onDiff }));
      if (!view.kind) block.dataset.pending = "1";
    } else {
      block.appendChild(pre(pretty(fn.arguments)));
    }
    out.push(block);
  }
  return out;
}

function usageLine(p) {
  const u = p.usage || {};
  const parts = [];
  if (Number.isFinite(u.promptTokens)) parts.push(`${compact(u.promptTokens)} prompt`);
  if (Number.isFinite(u.cachedPromptTokens) && u.cachedPromptTokens) parts.push(`${compact(u.cachedPromptTokens)} cached`);
  if (Number.isFinite(u.completionTokens)) parts.push(`${compact(u.completionTokens)} completion`);
  if (p.finishReason) parts.push(String(p.finishReason));
  return parts.join(" · ");
}

/** The problem badge of a tool result, from the log window's server-side `verdicts` (flow/outcome.py). */
function verdictBadge(verdict) {
  const severity = verdict.severity === "warn" ? "warn" : "fail";
  const badge = el("span", `rv-badge sev-${severity}`, `${severity === "warn" ? "⚠" : "✖"} ${verdict.note || "failed"}`);
  badge.dataset.testid = "transcript-badge";
  return badge;
}

function message(m, callNames, verdicts = {}, paired = false, onJump = null) {
  const role = m && m.role;
  if (role === "assistant") {
    for (const call of Array.isArray(m.toolCalls) ? m.toolCalls : []) {
      if (call && call.id && call.function && call.function.name) callNames.set(call.id, call.function.name);
    }
    return null; // the echo of an earlier reply, already shown with that turn
  }
  if (role === "system") {
    return el("details", "rv-msg system", el("summary", "", "System message"), pre(m.content));
  }
  if (role === "tool") {
    const name = callNames.get(m.toolCallId) || "tool";
    const verdict = Object.prototype.hasOwnProperty.call(verdicts, m.toolCallId) ? verdicts[m.toolCallId] : null;
    if (paired) {
      // the server paired this result with its call: it is shown there, this is only a reference
      const jump = el("button", "rv-link", "shown under its call");
      jump.type = "button";
      jump.addEventListener("click", () => onJump && onJump(m.toolCallId));
      const ref = el("div", "rv-msg tool ref", "↩ Result of ", el("code", "", name), verdict ? [" ", verdictBadge(verdict)] : null, " — ", jump);
      ref.dataset.testid = "transcript-result-ref";
      return ref;
    }
    const head = el("div", "rv-msg-head", "Result of ", el("code", "", name));
    if (verdict) head.append(" ", verdictBadge(verdict));
    const block = el("div", `rv-msg tool${verdict ? ` sev-${verdict.severity === "warn" ? "warn" : "fail"}` : ""}`, head, pre(pretty(m.content)));
    block.dataset.testid = "transcript-tool-result";
    return block;
  }
  return el("div", "rv-msg user", el("div", "rv-msg-head", role === "user" ? "Input" : String(role || "message")), md(m && m.content));
}

function wireExpander(index, onWire) {
  const box = el("details", "rv-wire", el("summary", "", "On the wire"));
  box.dataset.testid = "wire-expander";
  const target = el("div", "rv-wire-body");
  target.dataset.testid = "wire-body";
  box.appendChild(target);
  box.addEventListener("toggle", () => {
    if (box.open && !target.__loaded) onWire(target, index);
  });
  return box;
}

function llmCall(event, { callNames, onWire, onShowAll = null, onDiff = null, onJump = null }) {
  const p = event.payload || {};
  const paired = Array.isArray(event.toolResults); // a window that pairs results with their calls
  const card = el("div", "rv-turn");
  card.dataset.testid = "transcript-turn";
  card.appendChild(el("div", "rv-turn-head", el("span", "rv-turn-title", "Model turn"), el("span", "rv-muted", `${clock(event.timestamp)} · ${usageLine(p)}`)));
  for (const m of Array.isArray(p.sent) ? p.sent : []) {
    const node = message(m, callNames, event.verdicts && typeof event.verdicts === "object" ? event.verdicts : {}, paired, onJump);
    if (node) card.appendChild(node);
  }
  const r = p.received;
  if (r && typeof r === "object") {
    if (r.reasoning) card.appendChild(el("details", "rv-reasoning", el("summary", "", "Reasoning"), pre(r.reasoning, "rv-pre soft")));
    if (r.content) {
      const reply = md(r.content);
      reply.classList.add("rv-reply");
      reply.dataset.testid = "transcript-reply";
      card.appendChild(reply);
    }
    card.append(...toolCalls(r.toolCalls, callNames, event.toolResults, { onShowAll, onDiff }));
  } else if (!p.sent) {
    card.appendChild(el("p", "rv-muted", "Bodies are not recorded at this log level."));
  }
  card.appendChild(wireExpander(event.index, onWire));
  return card;
}

function finishCard(event, onCopy) {
  const p = event.payload || {};
  const ok = p.status === "success";
  const card = el("div", `rv-finish ${ok ? "ok" : p.status === "error" ? "err" : "other"}`);
  card.dataset.testid = "transcript-finish";
  card.appendChild(el("div", "rv-turn-head", el("span", "rv-turn-title", `Finished: ${p.status || "?"}`), el("span", "rv-muted", clock(event.timestamp))));
  if (p.summary) card.appendChild(md(p.summary));
  const error = p.error && typeof p.error === "object" ? p.error : null;
  if (error) {
    if (error.message) card.appendChild(el("p", "rv-error", String(error.message)));
    const copy = el("button", "rv-link", "Copy raw");
    copy.type = "button";
    copy.title = "Copy the raw error card";
    copy.addEventListener("click", async () => {
      const done = await onCopy(JSON.stringify(error, null, 2));
      copy.textContent = done ? "Copied" : "Copy failed";
    });
    card.appendChild(copy);
  }
  return card;
}

export function renderTurn(event, options) {
  const p = event.payload || {};
  const own = !p.roleId || p.roleId === options.instanceId;
  switch (event.type) {
    case "llm_call":
      return llmCall(event, options);
    case "llm_call_start":
      return el("div", "rv-line rv-turn-start", `Model turn sent · ${clock(event.timestamp)}`);
    case "role_start":
      if (own) {
        const card = el("div", "rv-start", el("div", "rv-turn-head", el("span", "rv-turn-title", "Task"), el("span", "rv-muted", clock(event.timestamp))));
        card.appendChild(md(p.task));
        return card;
      }
      return el("div", "rv-line rv-ancestor", `↳ ${p.role || "?"} started: ${firstLine(p.task)}`);
    case "role_finished":
      return own ? finishCard(event, options.onCopy) : el("div", "rv-line rv-ancestor", `↳ ${p.role || "?"} finished ${p.status || ""}`);
    case "llm_retry":
      return el("div", "rv-line rv-error", p.cause === "loading"
        ? `Model server still loading its model, waiting ${p.delaySeconds}s`
        : `Model attempt ${p.attempt}/${p.attempts} failed (${p.cause}), retrying in ${p.delaySeconds}s${p.message ? `: ${p.message}` : ""}`);
    case "llm_unavailable":
    case "context_budget_exceeded":
      return el("div", "rv-line rv-error", `${event.type.replace(/_/g, " ")}${p.message ? `: ${p.message}` : ""}`);
    default:
      return el("div", "rv-line", event.type.replace(/_/g, " "));
  }
}

export function renderWire(sections) {
  const out = el("div", "rv-wire-sections");
  if (!sections || typeof sections !== "object") {
    out.appendChild(el("p", "rv-muted", "Nothing was recorded for this turn."));
    return out;
  }
  if (Array.isArray(sections.sent)) {
    out.appendChild(el("h4", "", `Sent (${sections.sent.length} messages)`));
    sections.sent.forEach((m, i) => {
      const block = el("div", "rv-wire-msg", el("div", "rv-msg-head", `${i}. ${String((m && m.role) || "?")}${m && m.toolCallId ? ` · ${m.toolCallId}` : ""}`));
      block.dataset.testid = "wire-message";
      if (m && m.content) block.appendChild(pre(m.content));
      if (m && m.reasoning) block.appendChild(pre(m.reasoning, "rv-pre soft"));
      if (m && Array.isArray(m.toolCalls) && m.toolCalls.length) block.appendChild(pre(m.toolCalls));
      out.appendChild(block);
    });
  }
  if (sections.received) {
    out.appendChild(el("h4", "", "Received"));
    const r = sections.received;
    if (r.reasoning) out.appendChild(pre(r.reasoning, "rv-pre soft"));
    if (r.content) out.appendChild(pre(r.content));
    if (Array.isArray(r.toolCalls) && r.toolCalls.length) out.appendChild(pre(r.toolCalls));
  }
  for (const key of Object.keys(sections)) {
    if (key === "sent" || key === "received") continue;
    out.append(el("h4", "", key), pre(sections[key]));
  }
  return out;
}
