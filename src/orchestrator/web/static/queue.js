// The queue panel: running / needs your answer / waiting / recent. Waiting items reorder by drag or by
// up/down buttons (optimistic PATCH, rolled back on error), edit and remove inline; parked items open
// their answer card in the inbox (inbox.js); errored ones can be re-queued. Items the service did not
// accept itself (planted in the workspace, edited outside it) wait under "Not from this service" until
// the operator confirms (POST /api/queue/<id>/confirm) or removes them.

import { errorMessage, seg } from "./api.js";
import { firstLine, h, keepFocus, shortTime, statusBadge } from "./dom.js";
import { markdownBlock } from "./optional.js";
import { effortOptions } from "./settings.js";

const STATUSES = new Set(["waiting", "active", "needs_input", "done", "error", "cancelled", "unconfirmed"]);
const SETTLED = new Set(["done", "error", "cancelled"]);
export const RECENT_LIMIT = 8;

/** The well-formed items of a /api/queue answer (malformed entries are dropped). */
export function cleanQueue(value) {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (i) => i && typeof i.id === "string" && i.id && typeof i.task === "string" && STATUSES.has(i.status),
  );
}

/** Items grouped for the panel; recent = the newest settled items. */
export function queueGroups(items) {
  const recent = items
    .filter((i) => SETTLED.has(i.status))
    .sort((a, b) => String(b.settledAt || b.queuedAt).localeCompare(String(a.settledAt || a.queuedAt)))
    .slice(0, RECENT_LIMIT);
  return {
    unconfirmed: items.filter((i) => i.status === "unconfirmed"),
    running: items.filter((i) => i.status === "active"),
    needsInput: items.filter((i) => i.status === "needs_input"),
    waiting: items.filter((i) => i.status === "waiting"),
    recent,
  };
}

/** The nav badge: items waiting, needing an answer or awaiting confirmation. */
export function badgeCount(items) {
  return items.filter((i) => ["waiting", "needs_input", "unconfirmed"].includes(i.status)).length;
}

/** `items` with waiting item `id` moved to waiting-list index `to` (clamped), other slots untouched. */
export function moveWaiting(items, id, to) {
  const waiting = items.filter((i) => i.status === "waiting");
  const from = waiting.findIndex((i) => i.id === id);
  if (from < 0) return items;
  const target = Math.max(0, Math.min(waiting.length - 1, to));
  const order = waiting.slice();
  const [moved] = order.splice(from, 1);
  order.splice(target, 0, moved);
  let next = 0;
  return items.map((i) => (i.status === "waiting" ? order[next++] : i));
}

export function createQueuePanel(root, app) {
  const error = h("p", { class: "form-error", testid: "queue-error", role: "alert", hidden: true });
  const body = h("div", { class: "queue-groups" });
  root.append(h("h2", { class: "screen-title" }, "Queue"), error, body);

  const drafts = new Map(); // `${id}:edit` / `${id}:effort` → what the user is editing
  let editing = null; // the waiting item being edited
  let dragId = null;
  let key = "";

  function showError(message) {
    error.hidden = !message;
    error.textContent = message || "";
  }

  async function act(run) {
    showError("");
    try {
      await run();
    } catch (err) {
      showError(errorMessage(err));
    } finally {
      app.refresh();
    }
  }

  async function move(id, to) {
    const before = app.state.queue;
    const waiting = before.filter((i) => i.status === "waiting");
    const from = waiting.findIndex((i) => i.id === id);
    if (from < 0 || to < 0 || to >= waiting.length || to === from) return;
    showError("");
    app.queueMutated();
    app.setQueue(moveWaiting(before, id, to));
    try {
      await app.api.patch(`/api/queue/${seg(id)}`, { position: to });
    } catch (err) {
      app.queueMutated();
      app.setQueue(before); // roll the optimistic move back
      showError(errorMessage(err));
    }
    app.refresh();
  }

  function button(label, testid, onClick, attrs = {}) {
    return h("button", { type: "button", class: "btn small", testid, onclick: onClick, ...attrs }, label);
  }

  function taskText(item) {
    return h("div", { class: "q-task", testid: "queue-task", title: item.task }, item.task);
  }

  function meta(item) {
    return h("div", { class: "q-meta muted" },
      item.effort ? h("span", { class: "badge tone-plain" }, item.effort) : null,
      item.continuesFrom ? h("span", {}, ` continues ${item.continuesFrom}`) : null,
      h("span", {}, ` queued ${shortTime(item.queuedAt)}`),
      item.settledAt ? h("span", {}, ` · settled ${shortTime(item.settledAt)}`) : null);
  }

  function watchButton(item) {
    return item.runId
      ? button("Watch", "queue-watch", () => app.navigate("watch", item.runId), { "aria-label": `Watch ${item.runId}` })
      : null;
  }

  function waitingItem(item, index, count) {
    const id = item.id;
    const short = firstLine(item.task, 40);
    const li = h("li", {
      class: "q-item", testid: "queue-item", "data-item-id": id, "data-status": "waiting", draggable: "true",
    });
    if (editing === id) {
      const text = h("textarea", { class: "q-edit-task", testid: "queue-edit-task", "data-key": `${id}:edit`,
        rows: "3", "aria-label": "Task text" });
      text.value = drafts.has(`${id}:edit`) ? drafts.get(`${id}:edit`) : item.task;
      text.addEventListener("input", () => drafts.set(`${id}:edit`, text.value));
      const effort = h("select", { testid: "queue-edit-effort", "data-key": `${id}:effort`, "aria-label": "Effort" },
        effortOptions(drafts.get(`${id}:effort`) || item.effort || "standard"));
      effort.addEventListener("change", () => drafts.set(`${id}:effort`, effort.value));
      const save = () => act(async () => {
        await app.api.patch(`/api/queue/${seg(id)}`, { task: text.value, effort: effort.value });
        stopEditing(id);
      });
      text.addEventListener("keydown", (e) => {
        if (e.key === "Escape") {
          e.preventDefault();
          stopEditing(id);
        } else if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) save();
      });
      li.draggable = false;
      li.append(h("div", { class: "q-edit" }, text,
        h("div", { class: "actions" }, effort,
          button("Save", "queue-edit-save", save, { "data-key": `${id}:save` }),
          button("Cancel", "queue-edit-cancel", () => stopEditing(id), { "data-key": `${id}:cancel` }))));
      return li;
    }
    li.append(
      h("span", { class: "drag-handle", "aria-hidden": "true", title: "Drag to reorder" }, "⠿"),
      h("span", { class: "q-pos", "aria-label": `position ${index + 1}` }, String(index + 1)),
      h("div", { class: "q-main" }, taskText(item), meta(item)),
      h("div", { class: "q-actions" },
        button("↑", "queue-up", () => move(id, index - 1),
          { "aria-label": `Move up: ${short}`, disabled: index === 0, "data-key": `${id}:up` }),
        button("↓", "queue-down", () => move(id, index + 1),
          { "aria-label": `Move down: ${short}`, disabled: index === count - 1, "data-key": `${id}:down` }),
        button("Edit", "queue-edit", () => startEditing(id), { "aria-label": `Edit: ${short}`, "data-key": `${id}:e` }),
        button("Remove", "queue-remove", () => act(() => app.api.del(`/api/queue/${seg(id)}`)),
          { "aria-label": `Remove: ${short}`, class: "btn small danger", "data-key": `${id}:rm` })),
    );
    li.addEventListener("dragstart", (e) => {
      dragId = id;
      li.classList.add("dragging");
      e.dataTransfer.effectAllowed = "move";
      e.dataTransfer.setData("text/plain", id);
    });
    li.addEventListener("dragend", () => {
      dragId = null;
      li.classList.remove("dragging");
    });
    li.addEventListener("dragover", (e) => {
      if (!dragId || dragId === id) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "move";
      li.classList.add("drop-target");
    });
    li.addEventListener("dragleave", () => li.classList.remove("drop-target"));
    li.addEventListener("drop", (e) => {
      e.preventDefault();
      li.classList.remove("drop-target");
      const source = dragId || e.dataTransfer.getData("text/plain");
      dragId = null;
      if (source && source !== id) move(source, index); // take the target's place
    });
    return li;
  }

  function startEditing(id) {
    editing = id;
    key = "";
    render();
    const text = root.querySelector(`[data-key="${CSS.escape(`${id}:edit`)}"]`);
    if (text) text.focus();
  }

  function stopEditing(id) {
    drafts.delete(`${id}:edit`);
    drafts.delete(`${id}:effort`);
    if (editing === id) editing = null;
    key = "";
    render();
  }

  /** A question parked before anything was written: shown here, answered in the inbox (one answer card). */
  function needsInputItem(item) {
    const id = item.id;
    const answer = button("Answer…", "queue-answer-open", () => app.inbox && app.inbox.open(`parked:${id}`),
      { class: "btn small primary", "data-key": `${id}:answer`,
        "aria-label": `Answer: ${firstLine(item.question || item.task, 60)}` });
    return h("li", { class: "q-item needs-input", testid: "queue-item", "data-item-id": id, "data-status": "needs_input" },
      h("div", { class: "q-main" },
        taskText(item),
        h("div", { class: "q-question" }, h("strong", {}, "Question: "), markdownBlock(item.question || "", "md inline", "queue-question")),
        meta(item)),
      h("div", { class: "q-actions" }, answer, watchButton(item)));
  }

  /** An item this service did not accept itself: never run until confirmed here. */
  function unconfirmedItem(item) {
    const id = item.id;
    const short = firstLine(item.task, 40);
    return h("li", { class: "q-item unconfirmed", testid: "queue-item", "data-item-id": id, "data-status": "unconfirmed" },
      h("div", { class: "q-main" },
        taskText(item),
        h("p", { class: "q-foreign", testid: "queue-foreign" },
          "Not from this service: it came with the workspace or was changed outside the service. " +
          "Read the task; it runs only once you confirm it."),
        meta(item)),
      h("div", { class: "q-actions" },
        button("Confirm", "queue-confirm", () => act(() => app.api.post(`/api/queue/${seg(id)}/confirm`)),
          { class: "btn small primary", "aria-label": `Confirm: ${short}`, "data-key": `${id}:confirm` }),
        button("Remove", "queue-remove", () => act(() => app.api.del(`/api/queue/${seg(id)}`)),
          { "aria-label": `Remove: ${short}`, "data-key": `${id}:rm` })));
  }

  function runningItem(item) {
    return h("li", { class: "q-item running", testid: "queue-item", "data-item-id": item.id, "data-status": "active" },
      h("div", { class: "q-main" }, taskText(item), meta(item)),
      h("div", { class: "q-actions" }, statusBadge(item.runId ? "running" : "starting"), watchButton(item)));
  }

  function recentItem(item) {
    return h("li", { class: `q-item settled s-${item.status}`, testid: "queue-item", "data-item-id": item.id,
      "data-status": item.status },
      h("div", { class: "q-main" },
        taskText(item),
        item.resultSummary ? markdownBlock(item.resultSummary, "md q-result") : null,
        item.error ? h("p", { class: "q-error", testid: "queue-item-error" }, item.error) : null,
        meta(item)),
      h("div", { class: "q-actions" },
        statusBadge(item.status),
        watchButton(item),
        item.status === "error"
          ? button("Re-queue", "queue-requeue", () => act(() => app.api.post(`/api/queue/${seg(item.id)}/requeue`)),
            { "aria-label": `Re-queue: ${firstLine(item.task, 40)}`, "data-key": `${item.id}:rq` })
          : null));
  }

  function group(title, testid, items, build, empty) {
    const list = h(title === "Waiting" ? "ol" : "ul", { class: "q-list", testid: `${testid}-list` },
      items.map(build));
    return h("section", { class: "q-group", testid, "aria-label": title },
      h("h3", {}, title, " ", h("span", { class: "count" }, String(items.length))),
      items.length ? list : h("p", { class: "muted empty" }, empty));
  }

  function render() {
    const groups = queueGroups(app.state.queue);
    const next = JSON.stringify([groups, editing]);
    if (next === key) return;
    key = next;
    if (editing && !groups.waiting.some((i) => i.id === editing)) editing = null;
    keepFocus(root, () => {
      body.replaceChildren(
        h("div", { class: "q-column" },
          groups.unconfirmed.length
            ? group("Not from this service", "queue-unconfirmed", groups.unconfirmed, unconfirmedItem, "")
            : null,
          group("Running", "queue-running", groups.running, runningItem, "Nothing is running."),
          group("Needs your answer", "queue-needs-input", groups.needsInput, needsInputItem, "No parked questions."),
          group("Waiting", "queue-waiting", groups.waiting,
            (item, i) => waitingItem(item, i, groups.waiting.length), "Nothing is waiting.")),
        h("div", { class: "q-column" },
          group("Recent", "queue-recent", groups.recent, recentItem, "No settled tasks yet.")),
      );
    });
  }

  return { render };
}
