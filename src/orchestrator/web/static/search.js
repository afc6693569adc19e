// Search and jump (issue 18): the run view's search box and results, landmark stepping with `n` / `p`,
// and the run view's focusOperation.
//
//   createSearch(host, ctx, view) -> {focusOperation(opId, hint?), afterRender(known), destroy()}
//   ctx  = the run view's ctx ({runId, api: {get(path)}, showAllOperations?()})
//   view = {getFlow() -> model, getMode() -> 'flow'|'sequence', openCard(opId), scrollSequence(opId) -> bool,
//           openTurn({instanceId, role, focusIndex}), participantInstance(pid) -> instanceId|null}
//
// Search is server-side: GET /api/runs/:id/search?q=…&limit=…&after=… (hits in log order, each with the
// operation it lands on) and ?landmarks=1 (every problem, question, interrupt and loop check of the whole
// run, refetched when the run grows — the answer is ETag-cached). ?operation=op-N names the event behind
// an operation when a jump has no hit to tell (a link, the card's button). Keys, when focus is not in a
// text field and no dialog is open: `/` focuses the box, `n` / `p` jump to the next / previous landmark.
// A jump opens the operation's card, scrolls the sequence to its row (asking the shell for the whole
// model when the windowed answer left it out), opens the inspector at its turn and puts `#watch/<run>/op-N`
// in the address bar (replaceState: no history entry per jump).

import { el, ensureStylesheet, setClass, setText } from "./rvdom.js";

const LIMIT = 100;
const DEBOUNCE_MS = 250;
const LIVE_REFRESH_MS = 3000;
const MARK = { fail: "✖", warn: "⚠", question: "?", interrupt: "⚡", loop: "↻" };
// the server's `is:` values and query-text bound (flow/search.py), checked here so a half-typed filter
// says what it expects instead of costing a 400
const CATEGORIES = ["problem", "error", "warn", "fail", "question", "interrupt", "loop"];
const MAX_QUERY = 120;
const WHAT = { fail: "failure", warn: "warning", question: "question", interrupt: "interrupt", loop: "loop check" };

function typing(target) {
  if (!target || !(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  const tag = target.tagName;
  if (tag === "TEXTAREA" || tag === "SELECT") return true;
  return tag === "INPUT" && !["checkbox", "radio", "button", "submit", "reset", "range", "color"].includes(target.type);
}

/** Why the server would refuse `q` (null when it would not). */
export function queryProblem(q) {
  const words = q.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ").split(/\s+/).filter(Boolean);
  const text = [];
  for (const word of words) {
    const match = /^(role|tool|is):(\S+)$/i.exec(word);
    if (!match) text.push(word);
    else if (match[1].toLowerCase() === "is" && !CATEGORIES.includes(match[2].toLowerCase())) {
      return `is: takes ${CATEGORIES.join(", ")}`;
    }
  }
  return text.join(" ").length > MAX_QUERY ? `Search text is limited to ${MAX_QUERY} characters.` : null;
}

/** The snippet with the (lower-cased) query text marked: text nodes around one <mark>. */
function marked(snippet, text) {
  const at = text ? snippet.toLowerCase().indexOf(text) : -1;
  if (at < 0 || snippet.toLowerCase().length !== snippet.length) return [snippet];
  return [snippet.slice(0, at), el("mark", "rs-mark", snippet.slice(at, at + text.length)), snippet.slice(at + text.length)];
}

/** The hit's label line: "⚠ coder · run_shell · tool_result". */
function hitMeta(hit) {
  const parts = [hit.role, hit.tool, hit.kind.replace(/_/g, " ")].filter(Boolean);
  return `${hit.severity ? `${MARK[hit.severity]} ` : ""}${parts.join(" · ")}`;
}

export function createSearch(host, ctx, view) {
  ensureStylesheet("search.css");
  const base = `/api/runs/${encodeURIComponent(ctx.runId)}/search`;
  const bar = el("div", "rs-bar");
  bar.dataset.testid = "run-search";
  const form = el("form", "rs-form");
  form.setAttribute("role", "search");
  const input = document.createElement("input");
  input.type = "search";
  input.className = "rs-input";
  input.placeholder = "Search this run — text, role:coder, tool:run_shell, is:problem  ( / )";
  input.setAttribute("aria-label", "Search this run");
  input.maxLength = 400;
  input.dataset.testid = "search-input";
  form.appendChild(input);
  const prev = el("button", "rs-step", "◀");
  prev.type = "button";
  prev.title = "Previous problem, question or interrupt (p)";
  prev.setAttribute("aria-label", prev.title);
  prev.dataset.testid = "landmark-prev";
  const next = el("button", "rs-step", "▶");
  next.type = "button";
  next.title = "Next problem, question or interrupt (n)";
  next.setAttribute("aria-label", next.title);
  next.dataset.testid = "landmark-next";
  const counter = el("span", "rs-counter");
  counter.dataset.testid = "landmark-indicator";
  counter.setAttribute("aria-live", "polite");
  const results = el("div", "rs-results");
  results.dataset.testid = "search-results";
  results.hidden = true;
  bar.append(form, prev, counter, next);
  host.append(bar, results);

  let marks = null; // the landmarks, once fetched
  let marksKey = null;
  let marksAt = -Infinity;
  let marksPending = null;
  let at = -1; // log index of the last jump
  let query = "";
  let timer = 0;
  let pending = null; // {opId, hint, renders}: a jump waiting for the whole model
  let destroyed = false;

  function drawCounter() {
    if (!marks) {
      setText(counter, "");
      return;
    }
    const i = marks.findIndex((m) => m.logIndex === at);
    const mark = marks[i];
    setText(counter, marks.length === 0 ? "No problems" : `${i >= 0 ? i + 1 : "–"} of ${marks.length} problems`);
    counter.title = mark ? `${WHAT[mark.category]}${mark.note ? `: ${mark.note}` : ""}` : "errors, warnings, questions, interrupts and loop checks";
    prev.disabled = next.disabled = marks.length === 0;
  }

  function loadMarks() {
    if (marksPending) return marksPending;
    marksAt = performance.now();
    marksPending = ctx.api.get(`${base}?landmarks=1`).then(
      (body) => {
        marksPending = null;
        marks = Array.isArray(body && body.landmarks) ? body.landmarks : [];
        drawCounter();
        return marks;
      },
      () => {
        marksPending = null;
        marksKey = null; // retried on the next render
        return marks || [];
      },
    );
    return marksPending;
  }

  async function step(direction) {
    const list = marks || (await loadMarks());
    if (!list.length) return;
    let target;
    if (direction > 0) target = list.find((m) => m.logIndex > at) || list[0];
    else target = [...list].reverse().find((m) => m.logIndex < at) || list[list.length - 1];
    if (!target.operationId) return;
    focusOperation(target.operationId, target);
  }

  function drawResults(page, append) {
    if (!append) results.replaceChildren();
    results.querySelector(".rs-more")?.remove();
    const hits = (page && page.hits) || [];
    if (!append && !hits.length) results.appendChild(el("p", "rs-empty", "No matches."));
    for (const hit of hits) {
      const button = el(
        "button",
        `rs-hit${hit.severity ? ` sev-${hit.severity}` : ""}`,
        el("span", "rs-hit-meta", hitMeta(hit), el("span", "rs-hit-where", ` ${hit.operationId ? hit.operationId.replace("op-", "#") : ""} · ${hit.field}`)),
        el("span", "rs-hit-snippet", ...marked(hit.snippet, page.query)),
      );
      button.type = "button";
      button.dataset.testid = "search-hit";
      button.dataset.op = hit.operationId || "";
      button.disabled = !hit.operationId;
      button.addEventListener("click", () => focusOperation(hit.operationId, hit));
      results.appendChild(button);
    }
    if (page && page.nextAfter != null) {
      const more = el("button", "rs-more", "More results");
      more.type = "button";
      more.dataset.testid = "search-more";
      more.addEventListener("click", () => run(page.nextAfter));
      results.appendChild(more);
    }
    results.hidden = false;
  }

  function run(after = -1) {
    const q = input.value.trim();
    query = q;
    if (!q) {
      results.hidden = true;
      results.replaceChildren();
      return;
    }
    const problem = queryProblem(q);
    if (problem) {
      results.replaceChildren(el("p", "rs-empty", problem));
      results.hidden = false;
      return;
    }
    const path = `${base}?q=${encodeURIComponent(q)}&limit=${LIMIT}${after >= 0 ? `&after=${after}` : ""}`;
    setClass(bar, "busy", true);
    ctx.api.get(path).then(
      (page) => {
        setClass(bar, "busy", false);
        if (q === query && !destroyed) drawResults(page, after >= 0);
      },
      (error) => {
        setClass(bar, "busy", false);
        if (q !== query || destroyed) return;
        results.replaceChildren(el("p", "rs-empty", `Search failed${error && error.code ? ` [${error.code}]` : ""}.`));
        results.hidden = false;
      },
    );
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    clearTimeout(timer);
    run();
  });
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => run(), DEBOUNCE_MS);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      input.value = "";
      run();
      input.blur();
    } else if (event.key === "ArrowDown") {
      const first = results.querySelector("button");
      if (first) {
        event.preventDefault();
        first.focus();
      }
    }
  });
  prev.addEventListener("click", () => step(-1));
  next.addEventListener("click", () => step(1));

  function onKey(event) {
    if (destroyed || event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!bar.isConnected || bar.getClientRects().length === 0) return; // another screen is showing
    if (typing(event.target) || document.querySelector("dialog[open]")) return;
    if (event.key === "/") {
      event.preventDefault();
      input.focus();
      input.select();
    } else if (event.key === "n" || event.key === "p") {
      event.preventDefault();
      step(event.key === "n" ? 1 : -1);
    }
  }
  document.addEventListener("keydown", onKey);

  let jumps = 0; // bumped by every jump: a slower, older jump never lands over a newer one

  /** The inspector target of a jump: the hint's instance, else the located event's, else the op's role. */
  async function turnOf(opId, hint) {
    if (hint && hint.instanceId) return hint;
    try {
      const located = await ctx.api.get(`${base}?operation=${encodeURIComponent(opId)}`);
      if (located && located.instanceId) return located;
      if (!hint) hint = located;
    } catch {
      // the role fallback below still opens something useful
    }
    const flow = view.getFlow();
    const op = flow && (flow.operations || []).find((o) => o.id === opId);
    const people = new Map(((flow && flow.participants) || []).map((p) => [p.id, p]));
    const who = op && [people.get(op.destination), people.get(op.source)].find((p) => p && p.kind === "role");
    if (!who) return null;
    return { instanceId: view.participantInstance(who.id), role: who.role, logIndex: hint ? hint.logIndex : undefined };
  }

  /** Show the jump's card, row and turn together, once its turn is known: a card that appeared before an
   * inspector still on its way would let the user act (Escape, a click) on a page about to change under
   * them. */
  async function land(opId, hint) {
    const jump = ++jumps;
    const found = await turnOf(opId, hint);
    if (destroyed || jump !== jumps) return;
    view.openCard(opId);
    if (view.getMode() === "sequence") view.scrollSequence(opId);
    if (found) view.openTurn({ instanceId: found.instanceId, role: found.role, focusIndex: found.logIndex });
  }

  function focusOperation(opId, hint = null) {
    if (typeof opId !== "string" || !/^op-[1-9][0-9]*$/.test(opId)) return false;
    if (hint && Number.isInteger(hint.logIndex)) at = hint.logIndex;
    drawCounter();
    if (/^#watch(\/|$)/.test(location.hash)) {
      history.replaceState(history.state, "", `#watch/${encodeURIComponent(ctx.runId)}/${opId}`);
    }
    pending = { opId, hint, renders: 0, asked: false };
    settle(view.getFlow());
    return true;
  }

  /** Land the pending jump once the model holds its operation; when the windowed answer left it out, ask
   * the shell for the whole model first (once) and wait a few renders for it. */
  function settle(flow) {
    if (!pending || !flow) return;
    const present = (flow.operations || []).some((o) => o.id === pending.opId);
    const windowed = Number(flow.operationsOmitted) > 0 && typeof ctx.showAllOperations === "function";
    if (!present && windowed && !pending.asked) {
      pending.asked = true;
      ctx.showAllOperations(); // the next answers carry the whole model; afterRender lands the jump
      return;
    }
    if (!present && windowed && pending.renders <= 5) return;
    const { opId, hint } = pending;
    pending = null;
    land(opId, hint);
  }

  return {
    focusOperation,
    /** After each render: land a jump that waited for the model; refresh the landmarks when the run grew
     * (`known`: the server's run view came with the model, so the run exists there — a view fed models
     * alone, like the scenario player, never asks). */
    afterRender(known) {
      const flow = view.getFlow();
      if (!flow) return;
      if (pending) {
        pending.renders += 1;
        settle(flow);
      }
      const key = `${flow.status}|${flow.operationsTotal ?? (flow.operations || []).length}`;
      const live = flow.status === "running" || flow.status === "unknown" || flow.status === "needs_clarification";
      if (known && key !== marksKey && (!live || performance.now() - marksAt > LIVE_REFRESH_MS)) {
        marksKey = key;
        loadMarks();
      }
    },
    destroy() {
      destroyed = true;
      clearTimeout(timer);
      document.removeEventListener("keydown", onKey);
      bar.remove();
      results.remove();
    },
  };
}
