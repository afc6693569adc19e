// The result modal: opens by itself once per run that completes while the page is open (success, error,
// or stopped — not when this page stopped it; while the queue screen shows, only the newest such result,
// once the operator leaves it), with the summary as sanitized Markdown, the artifacts as text and a "copy
// raw" action (the only place an error kind is surfaced); a failed or stopped run offers Retry and
// Continue. It never takes the keyboard from a text field: while one has focus, a toast with "Show
// result" comes instead.

import { copyText, fill, firstLine, h, statusBadge, typingOutside } from "./dom.js";
import { statusWord } from "./status.js";
import { markdownBlock } from "./optional.js";
import { nextStepButtons, offersNextStep } from "./stop.js";

const COMPLETED = new Set(["success", "error", "cancelled"]);
const TITLES = { success: "Run finished", cancelled: "Run stopped" };
const SHOWN_KEY = "resultsShown";

export function createResults(dialog, app) {
  const known = new Map(); // runId → status when first seen (the baseline: runs already over stay quiet)
  const shown = new Set(JSON.parse(app.store.get(SHOWN_KEY, "[]") || "[]"));
  let baselined = false;
  let current = null;
  let deferred = null; // the newest result that finished while the queue screen was showing

  function remember(runId) {
    shown.add(runId);
    app.store.set(SHOWN_KEY, JSON.stringify([...shown].slice(-100)));
  }

  function show(run) {
    current = run.runId;
    const result = run.result || {};
    const artifacts = Array.isArray(result.artifacts) ? result.artifacts : [];
    const errorText = (result.error && result.error.message) || (run.error && run.error.message) || "";
    const raw = JSON.stringify({ runId: run.runId, status: run.status, result: run.result, error: run.error }, null, 2);
    const copied = h("span", { class: "muted small", role: "status", testid: "result-copy-status" });
    const copy = h("button", { type: "button", class: "btn", testid: "result-copy-raw" }, "Copy raw");
    copy.addEventListener("click", async () => {
      copied.textContent = (await copyText(raw)) ? "Copied." : "Copy failed: select the text by hand.";
    });
    const watch = h("button", { type: "button", class: "btn", testid: "result-watch" }, "Watch run");
    watch.addEventListener("click", () => {
      dialog.close();
      app.navigate("watch", run.runId);
    });
    const close = h("button", { type: "button", class: "btn primary", testid: "result-close" }, "Close");
    close.addEventListener("click", () => dialog.close());
    fill(dialog,
      h("header", { class: "modal-head" },
        h("h2", { id: "result-title" }, TITLES[run.status] || "Run failed"),
        h("p", {}, statusBadge(run.status, "result-status"), " ", h("code", { testid: "result-run-id" }, run.runId))),
      h("p", { class: "muted task-line" }, firstLine(run.task, 200)),
      result.summary
        ? markdownBlock(result.summary, "md result-summary", "result-summary")
        : h("p", { class: "muted", testid: "result-summary" }, "No summary."),
      errorText ? h("p", { class: "q-error", testid: "result-error" }, errorText) : null,
      artifacts.length
        ? h("section", { class: "artifacts" }, h("h3", {}, "Artifacts"),
          h("ul", { testid: "result-artifacts" }, artifacts.map((a) => h("li", {}, h("code", {}, String(a))))))
        : null,
      h("footer", { class: "modal-foot" }, copied, copy,
        offersNextStep(run.status) ? nextStepButtons(app, run, "result-next", () => dialog.close()) : null,
        watch, close),
    );
    if (!dialog.open) dialog.showModal();
    close.focus();
  }

  /** Someone is typing: a toast offers the result instead of a modal taking the keyboard. */
  function toast(run) {
    const open = h("button", { type: "button", class: "btn small", testid: "result-toast-open" }, "Show result");
    const card = app.notify(h("span", {}, `${run.runId}: ${statusWord(run.status)}. `, open),
      { testid: "result-toast", timeoutMs: 0 });
    open.addEventListener("click", () => {
      card.remove();
      show(app.state.runs.find((r) => r.runId === run.runId) || run);
    });
  }

  return {
    /** The runs of the first poll: those already over never pop up. */
    baseline(runs) {
      for (const run of runs) known.set(run.runId, run.status);
      baselined = true;
    },
    render() {
      if (!baselined) return;
      const fresh = [];
      for (const run of app.state.runs) {
        const before = known.get(run.runId);
        if (run.status === "running" || run.status === "unknown") {
          if (before === undefined || before === "unknown") known.set(run.runId, run.status);
          continue;
        }
        const watched = before === undefined || before === "running" || before === "unknown";
        known.set(run.runId, run.status);
        if (watched && COMPLETED.has(run.status) && !shown.has(run.runId)) fresh.push(run);
      }
      fresh.forEach((run) => remember(run.runId));
      if (fresh.length) deferred = fresh[0]; // runs are newest first
      // On the queue screen the Recent group already shows each outcome: the modal waits until the
      // operator leaves it, and then shows only the newest result.
      if (!deferred || app.state.screen === "queue") return;
      const run = app.state.runs.find((r) => r.runId === deferred.runId) || deferred;
      deferred = null;
      if (typingOutside(dialog)) toast(run);
      else show(run);
    },
    get currentRunId() {
      return current;
    },
    /** The page itself ended this run (Stop): its outcome needs no pop-up. */
    markShown(runId) {
      remember(runId);
    },
  };
}
