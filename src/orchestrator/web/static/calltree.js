// The whole-run call tree (issue 18), for finished and live runs: every role instance, nested under the
// instance that delegated to it, with its status, duration, tokens and tool-call counts, a failed branch
// marked red, the slowest path marked, a waterfall bar per instance (model · tool · human · other time, to
// the millisecond, on the run's time axis with tick labels) and its context track (contexttrack.js).
// Clicking a row opens that instance in the inspector.
//
// Live runs get the compact form (no cost column, no waterfall): running instances carry a "running"
// badge and a duration that counts up between refreshes, and the instance of the in-flight turn is
// highlighted. The section is a <details>: open by default; the user's toggle is kept.
//
// Rendering is keyed by instance id: a refresh updates the rows in place (text, classes, widths only
// when changed), creates rows only for new instances and redraws a context track only when its data did.
//
// Data: GET /api/runs/:id/tree, /timeline and /context (flow/calltree.py, flow/contexttrack.py).
//
// Public interface:
//   createCallTree(container, {labels, onInstance(instanceId, role)}) ->
//     {update({tree, timeline, context}, {tier, live}), setActive(instanceId|null), rerender(tier),
//      setCursor(epochMs|null), clear(), destroy(), el}
//
// The finished form has a legend (the waterfall's colours, the slowest path's outline — never the failure
// colour — and what the context column's track and % say). During a replay `setCursor` marks the frame's
// moment on every bar and dims the instances that had not started yet.

import { contextSignature, contextSummary, drawContextTrack } from "./contexttrack.js";
import { numberInstances } from "./labels.js";
import { compact, el, ensureStylesheet, setAttr, setClass, setText } from "./rvdom.js";

/** "850 ms", "1.234 s", "12.3 s", "4 min 05 s" — durations to the millisecond while they are short. */
export function ms(value) {
  const n = Math.max(0, Number(value) || 0);
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(n < 10_000 ? 3 : 1)} s`;
  const s = Math.round(n / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

/** Tick positions for an axis of `total` ms: a 1-2-5 step giving at most `most` intervals. */
export function ticks(total, most = 5) {
  const whole = Math.max(1, Number(total) || 0);
  let step = 1;
  for (let unit = 1; ; unit *= 10) {
    const found = [1, 2, 5].map((k) => k * unit).find((s) => whole / s <= most);
    if (found) {
      step = found;
      break;
    }
  }
  const out = [];
  for (let t = 0; t <= whole + 1e-9; t += step) out.push(t);
  return out;
}

/** An axis label: "0", "250 ms", "1.5 s", "2 min 00 s". */
export function tickLabel(t) {
  if (t === 0) return "0";
  if (t < 1000) return `${Math.round(t)} ms`;
  if (t < 60_000) return `${Number((t / 1000).toFixed(3))} s`;
  return ms(t);
}

const PARTS = [["modelMs", "model"], ["toolMs", "tool"], ["humanMs", "human"], ["otherMs", "other"]];
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function createRow(onKey) {
  const label = el("span");
  const num = el("span", "ct-num");
  const name = el("span", "ct-name", label, num);
  const status = el("span", "ct-status");
  const dur = el("span", "ct-dur");
  const cost = el("span", "ct-cost");
  const ctx = el("span", "ct-ctx");
  const bar = el("span", "ct-bar");
  const segs = {};
  for (const key of ["offset", ...PARTS.map(([, n]) => n)]) {
    segs[key] = el("span", `ct-seg ct-${key}`);
    bar.appendChild(segs[key]);
  }
  const button = el("button", "ct-row", name, status, dur, cost, ctx, bar);
  button.type = "button";
  button.dataset.testid = "call-tree-row";
  button.setAttribute("role", "treeitem");
  button.addEventListener("keydown", onKey);
  const cursor = el("span", "ct-cursor");
  cursor.hidden = true;
  bar.appendChild(cursor);
  return { button, label, num, status, dur, cost, ctx, bar, segs, cursor, sig: "", ctxSig: null, running: false, base: 0, start: null };
}

export function createCallTree(container, { labels, onInstance }) {
  ensureStylesheet("calltree.css");
  const root = el("details", "ct");
  root.open = true;
  root.dataset.testid = "call-tree";
  const head = el("summary", "ct-head");
  head.dataset.testid = "call-tree-head";
  const axisTicks = el("span", "ct-ticks");
  const axis = el("div", "ct-axis", el("span", "ct-axis-label", "time →"), axisTicks);
  axis.dataset.testid = "call-tree-axis";
  axis.setAttribute("aria-hidden", "true");
  const list = el("div", "ct-list");
  list.setAttribute("role", "tree");
  const legend = el("div", "ct-legend");
  legend.dataset.testid = "call-tree-legend";
  const swatch = (cls, text, title) => {
    const item = el("span", "ct-key", el("span", `ct-swatch ${cls}`), text);
    item.title = title;
    return item;
  };
  legend.append(
    swatch("ct-model", "model", "time waiting for the model"),
    swatch("ct-tool", "tool", "time in tool calls"),
    swatch("ct-human", "human", "time waiting for a human answer"),
    swatch("ct-other", "other", "the rest: between turns, in the engine"),
    swatch("ct-slow", "slowest path", "root to leaf, at each level the child that took longest (bold durations)"),
    swatch("ct-ctxkey", "context: prompt tokens vs budget, peak %",
      "the track: the instance's prompt tokens over its life; solid line: the context budget; dashed: the pressure threshold; the % is the peak prompt as a share of the budget"),
  );
  root.append(head, legend, axis, list);
  root.hidden = true;
  container.appendChild(root);

  const rows = new Map();
  let last = null;
  let tier = "detailed";
  let active = null;
  let fetchedAt = 0;
  let timer = 0;
  let axisKey = "";
  let cursorAt = null;
  let axisStart = 0;
  let axisTotal = 0;

  const resized = typeof ResizeObserver === "function"
    ? new ResizeObserver(() => {
        if (last && !last[1].live) drawAxis(axisTotal, false);
      })
    : null;
  if (resized) resized.observe(axisTicks);

  list.addEventListener("click", (event) => {
    const row = event.target.closest("[data-instance]");
    if (row) onInstance(row.dataset.instance, row.dataset.role);
  });

  /** Up/Down move between rows (a tree's keyboard order is the picture's). */
  function onKey(event) {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    const next = event.key === "ArrowDown" ? event.currentTarget.nextElementSibling : event.currentTarget.previousElementSibling;
    if (next) {
      event.preventDefault();
      next.focus();
    }
  }

  function width(node, value) {
    const text = `${value.toFixed(3)}%`;
    if (node.__width !== text) node.style.width = node.__width = text;
  }

  function drawBar(r, row, total) {
    const whole = Math.max(1, total);
    width(r.segs.offset, row ? (100 * row.offsetMs) / whole : 0);
    for (const [key, name] of PARTS) {
      const value = row ? row[key] || 0 : 0;
      width(r.segs[name], (100 * value) / whole);
      setAttr(r.segs[name], "title", value ? `${name} ${ms(value)}` : null);
    }
  }

  function drawRow(r, node, row, track, number, threshold) {
    const running = node.status === "running";
    const sig = [tier, number, node.status, node.severity, node.note, node.failedBranch, node.durationMs, node.tokens,
      node.turns, node.toolCalls, node.toolWarnings, node.toolFailures, row && row.onSlowestPath,
      track && track.peakPercent, track && track.turns].join("|");
    r.running = running;
    r.base = node.durationMs;
    if (sig !== r.sig) {
      r.sig = sig;
      const role = labels.participant({ kind: "role", role: node.role, id: `role:${node.role}:${number}` }, tier);
      setText(r.label, role);
      setText(r.num, number > 1 ? ` #${number}` : "");
      const status = node.severity === "fail"
        ? `✖ ${node.status}${node.note && node.note !== "failed" ? ` (${node.note})` : ""}`
        : node.status;
      setText(r.status, status);
      r.status.className = `ct-status status-${node.status}${running ? " ct-badge" : ""}`;
      setText(r.dur, ms(node.durationMs));
      const tools = node.toolCalls
        ? plural(node.toolCalls, "tool call") + (node.toolWarnings ? ` · ⚠ ${node.toolWarnings}` : "") +
          (node.toolFailures ? ` · ✖ ${node.toolFailures}` : "")
        : "";
      setText(r.cost, [`${compact(node.tokens)} tok`, plural(node.turns, "turn"), tools].filter(Boolean).join(" · "));
      const b = r.button;
      b.className = `ct-row sev-${node.severity}${node.failedBranch ? " failed-branch" : ""}` +
        `${row && row.onSlowestPath ? " slowest" : ""}${running ? " running" : ""} depth-${Math.min(node.depth, 8)}`;
      setClass(b, "in-flight", node.instanceId === active);
      b.dataset.instance = node.instanceId;
      b.dataset.role = node.role;
      b.setAttribute("aria-level", String(node.depth + 1));
      setAttr(b, "title", row
        ? `${node.instanceId}: ${PARTS.map(([key, name]) => `${name} ${ms(row[key])}`).join(" · ")}` +
          (row.onSlowestPath ? "\non the slowest path" : "")
        : node.instanceId);
    }
    const ctxSig = contextSignature(track, row);
    if (ctxSig !== r.ctxSig) {
      r.ctxSig = ctxSig;
      const drawn = track && track.turns + track.marks.length > 0;
      const peak = el("span", "ct-ctx-peak", drawn && track.peakPercent != null ? `${track.peakPercent}%` : "");
      peak.title = drawn ? contextSummary(track) : "";
      r.ctx.replaceChildren(...(drawn ? [drawContextTrack(track, row, threshold), peak] : []));
    }
  }

  /** Keep the list's children in `order`, moving only what is out of place. */
  function place(order) {
    let at = list.firstElementChild;
    for (const node of order) {
      if (node === at) at = at.nextElementSibling;
      else list.insertBefore(node, at);
    }
  }

  /** Running rows count up between refreshes (once a second, text only). */
  function tick() {
    const extra = performance.now() - fetchedAt;
    for (const r of rows.values()) if (r.running) setText(r.dur, ms(r.base + extra));
  }

  function setTimer(on) {
    if (on && !timer) timer = setInterval(tick, 1000);
    if (!on && timer) {
      clearInterval(timer);
      timer = 0;
    }
  }

  function drawAxis(total, live) {
    // as many ticks as the axis is wide (about one per 80 px), so labels never overlap on a phone
    const most = Math.max(1, Math.min(5, Math.floor((axisTicks.clientWidth || 400) / 80)));
    const key = live ? "live" : `${total}|${most}`;
    if (key === axisKey) return;
    axisKey = key;
    axis.hidden = live || !total;
    if (axis.hidden) return;
    axisTicks.replaceChildren(...ticks(total, most).map((t) => {
      const label = el("span", "ct-tick", tickLabel(t));
      label.style.left = `${((100 * t) / Math.max(1, total)).toFixed(3)}%`;
      return label;
    }));
  }

  function render({ tree, timeline, context }, { live }) {
    const waterfall = new Map(((timeline && timeline.rows) || []).map((r) => [r.instanceId, r]));
    const tracks = new Map(((context && context.tracks) || []).map((t) => [t.instanceId, t]));
    const threshold = context ? context.threshold : null;
    const total = timeline ? timeline.durationMs : 0;
    const byId = new Map(tree.nodes.map((n) => [n.instanceId, n]));
    const { numbers } = numberInstances(tree.nodes);
    root.hidden = tree.nodes.length === 0;
    setClass(root, "compact", Boolean(live));
    const failed = tree.nodes.filter((n) => n.severity === "fail").length;
    const running = tree.nodes.filter((n) => n.status === "running").length;
    setText(head, `Call tree · ${plural(tree.nodes.length, "instance")}` + (total && !live ? ` · ${ms(total)}` : "") +
      (running && live ? ` · ${running} running` : "") + (failed ? ` · ${failed} failed` : ""));
    drawAxis(total, live);
    const order = [];
    const seen = new Set();
    const walk = (id) => {
      const node = byId.get(id);
      if (!node || seen.has(id)) return;
      seen.add(id);
      let r = rows.get(id);
      if (!r) {
        r = createRow(onKey);
        rows.set(id, r);
      }
      drawRow(r, node, waterfall.get(id), tracks.get(id), numbers.get(id), threshold);
      const started = Date.parse(node.startedAt);
      r.start = Number.isFinite(started) ? started : null;
      drawBar(r, waterfall.get(id), total);
      order.push(r.button);
      for (const child of node.children) walk(child);
    };
    for (const id of tree.roots) walk(id);
    for (const [id, r] of rows) {
      if (!seen.has(id)) {
        r.button.remove();
        rows.delete(id);
      }
    }
    place(order);
    setTimer(Boolean(live) && running > 0);
    axisStart = timeline ? timeline.startedAtMs : 0;
    axisTotal = total;
    legend.hidden = Boolean(live) || !total;
    drawCursor();
  }

  /** The replay's moment on every bar; instances not started by then are dimmed. */
  function drawCursor() {
    const on = cursorAt !== null && axisTotal > 0;
    const left = on ? Math.min(100, Math.max(0, (100 * (cursorAt - axisStart)) / axisTotal)) : 0;
    setClass(root, "replaying", cursorAt !== null);
    for (const r of rows.values()) {
      r.cursor.hidden = !on;
      if (on) width(r.cursor, left); // a zero-width line placed by its width … see .ct-cursor
      setClass(r.button, "future", cursorAt !== null && r.start !== null && r.start > cursorAt);
    }
  }

  return {
    el: root,
    update({ tree, timeline, context }, { tier: nextTier, live }) {
      if (!tree || !Array.isArray(tree.nodes)) return;
      last = [{ tree, timeline, context }, { live }];
      tier = nextTier || tier;
      fetchedAt = performance.now();
      render(last[0], last[1]);
    },
    /** Mark a replay frame's moment (ms since the epoch), or clear it (null). */
    setCursor(at) {
      const next = Number.isFinite(at) ? at : null;
      if (next === cursorAt) return;
      cursorAt = next;
      drawCursor();
    },
    /** Highlight the instance whose turn is in flight (null: none). */
    setActive(instanceId) {
      if (instanceId === active) return;
      active = instanceId || null;
      for (const [id, r] of rows) setClass(r.button, "in-flight", id === active);
    },
    rerender(nextTier) {
      if (!last || nextTier === tier) return;
      tier = nextTier;
      for (const r of rows.values()) r.sig = "";
      render(last[0], last[1]);
    },
    clear() {
      last = null;
      axisKey = "";
      setTimer(false);
      setText(head, "");
      rows.clear();
      list.replaceChildren();
      root.hidden = true;
    },
    destroy() {
      setTimer(false);
      if (resized) resized.disconnect();
      root.remove();
    },
  };
}
