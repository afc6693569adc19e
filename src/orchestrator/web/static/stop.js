// Stopping the active run: the confirmation modal (POST /api/runs/:id/stop with `by: "ui"`). The server
// answers once the run has ended — its model call, commands and MCP servers are gone by then — and the
// run reads "Cancelled"; the next queued task starts by itself. And the next step after a run that failed
// or was stopped: Retry (the same task, a new run) and Continue (compose, continuing it — History's way).

import { errorMessage, seg } from "./api.js";
import { firstLine, h } from "./dom.js";

/** Statuses whose run offers Retry and Continue: failed, stopped by the operator, stopped by a restart. */
const NEXT_STEP = new Set(["error", "cancelled", "interrupted"]);

export function offersNextStep(status) {
  return NEXT_STEP.has(status);
}

/** Retry and Continue buttons for `run` ({runId, task, effort}); `before()` runs first (closing a modal). */
export function nextStepButtons(app, run, testid, before = () => {}) {
  const retry = h("button", { type: "button", class: "btn", testid: `${testid}-retry`,
    "aria-label": `Retry: run the task of ${run.runId} again` }, "Retry");
  retry.addEventListener("click", async () => {
    before();
    retry.disabled = true;
    try {
      await app.retry(run);
    } finally {
      retry.disabled = false;
    }
  });
  const cont = h("button", { type: "button", class: "btn", testid: `${testid}-continue`,
    "aria-label": `Continue from ${run.runId}` }, "Continue…");
  cont.addEventListener("click", () => {
    before();
    app.continueFrom(run.runId);
  });
  return h("span", { class: "next-steps", testid }, retry, cont);
}

/** The stop confirmation in `dialog`; `open(runId, task)` asks, "Stop the run" stops it. `onStopped(runId,
 * status)` hears each stop the server accepted. */
export function createStopModal(dialog, app, onStopped = () => {}) {
  let runId = null;
  const title = h("h2", { id: "stop-title" }, "Stop the run?");
  const task = h("p", { class: "muted task-line", testid: "stop-task" });
  const error = h("p", { class: "form-error", testid: "stop-error", role: "alert", hidden: true });
  const confirm = h("button", { type: "submit", class: "btn danger", testid: "stop-confirm" }, "Stop the run");
  const keep = h("button", { type: "button", class: "btn", testid: "stop-cancel" }, "Keep running");
  keep.addEventListener("click", () => dialog.close());
  const form = h("form", { method: "dialog", novalidate: true },
    h("header", { class: "modal-head" }, title),
    task,
    h("p", {}, "Everything it is doing ends now: the model call in flight, running commands and MCP servers. ",
      "The run ends as Cancelled and the next queued task starts. You can continue it later, or retry it."),
    error,
    h("footer", { class: "modal-foot" }, keep, confirm));
  dialog.append(form);

  function showError(text) {
    error.hidden = !text;
    error.textContent = text || "";
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("");
    confirm.disabled = true;
    const target = runId;
    app.results?.markShown(target); // the operator knows: no result modal pops up for this stop
    try {
      const answer = await app.api.post(`/api/runs/${seg(target)}/stop`, { by: "ui" });
      dialog.close();
      onStopped(target, answer.status);
      app.notify(answer.status === "cancelled" ? `Stopped ${target}.` : `Stopping ${target}…`, { testid: "stop-sent" });
      app.refresh();
    } catch (err) {
      showError(errorMessage(err));
    } finally {
      confirm.disabled = false;
    }
  });

  return {
    open(targetRunId, taskText = "") {
      runId = targetRunId;
      title.textContent = `Stop ${targetRunId}?`;
      task.textContent = firstLine(taskText, 200);
      showError("");
      if (!dialog.open) dialog.showModal();
      keep.focus(); // the safe choice has the focus: Enter does not stop a run by accident
    },
  };
}
