// Pure layout of the sequence view (no DOM): which columns exist, how wide they are, where each row sits
// (evenly, or spaced by time), and where a row's arrow and label go.
//
//   columnKey(p) -> "human" | "interrupt" | <role name> | null (a tool: it has no column of its own)
//   growColumns(columns, participants) -> columns   append-only: new keys go on the right, never reorder
//   columnLayout(available, count) -> {colW, tail}  column width and the room kept right of the last one
//   rowTops(ops, timeAxis) -> {tops, gaps}          tops[i] = y of row i, tops[n] = the total height;
//                                                   gaps[i] = ms since the previous row (time axis only)
//   rowAt(tops, y) -> index of the row under y (binary search)
//   placeRow(a, b, shape, colW, width) -> {arrowLeft, arrowWidth, rtl, labelLeft, labelWidth, flip}
//
// Columns are participants, not the Guild: human first, then every role (one column per role name;
// its instances are told apart by "#n" in the labels) and the interrupt root in the order they first
// appear. A tool has no column: its call and return are drawn as a short stub into a lane beside the
// calling role's lifeline, with the label right after it (or before it, right-aligned, when the
// column is the last one and the right edge is near).

export const ROW_H = 30;
export const HEAD_H = 36;
export const GUTTER = 58;
export const MIN_COL_W = 84;
export const MAX_COL_W = 240;
/** At most this much room is kept right of the last column for its tool lane and labels (less when the
 * pane is narrow: a label that finds no room on the right goes left of its lifeline). */
export const TAIL = 120;
/** The tool lane: how far a tool stub reaches right of its caller's lifeline. */
export const TOOL_W = 30;
/** Time axis: pixels per second of wall time between two rows, and the largest gap drawn. */
export const PX_PER_SECOND = 40;
export const MAX_GAP = 8 * ROW_H;
const LABEL_MAX = 440;
const LABEL_MIN_RIGHT = 190;

/** The column a participant is drawn in; null for a tool (drawn in its caller's lane). */
export function columnKey(p) {
  if (!p) return null;
  if (p.kind === "human") return "human";
  if (p.kind === "interrupt") return "interrupt";
  if (p.kind === "tool") return null;
  return p.role;
}

/** `columns` plus the keys of `participants` it lacks, appended in order (the same array when none). */
export function growColumns(columns, participants) {
  let next = columns;
  if (!next.includes("human")) next = ["human", ...next];
  for (const p of participants || []) {
    const key = columnKey(p);
    if (key !== null && !next.includes(key)) {
      if (next === columns) next = [...columns];
      next.push(key);
    }
  }
  return next;
}

/** Column width and tail so `count` columns fill `available` px (bounded; a narrow view scrolls). */
export function columnLayout(available, count) {
  const n = Math.max(1, count);
  const tail = Math.max(0, Math.min(TAIL, available - GUTTER - n * MIN_COL_W));
  const colW = Math.max(MIN_COL_W, Math.min(MAX_COL_W, Math.floor((available - GUTTER - tail) / n)));
  return { colW, tail };
}

/**
 * Row positions. Evenly spaced by default; on the time axis each row sits below the previous one by
 * ROW_H plus PX_PER_SECOND per second of wall time between their starts (capped at MAX_GAP), so a
 * slow call leaves a visible gap and a burst of fast calls stays compact.
 */
export function rowTops(ops, timeAxis) {
  const n = ops.length;
  const tops = new Float64Array(n + 1);
  const gaps = new Float64Array(n);
  let previous = NaN;
  let y = 0;
  for (let i = 0; i < n; i += 1) {
    let step = ROW_H;
    if (timeAxis) {
      const at = Date.parse(ops[i].startedAt);
      const gap = Number.isFinite(at) && Number.isFinite(previous) ? Math.max(0, at - previous) : 0;
      if (Number.isFinite(at)) previous = at;
      gaps[i] = gap;
      step = Math.min(MAX_GAP, ROW_H + Math.round((gap / 1000) * PX_PER_SECOND));
    }
    if (i > 0) y += step;
    tops[i] = y;
  }
  tops[n] = n ? y + ROW_H : 0;
  return { tops, gaps };
}

/** The index of the row whose band contains `y` (0 above the first, n - 1 below the last). */
export function rowAt(tops, y) {
  const n = tops.length - 1;
  if (n <= 0) return 0;
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (tops[mid] <= y) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Where a row's arrow and label go. `a`/`b` are the x of its source and destination lifelines;
 * `shape` is "span" (between two columns), "loop" (a call within one column) or "tool-call" /
 * "tool-return" (a stub into the caller's tool lane at `a`). `width` is the canvas width.
 */
export function placeRow(a, b, shape, colW, width) {
  if (shape === "span") {
    const left = Math.min(a, b);
    const room = Math.min(LABEL_MAX, width - left - 14);
    return {
      arrowLeft: left, arrowWidth: Math.abs(b - a), rtl: b < a,
      labelLeft: left + 6, labelWidth: Math.max(Math.abs(b - a) - 12, room), flip: false,
    };
  }
  const stub = shape === "loop" ? Math.min(36, colW / 3) : TOOL_W;
  const start = a + stub + 6;
  const right = width - start - 8;
  const place = { arrowLeft: a, arrowWidth: stub, rtl: shape === "tool-return" };
  if (right >= LABEL_MIN_RIGHT) return { ...place, labelLeft: start, labelWidth: Math.min(LABEL_MAX, right), flip: false };
  const labelWidth = Math.max(60, Math.min(LABEL_MAX, a - 6 - GUTTER - 4));
  return { ...place, labelLeft: a - 6 - labelWidth, labelWidth, flip: true };
}
