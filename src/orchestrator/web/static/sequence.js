// The sequence view: a column for every guild role plus `human` and `tools` from the
// first frame (interrupt roots and roles the guild does not list get columns on the right when they
// appear, so columns never move), a row per operation, loop-back arrows for calls within one column,
// dashed static observe/terminate lines, and an optional roles-only lens that hides tool traffic.
//
//   createSequence(container, {labels, config, onOp(opId), onColumn(key)}) -> {
//     update(model, {tier, sig?, partialAt, partialBox}), setLens(rolesOnly), invalidate(), destroy() }
//
// Rows are virtualized: the canvas is as tall as every row, but only the rows inside the scrolled
// viewport (plus a margin) exist in the DOM, keyed by operation id and redrawn only when their
// operation changed. A finished run of thousands of operations therefore costs a few dozen nodes, and a
// poll with an unchanged model returns at once. The view follows the tail while scrolled to the bottom.

import { severityOf } from "./labels.js";
import { project, opSignature, signature } from "./projection.js";
import { el, keyedChild, setAttr, setClass, setClassName, setText, sweep } from "./rvdom.js";

const ROW_H = 30;
const HEAD_H = 36;
const GUTTER = 58;
const MIN_COL_W = 104;
const MAX_COL_W = 200;
const OVERSCAN = 12;
const PARTIAL_H = 140;

function columnKey(p) {
  if (!p) return null;
  if (p.kind === "human") return "human";
  if (p.kind === "tool") return "tools";
  if (p.kind === "interrupt") return "interrupt";
  return p.role;
}

export function createSequence(container, { labels, config, onOp, onColumn }) {
  const bar = el("div", "seq-bar");
  const lensLabel = el("label", "seq-lens");
  const lens = document.createElement("input");
  lens.type = "checkbox";
  lens.dataset.testid = "sequence-roles-only";
  lensLabel.append(lens, document.createTextNode(" roles only"));
  bar.appendChild(lensLabel);
  const scroller = el("div", "seq-scroll");
  scroller.dataset.testid = "sequence-view";
  const canvas = el("div", "seq-canvas");
  const head = el("div", "seq-head");
  const lines = el("div", "seq-lines");
  const body = el("div", "seq-body");
  canvas.append(lines, body);
  scroller.append(head, canvas);
  container.append(bar, scroller);

  const guildRoles = Object.keys((config && config.roles) || {});
  const entry = config && config.entryRole;
  const baseColumns = ["human", ...(entry && guildRoles.includes(entry) ? [entry] : []), ...guildRoles.filter((r) => r !== entry), "tools"];
  const extraColumns = [];
  const headers = new Map();
  const lifelines = new Map();
  const rows = new Map(); // op id -> row element
  let rolesOnly = false;
  let model = null;
  let proj = null;
  let tier = "detailed";
  let visibleOps = [];
  let columns = [];
  let colIndex = new Map();
  let colW = MIN_COL_W;
  let lastKey = "";
  let layoutKey = "";
  let gen = 0;
  let partial = { at: null, box: null, row: -1 };
  let follow = true;
  let frame = 0;

  lens.addEventListener("change", () => {
    rolesOnly = lens.checked;
    lastKey = "";
    if (model) update(model, { tier, partialAt: partial.at, partialBox: partial.box });
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
    }
  });
  head.addEventListener("click", (event) => {
    const cell = event.target.closest(".seq-col");
    if (cell && onColumn) onColumn(cell.dataset.col);
  });
  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => {
    const width = measureColumnWidth();
    if (width !== colW && model) {
      lastKey = "";
      update(model, { tier, partialAt: partial.at, partialBox: partial.box });
    }
  }) : null;
  if (resize) resize.observe(scroller);

  function measureColumnWidth() {
    const available = (scroller.clientWidth || 900) - GUTTER - 8;
    return Math.max(MIN_COL_W, Math.min(MAX_COL_W, Math.floor(available / Math.max(1, columns.length))));
  }

  function centre(key) {
    const i = colIndex.get(key);
    return i === undefined ? null : GUTTER + i * colW + colW / 2;
  }

  function layoutColumns() {
    for (const p of model.participants || []) {
      const key = columnKey(p);
      if (key && !baseColumns.includes(key) && !extraColumns.includes(key)) extraColumns.push(key);
    }
    columns = [...baseColumns, ...extraColumns].filter((k) => !(rolesOnly && k === "tools"));
    colIndex = new Map(columns.map((k, i) => [k, i]));
    colW = measureColumnWidth();
    const key = `${tier}|${colW}|${columns.join(",")}`;
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
      setClassName(cell, `seq-col kind-${k === "human" || k === "tools" || k === "interrupt" ? k : "role"}`);
      setText(cell, labels.column(k, tier));
      setAttr(cell, "title", k);
      const line = keyedChild(lines, lifelines, k, gen, () => el("div", "seq-life"));
      line.style.left = `${GUTTER + i * colW + colW / 2}px`;
    });
    sweep(headers, gen);
    sweep(lifelines, gen);
    const width = `${GUTTER + columns.length * colW + 8}px`;
    canvas.style.width = width;
    head.style.width = width;
    for (const row of rows.values()) row.__sig = ""; // columns moved: every row redraws
  }

  function drawRow(row, op, index) {
    const src = proj.byId.get(op.source);
    const dst = proj.byId.get(op.destination);
    const a = centre(columnKey(src) || "human");
    const b = centre(columnKey(dst) || "human");
    const anim = proj.animates(op);
    const sig = `${opSignature(op)}|${anim}|${index}|${tier}|${layoutKey}`;
    if (row.__sig === sig) return;
    row.__sig = sig;
    row.style.top = `${index * ROW_H}px`;
    row.dataset.op = op.id;
    const error = op.outcome === "error" || op.outcome === "terminated";
    const loop = a === b;
    setClassName(
      row,
      `seq-row kind-${op.kind}${op.lifecycle === "in_flight" ? " in-flight" : ""}${anim ? " anim" : ""}` +
        `${error ? " err" : ""}${severityOf(op) ? ` sev-${severityOf(op)}` : ""}${loop ? " loop" : ""}${proj.paused(op.stack) ? " paused" : ""}${op.stack !== "main" ? " side" : ""}`,
    );
    const [gutter, arrow, label] = row.children;
    setText(gutter, op.id.replace(/^op-/, "#"));
    const text = labels.operation(op, proj.byId, tier);
    setText(label, text);
    setAttr(row, "title", `${text}\n${op.id} · ${op.kind} · ${op.stack}${op.outcome ? ` · ${op.outcome}` : ""}`);
    if (loop) {
      arrow.style.left = `${a}px`;
      arrow.style.width = `${Math.min(36, colW / 3)}px`;
      label.style.left = `${a + Math.min(36, colW / 3) + 6}px`;
      label.style.width = `${Math.max(60, colW - 10)}px`;
      setClass(arrow, "rtl", false);
    } else {
      const left = Math.min(a, b);
      arrow.style.left = `${left}px`;
      arrow.style.width = `${Math.abs(b - a)}px`;
      label.style.left = `${left + 6}px`;
      label.style.width = `${Math.max(60, Math.abs(b - a) - 12)}px`;
      setClass(arrow, "rtl", b < a);
    }
  }

  function drawRows() {
    if (!model) return;
    const top = scroller.scrollTop - HEAD_H;
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(visibleOps.length, Math.ceil((top + (scroller.clientHeight || 600)) / ROW_H) + OVERSCAN);
    gen += 1;
    for (let i = first; i < last; i += 1) {
      const op = visibleOps[i];
      const row = keyedChild(body, rows, op.id, gen, () => {
        const node = el("div", "seq-row", el("span", "seq-gutter"), el("span", "seq-arrow"), el("span", "seq-label"));
        node.tabIndex = 0;
        node.setAttribute("role", "button");
        return node;
      });
      drawRow(row, op, i);
    }
    sweep(rows, gen);
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
    const x = centre(columnKey(proj.byId.get(partial.at))) ?? GUTTER;
    box.el.style.top = `${(index + 1) * ROW_H + 4}px`;
    box.el.style.left = `${Math.max(GUTTER, x - 24)}px`;
    box.el.style.maxWidth = `${Math.max(280, GUTTER + columns.length * colW - x)}px`;
    setClass(box.el, "placed", true);
  }

  function update(next, options) {
    const { partialAt = null, partialBox = null } = options;
    const nextTier = options.tier || "detailed";
    const key = `${nextTier}|${rolesOnly}|${partialAt}|${options.sig ?? signature(next)}`;
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
    const wasFollowing = follow;
    layoutColumns();
    const extra = partialAt ? PARTIAL_H : 0;
    const height = visibleOps.length * ROW_H + extra + 8;
    canvas.style.height = `${height}px`;
    body.style.height = `${height}px`;
    lines.style.height = `${height}px`;
    placePartial();
    if (wasFollowing) scroller.scrollTop = scroller.scrollHeight;
    drawRows();
  }

  return {
    update,
    setLens(on) {
      if (lens.checked !== Boolean(on)) {
        lens.checked = Boolean(on);
        lens.dispatchEvent(new Event("change"));
      }
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
