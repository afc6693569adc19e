// The watch screen: the run's header (status, task, effort, times), the flow / sequence toggle, the run
// view of runview.js (budgets, flow and sequence; a plain role tree, budgets and recent log when that
// module is missing), the result, the interrupt and stop buttons, the interrupt history, and the plan
// disclosure. A Foundry search's run (its view carries `foundry`) is read-only: no interrupt, stop, retry
// or continue; its header names the search, candidate, benchmark and repeat.

import { seg } from "./api.js";
import { duration, fill, firstLine, h, isTerminal, shortTime, statusBadge } from "./dom.js";
import { markdownBlock, optional } from "./optional.js";
import { runStatus, statusWord } from "./status.js";
import { createAnswerCards, createInterruptModal, interruptHistory } from "./steer.js";
import { createStopModal, nextStepButtons, offersNextStep } from "./stop.js";

function tokens(view) {
  const b = (view && view.budgets) || {};
  const t = b.tokenBreakdown;
  if (t) {
    const cached = t.cachedPromptTokens ? `, ${t.cachedPromptTokens} cached` : "";
    return `${b.tokensUsed ?? "?"} tokens (${t.promptTokens ?? 0} prompt${cached}, ${t.completionTokens ?? 0} completion)`;
  }
  return b.tokensUsed != null ? `${b.tokensUsed} tokens` : "no token usage yet";
}

function fallbackView(view) {
  const tree = view && view.roleTree;
  const node = (n) => h("li", { class: n.active ? "active" : "" },
    h("span", { class: "role-name" }, n.role), " ", statusBadge(n.active ? "running" : n.status),
    n.summary ? h("span", { class: "muted" }, ` ${firstLine(n.summary, 100)}`) : null,
    n.children && n.children.length ? h("ul", {}, n.children.map(node)) : null);
  const log = (view && view.recentLog) || [];
  const b = (view && view.budgets) || {};
  return h("div", { class: "fallback-view", testid: "runview-fallback" },
    h("p", { class: "watch-budgets" },
      `${duration(b.elapsedSeconds)} elapsed · ${b.toolCalls ?? 0} tool calls · ${tokens(view)}`),
    h("h3", {}, "Roles"),
    tree ? h("ul", { class: "role-tree" }, node(tree)) : h("p", { class: "muted" }, "No role has started yet."),
    h("h3", {}, "Recent events"),
    h("ol", { class: "event-log" }, log.slice(-30).map((row) =>
      h("li", {}, h("span", { class: "muted" }, shortTime(row.timestamp)), " ", row.text || row.type))));
}

export function createWatch(root, app) {
  const state = app.state;
  const sent = new Map(); // runId → interrupts this page sent ({kind, message, at})
  const modal = createInterruptModal(document.getElementById("interrupt-dialog"), app, (runId, kind, message) => {
    if (!sent.has(runId)) sent.set(runId, []);
    sent.get(runId).push({ kind, message, at: new Date().toISOString() });
    headKey = "";
    render();
  });
  // A stopped run stays on screen (pinned) so its Cancelled status and next steps show; "Follow the active
  // run" goes on to the task the queue starts next.
  const stopModal = createStopModal(document.getElementById("stop-dialog"), app, (runId) => {
    headKey = "";
    if (state.selectedRunId !== runId) app.navigate("watch", runId);
  });
  const cards = createAnswerCards(app);
  let mode = app.store.get("mode", "flow") === "sequence" ? "sequence" : "flow";
  let config = null;
  let view = null; // runview.js instance
  let viewRunId = null;
  let rendered = [null, null];
  let headKey = "";
  let pendingAction = null; // {runId, action} from the route, run once the view has drawn that run
  let noteKey = "";

  const title = h("h2", { class: "watch-title", testid: "watch-run-id" });
  const status = h("span", { class: "watch-status" });
  const task = h("p", { class: "watch-task", testid: "watch-task" });
  const facts = h("p", { class: "watch-facts muted", testid: "watch-facts" });
  const flowBtn = h("button", { type: "button", class: "segment", testid: "view-mode-flow" }, "Flow");
  const seqBtn = h("button", { type: "button", class: "segment", testid: "view-mode-sequence" }, "Sequence");
  const interrupt = h("button", { type: "button", class: "btn", testid: "watch-interrupt" }, "Interrupt…");
  const stop = h("button", { type: "button", class: "btn danger", testid: "watch-stop" }, "Stop…");
  const next = h("span", { class: "watch-next", hidden: true }); // Retry / Continue after a failed or stopped run
  const pending = h("span", { class: "badge tone-warn", testid: "interrupt-pending", hidden: true },
    "interrupt pending");
  const follow = h("button", { type: "button", class: "btn small", testid: "watch-follow", hidden: true },
    "Follow the active run");
  const result = h("section", { class: "watch-result", testid: "watch-result", hidden: true });
  const viewRoot = h("div", { class: "runview-root", testid: "runview-root" });
  const interrupts = h("div", { class: "interrupts-body" });
  const threads = h("p", { class: "watch-threads", testid: "watch-threads", hidden: true });
  const plan = h("details", { class: "plan", testid: "watch-plan", hidden: true });
  const empty = h("div", { class: "empty-state", testid: "watch-empty", hidden: true },
    h("p", {}, "No run to watch yet."),
    h("button", { type: "button", class: "btn primary", onclick: () => app.navigate("compose") }, "Add a task"));
  const body = h("div", { class: "watch-body" },
    h("div", { class: "watch-head" },
      h("div", { class: "watch-line" }, title, status, pending, follow),
      task, facts, threads,
      h("div", { class: "watch-controls" },
        h("div", { class: "segmented", role: "group", "aria-label": "View" }, flowBtn, seqBtn),
        interrupt, stop, next)),
    result,
    h("div", { class: "watch-main", testid: "watch-main" },
      viewRoot,
      h("aside", { class: "watch-side" },
        h("section", { class: "panel", testid: "interrupts-panel", "aria-label": "Interrupts" },
          h("h3", {}, "Interrupts"), interrupts),
        plan)));
  root.append(empty, body);

  flowBtn.addEventListener("click", () => setMode("flow"));
  seqBtn.addEventListener("click", () => setMode("sequence"));
  follow.addEventListener("click", () => app.navigate("watch"));
  interrupt.addEventListener("click", () => {
    const runId = app.watchedRunId();
    if (runId) modal.open(runId);
  });
  stop.addEventListener("click", () => {
    const runId = app.watchedRunId();
    if (runId) stopModal.open(runId, state.runView && state.runView.runId === runId ? state.runView.task : "");
  });

  function setMode(next) {
    mode = next;
    app.store.set("mode", mode);
    flowBtn.setAttribute("aria-pressed", String(mode === "flow"));
    seqBtn.setAttribute("aria-pressed", String(mode === "sequence"));
    root.dataset.mode = mode;
    if (view && typeof view.setMode === "function") view.setMode(mode);
  }

  function destroyView() {
    if (view && typeof view.destroy === "function") {
      try {
        view.destroy();
      } catch {
        // a broken view must not break the shell
      }
    }
    view = null;
    viewRunId = null;
    rendered = [null, null];
    viewRoot.replaceChildren();
  }

  function ensureView(runId) {
    if (viewRunId === runId && (view || viewRoot.firstChild)) return;
    destroyView();
    viewRunId = runId;
    const module = optional().runview;
    if (!module || typeof module.createRunView !== "function") return;
    try {
      view = module.createRunView(viewRoot, {
        runId,
        config: config || state.config,
        api: { get: (path) => app.api.get(path) },
        stream: app.stream,
        getTier: () => state.tier,
        statusNote: () => statusNote(runId),
        showAllOperations: () => {
          state.wholeFlow.add(runId);
          app.refresh();
        },
      });
      if (view && typeof view.setMode === "function") view.setMode(mode);
    } catch (err) {
      view = null;
      viewRoot.replaceChildren(h("p", { class: "form-error" }, `The run view failed to start: ${err.message || err}`));
    }
  }

  /** The run list's entry for `runId` (it carries `continuedBy`). */
  function listed(runId) {
    return state.runs.find((r) => r.runId === runId) || null;
  }

  /** For the run view: a run that stopped on a question answered since reads "Answered", not waiting. */
  function statusNote(runId) {
    const run = listed(runId);
    const runView = state.runView && state.runView.runId === runId ? state.runView : null;
    if (runView && shownStatus(run, runView) === "waiting_for_you") return { status: "waiting_for_you", caption: null };
    if (!run || runStatus(run, state.queue) !== "answered") return null;
    const next = (run.continuedBy || []).at(-1);
    return { status: "answered", caption: next ? `Answered — continued in ${next}` : "Answered — continues when the queue reaches it" };
  }

  /** The one status word of the watched run, for its header and its run view's badge alike. */
  function shownStatus(run, runView) {
    return runStatus({ ...(run || runView), currentActivity: runView.currentActivity }, state.queue, state.questions);
  }

  /** The route asked to replay the run or focus an operation: done once the view has drawn that run. */
  function runAction() {
    if (!pendingAction || !view || pendingAction.runId !== viewRunId) return;
    const { action } = pendingAction;
    pendingAction = null;
    try {
      if (action === "replay") view.startReplay?.();
      else view.focusOperation?.(action);
    } catch (err) {
      console.warn("run view action failed", err);
    }
  }

  function renderView(runView, flow) {
    const note = JSON.stringify(statusNote(viewRunId));
    if (rendered[0] === flow && rendered[1] === runView && note === noteKey) return;
    rendered = [flow, runView];
    noteKey = note;
    if (view && typeof view.render === "function") {
      try {
        if (flow) {
          view.render(flow, runView);
          runAction();
        }
      } catch (err) {
        console.warn("run view render failed", err);
      }
      return;
    }
    if (!view) viewRoot.replaceChildren(fallbackView(runView));
  }

  /** The result card once the run has ended; a run that ended without one (stopped, interrupted by a
   * restart) shows its status and why. */
  function renderResult(runView, shown) {
    const card = runView.result;
    const why = runView.error && runView.error.message;
    result.hidden = (!card && !why) || runView.status === "running";
    if (result.hidden) return;
    const status = (card && card.status) || runView.status;
    fill(result,
      h("h3", {}, "Result ", statusBadge(status === "needs_clarification" ? shown : status, "watch-result-status")),
      card && card.summary ? markdownBlock(card.summary, "md", "watch-result-summary") : null,
      why ? h("p", { class: "q-error", testid: "watch-result-error" }, why) : null);
  }

  function renderPlan(text) {
    plan.hidden = !text;
    if (!text) return;
    const wasOpen = plan.open;
    plan.replaceChildren(h("summary", {}, "Plan"), markdownBlock(text, "md plan-body", "watch-plan-body"));
    plan.open = wasOpen;
  }

  function render() {
    if (state.screen !== "watch") return;
    const runId = app.watchedRunId();
    empty.hidden = Boolean(runId);
    body.hidden = !runId;
    follow.hidden = !(state.selectedRunId && app.activeRunId() && app.activeRunId() !== state.selectedRunId);
    if (!runId) {
      destroyView();
      return;
    }
    ensureView(runId);
    const runView = state.runView && state.runView.runId === runId ? state.runView : null;
    if (!runView) {
      title.textContent = runId;
      if (state.viewError && state.viewError.code === "not_found") task.textContent = "This run does not exist.";
      return;
    }
    const readOnly = Boolean(runView.foundry); // a Foundry search's run: watched, never steered
    const live = runView.status === "running" && !readOnly;
    interrupt.hidden = !live;
    stop.hidden = !live;
    pending.hidden = !runView.interruptPending;
    const run = listed(runId);
    const shown = shownStatus(run, runView);
    const parked = state.queue.find((i) => i.status === "needs_input" && i.runId === runId) || null;
    const key = JSON.stringify([runId, runView.status, runView.task, runView.effort, runView.startTime,
      runView.endTime, runView.interrupts, runView.plan, runView.result, runView.continuesFrom, shown,
      run && run.continuedBy, parked && parked.id]);
    if (key !== headKey) {
      headKey = key;
      title.textContent = runId;
      status.replaceChildren(statusBadge(shown, "watch-status"));
      renderThreads(runView, run, parked);
      task.textContent = firstLine(runView.task, 300);
      task.title = runView.task || "";
      fill(facts,
        runView.effort ? h("span", { class: "badge tone-plain" }, `effort ${runView.effort}`) : null,
        ` started ${shortTime(runView.startTime)}`,
        runView.endTime ? ` · ended ${shortTime(runView.endTime)}` : "");
      interrupts.replaceChildren(interruptHistory(runView, sent.get(runId) || []));
      const listedAny = Array.isArray(runView.interrupts) && runView.interrupts.length > 0;
      sideEmpty(!listedAny && !(sent.get(runId) || []).length && !runView.plan);
      renderResult(runView, shown);
      renderPlan(runView.plan);
      next.hidden = readOnly || !offersNextStep(runView.status);
      if (next.hidden) next.replaceChildren();
      else next.replaceChildren(nextStepButtons(app, run || runView, "watch-next"));
    }
    cards.check(runId, runView);
    renderView(runView, state.flow);
    if (isTerminal(runView.status)) interrupt.hidden = stop.hidden = true;
  }

  /** The run's thread: the run it continues, the runs continuing it, and the answer a parked one needs. */
  function renderThreads(runView, run, parked) {
    const link = (id, testid) => h("a", { href: `#watch/${seg(id)}`, testid, class: "thread-link" }, id);
    const later = (run && run.continuedBy) || [];
    const parts = [];
    const origin = runView.foundry;
    if (origin) {
      parts.push(h("span", { testid: "watch-foundry" }, "Foundry run (read-only): candidate ",
        h("span", { class: "mono", title: origin.candidate }, origin.candidate.slice(0, 12)),
        ` · ${origin.benchmark} · repeat ${origin.repeat} of the search `,
        h("a", { href: "#foundry", class: "thread-link", testid: "watch-foundry-link" }, origin.search)));
    }
    if (runView.continuesFrom) parts.push(h("span", {}, "Continues ", link(runView.continuesFrom, "watch-continues-from")));
    if (later.length) {
      parts.push(h("span", { testid: "watch-continued-by" }, "Continued in ",
        later.map((id, i) => [i ? ", " : "", link(id, "watch-continued-link")])));
    } else if (runStatus(run || runView, state.queue) === "answered") {
      parts.push(h("span", { testid: "watch-continued-by" }, "Answered — continues when the queue reaches it"));
    }
    if (parked) {
      const answer = h("button", { type: "button", class: "btn small primary", testid: "watch-answer" }, "Answer the question");
      answer.addEventListener("click", () => app.inbox && app.inbox.open(`parked:${parked.id}`));
      parts.push(h("span", {}, `${statusWord("needs_clarification")}: `, answer));
    }
    threads.hidden = parts.length === 0;
    fill(threads, parts.map((part, i) => [i ? " · " : "", part]));
  }

  /** An empty interrupts sidebar does not take a column: it goes under the run view, one line high. */
  function sideEmpty(empty) {
    body.querySelector(".watch-main").classList.toggle("side-empty", empty);
  }

  setMode(mode);
  return {
    render,
    /** Route `#watch/<runId>/replay` or `/op-N`: start the replay / focus the operation once drawn. */
    routeAction(runId, action) {
      pendingAction = { runId, action };
      rendered = [null, null];
      render();
    },
    setTier(tier) {
      if (view && typeof view.setTier === "function") view.setTier(tier);
    },
    configure(next) {
      config = next;
    },
  };
}
