// The inbox: one place for everything that waits for the operator or tells them something. Questions —
// live `ask_human` ones (GET /api/questions, answered with POST /api/answer) and questions parked before
// anything was written (queue items in `needs_input`, answered with POST /api/queue/:id/answer) — share
// one answer card; inquiry answers and loop-check verdicts arrive as notices (from steer.js). The top-bar
// button counts questions plus unread notices. A new question opens the modal by itself (with a short
// beep unless muted), but never while the keyboard is in a text field elsewhere: then a toast says so and
// the modal opens once focus leaves the field.

import { errorMessage, seg } from "./api.js";
import { firstLine, h, keepFocus, shortTime, typingOutside, whenNotTyping } from "./dom.js";
import { markdownBlock } from "./optional.js";

const NOTICE_LIMIT = 50;

/** Every question waiting for an answer, oldest first: live ones (of the active run) and parked ones. */
export function inboxQuestions(questions, queue, activeRunId = null) {
  const live = (Array.isArray(questions) ? questions : []).map((q) => ({
    kind: "question", key: `question:${q.id}`, id: q.id, question: q.question || "", context: q.context || null,
    askedAt: q.askedAt || null, runId: activeRunId, task: null,
  }));
  const parked = (Array.isArray(queue) ? queue : []).filter((i) => i.status === "needs_input").map((i) => ({
    kind: "parked", key: `parked:${i.id}`, id: i.id, question: i.question || i.task, context: null,
    askedAt: i.settledAt || i.queuedAt || null, runId: i.runId || null, task: i.task,
  }));
  return [...live, ...parked].sort((a, b) => String(a.askedAt || "").localeCompare(String(b.askedAt || "")));
}

export function createInbox(dialog, openButton, app) {
  const seen = new Set();
  const drafts = new Map();
  const errors = new Map();
  const notices = []; // newest first: {key, kind, runId, title, body, at, read}
  let audio = null;
  let key = "";
  let auto = false; // opened by a new question (closes itself once none is left)
  let deferred = null; // cancels the wait for the keyboard to leave a text field
  let deferToast = null;

  const count = h("span", { class: "nav-badge", testid: "inbox-count", hidden: true });
  openButton.append(count);
  const questionList = h("div", { class: "question-list", testid: "inbox-questions" });
  const noticeList = h("ol", { class: "notice-list", testid: "inbox-notices" });
  const empty = h("p", { class: "muted empty", testid: "inbox-empty" }, "Nothing waits for you.");
  const close = h("button", { type: "button", class: "btn", testid: "inbox-close" }, "Later");
  close.addEventListener("click", () => dialog.close());
  dialog.append(
    h("header", { class: "modal-head" }, h("h2", { id: "inbox-title" }, "Inbox"),
      h("p", { class: "muted" }, "Questions hold their run until you answer; the rest is news from your runs.")),
    empty,
    questionList,
    h("section", { class: "inbox-news", "aria-label": "News" }, noticeList),
    h("footer", { class: "modal-foot" }, close),
  );
  dialog.addEventListener("close", () => {
    auto = false;
  });
  openButton.addEventListener("click", () => open());

  function questions() {
    return inboxQuestions(app.state.questions, app.state.queue, app.activeRunId());
  }

  /** Show the modal; `focusKey` picks the question whose answer field takes the keyboard. */
  function open(focusKey = null, { automatic = false } = {}) {
    if (deferred) deferred();
    deferred = null;
    if (deferToast) deferToast.remove();
    deferToast = null;
    auto = automatic && !dialog.open ? true : auto && dialog.open;
    notices.forEach((n) => {
      n.read = true;
    });
    key = "";
    render();
    if (!dialog.open) dialog.showModal();
    const card = focusKey ? questionList.querySelector(`[data-key="${CSS.escape(`${focusKey}:answer`)}"]`) : null;
    const target = card || questionList.querySelector("textarea") || close;
    target.focus();
  }

  /** A new question: open now, or — while the keyboard is in a text field — say so and open afterwards. */
  function openSoon() {
    if (dialog.open || deferred) return;
    if (!typingOutside(dialog)) {
      open(null, { automatic: true });
      return;
    }
    deferred = whenNotTyping(() => {
      deferred = null;
      open(null, { automatic: true });
    }, dialog);
    if (!deferToast) {
      const go = h("button", { type: "button", class: "btn small", testid: "inbox-toast-open" }, "Open the inbox");
      go.addEventListener("click", () => open());
      deferToast = app.notify(h("span", {}, "A question is waiting for your answer. ", go),
        { testid: "inbox-toast", timeoutMs: 0 });
    }
  }

  function beep() {
    if (app.state.muted || !audio) return;
    try {
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      osc.frequency.value = 880;
      gain.gain.setValueAtTime(0.0001, audio.currentTime);
      gain.gain.exponentialRampToValueAtTime(0.08, audio.currentTime + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, audio.currentTime + 0.25);
      osc.connect(gain).connect(audio.destination);
      osc.start();
      osc.stop(audio.currentTime + 0.3);
    } catch {
      // no sound available: the modal is the signal
    }
  }

  async function answer(entry, text, button) {
    button.disabled = true;
    errors.delete(entry.key);
    try {
      if (entry.kind === "parked") {
        await app.api.post(`/api/queue/${seg(entry.id)}/answer`, { answer: text });
        app.state.queue = app.state.queue.map((i) => (i.id === entry.id ? { ...i, status: "waiting", answer: text } : i));
      } else {
        await app.api.post("/api/answer", { id: entry.id, answer: text });
        app.state.questions = app.state.questions.filter((q) => q.id !== entry.id);
      }
      drafts.delete(entry.key);
      app.notify(`Answer sent: ${firstLine(text, 60) || "(empty)"}${entry.kind === "parked"
        ? " — the run continues from it." : ""}`, { testid: "answer-sent" });
    } catch (err) {
      errors.set(entry.key, errorMessage(err));
    } finally {
      key = "";
      render();
      if (!errors.has(entry.key) && questions().length === 0 && dialog.open) dialog.close();
      app.refresh();
    }
  }

  function watchButton(runId, label = "Watch run") {
    if (!runId) return null;
    const button = h("button", { type: "button", class: "btn small", testid: "inbox-watch", "aria-label": `${label} ${runId}` },
      label);
    button.addEventListener("click", () => {
      dialog.close();
      app.navigate("watch", runId);
    });
    return button;
  }

  function questionCard(entry) {
    const text = h("textarea", { testid: "question-answer", "data-key": `${entry.key}:answer`, rows: "3",
      "aria-label": `Answer to: ${firstLine(entry.question, 80)}` });
    text.value = drafts.get(entry.key) || "";
    text.addEventListener("input", () => drafts.set(entry.key, text.value));
    const send = h("button", { type: "button", class: "btn primary", testid: "question-send", "data-key": `${entry.key}:send` },
      "Send answer");
    send.addEventListener("click", () => answer(entry, text.value, send));
    text.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) answer(entry, text.value, send);
    });
    const error = errors.get(entry.key);
    const parked = entry.kind === "parked";
    return h("article", { class: `question-card kind-${entry.kind}`, testid: "question-card", "data-kind": entry.kind,
      "data-question-id": entry.id },
    parked
      ? h("p", { class: "muted small question-origin", testid: "question-origin" },
        "Asked before anything was written — the task waits in the queue: ",
        h("span", { class: "task-line" }, firstLine(entry.task, 120)))
      : null,
    markdownBlock(entry.question, "md question-text", "question-text"),
    entry.context
      ? h("details", { class: "question-context" }, h("summary", {}, "Context"), markdownBlock(entry.context, "md"))
      : null,
    h("p", { class: "muted small" }, `asked ${shortTime(entry.askedAt)}`, entry.runId ? ` · ${entry.runId}` : ""),
    text,
    error ? h("p", { class: "form-error", role: "alert" }, error) : null,
    h("div", { class: "actions" }, send, watchButton(entry.runId)));
  }

  function noticeItem(notice) {
    const dismiss = h("button", { type: "button", class: "icon-btn small", testid: "inbox-dismiss",
      "data-key": `${notice.key}:dismiss`, "aria-label": `Dismiss: ${notice.title}` }, "×");
    dismiss.addEventListener("click", () => {
      const at = notices.indexOf(notice);
      if (at >= 0) notices.splice(at, 1);
      key = "";
      render();
    });
    return h("li", { class: `notice kind-${notice.kind}`, testid: "inbox-notice", "data-kind": notice.kind },
      h("div", { class: "notice-head" },
        h("strong", {}, notice.title), h("span", { class: "muted small" }, ` ${shortTime(notice.at)}`), dismiss),
      notice.body ? markdownBlock(notice.body, "md", "inbox-notice-body") : null,
      h("div", { class: "actions" }, watchButton(notice.runId)));
  }

  function render() {
    const entries = questions();
    const unread = notices.filter((n) => !n.read).length;
    const total = entries.length + unread;
    count.hidden = total === 0;
    count.textContent = String(total);
    openButton.classList.toggle("attention", entries.length > 0);
    openButton.setAttribute("aria-label", `Inbox: ${entries.length} question${entries.length === 1 ? "" : "s"} waiting${
      unread ? `, ${unread} new` : ""}`);
    const fresh = entries.filter((q) => !seen.has(q.key));
    fresh.forEach((q) => seen.add(q.key));
    const next = JSON.stringify([entries, [...errors], notices.map((n) => [n.key, n.read])]);
    if (next !== key) {
      key = next;
      empty.hidden = entries.length + notices.length > 0;
      keepFocus(dialog, () => {
        questionList.replaceChildren(...entries.map(questionCard));
        noticeList.replaceChildren(...notices.map(noticeItem));
      });
    }
    if (entries.length === 0 && auto && dialog.open) dialog.close();
    if (entries.length === 0 && deferred) {
      deferred();
      deferred = null;
      if (deferToast) deferToast.remove();
      deferToast = null;
    }
    if (fresh.length > 0) {
      beep();
      openSoon();
    }
  }

  return {
    render,
    open,
    /** News for the inbox: `{key, kind: "inquiry" | "loop_check", runId, title, body, at}`; once per key. */
    notice(item) {
      if (notices.some((n) => n.key === item.key)) return;
      notices.unshift({ ...item, read: dialog.open });
      notices.length = Math.min(notices.length, NOTICE_LIMIT);
      key = "";
      render();
    },
    /** Called on the first user gesture: browsers only let audio start after one. */
    primeAudio() {
      try {
        const Context = window.AudioContext || window.webkitAudioContext;
        if (!audio && Context) audio = new Context();
        if (audio && audio.state === "suspended") audio.resume().catch(() => {});
      } catch {
        audio = null;
      }
    },
  };
}
