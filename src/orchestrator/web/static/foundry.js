// The Foundry screen: the workspace's Foundry searches (GET /api/foundry, newest first), each with its
// verdict, the seed's and the best candidate's score with its 95 % interval (a bar from low to high, a
// mark at the mean), and every candidate: parent, score, whether it is better than the seed, what it
// changed. Read-only; refreshed every 5 s while the screen is shown. See docs/foundry.md.

import { errorMessage } from "./api.js";
import { fill, h } from "./dom.js";

const REFRESH_MS = 5000;

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
    h("td", {}, changed, note ? h("div", { class: "muted" }, note) : null));
}

function searchCard(search) {
  const improved = search.improved ? "improved" : "not improved";
  return h("article", { class: "fd-search", testid: "foundry-search" },
    h("header", { class: "fd-head" },
      h("h3", { class: "mono" }, search.path),
      h("span", { class: `chip fd-status fd-${search.status}`, testid: "foundry-status" }, search.status),
      h("span", { class: "muted" }, `${search.evaluations} evaluations · ${search.metricCalls ?? "?"}/${search.budget} metric calls · ${search.repeats} repeat(s) · ${improved}`)),
    h("p", { class: "fd-verdict", testid: "foundry-verdict" }, search.verdict),
    search.message ? h("p", { class: "muted" }, search.message) : null,
    scoreRow("Seed", search.seedScore, "foundry-seed"),
    scoreRow(`Best (${search.bestCandidate})`, search.bestScore, "foundry-best"),
    h("table", { class: "fd-candidates", testid: "foundry-candidates" },
      h("thead", {}, h("tr", {}, ["Candidate", "Parent", "Score [95 % interval]", "", "Changed"].map((t) => h("th", {}, t)))),
      h("tbody", {}, (search.candidates || []).map((c) => candidateRow(c, search.bestCandidate)))));
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
      if (!loading && Date.now() - fetchedAt >= REFRESH_MS) load();
    },
  };
}
