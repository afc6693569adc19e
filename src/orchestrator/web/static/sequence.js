// The sequence view: a column per participant of the run (human first, then each role and the interrupt
// root as they first appear — never every Guild role, and never reordered), a row per operation, tool
// calls drawn as a stub into a lane beside their caller's lifeline, loop-backs for calls within one
// column, dashed observe/terminate lines, and two toggles: a roles-only lens that hides tool traffic, and
// a time axis that spaces rows by wall time. Column headers and row numbers stay in view while the
// pane scrolls either way (CSS sticky). A role that ran more than once is "Coder ×9" in its header and
// "Coder #3" in the labels. Call rows end with their duration ("0.184 s", call → return).
//
//   createSequence(container, {labels, config, onOp(opId), onColumn(key)}) -> {
//     update(model, {tier, sig?, partialAt, partialBox}), setLens(rolesOnly), setTimeAxis(on),
//     scrollToOp(opId) -> bool,
//     invalidate(), destroy() }
//
// Rows are virtualized: the canvas is as tall as every row, but only the rows inside the scrolled
// viewport (plus a margin) exist in the DOM, keyed by operation id, in row order (so Tab walks them top
// to bottom), and redrawn only when their operation changed. Tab / Shift+Tab and the arrow keys move
// between rows (scrolling the next one into the DOM first); Enter opens the operation card. The view
// follows the tail while scrolled to the bottom. Layout arithmetic lives in seqlayout.js.

import { elapsedMs, preciseDuration, severityOf } from "./labels.js";
import { opSignature, project, signature } from "./projection.js";
import { el, ensureStylesheet, keyedChild, setAttr, setClass, setClassName, setText, sweep } from "./rvdom.js";
import {
  GUTTER, HEAD_H, ROW_H, columnKey, columnLayout, growColumns, placeRow, rowAt, rowTops,
} from "./seqlayout.js";

const OVERSCAN = 12;
const PARTIAL_H = 140;

function toggle(testid, text) {
  const label = el("label", "seq-toggle");
  const input = document.createElement("input");
  input.type = "checkbox";
  input.dataset.testid = testid;
  label.append(input, document.createTextNode(` ${text}`));
  return { label, input };
}

export function createSequence(container, { labels, onOp, onColumn }) {
  ensureStylesheet("sequence.css");
  const bar = el("div", "seq-bar");
  const lens = toggle("sequence-roles-only", "roles only");
  const axis = toggle("sequence-time-axis", "time axis");
  bar.append(axis.label, lens.label);
  const scroller = el("div", "seq-scroll");
  scroller.dataset.testid = "sequence-view";
  const head = el("div", "seq-head");
  head.dataset.testid = "sequence-head";
  const corner = el("div", "seq-corner", "#");
  const canvas = el("div", "seq-canvas");
  const lines = el("div", "seq-lines", el("div", "seq-rail")); // the rail: the row numbers' sticky backdrop
  const body = el("div", "seq-body");
  head.appendChild(corner);
  canvas.append(lines, body);
  scroller.append(head, canvas);
  container.append(bar, scroller);

  const headers = new Map();
  const lifelines = new Map();
  const rows = new Map(); // op id -> row element
  let known = []; // every column key seen, append-only
  let rolesOnly = false;
  let timeAxis = false;
  let model = null;
  let proj = null;
  let tier = "detailed";
  let visibleOps = [];
  let tops = new Float64Array(1);
  let gaps = new Float64Array(0);
  let columns = [];
  let colIndex = new Map();
  let colW = 0;
  let width = 0;
  let lastKey = "";
  let layoutKey = "";
  let gen = 0;
  let partial = { at: null, box: null, row: -1 };
  let follow = true;
  let frame = 0;
  let highlighted = null; // the op id scrollToOp highlighted

  const redraw = () => {
    lastKey = "";
    if (model) update(model, { tier, partialAt: partial.at, partialBox: partial.box });
  };
  lens.input.addEventListener("change", () => {
    rolesOnly = lens.input.checked;
    redraw();
  });
  axis.input.addEventListener("change", () => {
    timeAxis = axis.input.checked;
    redraw();
  });
  scroller.addEventListener("scroll", () => {
    follow = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - ROW_H;
    if (!frame) frame = requestAnimationFrame(() => {
      frame = 0;
      drawRows();
    });
  });
  const open = (event) => {
    const row = event.target.closest(".seq-row");
    if (row && row.dataset.op) onOp(row.dataset.op);
  };
  canvas.addEventListener("click", open);
  canvas.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      open(event);
      return;
    }
    const row = event.target.closest(".seq-row");
    if (!row) return;
    const step = event.key === "ArrowDown" || (event.key === "Tab" && !event.shiftKey) ? 1
      : event.key === "ArrowUp" || (event.key === "Tab" && event.shiftKey) ? -1 : 0;
    const next = step ? Number(row.dataset.index) + step : -1;
    if (next < 0 || next >= visibleOps.length) return; // Tab past either end leaves the view
    event.preventDefault();
    focusRow(next);
  });
  head.addEventListener("click", (event) => {
    const cell = event.target.closest(".seq-col");
    if (cell && onColumn) onColumn(cell.dataset.col);
  });
  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => {
    if (!model) return;
    const layout = columnLayout(scroller.clientWidth || 900, columns.length);
    if (layout.colW !== colW || GUTTER + columns.length * layout.colW + layout.tail !== width) redraw();
  }) : null;
  if (resize) resize.observe(scroller);

  /** Bring row `index` into the viewport (below the sticky header) and into the DOM, then focus it. */
  function focusRow(index) {
    const top = tops[index];
    const view = scroller.clientHeight || 600;
    if (top < scroller.scrollTop) scroller.scrollTop = top;
    else if (top + ROW_H + HEAD_H > scroller.scrollTop + view) scroller.scrollTop = top + ROW_H + HEAD_H - view;
    drawRows();
    const row = rows.get(visibleOps[index].id);
    if (row) row.focus({ preventScroll: true });
  }

  function centre(key) {
    const i = colIndex.get(key);
    return i === undefined ? null : GUTTER + i * colW + colW / 2;
  }

  function layoutColumns() {
    known = growColumns(known, model.participants);
    columns = known;
    colIndex = new Map(columns.map((k, i) => [k, i]));
    const layout = columnLayout(scroller.clientWidth || 900, columns.length);
    colW = layout.colW;
    width = GUTTER + columns.length * colW + layout.tail;
    const counts = columns.map((k) => proj.instances.get(k) || 0).join(",");
    const key = `${tier}|${colW}|${width}|${columns.join(",")}|${counts}`;
    if (key === layoutKey) return;
    layoutKey = key;
    gen += 1;
    columns.forEach((k, i) => {
      const cell = keyedChild(head, headers, k, gen, () => {
        const c = el("button", "seq-col");
        c.type = "button";
        c.dataset.col = k;
        return c;
      });
      cell.style.left = `${GUTTER + i * colW}px`;
      cell.style.width = `${colW}px`;
      const pseudo = k === "human" || k === "interrupt";
      setClassName(cell, `seq-col kind-${pseudo ? k : "role"}${colW < 110 ? " narrow" : ""}`);
      const n = pseudo ? 0 : proj.instances.get(k) || 0;
      const name = labels.column(k, tier);
      setText(cell, n > 1 ? `${name} ×${n}` : name);
      setAttr(cell, "title", n > 1 ? `${name}: ${n} instances (#1–#${n} in the rows)` : name);
      const line = keyedChild(lines, lifelines, k, gen, () => el("div", "seq-life"));
      line.style.left = `${GUTTER + i * colW + colW / 2}px`;
    });
    sweep(headers, gen);
    sweep(lifelines, gen);
    for (const node of [canvas, head]) node.style.width = `${width}px`;
    for (const row of rows.values()) row.__sig = ""; // the columns changed: every row redraws
  }

  /** The x of participant `p`'s lifeline, and whether it is a tool (drawn in its caller's lane). */
  function endpoint(pid) {
    const p = proj.byId.get(pid);
    if (p && p.kind === "tool") return { tool: true, x: null };
    return { tool: false, x: centre(columnKey(p) || "human") ?? centre("human") };
  }

  function drawRow(row, op, index) {
    const src = endpoint(op.source);
    const dst = endpoint(op.destination);
    const anim = proj.animates(op);
    const sig = `${opSignature(op)}|${anim}|${index}|${tops[index]}|${tier}|${layoutKey}`;
    if (row.__sig === sig) return;
    row.__sig = sig;
    row.style.top = `${tops[index]}px`;
    row.dataset.op = op.id;
    row.dataset.index = String(index);
    let shape = "span";
    let a = src.x;
    let b = dst.x;
    if (src.tool || dst.tool) {
      shape = src.tool ? "tool-return" : "tool-call";
      a = src.tool ? dst.x : src.x;
      b = a;
    } else if (a === b) shape = "loop";
    const error = op.outcome === "error" || op.outcome === "terminated";
    const severity = severityOf(op);
    setClassName(
      row,
      `seq-row kind-${op.kind}${shape === "span" ? "" : ` ${shape.startsWith("tool") ? "tool" : "loop"}`}` +
        `${op.lifecycle === "in_flight" ? " in-flight" : ""}${anim ? " anim" : ""}${error ? " err" : ""}` +
        `${severity ? ` sev-${severity}` : ""}${op.id === highlighted ? " focused" : ""}` +
        `${proj.paused(op.stack) ? " paused" : ""}${op.stack !== "main" ? " side" : ""}`,
    );
    const [gutter, gap, arrow, label] = row.children;
    setText(gutter, op.id.replace(/^op-/, "#"));
    const wait = timeAxis && gaps[index] >= 1000 ? `+${preciseDuration(gaps[index])}` : "";
    setText(gap, wait);
    gap.hidden = !wait;
    if (wait) gap.style.top = `${-Math.max(12, (tops[index] - (index ? tops[index - 1] : 0) - ROW_H) / 2 + 6)}px`;
    const text = labels.operation(op, proj.byId, tier, proj.multi);
    const ms = op.kind === "call" ? elapsedMs(op) : null;
    const took = ms === null ? "" : preciseDuration(ms);
    setText(label.children[0], text);
    setText(label.children[1], took);
    label.children[1].hidden = !took;
    setAttr(
      row,
      "title",
      `${text}\n${op.id} · ${op.kind} · ${op.stack}${op.outcome ? ` · ${op.outcome}` : ""}${took ? ` · ${took}` : ""}`,
    );
    const place = placeRow(a, b, shape, colW, width);
    arrow.style.left = `${place.arrowLeft}px`;
    arrow.style.width = `${place.arrowWidth}px`;
    label.style.left = `${place.labelLeft}px`;
    label.style.width = `${place.labelWidth}px`;
    setClass(arrow, "rtl", place.rtl);
    setClass(label, "flip", place.flip);
  }

  function drawRows() {
    if (!model) return;
    const top = scroller.scrollTop - HEAD_H;
    const first = Math.max(0, rowAt(tops, top) - OVERSCAN);
    const last = Math.min(visibleOps.length, rowAt(tops, top + (scroller.clientHeight || 600)) + 1 + OVERSCAN);
    gen += 1;
    const order = [];
    const focused = document.activeElement && document.activeElement.closest ? document.activeElement.closest(".seq-row") : null;
    let keep = focused && rows.get(focused.dataset.op) === focused ? Number(focused.dataset.index) : -1;
    if (keep >= 0 && (!visibleOps[keep] || visibleOps[keep].id !== focused.dataset.op)) keep = -1;
    const indexes = [];
    if (keep >= 0 && keep < first && keep < visibleOps.length) indexes.push(keep);
    for (let i = first; i < last; i += 1) indexes.push(i);
    if (keep >= last && keep < visibleOps.length) indexes.push(keep);
    for (const i of indexes) {
      const op = visibleOps[i];
      const row = keyedChild(body, rows, op.id, gen, () => {
        const node = el(
          "div", "seq-row",
          el("span", "seq-gutter"), el("span", "seq-gap"), el("span", "seq-arrow"),
          el("span", "seq-label", el("span", "seq-text"), el("span", "seq-dur")),
        );
        node.tabIndex = 0;
        node.setAttribute("role", "button");
        return node;
      });
      drawRow(row, op, i);
      order.push(row);
    }
    sweep(rows, gen);
    // DOM order = row order, so the browser's own Tab order (and a screen reader's) is top to bottom.
    let previous = null;
    for (const row of order) {
      const expected = previous ? previous.nextSibling : body.firstChild;
      if (row !== expected) body.insertBefore(row, expected);
      previous = row;
    }
  }

  function placePartial() {
    const box = partial.box;
    if (!box) return;
    let index = -1;
    if (partial.at) {
      for (let i = visibleOps.length - 1; i >= 0 && i >= visibleOps.length - 400; i -= 1) {
        const op = visibleOps[i];
        if (op.stack === model.activeStack && (op.destination === partial.at || op.source === partial.at)) {
          index = i;
          break;
        }
      }
    }
    partial.row = index;
    if (index < 0) {
      setClass(box.el, "placed", false);
      return;
    }
    if (box.el.parentNode !== canvas) canvas.appendChild(box.el);
    const p = proj.byId.get(partial.at);
    const x = centre(columnKey(p) || "human") ?? GUTTER;
    box.el.style.top = `${tops[index] + ROW_H + 4}px`;
    box.el.style.left = `${Math.max(GUTTER, x - 24)}px`;
    box.el.style.maxWidth = `${Math.max(280, width - x)}px`;
    setClass(box.el, "placed", true);
  }

  function update(next, options) {
    const { partialAt = null, partialBox = null } = options;
    const nextTier = options.tier || "detailed";
    const key = `${nextTier}|${rolesOnly}|${timeAxis}|${partialAt}|${options.sig ?? signature(next)}`;
    model = next;
    partial = { at: partialAt, box: partialBox, row: partial.row };
    if (key === lastKey) return;
    lastKey = key;
    tier = nextTier;
    proj = project(next);
    const ops = next.operations || [];
    visibleOps = rolesOnly
      ? ops.filter((op) => {
          const s = proj.byId.get(op.source);
          const d = proj.byId.get(op.destination);
          return !(s && s.kind === "tool") && !(d && d.kind === "tool");
        })
      : ops;
    ({ tops, gaps } = rowTops(visibleOps, timeAxis));
    const wasFollowing = follow;
    layoutColumns();
    const height = tops[visibleOps.length] + (partialAt ? PARTIAL_H : 0) + 8;
    for (const node of [canvas, body, lines]) node.style.height = `${height}px`;
    placePartial();
    if (wasFollowing) scroller.scrollTop = scroller.scrollHeight;
    drawRows();
  }

  const check = (input, on) => {
    if (input.checked !== Boolean(on)) {
      input.checked = Boolean(on);
      input.dispatchEvent(new Event("change"));
    }
  };

  return {
    update,
    setLens: (on) => check(lens.input, on),
    setTimeAxis: (on) => check(axis.input, on),
    /** Scroll `opId`'s row to the middle of the viewport and highlight it (the lens is lifted when it hides
     * the row); false when the model has no such operation. */
    scrollToOp(opId) {
      if (!model) return false;
      if (rolesOnly && !visibleOps.some((op) => op.id === opId) && (model.operations || []).some((op) => op.id === opId)) {
        check(lens.input, false);
      }
      const index = visibleOps.findIndex((op) => op.id === opId);
      if (index < 0) return false;
      highlighted = opId;
      follow = false;
      scroller.scrollTop = Math.max(0, HEAD_H + tops[index] + ROW_H / 2 - (scroller.clientHeight || 600) / 2);
      drawRows();
      for (const [id, row] of rows) setClass(row, "focused", id === opId);
      return true;
    },
    invalidate() {
      lastKey = "";
      layoutKey = "";
    },
    destroy() {
      if (resize) resize.disconnect();
      if (frame) cancelAnimationFrame(frame);
      bar.remove();
      scroller.remove();
    },
  };
}
