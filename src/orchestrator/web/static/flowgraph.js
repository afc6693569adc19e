// The flow view: a top strip of every role/tool type with counts and cost, then one row
// per live stack — main on top, preempting interrupt stacks below in push order, never reordered — each
// drawing its open call chain left to right by depth, the lingering return leg, and dashed static
// observe/terminate lines crossing into the paused row they inspect. A call/return line animates iff it
// is in flight and its stack is not paused (projection.js); the active participant pulses.
//
//   createFlowGraph(container, {labels, onNode(pid, stackId), onOp(opId), onInstance?(instanceId, role)}) -> {
//     update(model, {tier, sig?, partialAt, partialBox, typeInfo(type) -> string|null, extraKey?, tree?}),
//     invalidate(), destroy() }
//
// A finished run has no open call left, so its stacks would draw only the operator. Given `tree` (the
// run's GET /tree answer), the graph draws the whole role tree as it ran instead: the operator, then every
// role instance right of the instance that delegated to it (a first child on its parent's line, later
// siblings on lines below), numbered, with its outcome (a failed instance and the edge into it in the
// failure colour), duration, tokens and tool calls; a node opens that instance (onInstance).
//
// Rendering is keyed: nodes by stack|participant, edges by operation id; a frame only touches what
// changed, and `update` with the same model and options returns at once. A role that ran more than once
// is named with its instance number ("Coder #3") on its node and in the labels. Nodes and edges are
// kept in the DOM in the picture's order (row by row, left to right), which is their Tab order.

import { elapsedMs, instanceNumber, numberInstances, preciseDuration, severityOf } from "./labels.js";
import { project, signature } from "./projection.js";
import { compact, duration, el, keyedChild, setAttr, setClass, setClassName, setText, svg, sweep } from "./rvdom.js";

const NODE_W = 156;
const NODE_H = 46;
const GAP_X = 54;
const ROW_H = 92;
const LEFT = 104;
const TOP = 14;
const PARTIAL_H = 132;
const TREE_ROW = NODE_H + 20;
const INDENT = 26; // a narrow pane's tree: one instance per line, indented by depth
const NARROW = 560; // px of pane below which the whole tree is drawn indented

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

/** "✖ 1.2 s · 3.4k tok · 5 tools": a finished instance's subtitle in the whole-tree picture, cut by whole
 * parts to what a node's width holds (the node's title has it all). */
function treeSubtitle(node, failed, room = 22) {
  const parts = [`${failed ? "✖ " : ""}${preciseDuration(node.durationMs)}`];
  if (node.tokens) parts.push(`${compact(node.tokens)} tok`);
  if (node.toolCalls) parts.push(`${node.toolCalls} tool${node.toolCalls === 1 ? "" : "s"}`);
  const full = parts.join(" · ");
  while (parts.length > 1 && parts.join(" · ").length > room) parts.pop();
  return { short: parts.join(" · "), full };
}

/**
 * The whole role tree as it ran, laid out (pure): `[{node, number, col, row}]` in pre-order (the picture's
 * order: row by row, left to right) and the number of rows. A first child shares its parent's row, each
 * later sibling starts a new row; column = depth + 1 (column 0 is the operator). `indented`: every
 * instance on a row of its own (a phone's layout), the operator alone on row 0.
 */
export function treeLayout(tree, indented = false) {
  const byId = new Map(tree.nodes.map((n) => [n.instanceId, n]));
  const { numbers, counts } = numberInstances(tree.nodes);
  const placed = [];
  const seen = new Set();
  let rows = 0;
  const walk = (id, col, row, parent) => {
    const node = byId.get(id);
    if (!node || seen.has(id)) return row;
    seen.add(id);
    placed.push({ node, number: numbers.get(id), multi: counts.get(node.role) > 1, col, row, parent });
    rows = Math.max(rows, row + 1);
    let next = row;
    node.children.forEach((child, i) => {
      next = walk(child, col + 1, i === 0 && !indented ? row : next + 1, id);
    });
    return Math.max(row, next);
  };
  let row = indented ? 1 : 0;
  for (const id of tree.roots) row = walk(id, 1, row, null) + 1;
  return { placed, rows: Math.max(rows, 1) };
}

export function createFlowGraph(container, { labels, onNode, onOp, onInstance = null }) {
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
  let narrow = false; // the pane is phone-narrow: the whole tree is drawn indented
  let lastArgs = null;
  const resized = typeof ResizeObserver === "function"
    ? new ResizeObserver(() => {
        const now = stage.clientWidth > 0 && stage.clientWidth < NARROW;
        if (now === narrow || !lastArgs) return;
        lastKey = "";
        update(...lastArgs);
      })
    : null;
  if (resized) resized.observe(stage);

  function click(event) {
    const target = event.target.closest("[data-op],[data-pid],[data-instance]");
    if (!target) return;
    if (target.dataset.instance) {
      if (onInstance) onInstance(target.dataset.instance, target.dataset.role);
    } else if (target.dataset.op) onOp(target.dataset.op);
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

  /** The finished run's whole role tree (see the header); returns the picture's width and height. */
  function drawWholeTree(tree, model, proj, tier, g) {
    const indented = narrow;
    const { placed, rows } = treeLayout(tree, indented);
    const left = indented ? 10 : LEFT;
    const step = indented ? INDENT : NODE_W + GAP_X;
    const row = keyedChild(layers.rows, maps.rows, "tree", g, () => {
      const gEl = svg("g", { class: "fg-row" });
      gEl.append(svg("rect", { x: 0, rx: 10 }), svg("text", { x: 12, class: "fg-row-label" }), svg("text", { x: 12, class: "fg-row-state" }));
      return gEl;
    });
    setClassName(row, "fg-row whole-tree");
    setText(row.children[1], indented ? "" : "As it ran");
    setText(row.children[2], indented ? "" : `${tree.nodes.length} instance${tree.nodes.length === 1 ? "" : "s"}`);
    const height = TOP + rows * TREE_ROW + 12;
    setAttr(row.children[0], "y", 4);
    setAttr(row.children[0], "height", height - 8);
    setAttr(row.children[1], "y", 24);
    setAttr(row.children[2], "y", 42);
    const stack = { id: "tree" };
    const yOf = (r) => TOP + 10 + r * TREE_ROW;
    const operator = nodeAt(stack, "human:root", 0, yOf(0), model, proj, tier, g, {});
    if (indented) {
      operator.x = left;
      setAttr(order[order.length - 1], "transform", `translate(${left},${yOf(0)})`);
    }
    const at = new Map();
    let maxCol = 0;
    for (const spot of placed) {
      const { node, number, multi, col, row: r } = spot;
      const x = left + col * step;
      const y = yOf(r);
      maxCol = Math.max(maxCol, col);
      at.set(node.instanceId, { x, y });
      const from = spot.parent ? at.get(spot.parent) : operator;
      const failed = node.severity === "fail" || node.status === "error";
      const link = keyedChild(layers.nodes, maps.edges, `tree|${node.instanceId}`, g, () => {
        const gEl = svg("g", { class: "fg-edge" });
        gEl.append(svg("path", { class: "fg-hit" }), svg("path", { class: "fg-line" }));
        return gEl;
      });
      const x1 = from.x + NODE_W;
      const y1 = from.y + NODE_H / 2;
      const y2 = y + NODE_H / 2;
      const d = indented
        ? `M${from.x + 12},${from.y + NODE_H} V${y2} L${x},${y2}`
        : y1 === y2 ? `M${x1},${y1} L${x},${y2}` : `M${x1 - 12},${from.y + NODE_H} V${y2} L${x},${y2}`;
      setAttr(link.children[0], "d", d);
      setAttr(link.children[1], "d", d);
      setAttr(link.children[1], "marker-end", `url(#${failed ? "fg-arrow-err" : "fg-arrow"})`);
      setClassName(link, `fg-edge call tree-edge${failed ? " err" : ""}`);
      order.push(link);
      const group = keyedChild(layers.nodes, maps.nodes, `tree|${node.instanceId}`, g, () => {
        const gEl = svg("g", { class: "fg-node", tabindex: 0, role: "button" });
        gEl.append(svg("rect", { width: NODE_W, height: NODE_H, rx: 9 }), svg("text", { x: 10, y: 19, class: "fg-title" }), svg("text", { x: 10, y: 36, class: "fg-sub" }), svg("title"));
        return gEl;
      });
      setAttr(group, "transform", `translate(${x},${y})`);
      group.dataset.instance = node.instanceId;
      group.dataset.role = node.role;
      group.dataset.status = node.status;
      group.dataset.testid = "flow-tree-node";
      setClassName(group, `fg-node kind-role tree-node status-${node.status}${failed ? " failed" : ""}${node.failedBranch ? " failed-branch" : ""}`);
      const n = multi ? ` #${number}` : "";
      const name = labels.participant({ kind: "role", role: node.role, id: `role:${node.role}:${number}` }, tier);
      setText(group.children[1], `${truncate(name, 19 - n.length)}${n}`);
      const sub = treeSubtitle(node, failed);
      setText(group.children[2], sub.short);
      const outcome = failed ? `failed${node.note && node.note !== "failed" ? ` (${node.note})` : ""}` : node.status;
      setText(group.children[3], `${name}${n} (${node.instanceId}): ${outcome}\n${sub.full}`);
      order.push(group);
    }
    return { width: indented ? left + maxCol * step + NODE_W + 12 : LEFT + (maxCol + 1) * (NODE_W + GAP_X), height };
  }

  function update(model, options) {
    const { tier, partialAt = null, partialBox = null, typeInfo = null, extraKey = "", tree = null } = options;
    lastArgs = [model, options];
    narrow = stage.clientWidth > 0 && stage.clientWidth < NARROW;
    const key = `${tier}|${partialAt}|${extraKey}|${narrow}|${options.sig ?? signature(model)}`;
    if (key === lastKey) return;
    lastKey = key;
    gen += 1;
    const g = gen;
    const proj = project(model);
    order = [];
    for (const t of proj.types) chip(t, tier, typeInfo, g);
    sweep(maps.chips, g);
    canvas.dataset.picture = tree && tree.nodes.length ? "tree" : "stacks";
    if (tree && tree.nodes.length) {
      const { width, height } = drawWholeTree(tree, model, proj, tier, g);
      sweep(maps.rows, g);
      keepOrder(layers.nodes, order);
      sweep(maps.nodes, g);
      sweep(maps.edges, g);
      sweep(maps.marks, g);
      for (const rect of layers.rows.querySelectorAll("rect")) setAttr(rect, "width", width - 8);
      setAttr(canvas, "width", width);
      setAttr(canvas, "height", height);
      setAttr(canvas, "viewBox", `0 0 ${width} ${height}`);
      if (partialBox && partialBox.el.parentNode === stage) setClass(partialBox.el, "placed", false);
      return;
    }

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
      if (resized) resized.disconnect();
      canvas.removeEventListener("click", click);
      strip.remove();
      stage.remove();
    },
  };
}
