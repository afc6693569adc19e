// The whole-run call tree of a finished run (issue 18): every role instance, nested under the instance
// that delegated to it, with its status, duration, tokens and tool-call counts, a failed branch marked
// red, the slowest path marked, and a waterfall bar per instance (model · tool · human · other time, to
// the millisecond, placed on the run's time axis). Clicking a row opens that instance in the inspector.
//
// Data: GET /api/runs/:id/tree and /timeline (flow/calltree.py); nothing is derived here but layout.
//
// Public interface:
//   createCallTree(container, {labels, onInstance(instanceId, role)}) ->
//     {update(tree, timeline, tier), rerender(tier), clear(), el}

import { compact, el, setText } from "./rvdom.js";

/** "850 ms", "12.3 s", "4 min 05 s" — durations to the millisecond while they are short. */
export function ms(value) {
  const n = Math.max(0, Number(value) || 0);
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
  const s = Math.round(n / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

const PARTS = [["modelMs", "model"], ["toolMs", "tool"], ["humanMs", "human"], ["otherMs", "other"]];

export function createCallTree(container, { labels, onInstance }) {
  const root = el("div", "ct");
  root.dataset.testid = "call-tree";
  const head = el("div", "ct-head");
  const list = el("div", "ct-list");
  list.setAttribute("role", "tree");
  root.append(head, list);
  container.appendChild(root);
  let drawn = null;
  let last = null;

  list.addEventListener("click", (event) => {
    const row = event.target.closest("[data-instance]");
    if (row) onInstance(row.dataset.instance, row.dataset.role);
  });

  function bar(row, total) {
    const track = el("span", "ct-bar");
    const whole = Math.max(1, total);
    const offset = el("span", "ct-seg ct-offset");
    offset.style.width = `${(100 * row.offsetMs) / whole}%`;
    track.appendChild(offset);
    for (const [key, name] of PARTS) {
      if (!row[key]) continue;
      const seg = el("span", `ct-seg ct-${name}`);
      seg.style.width = `${(100 * row[key]) / whole}%`;
      seg.title = `${name} ${ms(row[key])}`;
      track.appendChild(seg);
    }
    return track;
  }

  function line(node, row, total, tier, number) {
    const role = labels.participant({ kind: "role", role: node.role, id: `role:${node.role}:${number}` }, tier);
    const tools = node.toolCalls
      ? `${node.toolCalls} tool call${node.toolCalls === 1 ? "" : "s"}` +
        (node.toolWarnings ? ` · ⚠ ${node.toolWarnings}` : "") + (node.toolFailures ? ` · ✖ ${node.toolFailures}` : "")
      : "";
    const status = node.severity === "fail" ? `✖ ${node.status}${node.note && node.note !== "failed" ? ` (${node.note})` : ""}` : node.status;
    const button = el(
      "button",
      `ct-row sev-${node.severity}${node.failedBranch ? " failed-branch" : ""}${row && row.onSlowestPath ? " slowest" : ""}`,
      el("span", "ct-name", role, number > 1 ? el("span", "ct-num", ` #${number}`) : null),
      el("span", `ct-status status-${node.status}`, status),
      el("span", "ct-dur", ms(node.durationMs)),
      el("span", "ct-cost", [`${compact(node.tokens)} tok`, `${node.turns} turn${node.turns === 1 ? "" : "s"}`, tools].filter(Boolean).join(" · ")),
      row ? bar(row, total) : null,
    );
    button.type = "button";
    button.dataset.instance = node.instanceId;
    button.dataset.role = node.role;
    button.dataset.testid = "call-tree-row";
    if (row) {
      button.title = `${node.instanceId}: ${PARTS.map(([key, name]) => `${name} ${ms(row[key])}`).join(" · ")}` +
        (row.onSlowestPath ? "\non the slowest path" : "");
    }
    button.setAttribute("role", "treeitem");
    button.setAttribute("aria-level", String(node.depth + 1));
    return button;
  }

  return {
    el: root,
    update(tree, timeline, tier) {
      if (!tree || !Array.isArray(tree.nodes)) return;
      last = [tree, timeline];
      const key = `${tier}|${tree.events}|${tree.nodes.length}|${timeline ? timeline.durationMs : ""}`;
      if (key === drawn) return;
      drawn = key;
      const rows = new Map(((timeline && timeline.rows) || []).map((r) => [r.instanceId, r]));
      const total = timeline ? timeline.durationMs : 0;
      const byId = new Map(tree.nodes.map((n) => [n.instanceId, n]));
      const counts = new Map();
      const numbers = new Map();
      for (const n of tree.nodes) {
        const k = (counts.get(n.role) || 0) + 1;
        counts.set(n.role, k);
        numbers.set(n.instanceId, k);
      }
      const failed = tree.nodes.filter((n) => n.severity === "fail").length;
      setText(head, `Call tree · ${tree.nodes.length} instance${tree.nodes.length === 1 ? "" : "s"}` +
        (total ? ` · ${ms(total)}` : "") + (failed ? ` · ${failed} failed` : ""));
      const out = [];
      const walk = (id, depth) => {
        const node = byId.get(id);
        if (!node) return;
        const item = line(node, rows.get(id), total, tier, numbers.get(id));
        item.classList.add(`depth-${Math.min(depth, 8)}`);
        out.push(item);
        for (const child of node.children) walk(child, depth + 1);
      };
      for (const id of tree.roots) walk(id, 0);
      list.replaceChildren(...out);
    },
    rerender(tier) {
      if (last) this.update(last[0], last[1], tier);
    },
    clear() {
      drawn = null;
      setText(head, "");
      list.replaceChildren();
    },
  };
}
