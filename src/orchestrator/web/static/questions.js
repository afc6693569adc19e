// The questions modal: opens by itself when a new pending question arrives (GET /api/questions), with a
// short beep unless muted (the audio context is primed on the first user gesture); each question shows
// as sanitized Markdown and is answered through POST /api/answer.

import { errorMessage } from "./api.js";
import { firstLine, h, keepFocus, shortTime } from "./dom.js";
import { markdownBlock } from "./optional.js";

export function createQuestions(dialog, openButton, app) {
  const seen = new Set();
  const drafts = new Map();
  const errors = new Map();
  let audio = null;
  let key = "";

  const list = h("div", { class: "question-list", testid: "questions-list" });
  const close = h("button", { type: "button", class: "btn", testid: "questions-close" }, "Later");
  close.addEventListener("click", () => dialog.close());
  dialog.append(
    h("header", { class: "modal-head" }, h("h2", { id: "questions-title" }, "Questions for you"),
      h("p", { class: "muted" }, "The run waits for your answer.")),
    list,
    h("footer", { class: "modal-foot" }, close),
  );
  openButton.addEventListener("click", () => open());

  function open() {
    key = "";
    render();
    if (!dialog.open) dialog.showModal();
    const first = list.querySelector("textarea");
    if (first) first.focus();
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

  async function answer(question, text, button) {
    button.disabled = true;
    errors.delete(question.id);
    try {
      await app.api.post("/api/answer", { id: question.id, answer: text });
      drafts.delete(question.id);
      app.state.questions = app.state.questions.filter((q) => q.id !== question.id);
      app.notify(`Answer sent: ${firstLine(text, 60) || "(empty)"}`, { testid: "answer-sent" });
    } catch (err) {
      errors.set(question.id, errorMessage(err));
    } finally {
      key = "";
      render();
      app.refresh();
    }
  }

  function card(question) {
    const id = question.id;
    const text = h("textarea", { testid: "question-answer", "data-key": `${id}:answer`, rows: "3",
      "aria-label": `Answer to: ${firstLine(question.question, 80)}` });
    text.value = drafts.get(id) || "";
    text.addEventListener("input", () => drafts.set(id, text.value));
    const send = h("button", { type: "button", class: "btn primary", testid: "question-send", "data-key": `${id}:send` },
      "Send answer");
    send.addEventListener("click", () => answer(question, text.value, send));
    text.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) answer(question, text.value, send);
    });
    const error = errors.get(id);
    return h("article", { class: "question-card", testid: "question-card", "data-question-id": id },
      markdownBlock(question.question, "md question-text", "question-text"),
      question.context
        ? h("details", { class: "question-context" }, h("summary", {}, "Context"), markdownBlock(question.context, "md"))
        : null,
      h("p", { class: "muted small" }, `asked ${shortTime(question.askedAt)}`),
      text,
      error ? h("p", { class: "form-error", role: "alert" }, error) : null,
      h("div", { class: "actions" }, send));
  }

  function render() {
    const pending = app.state.questions;
    openButton.hidden = pending.length === 0;
    openButton.textContent = pending.length === 1 ? "1 question waiting" : `${pending.length} questions waiting`;
    const fresh = pending.filter((q) => !seen.has(q.id));
    fresh.forEach((q) => seen.add(q.id));
    const next = JSON.stringify([pending, [...errors]]);
    if (next !== key) {
      key = next;
      keepFocus(list, () => list.replaceChildren(...pending.map(card)));
    }
    if (pending.length === 0 && dialog.open) dialog.close();
    if (fresh.length > 0) {
      beep();
      if (!dialog.open) open();
    }
  }

  return {
    render,
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
