// The inspector's find bar (inspector.js): jump between the problems of the loaded transcript — tool
// results the server classified amber or red, error finish cards and model failures — and find text in
// it. Works on what is loaded ("Load older turns" extends it); nothing is fetched.
//
//   createTranscriptNav(list) -> {el, refresh()}
//   list = the transcript element whose children are the turn rows (`.rv-turn-row`)

import { el } from "./rvdom.js";

const PROBLEMS = ".tr.sev-warn, .tr.sev-fail, .rv-finish.err, .rv-line.rv-error";

function button(text, title, testid) {
  const node = el("button", "rv-link rv-nav-button", text);
  node.type = "button";
  node.title = title;
  node.dataset.testid = testid;
  return node;
}

export function createTranscriptNav(list) {
  const prevProblem = button("▲", "Previous problem", "inspector-prev-problem");
  const nextProblem = button("⚠ Next problem ▼", "Next problem (amber or red result, error)", "inspector-next-problem");
  const problemCount = el("span", "rv-nav-count");
  problemCount.dataset.testid = "inspector-problem-count";
  const find = el("input", "rv-nav-find");
  find.type = "search";
  find.placeholder = "Find in transcript";
  find.setAttribute("aria-label", "Find in the loaded transcript (Enter: next, Shift+Enter: previous)");
  find.dataset.testid = "inspector-find";
  const findCount = el("span", "rv-nav-count");
  findCount.dataset.testid = "inspector-find-count";
  const bar = el("div", "rv-nav", nextProblem, prevProblem, problemCount, find, findCount);
  const state = { problem: -1, hit: -1, query: "" };

  function mark(node) {
    for (const old of list.querySelectorAll(".rv-current")) old.classList.remove("rv-current");
    if (!node) return;
    node.classList.add("rv-current");
    node.scrollIntoView?.({ block: "center" });
  }

  function problems() {
    return [...list.querySelectorAll(PROBLEMS)];
  }

  function stepProblem(direction) {
    const all = problems();
    if (!all.length) {
      problemCount.textContent = "no problems";
      return;
    }
    state.problem = (state.problem + direction + all.length) % all.length;
    mark(all[state.problem]);
    problemCount.textContent = `${state.problem + 1} of ${all.length}`;
  }

  function hits() {
    const query = state.query.toLocaleLowerCase();
    return query ? [...list.children].filter((row) => row.textContent.toLocaleLowerCase().includes(query)) : [];
  }

  function stepFind(direction) {
    for (const old of list.querySelectorAll(".rv-hit")) old.classList.remove("rv-hit");
    const all = hits();
    for (const row of all) row.classList.add("rv-hit");
    if (!all.length) {
      findCount.textContent = state.query ? "no match" : "";
      mark(null);
      return;
    }
    state.hit = (state.hit + direction + all.length) % all.length;
    mark(all[state.hit]);
    findCount.textContent = `${state.hit + 1} of ${all.length}`;
  }

  nextProblem.addEventListener("click", () => stepProblem(1));
  prevProblem.addEventListener("click", () => stepProblem(-1));
  find.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    if (find.value !== state.query) {
      state.query = find.value;
      state.hit = -1;
    }
    stepFind(event.shiftKey ? -1 : 1);
  });

  return {
    el: bar,
    /** Recount after the transcript changed (new or older turns, refreshed results). */
    refresh() {
      const count = problems().length;
      if (state.problem < 0 || state.problem >= count) problemCount.textContent = count ? `${count} ${count === 1 ? "problem" : "problems"}` : "";
      nextProblem.disabled = prevProblem.disabled = count === 0;
    },
  };
}
