// The compose screen ("Add task"): never disabled by a running run. Idle → POST /api/runs (the run starts
// at once, with the pinned logging level and an optional continuation); busy → POST /api/queue. The same
// submission (`submitTask`) serves Retry on the watch screen and in the result modal.

import { errorMessage } from "./api.js";
import { firstLine, h, isTerminal } from "./dom.js";
import { runStatus, statusWord } from "./status.js";
import { createSettingsPanel, effortOptions, LOG_LEVELS } from "./settings.js";

const CONTINUE_BUSY = "A run is in progress: continuing a run needs the slot free. Try again when it has finished.";

/**
 * Submit a task: start it now when nothing runs (POST /api/runs, with `logLevel` / `continuesFrom` when
 * given), else queue it (POST /api/queue; a continuation cannot queue, it needs the slot). Resolves to
 * `{runId}` (started) or `{item}` (queued); an API refusal rejects with its ApiError.
 */
export async function submitTask(app, body, { logLevel = null, continuesFrom = "" } = {}) {
  if (!app.busy()) {
    try {
      const started = await app.api.post("/api/runs", {
        ...body,
        ...(logLevel ? { logLevel } : {}),
        ...(continuesFrom ? { continuesFrom } : {}),
      });
      return { runId: started.runId };
    } catch (err) {
      if (err.code !== "run_in_progress" || continuesFrom) throw err;
      // another submission won the slot meanwhile: this one queues instead
    }
  } else if (continuesFrom) {
    throw new Error(CONTINUE_BUSY);
  }
  app.queueMutated();
  return { item: await app.api.post("/api/queue", body) };
}

export function createCompose(root, app) {
  const task = h("textarea", {
    id: "compose-task", testid: "compose-task", rows: "6", placeholder: "What should the Guild do?",
    "aria-describedby": "compose-mode",
  });
  const effort = h("select", { id: "compose-effort", testid: "compose-effort" }, effortOptions("standard"));
  const level = h("select", { id: "compose-loglevel", testid: "compose-loglevel" },
    LOG_LEVELS.map((l) => h("option", { value: l }, l)));
  const picker = h("select", { id: "compose-continue", testid: "compose-continue" });
  const chip = h("div", { class: "chip-row", testid: "compose-continuation", hidden: true });
  const mode = h("p", { class: "hint", id: "compose-mode", testid: "compose-mode" });
  const submit = h("button", { type: "submit", class: "btn primary", testid: "compose-submit" }, "Add task");
  const status = h("p", { class: "form-status", testid: "compose-status", role: "status" });
  const error = h("p", { class: "form-error", testid: "compose-error", role: "alert", hidden: true });
  const settings = h("details", { class: "panel settings-panel", testid: "settings-panel" },
    h("summary", {}, "Project settings"));

  const form = h("form", { class: "panel compose-form", testid: "compose-form", novalidate: true },
    h("label", { for: "compose-task", class: "field-label" }, "Task"),
    task,
    chip,
    h("div", { class: "field-row" },
      h("label", { for: "compose-effort" }, "Effort"), effort,
      h("label", { for: "compose-loglevel" }, "Log level"), level,
      h("label", { for: "compose-continue" }, "Continue from"), picker),
    mode,
    h("div", { class: "actions" }, submit, status),
    error,
  );
  root.append(h("h2", { class: "screen-title" }, "Add task"), form, settings);
  createSettingsPanel(settings, app);

  const touched = { effort: false, level: false };
  effort.addEventListener("change", () => (touched.effort = true));
  level.addEventListener("change", () => (touched.level = true));
  let continuation = "";
  let pickerKey = "";

  picker.addEventListener("change", () => setContinuation(picker.value));
  task.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });

  function terminalRuns() {
    return app.state.runs.filter((r) => isTerminal(r.status));
  }

  function renderPicker() {
    const runs = terminalRuns();
    const key = JSON.stringify([continuation, runs.map((r) => [r.runId, r.summary, r.status])]);
    if (key === pickerKey) return;
    pickerKey = key;
    const options = runs.map((r) =>
      h("option", { value: r.runId }, `${r.runId} · ${statusWord(runStatus(r, app.state.queue))} · ${firstLine(r.summary || r.task, 60)}`));
    if (continuation && !runs.some((r) => r.runId === continuation)) {
      options.unshift(h("option", { value: continuation }, continuation));
    }
    picker.replaceChildren(h("option", { value: "" }, "nothing — a new task"), ...options);
    picker.value = continuation;
  }

  function renderChip() {
    chip.hidden = !continuation;
    if (!continuation) {
      chip.replaceChildren();
      return;
    }
    const run = app.state.runs.find((r) => r.runId === continuation);
    const clear = h("button", {
      type: "button", class: "icon-btn small", testid: "compose-continue-clear",
      "aria-label": `Stop continuing ${continuation}`,
    }, "×");
    clear.addEventListener("click", () => setContinuation(""));
    chip.replaceChildren(h("span", { class: "chip" },
      h("span", { class: "chip-label" }, "Continues "),
      h("code", {}, continuation),
      run ? h("span", { class: "muted" }, ` — ${firstLine(run.summary || run.task, 80)}`) : null,
      clear));
  }

  function setContinuation(runId) {
    continuation = runId || "";
    renderPicker();
    renderChip();
    renderMode();
  }

  function renderMode() {
    const busy = app.busy();
    mode.dataset.mode = busy ? "queue" : "start";
    mode.textContent = busy
      ? continuation
        ? "A run is in progress: a continuation can only start once it has finished."
        : "A run is in progress: this task joins the queue and starts when the slot frees."
      : "Nothing is running: this task starts right away.";
  }

  function showError(message) {
    error.hidden = !message;
    error.textContent = message || "";
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("");
    status.textContent = "";
    const text = task.value;
    if (!text.trim()) {
      showError("Write a task first.");
      task.focus();
      return;
    }
    submit.disabled = true;
    try {
      await send(text);
    } catch (err) {
      showError(errorMessage(err));
    } finally {
      submit.disabled = false;
    }
  });

  async function send(text) {
    const outcome = await submitTask(app, { task: text, effort: effort.value },
      { logLevel: level.value, continuesFrom: continuation });
    if (outcome.runId) {
      done(`Started ${outcome.runId}.`);
      app.navigate("watch");
      return;
    }
    const waiting = app.state.queue.filter((i) => i.status === "waiting").length + 1;
    done(`Queued "${firstLine(outcome.item.task, 60)}" (waiting: ${waiting}).`);
  }

  function done(message) {
    task.value = "";
    status.textContent = message;
    setContinuation("");
    app.refresh();
  }

  return {
    render() {
      renderPicker();
      renderChip();
      renderMode();
    },
    /** Put the resolved defaults into the selectors the user has not changed. */
    applyDefaults() {
      const { effort: e, logLevel } = app.state.defaults;
      if (!touched.effort) effort.value = e;
      if (!touched.level) level.value = logLevel;
    },
    setContinuation(runId) {
      setContinuation(runId);
      task.focus();
    },
  };
}
