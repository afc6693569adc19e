// The context track of one role instance (issue 18): a small inline SVG of its prompt tokens over its own
// lifetime (a step line: a turn's prompt size holds until the next turn) against the effective
// context budget — the budget line, the pressure threshold (dashed),
// compactions (▼) and pressure points / rejections (◆ / ✖) marked, a tooltip with the numbers.
//
// Data: one entry of GET /api/runs/:id/context's `tracks` (flow/contexttrack.py) and the instance's
// waterfall row (its offsetMs / durationMs place the samples); nothing is derived here but layout.
// Built with createElementNS only (no innerHTML); every string is a text node.
//
// Public interface:
//   contextSignature(track, row) -> string (unchanged signature: nothing to redraw)
//   drawContextTrack(track, row, threshold) -> <svg> element
//   contextSummary(track) -> "peak 87% of context" | ""

import { svg } from "./rvdom.js";

const W = 1000; // the inner viewBox's width; stretched to the cell (lines keep their width)
const H = 22;
const MARK_GLYPHS = { compacted: "▼", pressure: "◆", rejected: "✖" };
const MARK_WORDS = { compacted: "compacted", pressure: "context pressure", rejected: "rejected as too long" };

const BUDGET_SOURCES = { logged: " (as the engine logged it)", run: " (from the run's log)", settings: " (from the settings)" };

const fmt = (n) => (n == null ? "?" : Number(n).toLocaleString("en-US"));

/** The peak's tooltip beside the track: "peak 87% of context (25,000 of 28,672 tokens)". */
export function contextSummary(track) {
  if (!track || !track.turns) return "";
  return track.peakPercent != null
    ? `peak ${track.peakPercent}% of context (${fmt(track.peakTokens)} of ${fmt(track.budget)} tokens)`
    : `peak ${fmt(track.peakTokens)} prompt tokens`;
}

export function contextSignature(track, row) {
  if (!track) return "";
  const last = track.samples.length ? track.samples[track.samples.length - 1] : null;
  return [track.turns, track.marks.length, track.budget, last && last[0], row ? row.offsetMs : "", row ? row.durationMs : ""].join("|");
}

function title(node, text) {
  const t = svg("title");
  t.textContent = text;
  node.appendChild(t);
  return node;
}

export function drawContextTrack(track, row, threshold) {
  const start = row ? row.offsetMs : track.samples.length ? track.samples[0][0] : 0;
  const last = track.samples.length ? track.samples[track.samples.length - 1][0] : start;
  const span = Math.max(1, row && row.durationMs ? row.durationMs : last - start);
  const top = Math.max(1, track.budget || 0, track.peakTokens || 0) * 1.08;
  const x = (offset) => Math.min(W, Math.max(0, ((offset - start) / span) * W));
  const y = (tokens) => H - 1 - (Math.max(0, tokens) / top) * (H - 4);
  const pct = (offset) => `${((x(offset) / W) * 100).toFixed(2)}%`;

  const outer = svg("svg", { class: "ctx-track", role: "img", "data-testid": "context-track", height: H });
  const compactions = track.marks.filter((m) => m.kind === "compacted").length;
  const pressure = track.marks.filter((m) => m.kind === "pressure").length;
  const budget = track.budget
    ? `budget ${fmt(track.budget)}${BUDGET_SOURCES[track.budgetSource] || ""}`
    : "budget unknown";
  outer.setAttribute(
    "aria-label",
    `Context: peak ${fmt(track.peakTokens)} prompt tokens${track.peakPercent != null ? ` (${track.peakPercent}%)` : ""}, ${budget}; ` +
      `${track.turns} turn${track.turns === 1 ? "" : "s"}, ${compactions} compaction${compactions === 1 ? "" : "s"}, ` +
      `${pressure} pressure point${pressure === 1 ? "" : "s"}`,
  );
  title(outer, outer.getAttribute("aria-label"));

  const inner = svg("svg", { x: 0, y: 0, width: "100%", height: H, viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none" });
  inner.appendChild(svg("rect", { class: "ctx-bg", x: 0, y: 0, width: W, height: H }));
  if (track.budget) {
    inner.appendChild(svg("line", { class: "ctx-budget", x1: 0, x2: W, y1: y(track.budget), y2: y(track.budget) }));
    if (threshold) {
      const at = y(track.budget * threshold);
      inner.appendChild(svg("line", { class: "ctx-threshold", x1: 0, x2: W, y1: at, y2: at }));
    }
  }
  if (track.samples.length) {
    // A step line: each turn's prompt size holds until the next turn, the last one to the track's end.
    const points = [];
    track.samples.forEach(([offset, tokens], i) => {
      const next = i + 1 < track.samples.length ? x(track.samples[i + 1][0]) : W;
      points.push(`${x(offset).toFixed(1)},${y(tokens).toFixed(1)}`, `${next.toFixed(1)},${y(tokens).toFixed(1)}`);
    });
    inner.appendChild(svg("polyline", { class: "ctx-line", points: points.join(" ") }));
  }
  outer.appendChild(inner);
  for (const mark of track.marks) {
    const glyph = svg("text", {
      class: `ctx-mark ctx-${mark.kind}`,
      x: pct(mark.offsetMs),
      y: mark.kind === "compacted" ? 8 : H - 2,
      "text-anchor": "middle",
      "data-kind": mark.kind,
    });
    glyph.textContent = MARK_GLYPHS[mark.kind] || "•";
    const tokens = mark.tokens != null ? ` at ${fmt(mark.tokens)} tokens` : "";
    title(glyph, `${MARK_WORDS[mark.kind] || mark.kind}${tokens}${mark.detail ? ` (${mark.detail})` : ""}, +${(mark.offsetMs - start).toLocaleString("en-US")} ms`);
    outer.appendChild(glyph);
  }
  return outer;
}
