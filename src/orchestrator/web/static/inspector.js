// The inspector modal: one agent instance's transcript.
//
//   openInspector(ctx, {instanceId, role, participantId?, focusIndex?}) -> {close()}
//   ctx = {runId, config, api: {get(path) -> Promise<json>}, getTier?() , getRunView?() -> runView,
//          partials? (stream.js createPartials, shared with the run view), stream? (onDelta(fn) ->
//          unsubscribe), labels? (labels.js)}
//   openOperationCard(...) is re-exported from opcard.js (the operation inspector card).
//
// The transcript is GET /api/runs/:id/log?instance=<id>: the newest page first, "Load older" pages
// back, and while the modal is open a 1 s poll asks only for what follows the last known event. With
// `focusIndex` (a log event index) it opens at the turn containing that event instead (loading older
// pages as needed), scrolled to and highlighted.
// Each tool call shows its result underneath, by type (toolresult.js, from the rows' `toolResults`); a
// result still pending is refreshed from GET /api/runs/:id/toolresult?turn=<index>, a write's diff and
// a "show all" come from ?event=<index> (cached like the wire detail).
// Each model turn shows what was new on the wire (inputs, tool results), the reply (Markdown), its tool
// calls with arguments, and usage; an "On the wire" expander fetches ?detail=<index> on first open
// (the complete conversation the model saw), cached per session (bounded; failures are not cached).
// The in-flight turn shows the live partial text from the stream (text whose turn started before the
// turn in flight — a stale catch-up — is not shown), following its tail. Also shown: finish cards (error kind
// only through "copy raw"), the instance's token budget (last prompt vs the effective budget), and the
// run's plan document, and a find bar (transcriptnav.js: next/previous problem, find text). Escape or
// the close button closes it. Agent prose goes through renderMarkdown;
// machine fields are text nodes.

import { renderMarkdown } from "./markdown.js";
import { openOperationCard } from "./opcard.js";
import { createPartials } from "./stream.js";
import { boundedCache, compact, copyText, el, ensureStylesheet } from "./rvdom.js";
import { renderTurn, renderWire } from "./transcript.js";
import { createTranscriptNav } from "./transcriptnav.js";

export { openOperationCard };

const PAGE = 50;
const POLL_MS = 1000;
const wireCache = boundedCache(100);
const resultCache = boundedCache(200);
/** Older pages loaded at most to reach a focus index (50 events each). */
const MAX_FOCUS_PAGES = 40;
/** Clock skew tolerated between the server's turn start and a partial's start. */
const SKEW_MS = 1500;

/** GET …/toolresult?event=<index>[&full=1], cached per run, index and size (failures are not). */
function fetchResult(ctx, index, full = false) {
  const key = `${ctx.runId}|${index}|${full ? 1 : 0}`;
  const hit = resultCache.get(key);
  if (hit !== undefined) return hit;
  const path = `/api/runs/${encodeURIComponent(ctx.runId)}/toolresult?event=${encodeURIComponent(index)}${full ? "&full=1" : ""}`;
  const pending = Promise.resolve().then(() => ctx.api.get(path));
  resultCache.set(key, pending);
  pending.catch(() => resultCache.delete(key));
  return pending;
}

/** True when a partial's text started with (or after) the turn in flight — not a previous turn's. */
export function partialIsCurrent(entry, inflightTimestamp) {
  const started = Date.parse(inflightTimestamp || "");
  if (!entry || !Number.isFinite(started) || !Number.isFinite(entry.startedAt)) return Boolean(entry);
  return entry.startedAt >= started - SKEW_MS;
}

/** Keep a scrolled box at its bottom when it was there before `change()` (the live text's tail). */
function followTail(box, change) {
  const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
  change();
  if (atEnd) box.scrollTop = box.scrollHeight;
}

function fetchDetail(ctx, index) {
  const key = `${ctx.runId}|${index}`;
  const hit = wireCache.get(key);
  if (hit !== undefined) return hit;
  const pending = Promise.resolve().then(() =>
    ctx.api.get(`/api/runs/${encodeURIComponent(ctx.runId)}/log?detail=${encodeURIComponent(index)}`),
  );
  wireCache.set(key, pending);
  pending.catch(() => wireCache.delete(key));
  return pending;
}

/** The prompt size a request may reach: the server's figure when /api/config carries one. */
export function effectiveBudget(config) {
  const model = (config && config.model) || {};
  if (Number.isFinite(model.effectiveBudget)) return model.effectiveBudget;
  const window = Number(model.contextWindow) || 0;
  const reserve = Number(model.maxTokens ?? (model.generation && model.generation.maxTokens)) || 0;
  return window > 0 ? Math.max(1, window - reserve) : null;
}

export function openInspector(ctx, { instanceId, role, participantId = null, focusIndex = null }) {
  ensureStylesheet("runview.css"); // the modal's own styles, when opened without a run view
  ensureStylesheet("toolresult.css");
  for (const old of document.querySelectorAll(".rv-modal-backdrop")) old.__close?.();
  const base = `/api/runs/${encodeURIComponent(ctx.runId)}/log?instance=${encodeURIComponent(instanceId || "")}`;
  const tier = () => (ctx.getTier ? ctx.getTier() : "detailed");
  const partials = ctx.partials || createPartials(8);
  let unlisten = null;
  if (!ctx.partials && ctx.stream && typeof ctx.stream.onDelta === "function") {
    unlisten = ctx.stream.onDelta((delta) => {
      if (delta.runId === ctx.runId) {
        partials.apply(delta);
        drawPartial();
      }
    });
  }

  // Opened on the live run: ask the stream again for the turn's text so far (the server answers a
  // subscribe with a catch-up), in case the partials started listening after that turn began.
  const liveView = ctx.getRunView ? ctx.getRunView() : null;
  if (liveView && liveView.status === "running" && ctx.stream && typeof ctx.stream.subscribe === "function") {
    try {
      ctx.stream.subscribe(ctx.runId);
    } catch {
      // the stream is optional
    }
  }

  const backdrop = el("div", "rv-modal-backdrop");
  backdrop.dataset.testid = "inspector";
  const dialog = el("div", "rv-modal");
  dialog.setAttribute("role", "dialog");
  dialog.setAttribute("aria-modal", "true");
  const label = ctx.labels && participantId
    ? ctx.labels.participant({ id: participantId, role, kind: "role" }, tier())
    : role;
  dialog.setAttribute("aria-label", `Transcript of ${label}`);
  const close = el("button", "rv-close", "×");
  close.type = "button";
  close.title = "Close (Esc)";
  close.setAttribute("aria-label", "Close");
  const budget = el("div", "rv-budget");
  budget.dataset.testid = "inspector-budget";
  const plan = el("div", "rv-plan-slot");
  const older = el("button", "rv-older", "Load older turns");
  older.type = "button";
  older.hidden = true;
  const list = el("div", "rv-transcript");
  list.dataset.testid = "inspector-transcript";
  const live = el("div", "rv-inflight");
  live.dataset.testid = "inspector-live";
  live.hidden = true;
  const liveText = el("div", "rv-partial-text");
  const liveReasoning = el("div", "rv-partial-reasoning");
  live.append(el("div", "rv-inflight-head", "Model turn in flight"), liveReasoning, liveText);
  const status = el("p", "rv-muted", "Loading transcript…");
  const nav = createTranscriptNav(list);
  dialog.append(
    el("header", "rv-modal-head", el("h2", "", label, " ", el("span", "rv-id", instanceId || "no instance id")), close),
    budget,
    nav.el,
    plan,
    older,
    status,
    list,
    live,
  );
  backdrop.appendChild(dialog);
  document.body.appendChild(backdrop);
  const previousFocus = document.activeElement;
  close.focus();

  const state = { events: [], first: 0, total: 0, closed: false, timer: 0, callNames: new Map(), settled: false };

  function shut() {
    if (state.closed) return;
    state.closed = true;
    clearTimeout(state.timer);
    if (unlisten) unlisten();
    document.removeEventListener("keydown", onKey, true);
    backdrop.remove();
    if (previousFocus && typeof previousFocus.focus === "function") previousFocus.focus();
  }
  backdrop.__close = shut;
  function onKey(event) {
    if (event.key === "Escape") {
      event.stopPropagation();
      shut();
    }
  }
  document.addEventListener("keydown", onKey, true);
  close.addEventListener("click", shut);
  backdrop.addEventListener("click", (event) => {
    if (event.target === backdrop) shut();
  });

  function drawPlan() {
    const view = ctx.getRunView ? ctx.getRunView() : null;
    const text = view && typeof view.plan === "string" && view.plan.trim() ? view.plan : null;
    if (plan.__text === text) return;
    plan.__text = text;
    plan.replaceChildren();
    if (!text) return;
    const box = el("details", "rv-plan", el("summary", "", "Plan document"));
    box.dataset.testid = "inspector-plan";
    box.appendChild(el("div", "md", renderMarkdown(text)));
    plan.appendChild(box);
  }

  function drawBudget() {
    const limit = effectiveBudget(ctx.config);
    let last = null;
    for (let i = state.events.length - 1; i >= 0 && last === null; i -= 1) {
      const e = state.events[i];
      const usage = e.type === "llm_call" && e.payload && e.payload.roleId === instanceId && e.payload.usage;
      if (usage && Number.isFinite(usage.promptTokens)) last = usage.promptTokens;
    }
    if (last === null) {
      const view = ctx.getRunView ? ctx.getRunView() : null;
      const stats = view && (view.roles || []).find((r) => r.role === role);
      if (stats && Number.isFinite(stats.lastPromptTokens)) last = stats.lastPromptTokens;
    }
    budget.replaceChildren();
    if (last === null) {
      budget.appendChild(el("span", "rv-muted", "No model turn yet."));
      return;
    }
    const share = limit ? Math.min(1, last / limit) : 0;
    const threshold = Number(ctx.config && ctx.config.executor && ctx.config.executor.contextPressureThreshold) || 0.8;
    const bar = el("div", `rv-bar${share >= threshold ? " hot" : ""}`, el("span", "rv-bar-fill"));
    bar.firstChild.style.width = `${Math.round(share * 100)}%`;
    budget.append(
      el("span", "", `Last prompt ${compact(last)} tokens${limit ? ` of ${compact(limit)} (${Math.round(share * 100)}%)` : ""}`),
      bar,
    );
  }

  function drawPartial() {
    // a retried attempt (llm_retry) keeps the turn in flight
    const last = state.events.findLast((e) => e.type !== "llm_retry");
    const inflight = last && last.type === "llm_call_start" && (!last.payload || last.payload.roleId === instanceId || !last.payload.roleId) ? last : null;
    if (!inflight) {
      live.hidden = true;
      return;
    }
    live.hidden = false;
    const entry = (instanceId && partials.get(instanceId)) || (!instanceId && partials.forRole(role)) || null;
    const fresh = partialIsCurrent(entry, inflight.timestamp);
    const text = fresh ? entry.content : "";
    const reasoning = fresh ? entry.reasoning : "";
    if (liveText.textContent !== text) followTail(liveText, () => (liveText.textContent = text));
    if (liveReasoning.textContent !== reasoning) followTail(liveReasoning, () => (liveReasoning.textContent = reasoning));
  }

  function eventNode(event) {
    const node = renderTurn(event, {
      instanceId,
      callNames: state.callNames,
      onWire: (target, index) => loadWire(target, index),
      onCopy: (value) => copyText(value),
      onShowAll: (view) => fetchResult(ctx, view.index ?? view.callIndex, true).then((body) => body.result),
      onDiff: (view) => fetchResult(ctx, view.index).then((body) => body.diff),
      onJump: (callId) => jumpToCall(callId),
    });
    node.dataset.index = String(event.index);
    node.classList.add("rv-turn-row");
    return node;
  }

  function jumpToCall(callId) {
    const call = [...list.querySelectorAll(".rv-call")].find((node) => node.dataset.callId === String(callId));
    if (!call) {
      older.focus();
      return;
    }
    for (const node of list.querySelectorAll(".rv-focus")) node.classList.remove("rv-focus");
    call.classList.add("rv-focus");
    call.scrollIntoView?.({ block: "center" });
  }

  /** Re-fetch the results of turns whose calls were still running when they were drawn. */
  async function refreshPending() {
    const pending = [...list.querySelectorAll('.rv-call[data-pending="1"]')].map((n) => n.closest(".rv-turn-row"));
    const rows = [...new Set(pending.filter(Boolean))].slice(-2);
    for (const row of rows) {
      const index = Number(row.dataset.index);
      try {
        const body = await ctx.api.get(`/api/runs/${encodeURIComponent(ctx.runId)}/toolresult?turn=${index}`);
        if (state.closed || !body || !Array.isArray(body.results)) return;
        const at = state.events.findIndex((e) => e.index === index);
        const current = row.isConnected ? row : null;
        if (at < 0 || !current) continue;
        const same = JSON.stringify(state.events[at].toolResults) === JSON.stringify(body.results);
        if (same) continue;
        state.events[at] = { ...state.events[at], toolResults: body.results };
        current.replaceWith(eventNode(state.events[at]));
        nav.refresh();
      } catch {
        // the next poll retries
      }
    }
  }

  /** Open at the turn containing log event `focusIndex`: load older pages until it is in, then scroll. */
  async function focusOn(index) {
    for (let pages = 0; pages < MAX_FOCUS_PAGES && state.first > 0 && state.events.length && state.events[0].index > index; pages += 1) {
      await loadOlder();
      if (state.closed) return false;
    }
    let target = null;
    for (const node of list.children) {
      if (Number(node.dataset.index) <= index) target = node;
    }
    if (!target) return false;
    target.classList.add("rv-focus");
    target.dataset.focus = "1";
    // a tool event: its call inside the turn is highlighted too
    const event = state.events.find((e) => e.index === Number(target.dataset.index));
    const view = ((event && event.toolResults) || []).find((v) => v.index === index || v.callIndex === index);
    const call = view && [...target.querySelectorAll(".rv-call")].find((n) => n.dataset.callId === view.callId);
    if (call) call.classList.add("rv-focus");
    (call || target).scrollIntoView?.({ block: call ? "center" : "start" });
    return true;
  }

  async function loadWire(target, index) {
    target.replaceChildren(el("p", "rv-muted", "Loading the request…"));
    try {
      const body = await fetchDetail(ctx, index);
      target.replaceChildren(renderWire(body && body.detailSections));
      target.__loaded = true;
    } catch {
      target.replaceChildren(el("p", "rv-muted", "Could not load the request (close and reopen to retry)."));
    }
  }

  function append(events) {
    const fragment = document.createDocumentFragment();
    for (const event of events) {
      state.events.push(event);
      fragment.appendChild(eventNode(event));
    }
    list.appendChild(fragment);
    nav.refresh();
  }

  async function loadInitial() {
    if (!instanceId) {
      status.textContent = "This participant has no instance id the log can be scoped to.";
      drawBudget();
      return;
    }
    try {
      const head = await ctx.api.get(`${base}&limit=0`);
      const total = Number(head && head.total) || 0;
      const offset = Math.max(0, total - PAGE);
      const page = total ? await ctx.api.get(`${base}&offset=${offset}&limit=${PAGE}`) : { events: [], total: 0 };
      if (state.closed) return;
      state.first = offset;
      state.total = Math.max(total, offset + page.events.length);
      append(page.events || []);
      status.textContent = total ? "" : "No turns for this instance yet.";
      status.hidden = Boolean(total);
      older.hidden = offset === 0;
    } catch {
      status.textContent = "The transcript could not be loaded.";
    }
    drawBudget();
    drawPartial();
    const focused = Number.isFinite(focusIndex) && !state.closed ? await focusOn(focusIndex) : false;
    if (!focused) list.lastElementChild?.scrollIntoView?.({ block: "end" });
    schedule();
  }

  async function loadOlder() {
    const offset = Math.max(0, state.first - PAGE);
    const limit = state.first - offset;
    if (limit <= 0) return;
    older.disabled = true;
    try {
      const page = await ctx.api.get(`${base}&offset=${offset}&limit=${limit}`);
      const events = page.events || [];
      const fragment = document.createDocumentFragment();
      for (const event of events) fragment.appendChild(eventNode(event));
      list.insertBefore(fragment, list.firstChild);
      state.events = [...events, ...state.events];
      state.first = offset;
      older.hidden = offset === 0;
      nav.refresh();
    } catch {
      // the button stays for a retry
    }
    older.disabled = false;
  }
  older.addEventListener("click", loadOlder);

  function schedule() {
    if (state.closed) return;
    state.timer = setTimeout(poll, POLL_MS);
  }

  async function poll() {
    if (state.closed) return;
    const view = ctx.getRunView ? ctx.getRunView() : null;
    const running = !view || view.status === "running" || view.status === "needs_clarification";
    if (running) {
      try {
        const page = await ctx.api.get(`${base}&offset=${state.total}&limit=500`);
        if (state.closed) return;
        const events = (page.events || []).filter((e) => !state.events.length || e.index > state.events[state.events.length - 1].index);
        if (events.length) {
          const stick = dialog.scrollTop + dialog.clientHeight >= dialog.scrollHeight - 40;
          append(events);
          status.hidden = true;
          if (stick) list.lastElementChild?.scrollIntoView?.({ block: "end" });
        }
        state.total = Math.max(state.total, Number(page.total) || 0);
      } catch {
        // the next poll retries
      }
    }
    // pending results: every poll while the run is live, then once more (a call never run stays pending)
    if (running || !state.settled) await refreshPending();
    state.settled = !running;
    drawPlan();
    drawBudget();
    drawPartial();
    schedule();
  }

  drawPlan();
  loadInitial();
  return {
    close: shut,
    /** Redraw the live partial now (the run view calls this when a delta lands). */
    partial: drawPartial,
  };
}
