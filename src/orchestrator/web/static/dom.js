// Small DOM helpers shared by the shell modules. Every string passes through text nodes: nothing here
// ever assigns HTML, so machine fields and agent prose alike stay inert unless markdown.js renders them.

import { statusTone, statusWord } from "./status.js";

/**
 * Build an element. `attrs` keys: `class`, `testid` (→ data-testid), `on<Event>` handlers, `hidden`,
 * booleans as presence, everything else through setAttribute. Children: nodes, strings, null (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "testid") el.dataset.testid = value;
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === "value") el.value = value;
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace every child of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** "2026-01-01T10:00:00.000Z" → a short local time; a non-date passes through as text. */
export function shortTime(value) {
  if (!value) return "";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  const today = new Date();
  const sameDay = date.toDateString() === today.toDateString();
  return sameDay
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" })
    : date.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

/** Seconds as "1h 02m", "3m 05s" or "12s". */
export function duration(seconds) {
  if (seconds == null || !Number.isFinite(seconds)) return "";
  const s = Math.max(0, Math.round(seconds));
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${s}s`;
}

/** The first non-empty line of `text`, cut to `limit` characters. */
export function firstLine(text, limit = 140) {
  const line = String(text || "").split("\n").map((l) => l.trim()).find(Boolean) || "";
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

/** A status pill in plain words (status.js), toned by status.js; the code as data-status. */
export function statusBadge(status, testid = "status") {
  return h("span", { class: `badge tone-${statusTone(status)}`, testid, "data-status": status }, statusWord(status));
}

/** Copy `text` to the clipboard; resolves true on success (never throws). */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { class: "offscreen", "aria-hidden": "true" });
    area.value = text;
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    area.remove();
    return ok;
  }
}

const TERMINAL = new Set(["success", "error", "needs_clarification", "interrupted", "cancelled"]);

/** True for terminal run statuses (a run that has an outcome to continue from; `cancelled`: stopped). */
export function isTerminal(status) {
  return TERMINAL.has(status);
}

/**
 * Run `build` (which rebuilds part of `root`) and give focus back to the element that had it, found again
 * by its `data-key`, with its text selection — so a 1 s re-render never steals the keyboard.
 */
export function keepFocus(root, build) {
  const active = document.activeElement;
  const key = active && root.contains(active) && active.dataset ? active.dataset.key : null;
  let selection = null;
  if (key && typeof active.selectionStart === "number") selection = [active.selectionStart, active.selectionEnd];
  build();
  if (!key) return;
  const again = root.querySelector(`[data-key="${CSS.escape(key)}"]`);
  if (!again) return;
  again.focus({ preventScroll: true });
  if (selection && typeof again.setSelectionRange === "function") {
    try {
      again.setSelectionRange(selection[0], selection[1]);
    } catch {
      // not a text control
    }
  }
}

const NOT_TYPED = new Set(["button", "checkbox", "radio", "submit", "reset", "range", "color", "file", "image"]);

/** True while the keyboard is in a text field (textarea, text-like input, contenteditable) outside `except`. */
export function typingOutside(except = null) {
  const el = document.activeElement;
  if (!el || el === document.body || (except && except.contains(el))) return false;
  if (el.isContentEditable || el.tagName === "TEXTAREA") return true;
  return el.tagName === "INPUT" && !NOT_TYPED.has(el.type);
}

/**
 * Run `fn` once the keyboard is not in a text field outside `except` — at once when it is not. Used so a
 * pop-up never takes the keyboard from someone typing: it waits until focus leaves the field.
 * Returns a function that cancels the wait.
 */
export function whenNotTyping(fn, except = null) {
  if (!typingOutside(except)) {
    fn();
    return () => {};
  }
  let done = false;
  const check = () => setTimeout(() => {
    if (done || typingOutside(except)) return;
    cancel();
    fn();
  }, 0);
  const cancel = () => {
    done = true;
    document.removeEventListener("focusout", check, true);
  };
  document.addEventListener("focusout", check, true);
  return cancel;
}
