// Steering a running run: the interrupt modal (inquiry or plan modification → POST
// /api/runs/:id/interrupt), the interrupt history from the run view (inquiries, plan modifications and
// loop checks with their verdicts), and for each new inquiry answer a card (shown once) plus an inbox
// notice; each new loop-check verdict is an inbox notice too.

import { errorMessage, seg } from "./api.js";
import { h, shortTime, statusBadge } from "./dom.js";
import { markdownBlock } from "./optional.js";

const KINDS = {
  inquiry: {
    label: "Inquiry",
    hint: "Ask about the run's progress. A handler answers from the run's record; the work itself is not changed.",
    placeholder: "How far along is it? What is it doing right now?",
  },
  plan_modification: {
    label: "Plan modification",
    hint: "Redirect the work. Roles below the plan's owner are stopped and the owner receives your message.",
    placeholder: "Skip the migration; focus on the API first.",
  },
};

/** The interrupt modal in `dialog`; `open(runId)` shows it for the active run; `onSent(runId, kind,
 * message)` hears each accepted interrupt. */
export function createInterruptModal(dialog, app, onSent = () => {}) {
  let runId = null;
  const title = h("h2", { id: "interrupt-title" }, "Interrupt");
  const radios = Object.entries(KINDS).map(([kind, info]) => {
    const input = h("input", { type: "radio", name: "interrupt-kind", value: kind, id: `interrupt-kind-${kind}`,
      testid: kind === "inquiry" ? "interrupt-kind-inquiry" : "interrupt-kind-plan" });
    input.addEventListener("change", describe);
    return [kind, input, h("label", { for: `interrupt-kind-${kind}`, class: "segment" }, input, info.label)];
  });
  const hint = h("p", { class: "hint", id: "interrupt-hint" });
  const message = h("textarea", { id: "interrupt-message", testid: "interrupt-message", rows: "4",
    "aria-describedby": "interrupt-hint", "aria-label": "Message" });
  const error = h("p", { class: "form-error", testid: "interrupt-error", role: "alert", hidden: true });
  message.addEventListener("input", () => showError(""));
  const send = h("button", { type: "submit", class: "btn primary", testid: "interrupt-send" }, "Send");
  const cancel = h("button", { type: "button", class: "btn", testid: "interrupt-cancel" }, "Cancel");
  cancel.addEventListener("click", () => dialog.close());
  const form = h("form", { method: "dialog", novalidate: true },
    h("header", { class: "modal-head" }, title),
    h("fieldset", { class: "segmented", testid: "interrupt-kind" }, h("legend", {}, "Kind"), radios.map((r) => r[2])),
    hint,
    message,
    error,
    h("footer", { class: "modal-foot" }, cancel, send));
  dialog.append(form);

  function kind() {
    const checked = radios.find((r) => r[1].checked);
    return checked ? checked[0] : "inquiry";
  }

  function describe() {
    const info = KINDS[kind()];
    hint.textContent = info.hint;
    message.placeholder = info.placeholder;
    for (const [, input, label] of radios) label.classList.toggle("checked", input.checked);
  }

  function showError(text) {
    error.hidden = !text;
    error.textContent = text || "";
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("");
    if (!message.value.trim()) {
      showError("Write a message first.");
      message.focus();
      return;
    }
    send.disabled = true;
    const chosen = kind();
    try {
      await app.api.post(`/api/runs/${seg(runId)}/interrupt`, { kind: chosen, message: message.value });
      onSent(runId, chosen, message.value);
      dialog.close();
      message.value = "";
      app.notify(chosen === "inquiry"
        ? "Inquiry sent: it is answered at the run's next safe point."
        : "Plan modification sent: it takes effect at the run's next safe point.", { testid: "interrupt-sent" });
      app.refresh();
    } catch (err) {
      showError(errorMessage(err));
    } finally {
      send.disabled = false;
    }
  });

  return {
    open(targetRunId, initialKind = "inquiry") {
      runId = targetRunId;
      title.textContent = `Interrupt ${targetRunId}`;
      for (const [k, input] of radios) input.checked = k === initialKind;
      describe();
      showError("");
      if (!dialog.open) dialog.showModal();
      message.focus();
    },
  };
}

function inquiryEntry(entry) {
  return h("li", { class: `interrupt-entry kind-inquiry state-${entry.state}`, testid: "interrupt-entry",
    "data-kind": "inquiry", "data-state": entry.state },
  h("div", { class: "interrupt-head" },
    h("strong", {}, "Inquiry"), " ", statusBadge(entry.state, "interrupt-state"),
    h("span", { class: "muted small" }, ` ${shortTime(entry.askedAt)}`)),
  h("p", { class: "interrupt-message", testid: "interrupt-message-text" }, entry.message || ""),
  entry.state === "answered" && entry.answer
    ? markdownBlock(entry.answer, "md interrupt-answer", "interrupt-answer")
    : entry.state === "ended"
      ? h("p", { class: "muted small" }, "Ended without an answer.")
      : h("p", { class: "muted small" }, "Waiting for the next safe point…"));
}

function planEntry(entry) {
  const aborted = Array.isArray(entry.aborted) ? entry.aborted : [];
  return h("li", { class: "interrupt-entry kind-plan", testid: "interrupt-entry", "data-kind": "plan_modification" },
    h("div", { class: "interrupt-head" },
      h("strong", {}, "Plan modification"), h("span", { class: "muted small" }, ` ${shortTime(entry.at)}`)),
    h("p", { class: "interrupt-message", testid: "interrupt-message-text" }, entry.message || ""),
    h("dl", { class: "facts small" },
      h("dt", {}, "Delivered to"),
      h("dd", { testid: "interrupt-target" },
        entry.targetRole ? `${entry.targetRole} ` : "", entry.target ? h("code", {}, entry.target) : "—"),
      h("dt", {}, "Aborted"),
      h("dd", { testid: "interrupt-aborted" },
        aborted.length ? aborted.map((id, i) => [i ? ", " : "", h("code", {}, String(id))]) : "nothing")));
}

const VERDICTS = {
  continue: ["Keep going", "good"],
  redirect: ["Redirected", "warn"],
  abort: ["Stopped", "bad"],
};

/** A loop check's verdict in words: [word, tone]. */
export function loopVerdict(entry) {
  if (!entry || entry.state !== "decided") return ["Checking", "live"];
  return VERDICTS[entry.verdict] || [String(entry.verdict || "Decided"), "plain"];
}

function loopEntry(entry) {
  const [word, tone] = loopVerdict(entry);
  return h("li", { class: "interrupt-entry kind-loop", testid: "interrupt-entry", "data-kind": "loop_check",
    "data-state": entry.state, "data-verdict": entry.verdict || "" },
  h("div", { class: "interrupt-head" },
    h("strong", {}, "Loop check"), " ", h("span", { class: `badge tone-${tone}`, testid: "interrupt-state" }, word),
    h("span", { class: "muted small" }, ` ${shortTime(entry.at)}`)),
  h("p", { class: "interrupt-message", testid: "interrupt-message-text" },
    entry.state === "decided" ? `Checked ${entry.target || "a role"} for a loop` : `Checking ${entry.target || "a role"} for a loop…`),
  entry.reason ? h("p", { class: "muted small", testid: "interrupt-reason" }, entry.reason) : null);
}

function queuedEntry(entry) {
  const label = entry.kind === "plan_modification" ? "Plan modification" : "Inquiry";
  return h("li", { class: "interrupt-entry queued", testid: "interrupt-entry", "data-kind": entry.kind,
    "data-state": "waiting", "data-delivered": "false" },
  h("div", { class: "interrupt-head" }, h("strong", {}, label), " ", statusBadge("waiting", "interrupt-state"),
    h("span", { class: "muted small" }, ` ${shortTime(entry.at)}`)),
  h("p", { class: "interrupt-message", testid: "interrupt-message-text" }, entry.message),
  h("p", { class: "muted small" }, "Queued: delivered at the run's next safe point."));
}

/** Sent interrupts the run's log does not show yet (matched by kind and message, with multiplicity). */
export function undelivered(logged, sent) {
  const counts = new Map();
  for (const e of logged) {
    const key = `${e.kind}\u0000${e.message}`;
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  return sent.filter((e) => {
    const key = `${e.kind}\u0000${e.message}`;
    const left = counts.get(key) || 0;
    if (left > 0) counts.set(key, left - 1);
    return left === 0;
  });
}

/**
 * The interrupt history list for a run view (operator text as text, answers as Markdown), followed by
 * the interrupts this page sent that are still waiting for delivery.
 */
export function interruptHistory(view, sent = []) {
  const entries = Array.isArray(view && view.interrupts) ? view.interrupts : [];
  const queued = view && view.status === "running" ? undelivered(entries, sent) : [];
  if (!entries.length && !queued.length) {
    return h("p", { class: "muted empty", testid: "interrupt-history-empty" }, "No interrupts yet.");
  }
  return h("ol", { class: "interrupt-list", testid: "interrupt-history" },
    entries.map((e) => (e.kind === "plan_modification" ? planEntry(e) : e.kind === "loop_check" ? loopEntry(e) : inquiryEntry(e))),
    queued.map(queuedEntry));
}

/**
 * Remembers which inquiry answers and loop-check verdicts the page has seen. The first view of a run is
 * the baseline (what is already there stays quiet); every answer arriving after it gets one card and an
 * inbox notice, every verdict an inbox notice.
 */
export function createAnswerCards(app) {
  const baselined = new Set();
  const seen = new Set();
  return {
    check(runId, view) {
      const entries = Array.isArray(view && view.interrupts) ? view.interrupts : [];
      const news = entries.filter((e) => (e.kind === "inquiry" && e.state === "answered" && e.answer)
        || (e.kind === "loop_check" && e.state === "decided"));
      const first = !baselined.has(runId);
      baselined.add(runId);
      for (const entry of news) {
        const key = `${runId}|${entry.index}`;
        if (seen.has(key)) continue;
        seen.add(key);
        if (first) continue;
        const notice = (item) => app.inbox && app.inbox.notice({ key, runId, ...item });
        if (entry.kind === "loop_check") {
          notice({ kind: "loop_check", at: entry.resolvedAt, title: `Loop check on ${entry.target || "a role"}: ${loopVerdict(entry)[0]}`,
            body: entry.reason || "" });
          continue;
        }
        app.notify(h("div", { class: "answer-card" },
          h("p", { class: "answer-question" }, h("strong", {}, "Your inquiry: "), entry.message || ""),
          markdownBlock(entry.answer, "md", "inquiry-answer-text")),
        { testid: "inquiry-answer-card", timeoutMs: 0 });
        notice({ kind: "inquiry", at: entry.resolvedAt, title: `Inquiry answered: ${entry.message || ""}`, body: entry.answer });
      }
    },
  };
}
