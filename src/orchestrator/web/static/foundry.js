// The Foundry screen: the workspace's Foundry searches (GET /api/foundry, newest first), each with its
// verdict, the seed's and the best candidate's score with its 95 % interval (a bar from low to high, a
// mark at the mean), and every candidate: parent, score, whether it is better than the seed, what it
// changed, with the unified diff of each changed component against its parent's text; a benchmark × candidate matrix (pass / fail / error counts and the interval per cell, each run a link to the run view) and the
// lineage as an indented tree; the score of each candidate over evaluations as a small SVG plot. Read-only; refreshed every 5 s while the screen is shown, every 2 s while a search runs (with its progress). See docs/foundry.md.

import { errorMessage, seg } from "./api.js";
import { fill, h } from "./dom.js";

const REFRESH_MS = 5000;
/** How often the screen asks while a search is running (conditional GETs: an unchanged answer is a 304). */
const LIVE_REFRESH_MS = 2000;

/** "0.75 [0.30, 0.95] · 3/4" */
export function scoreText(score) {
  if (!score || !Number.isFinite(score.mean)) return "-";
  const f = (n) => Number(n).toFixed(2);
  return `${f(score.mean)} [${f(score.low)}, ${f(score.high)}] · ${score.passes}/${score.runs}`;
}

function bar(score, testid) {
  const range = h("span", { class: "fd-range" });
  const mean = h("span", { class: "fd-mean" });
  const pct = (n) => `${Math.max(0, Math.min(1, Number(n) || 0)) * 100}%`;
  range.style.left = pct(score.low);
  range.style.width = `calc(${pct(score.high)} - ${pct(score.low)})`;
  mean.style.left = pct(score.mean);
  return h("span", { class: "fd-bar", testid, "aria-hidden": "true" }, range, mean);
}

function scoreRow(label, score, testid) {
  return h("div", { class: "fd-score" }, h("span", { class: "fd-label" }, label), bar(score, `${testid}-bar`),
    h("span", { class: "fd-value", testid }, scoreText(score)));
}

function candidateRow(candidate, best) {
  const changed = (candidate.changed || []).join(", ") || "(the seed)";
  const mark = candidate.id === best ? "best" : candidate.betterThanSeed ? "better" : "";
  const note = (candidate.problems || []).length ? `not a valid Guild: ${candidate.problems[0]}` : candidate.complete ? "" : "partly evaluated";
  return h("tr", { testid: "foundry-candidate" },
    h("td", { class: "mono" }, candidate.id),
    h("td", { class: "mono" }, candidate.parent || "-"),
    h("td", {}, scoreText(candidate.score)),
    h("td", {}, mark),
    h("td", {}, changed, note ? h("div", { class: "muted" }, note) : null,
      (candidate.diffs || []).map((d) => h("details", { class: "fd-diff", testid: "foundry-diff" },
        h("summary", {}, `diff of ${d.component} against ${candidate.parent}`),
        h("pre", {}, d.diff)))));
}

/** "✓3 ✗1 !0" — the pass / fail / error counts of one benchmark × candidate cell. */
export function countsText(counts) {
  const c = counts || {};
  return `✓${c.pass ?? 0} ✗${c.fail ?? 0} !${c.error ?? 0}`;
}

const MARK = { pass: "✓", fail: "✗", error: "!" };

/** A cell's runs, each a link to the run view (`#watch/<runId>`): its outcome mark and repeat number. */
function runLinks(runs) {
  if (!runs.length) return null;
  return h("div", { class: "fd-runs" }, runs.map((run) =>
    h("a", { href: `#watch/${seg(run.runId)}`, class: `fd-run fd-run-${run.status}`, testid: "foundry-run",
      title: `repeat ${run.repeat}: ${run.status} — open this run in the run view` },
    `${MARK[run.status] || "?"}${run.repeat}`)));
}

/** The benchmark × candidate matrix: a row per benchmark, a column per candidate, each cell its run counts
 * and the 95 % interval of its pass rate. Scrolls sideways inside its box when the candidates are many. */
function matrix(search) {
  const candidates = search.candidates || [];
  const benches = [...new Set(candidates.flatMap((c) => Object.keys(c.benchmarks || {})))].sort();
  if (!benches.length) return null;
  const f = (n) => Number(n).toFixed(2);
  const cell = (c, bench) => {
    const score = (c.benchmarks || {})[bench];
    const counts = (c.outcomes || {})[bench];
    const interval = score && score.runs ? `[${f(score.low)}, ${f(score.high)}]` : "not run";
    return h("td", { testid: "foundry-cell", "data-candidate": c.id, "data-benchmark": bench },
      h("span", { class: "mono" }, countsText(counts)), h("div", { class: "muted" }, interval),
      runLinks(((c.runs || {})[bench]) || []));
  };
  return h("div", { class: "fd-matrix-box" },
    h("table", { class: "fd-matrix", testid: "foundry-matrix" },
      h("caption", {}, "Benchmark × candidate: passed ✓, failed ✗, errors ! and the 95 % interval"),
      h("thead", {}, h("tr", {}, h("th", {}, "Benchmark"),
        candidates.map((c) => h("th", { class: "mono", title: c.id }, c.id.slice(0, 8))))),
      h("tbody", {}, benches.map((bench) => h("tr", {}, h("th", { class: "mono" }, bench),
        candidates.map((c) => cell(c, bench)))))));
}

/** The candidates as a tree, each child indented under its parent (the seed at the root). */
function lineage(search) {
  const candidates = search.candidates || [];
  const known = new Set(candidates.map((c) => c.id));
  const children = new Map();
  for (const c of candidates) {
    const key = c.parent && known.has(c.parent) && c.parent !== c.id ? c.parent : null;
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(c);
  }
  const seen = new Set();
  const branch = (parent, depth) => {
    const list = (children.get(parent) || []).filter((c) => !seen.has(c.id));
    if (!list.length) return null;
    return h("ul", { class: depth ? "fd-tree" : "fd-tree fd-root" }, list.map((c) => {
      seen.add(c.id);
      const mark = c.id === search.bestCandidate ? " · best" : c.betterThanSeed ? " · better" : "";
      return h("li", { testid: "foundry-node", "data-depth": String(depth), "data-id": c.id },
        h("span", { class: "mono", title: c.id }, c.id.slice(0, 8)), ` ${scoreText(c.score)}${mark}`,
        branch(c.id, depth + 1));
    }));
  };
  return h("div", { class: "fd-lineage", testid: "foundry-lineage" }, h("h4", {}, "Lineage (parent → child)"), branch(null, 0));
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  for (const child of children) if (child) el.append(child);
  return el;
}

/** Each candidate's score in the order it was evaluated: a dot at the mean, a whisker over the 95 %
 * interval, a dashed line at the seed's mean. Scales to its box's width. */
function plot(search) {
  const candidates = (search.candidates || []).filter((c) => c.score && c.score.runs > 0);
  if (!candidates.length) return null;
  const W = 300, H = 100, PAD = 12;
  const x = (i) => PAD + (candidates.length === 1 ? (W - 2 * PAD) / 2 : (i * (W - 2 * PAD)) / (candidates.length - 1));
  const y = (v) => H - PAD - Math.max(0, Math.min(1, Number(v) || 0)) * (H - 2 * PAD);
  const seed = search.seedScore && Number.isFinite(search.seedScore.mean) ? search.seedScore.mean : null;
  const marks = candidates.map((c, i) => svg("g", {},
    svg("line", { x1: x(i), x2: x(i), y1: y(c.score.low), y2: y(c.score.high), class: "fd-whisker" }),
    svg("circle", { cx: x(i), cy: y(c.score.mean), r: 3.5, class: c.id === search.bestCandidate ? "fd-dot fd-best" : "fd-dot",
      "data-testid": "foundry-point", "data-id": c.id },
    svg("title", {}, `${c.id}: ${scoreText(c.score)}`))));
  return h("figure", { class: "fd-plot" },
    svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "Score of each candidate over evaluations", "data-testid": "foundry-plot" },
      svg("line", { x1: PAD, x2: W - PAD, y1: y(0), y2: y(0), class: "fd-axis" }),
      svg("line", { x1: PAD, x2: W - PAD, y1: y(1), y2: y(1), class: "fd-axis" }),
      seed === null ? null : svg("line", { x1: PAD, x2: W - PAD, y1: y(seed), y2: y(seed), class: "fd-seedline" }),
      ...marks),
    h("figcaption", { class: "muted" }, "Score [95 % interval] of each candidate in the order the search found it (0 to 1; dashed: the seed)"));
}

/** A running search's metric calls against its budget, as a bar and in words. */
function progress(search) {
  const done = Number(search.metricCalls) || 0;
  const budget = Number(search.budget) || 0;
  const share = budget > 0 ? Math.max(0, Math.min(1, done / budget)) : 0;
  const fill = h("span", { class: "fd-progress-fill" });
  fill.style.width = `${share * 100}%`;
  return h("div", { class: "fd-progress", testid: "foundry-progress", role: "progressbar",
    "aria-valuemin": "0", "aria-valuemax": String(budget), "aria-valuenow": String(done) },
    h("span", { class: "fd-progress-track" }, fill),
    h("span", {}, `running: ${done}/${budget} metric calls · ${search.evaluations} evaluations · best so far ${scoreText(search.bestScore)}`));
}

function searchCard(search) {
  const improved = search.improved ? "improved" : "not improved";
  return h("article", { class: "fd-search", testid: "foundry-search" },
    h("header", { class: "fd-head" },
      h("h3", { class: "mono" }, search.path),
      h("span", { class: `chip fd-status fd-${search.status}`, testid: "foundry-status" }, search.status),
      h("span", { class: "muted" }, `${search.evaluations} evaluations · ${search.metricCalls ?? "?"}/${search.budget} metric calls · ${search.repeats} repeat(s) · ${improved}`)),
    search.status === "running" ? progress(search) : null,
    h("p", { class: "fd-verdict", testid: "foundry-verdict" }, search.verdict),
    search.message ? h("p", { class: "muted" }, search.message) : null,
    scoreRow("Seed", search.seedScore, "foundry-seed"),
    scoreRow(`Best (${search.bestCandidate})`, search.bestScore, "foundry-best"),
    h("table", { class: "fd-candidates", testid: "foundry-candidates" },
      h("thead", {}, h("tr", {}, ["Candidate", "Parent", "Score [95 % interval]", "", "Changed"].map((t) => h("th", {}, t)))),
      h("tbody", {}, (search.candidates || []).map((c) => candidateRow(c, search.bestCandidate)))),
    matrix(search),
    lineage(search),
    plot(search));
}

/** The screen: `render()` draws the last answer and asks again when it is older than REFRESH_MS. */
export function createFoundry(root, app) {
  let searches = null;
  let error = null;
  let fetchedAt = 0;
  let loading = false;

  async function load() {
    loading = true;
    try {
      const answer = await app.api.get("/api/foundry");
      searches = Array.isArray(answer && answer.searches) ? answer.searches : [];
      error = null;
    } catch (caught) {
      error = caught;
    } finally {
      loading = false;
      fetchedAt = Date.now();
      draw();
    }
  }

  function draw() {
    const body = [];
    if (error) body.push(h("p", { class: "error", role: "alert" }, `Could not load the Foundry searches: ${errorMessage(error)}`));
    if (searches && searches.length === 0) {
      body.push(h("p", { class: "muted", testid: "foundry-empty" },
        "No Foundry search in this workspace yet. Run ", h("code", {}, "orchestrator foundry SUITE_DIR"),
        " to search for role prompts and tool descriptions that score better with your model (docs/foundry.md)."));
    }
    for (const search of searches || []) body.push(searchCard(search));
    fill(root, h("h2", {}, "Foundry"), body);
  }

  return {
    render() {
      if (app.state.screen !== "foundry") return;
      if (searches === null && !loading && fetchedAt === 0) draw();
      const live = (searches || []).some((search) => search.status === "running");
      if (!loading && Date.now() - fetchedAt >= (live ? LIVE_REFRESH_MS : REFRESH_MS)) load();
    },
  };
}
