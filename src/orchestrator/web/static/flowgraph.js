// The flow view: a top strip of every role/tool type with counts and cost, then one row
// per live stack — main on top, preempting interrupt stacks below in push order, never reordered — each
// drawing its open call chain left to right by depth, the lingering return leg, and dashed static
// observe/terminate lines crossing into the paused row they inspect. A call/return line animates iff it
// is in flight and its stack is not paused (projection.js); the active participant pulses.
//
//   createFlowGraph(container, {labels, onNode(pid, stackId), onOp(opId)}) -> {
//     update(model, {tier, sig?, partialAt, partialBox, typeInfo(type) -> string|null, extraKey?}),
//     invalidate(), destroy() }
//
// Rendering is keyed: nodes by stack|participant, edges by operation id; a frame only touches what
// changed, and `update` with the same model and options returns at once. A role that ran more than once
// is named with its instance number ("Coder #3") on its node and in the labels. Nodes and edges are
// kept in the DOM in the picture's order (row by row, left to right), which is their Tab order.

import { elapsedMs, instanceNumber, preciseDuration, severityOf } from "./labels.js";
import { project, signature } from "./projection.js";
import { compact, duration, el, keyedChild, setAttr, setClass, setClassName, setText, svg, sweep } from "./rvdom.js";

const NODE_W = 156;
const NODE_H = 46;
const GAP_X = 54;
const ROW_H = 92;
const LEFT = 104;
const TOP = 14;
const PARTIAL_H = 132;

function truncate(text, max) {
  const s = String(text || "");
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** Re-insert `nodes` (already children of `parent`) so the DOM follows their order; moves only what is out of place. */
function keepOrder(parent, nodes) {
  let previous = null;
  for (const node of nodes) {
    const expected = previous ? previous.nextSibling : parent.firstChild;
    if (node !== expected) parent.insertBefore(node, expected);
    previous = node;
  }
}

export function createFlowGraph(container, { labels, onNode, onOp }) {
  const strip = el("div", "fg-types");
  strip.dataset.testid = "flow-types";
  const stage = el("div", "fg-stage");
  const canvas = svg("svg", { class: "fg-svg", role: "group", "aria-label": "Call stacks of the run" });
  canvas.dataset.testid = "flow-graph";
  const defs = svg("defs");
  for (const [id, cls] of [["fg-arrow", "fg-head"], ["fg-arrow-ret", "fg-head ret"], ["fg-arrow-err", "fg-head err"]]) {
    const marker = svg("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z", class: cls }));
    defs.appendChild(marker);
  }
  // Nodes and edges share one layer, in the picture's order (see keepOrder): that is their Tab order.
  const layers = { rows: svg("g"), marks: svg("g"), nodes: svg("g") };
  canvas.append(defs, layers.rows, layers.marks, layers.nodes);
  stage.appendChild(canvas);
  container.append(strip, stage);

  const maps = { chips: new Map(), rows: new Map(), marks: new Map(), edges: new Map(), nodes: new Map() };
  let gen = 0;
  let lastKey = "";
  let order = []; // this frame's nodes and edges in the picture's order (one layer: their Tab order)

  function click(event) {
    const target = event.target.closest("[data-op],[data-pid]");
    if (!target) return;
    if (target.dataset.op) onOp(target.dataset.op);
    else onNode(target.dataset.pid, target.dataset.stack);
  }
  canvas.addEventListener("click", click);
  canvas.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      click(event);
    }
  });
  strip.addEventListener("click", (event) => {
    const chip = event.target.closest("[data-pid]");
    if (chip) onNode(chip.dataset.pid, null);
  });

  function chip(t, tier, typeInfo, g) {
    const node = keyedChild(strip, maps.chips, t.key, g, () => {
      const c = el("button", "fg-chip", el("span", "fg-chip-name"), el("span", "fg-chip-count"), el("span", "fg-chip-cost"));
      c.type = "button";
      return c;
    });
    setClassName(node, `fg-chip kind-${t.kind}${t.errors ? " has-error" : ""}`);
    node.dataset.pid = t.sample.id;
    setText(node.children[0], labels.participant(t.sample, tier));
    setText(node.children[1], `×${t.count}`);
    const took = Number.isFinite(t.ms) ? preciseDuration(t.ms) : duration(t.seconds);
    const cost = t.kind === "role" ? [t.tokens ? `${compact(t.tokens)} tok` : "", took] : [took];
    setText(node.children[2], cost.filter(Boolean).join(" · "));
    const info = [labels.description(t.sample, tier), typeInfo ? typeInfo(t) : null, t.errors ? `${t.errors} error return(s)` : null];
    setAttr(node, "title", info.filter(Boolean).join("\n") || null);
  }

  function nodeAt(stack, pid, col, y, model, proj, tier, g, extra) {
    const p = proj.byId.get(pid) || { id: pid, role: pid, kind: "role" };
    const key = `${stack.id}|${pid}`;
    const group = keyedChild(layers.nodes, maps.nodes, key, g, () => {
      const node = svg("g", { class: "fg-node", tabindex: 0, role: "button" });
      node.append(svg("rect", { width: NODE_W, height: NODE_H, rx: 9 }), svg("text", { x: 10, y: 19, class: "fg-title" }), svg("text", { x: 10, y: 36, class: "fg-sub" }));
      const title = svg("title");
      node.appendChild(title);
      return node;
    });
    const x = LEFT + col * (NODE_W + GAP_X);
    setAttr(group, "transform", `translate(${x},${y})`);
    group.dataset.pid = pid;
    group.dataset.stack = stack.id;
    const active = pid === model.activeParticipant && stack.id === model.activeStack;
    setClassName(
      group,
      `fg-node kind-${p.kind}${active ? " active" : ""}${proj.paused(stack.id) ? " paused" : ""}${extra.lingering ? " lingering" : ""}` +
        `${extra.terminated ? " terminated" : ""}`,
    );
    const n = p.kind === "role" && proj.multi.has(p.role) ? ` #${instanceNumber(pid)}` : "";
    const label = `${labels.participant(p, tier)}${n}`;
    setText(group.children[1], n ? `${truncate(labels.participant(p, tier), 19 - n.length)}${n}` : truncate(label, 19));
    setText(group.children[2], extra.sub || "");
    setText(group.children[3], `${label} (${pid})${extra.sub ? `\n${extra.sub}` : ""}`);
    order.push(group);
    return { x, y, pid };
  }

  function edge(key, op, from, to, cls, model, proj, tier, g, offset) {
    const path = keyedChild(layers.nodes, maps.edges, key, g, () => {
      const gEl = svg("g", { class: "fg-edge", tabindex: 0, role: "button" });
      gEl.append(svg("path", { class: "fg-hit" }), svg("path", { class: "fg-line" }), svg("title"));
      return gEl;
    });
    path.dataset.op = op.id;
    path.dataset.stack = op.stack;
    const y = from.y + NODE_H / 2 + offset;
    const x1 = from.x < to.x ? from.x + NODE_W : from.x;
    const x2 = from.x < to.x ? to.x : to.x + NODE_W;
    const d = `M${x1},${y} L${x2},${y}`;
    setAttr(path.children[0], "d", d);
    setAttr(path.children[1], "d", d);
    const error = op.outcome === "error" || op.outcome === "terminated";
    setAttr(path.children[1], "marker-end", `url(#${error ? "fg-arrow-err" : op.kind === "return" ? "fg-arrow-ret" : "fg-arrow"})`);
    const sev = severityOf(op);
    setClassName(path, `fg-edge ${cls}${proj.animates(op) ? " anim" : ""}${op.lifecycle === "in_flight" ? " in-flight" : ""}${error ? " err" : ""}${sev ? ` sev-${sev}` : ""}`);
    path.dataset.severity = sev || "";
    setText(path.children[2], labels.operation(op, proj.byId, tier, proj.multi));
    // a call edge goes before the node it points to: node, edge, node, edge … as drawn
    if (cls === "call" && order.length) order.splice(order.length - 1, 0, path);
    else order.push(path);
  }

  function mark(op, from, to, proj, tier, g) {
    const node = keyedChild(layers.marks, maps.marks, op.id, g, () => {
      const gEl = svg("g", { class: "fg-mark" });
      gEl.append(svg("path", { class: "fg-hit" }), svg("path", { class: "fg-line" }), svg("title"));
      return gEl;
    });
    node.dataset.op = op.id;
    const x1 = from.x + NODE_W / 2;
    const y1 = from.y;
    const x2 = to.x + NODE_W / 2;
    const y2 = to.y + NODE_H;
    const bend = Math.max(24, Math.abs(y1 - y2) / 2);
    const d = `M${x1},${y1} C${x1},${y1 - bend} ${x2},${y2 + bend} ${x2},${y2}`;
    setAttr(node.children[0], "d", d);
    setAttr(node.children[1], "d", d);
    setClassName(node, `fg-mark kind-${op.kind}`);
    setText(node.children[2], labels.operation(op, proj.byId, tier, proj.multi));
  }

  function subtitle(op, p) {
    if (!p) return "";
    if (p.kind === "human") return p.id === "human:root" ? "" : "question";
    if (p.kind === "interrupt") return "";
    const m = op && op.metrics;
    const parts = [];
    if (m && m.tokens) parts.push(`${compact(m.tokens)} tok`);
    const ms = elapsedMs(op);
    if (ms !== null && (p.kind === "tool" || ms > 0)) parts.push(preciseDuration(ms));
    if (p.kind === "tool" && op.subject) parts.push(truncate(op.subject, 16));
    return parts.join(" · ");
  }

  function update(model, options) {
    const { tier, partialAt = null, partialBox = null, typeInfo = null, extraKey = "" } = options;
    const key = `${tier}|${partialAt}|${extraKey}|${options.sig ?? signature(model)}`;
    if (key === lastKey) return;
    lastKey = key;
    gen += 1;
    const g = gen;
    const proj = project(model);
    order = [];
    for (const t of proj.types) chip(t, tier, typeInfo, g);
    sweep(maps.chips, g);

    const placed = new Map(); // pid -> position (first row wins)
    let y = TOP;
    let maxCols = 1;
    let partialSpot = null;
    proj.live.forEach((stack) => {
      const rowTop = y;
      const rowY = rowTop + (ROW_H - NODE_H) / 2 - 8;
      const row = keyedChild(layers.rows, maps.rows, stack.id, g, () => {
        const gEl = svg("g", { class: "fg-row" });
        gEl.append(svg("rect", { x: 0, rx: 10 }), svg("text", { x: 12, class: "fg-row-label" }), svg("text", { x: 12, class: "fg-row-state" }));
        return gEl;
      });
      const paused = proj.paused(stack.id);
      setClassName(row, `fg-row${stack.id === model.activeStack ? " active" : ""}${paused ? " paused" : ""}`);
      const root = proj.byId.get(stack.root) || { id: stack.root, role: "human", kind: "human" };
      const n = /^interrupt-(\d+)-stack$/.exec(stack.id);
      const name = stack.id === "main" ? "Main" : root.kind === "human" ? "Inquiry" : labels.column("interrupt", tier);
      setText(row.children[1], `${name}${n ? ` ${n[1]}` : ""}`);
      setText(row.children[2], paused ? "paused" : stack.id === model.activeStack && model.status === "running" ? "active" : "");
      const chain = stack.chain;
      const positions = [];
      const rootPid = chain.length ? chain[0].source : stack.lingering ? stack.lingering.destination : stack.root || "human:root";
      positions.push(nodeAt(stack, rootPid, 0, rowY, model, proj, tier, g, {}));
      chain.forEach((op, i) => {
        const p = proj.byId.get(op.destination);
        positions.push(nodeAt(stack, op.destination, i + 1, rowY, model, proj, tier, g, { sub: subtitle(op, p) }));
        edge(`${stack.id}|${op.id}`, op, positions[i], positions[i + 1], "call", model, proj, tier, g, -6);
      });
      if (stack.lingering) {
        const op = stack.lingering;
        const from = nodeAt(stack, op.source, chain.length + 1, rowY, model, proj, tier, g, { lingering: true, sub: op.outcome || "" });
        positions.push(from);
        edge(`${stack.id}|${op.id}`, op, from, positions[chain.length], "ret", model, proj, tier, g, 8);
      }
      for (const pos of positions) if (!placed.has(pos.pid)) placed.set(pos.pid, { ...pos, stack: stack.id });
      maxCols = Math.max(maxCols, positions.length);
      let height = ROW_H;
      if (partialAt && stack.id === model.activeStack) {
        const target = positions.find((pos) => pos.pid === partialAt);
        if (target) {
          partialSpot = { left: Math.max(8, target.x - 20), top: rowY + NODE_H + 14 };
          height += PARTIAL_H;
        }
      }
      setAttr(row.children[0], "y", rowTop + 4);
      setAttr(row.children[0], "height", height - 8);
      setAttr(row.children[1], "y", rowTop + 24);
      setAttr(row.children[2], "y", rowTop + 42);
      y += height;
    });
    for (const stack of proj.live) {
      if (stack.id === "main") continue;
      for (const op of stack.marks) {
        const to = placed.get(op.destination);
        if (!to || to.stack === stack.id) continue;
        const own = [...placed.values()].filter((pos) => pos.stack === stack.id);
        const from = placed.get(op.source) || own[Math.max(0, stack.chain.length)] || own[own.length - 1];
        if (from) mark(op, from, to, proj, tier, g);
      }
    }
    sweep(maps.rows, g);
    keepOrder(layers.nodes, order);
    sweep(maps.nodes, g);
    sweep(maps.edges, g);
    sweep(maps.marks, g);
    const width = LEFT + maxCols * (NODE_W + GAP_X);
    for (const rect of layers.rows.querySelectorAll("rect")) setAttr(rect, "width", width - 8);
    setAttr(canvas, "width", width);
    setAttr(canvas, "height", y + 6);
    setAttr(canvas, "viewBox", `0 0 ${width} ${y + 6}`);
    if (partialBox) {
      if (partialSpot) {
        if (partialBox.el.parentNode !== stage) stage.appendChild(partialBox.el);
        partialBox.el.style.left = `${partialSpot.left}px`;
        partialBox.el.style.top = `${partialSpot.top}px`;
        partialBox.el.style.maxWidth = `${Math.max(280, width - partialSpot.left - 16)}px`;
        setClass(partialBox.el, "placed", true);
      } else if (partialBox.el.parentNode === stage) {
        setClass(partialBox.el, "placed", false);
      }
    }
  }

  return {
    update,
    /** Forget the last frame so the next update redraws (e.g. after a tier change). */
    invalidate() {
      lastKey = "";
    },
    destroy() {
      canvas.removeEventListener("click", click);
      strip.remove();
      stage.remove();
    },
  };
}
