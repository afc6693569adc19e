// The run view: the flow and sequence views of one run, its "now" caption, cost strip,
// live partial text, operation cards and the instance inspector.
//
// Public interface (agreed with the shell):
//   createRunView(root, ctx) -> {render(flow, runView), setMode('flow'|'sequence'), setTier(t),
//                                focusOperation(opId), destroy()}
//   ctx = {runId, config (GET /api/config), api: {get(path) -> Promise<json>},
//          stream (stream.js createStream(), or any object with onDelta(fn) -> unsubscribe; or null),
//          getTier() -> 'detailed'|'friendly'|'whimsical',
//          showAllOperations?() -> the shell polls the whole model (?window=all) from now on}
//   The object also has startReplay(): the replay scrubber (replay.js) opens at operation 1 and plays;
//   while it is open the view draws the replay's frame, and polls only update what the replay knows.
//   `replayState` -> {at, total, playing, frame} says where it is (frame: the model on screen).
// A long run's flow answer is windowed (operationsOmitted > 0): the view says how many earlier operations
// it leaves out and offers "Show all", which calls showAllOperations.
// The shell calls render() on every poll with GET /api/runs/:id/flow and GET /api/runs/:id. Rendering is
// incremental: an unchanged model and view cost a signature comparison; changed frames touch only the
// keyed nodes that changed. The run view never subscribes the stream (the shell owns the subscription);
// it listens for deltas of its run and shows them under the in-flight row.
//
// The invariant (activeStack / activeParticipant) is read from the model. The instance behind a role
// participant (for ?instance= transcripts and for pairing stream partials) is the participant's
// `instanceId` when the server sends one, else read off runView.roleTree (pre-order start order per
// role name matches the adapter's per-role numbering for the entry role's tree).

import { createCallTree } from "./calltree.js";
import { createFlowGraph } from "./flowgraph.js";
import { openInspector } from "./inspector.js";
import { createLabels } from "./labels.js";
import { openOperationCard } from "./opcard.js";
import { project, signature } from "./projection.js";
import { createReplay } from "./replay.js";
import { compact, duration, el, ensureStylesheet, setClass, setText } from "./rvdom.js";
import { createSequence } from "./sequence.js";
import { createSearch } from "./search.js";
import { statusWord } from "./status.js";
import { createPartials } from "./stream.js";

const LIVE = new Set(["running", "unknown", "needs_clarification"]);

/** Milliseconds since the epoch of an ISO timestamp, or null. */
function epochMs(text) {
  const t = typeof text === "string" ? Date.parse(text) : NaN;
  return Number.isFinite(t) ? t : null;
}

/** A replay frame's moment: when its newest operation happened (settled, else started). */
function frameTime(frame) {
  const ops = (frame && frame.operations) || [];
  let best = null;
  for (const op of ops) {
    const at = op.startedAt;
    if (typeof at === "string" && (best === null || at > best)) best = at;
  }
  return best;
}

/** participant id <-> log instance id, from the model (instanceId) and the run view's role tree. */
export function instanceMaps(flow, runView) {
  const toInstance = new Map();
  const toParticipant = new Map();
  for (const p of (flow && flow.participants) || []) {
    if (p.kind === "role" && typeof p.instanceId === "string" && p.instanceId) {
      toInstance.set(p.id, p.instanceId);
      toParticipant.set(p.instanceId, p.id);
    }
  }
  const counts = new Map();
  const stack = runView && runView.roleTree ? [runView.roleTree] : [];
  while (stack.length) {
    const node = stack.pop();
    if (!node || typeof node.role !== "string") continue;
    const n = (counts.get(node.role) || 0) + 1;
    counts.set(node.role, n);
    const pid = `role:${node.role}:${n}`;
    if (node.roleId && !toInstance.has(pid) && !toParticipant.has(node.roleId)) {
      toInstance.set(pid, node.roleId);
      toParticipant.set(node.roleId, pid);
    }
    const children = Array.isArray(node.children) ? node.children : [];
    for (let i = children.length - 1; i >= 0; i -= 1) stack.push(children[i]);
  }
  return { toInstance, toParticipant };
}

function createPartialBox() {
  const head = el("div", "rv-partial-head");
  const reasoning = el("div", "rv-partial-reasoning");
  const text = el("div", "rv-partial-text");
  const box = el("div", "rv-partial", head, reasoning, text);
  box.dataset.testid = "live-partial";
  return {
    el: box,
    set(title, entry) {
      setText(head, title);
      const r = entry ? entry.reasoning : "";
      const c = entry ? entry.content : "";
      if (reasoning.textContent !== r) reasoning.textContent = r;
      if (text.textContent !== c) {
        text.textContent = c;
        text.scrollTop = text.scrollHeight;
      }
      setClass(box, "empty", !r && !c);
    },
  };
}

export function createRunView(root, ctx) {
  ensureStylesheet("runview.css");
  const labels = createLabels(ctx.config);
  const partials = createPartials();
  let mode = "flow";
  let tier = (ctx.getTier && ctx.getTier()) || "detailed";
  let flow = null;
  let flowSig = "";
  let polled = null; // the newest polled model (drawn unless a replay frame is)
  let runView = null;
  let maps = { toInstance: new Map(), toParticipant: new Map() };
  let mapsKey = null;
  let lastRenderAt = null;
  let turn = { key: null, floor: -Infinity, pid: null, roleId: null, role: null };
  let inspector = null;
  let frame = 0;

  const view = el("div", "rv");
  view.dataset.testid = "run-view";
  const caption = el("div", "rv-caption");
  caption.dataset.testid = "now-caption";
  const badge = el("span", "rv-status");
  badge.dataset.testid = "run-status";
  const cost = el("div", "rv-cost");
  cost.dataset.testid = "cost-strip";
  const note = el("div", "rv-note");
  note.dataset.testid = "omitted-note";
  note.hidden = true;
  const noteText = el("span");
  const showAll = el("button", "rv-show-all");
  showAll.type = "button";
  showAll.dataset.testid = "show-all-operations";
  setText(showAll, "Show all");
  showAll.addEventListener("click", () => {
    if (typeof ctx.showAllOperations === "function") ctx.showAllOperations();
  });
  note.append(noteText, " ", showAll);
  const flowPane = el("div", "rv-pane rv-flow");
  const seqPane = el("div", "rv-pane rv-seq");
  seqPane.hidden = true;
  const cards = el("div", "rv-cards");
  const searchHost = el("div", "rv-search");
  const replay = createReplay({ runId: ctx.runId, api: ctx.api, labels, getTier: () => tier, show: (frame) => showModel(frame || polled, true) });
  view.append(el("div", "rv-top", badge, caption, replay.button), replay.el, cost, searchHost, note, flowPane, seqPane, cards);
  root.appendChild(view);

  const partialBox = createPartialBox();
  const common = { labels, onOp: (id) => showOperation(id) };
  const graph = createFlowGraph(flowPane, { ...common, onNode: (pid) => showParticipant(pid), onInstance: (id, role) => showInstance(id, role) });
  const sequence = createSequence(seqPane, { ...common, config: ctx.config, onColumn: (key) => showRole(key) });
  // The call tree (GET /tree + /timeline + /context), under the graph: compact while the run is live,
  // the whole picture (waterfall, time axis) once it finished and the graph is down to the operator.
  const treePane = el("div", "rv-tree");
  flowPane.appendChild(treePane);
  const callTree = createCallTree(treePane, { labels, onInstance: (id, role) => showInstance(id, role) });
  const tree = { key: null, wanted: null, live: false, busy: false, timer: 0, at: -Infinity, dead: false, data: null };
  // Search and jump (search.js): the search box, n / p over the run's landmarks, focusOperation.
  const search = createSearch(searchHost, ctx, {
    getFlow: () => flow,
    getMode: () => mode,
    openCard: (opId) => showOperation(opId),
    scrollSequence: (opId) => (typeof sequence.scrollToOp === "function" ? sequence.scrollToOp(opId) : false),
    participantInstance: (pid) => maps.toInstance.get(pid) || null,
    openTurn: ({ instanceId, role, focusIndex }) => {
      if (inspector) inspector.close();
      inspector = openInspector(inspectorCtx, { instanceId, role, participantId: maps.toParticipant.get(instanceId) || null, focusIndex });
    },
  });

  const source = ctx.stream;
  const listen = source && typeof source.onDelta === "function" ? source.onDelta.bind(source)
    : source && typeof source.listen === "function" ? source.listen.bind(source) : null;
  const unlisten = listen
    ? listen((delta) => {
        if (!delta || delta.runId !== ctx.runId) return;
        partials.apply(delta);
        if (!frame) frame = requestAnimationFrame(() => {
          frame = 0;
          drawPartial();
          if (inspector) inspector.partial();
        });
      })
    : null;

  const inspectorCtx = {
    ...ctx,
    labels,
    partials,
    getTier: () => tier,
    getRunView: () => runView,
  };

  function showParticipant(pid, focusIndex = null) {
    const p = flow && project(flow).byId.get(pid);
    if (!p) return;
    if (p.kind === "role") {
      if (inspector) inspector.close();
      inspector = openInspector(inspectorCtx, { instanceId: maps.toInstance.get(pid) || p.instanceId || null, role: p.role, participantId: pid, focusIndex });
      return;
    }
    const ops = flow.operations || [];
    for (let i = ops.length - 1; i >= 0; i -= 1) {
      if (ops[i].destination === pid && ops[i].kind === "call") return showOperation(ops[i].id);
    }
  }

  function showInstance(instanceId, role) {
    if (inspector) inspector.close();
    inspector = openInspector(inspectorCtx, { instanceId, role, participantId: maps.toParticipant.get(instanceId) || null });
  }

  /** The call tree (live and finished): refetched when the status or operation count changes, at most
   * once a second, one fetch at a time, never awaited by the poll; the in-flight turn's row highlighted.
   * Only for a run the server knows (render() was given its GET /api/runs/:id), not a model drawn alone. */
  function drawTree() {
    if (!runView) return;
    const now = polled || flow; // the run as it is now, also while a replay shows an earlier frame
    const live = LIVE.has(now.status);
    const activity = live && runView ? runView.currentActivity : null;
    callTree.setActive(activity && activity.roleId ? activity.roleId : null);
    callTree.rerender(tier);
    callTree.setCursor(replay.active ? epochMs(frameTime(flow)) : null);
    tree.live = live;
    tree.wanted = `${now.status}|${now.operationsTotal}`;
    if (tree.wanted !== tree.key) fetchTree();
  }

  /** The whole role tree for the flow graph: a finished run's (or its replay's last frame), once fetched. */
  function wholeTree() {
    if (!tree.data || tree.live || LIVE.has(flow.status) || tree.key === null || !tree.key.startsWith(`${flow.status}|`)) return null;
    return tree.data;
  }

  function fetchTree() {
    if (tree.busy || tree.timer) return;
    const wait = tree.at + 1000 - performance.now();
    if (wait > 0) {
      tree.timer = setTimeout(() => {
        tree.timer = 0;
        fetchTree();
      }, wait);
      return;
    }
    const key = tree.wanted;
    const live = tree.live;
    const base = `/api/runs/${encodeURIComponent(ctx.runId)}`;
    tree.busy = true;
    tree.at = performance.now();
    const context = ctx.api.get(`${base}/context`).catch(() => null); // the tree stands without it
    Promise.all([ctx.api.get(`${base}/tree`), ctx.api.get(`${base}/timeline`), context]).then(
      ([calls, timeline, tracks]) => {
        tree.busy = false;
        if (tree.dead) return;
        tree.key = key;
        tree.data = calls && Array.isArray(calls.nodes) ? calls : null;
        callTree.update({ tree: calls, timeline, context: tracks }, { tier, live });
        draw(); // the flow graph draws a finished run's whole tree from this answer
        if (tree.wanted !== tree.key) fetchTree();
      },
      () => {
        tree.busy = false; // retried on the next poll
      },
    );
  }

  /** A sequence column header: the newest instance of that role, if the model has one. */
  function showRole(role) {
    const people = (flow && flow.participants) || [];
    for (let i = people.length - 1; i >= 0; i -= 1) {
      if (people[i].kind === "role" && people[i].role === role) return showParticipant(people[i].id);
    }
  }

  function showOperation(opId) {
    openOperationCard(ctx, { opId, model: flow, labels, tier, host: cards, onInstance: (pid, focusIndex) => showParticipant(pid, focusIndex) });
  }

  /** Where the live partial goes: the participant of the instance whose model turn is in flight. */
  function partialTarget() {
    const activity = runView && runView.currentActivity;
    if (!flow || replay.active || !activity || activity.doing !== "model" || (flow.status !== "running" && flow.status !== "unknown")) {
      turn = { key: null, floor: -Infinity, pid: null, roleId: null, role: null };
      return null;
    }
    const key = `${activity.roleId}|${activity.since}`;
    if (key !== turn.key) {
      const byId = project(flow).byId;
      let pid = maps.toParticipant.get(activity.roleId) || null;
      if (!pid) {
        const active = byId.get(flow.activeParticipant);
        pid = active && active.role === activity.role ? active.id : null;
      }
      turn = { key, floor: lastRenderAt === null ? -Infinity : lastRenderAt - 250, pid, roleId: activity.roleId, role: activity.role };
    }
    return turn.pid;
  }

  function drawPartial() {
    if (!turn.key) return;
    const entry = (turn.roleId && partials.get(turn.roleId)) || (!turn.roleId && partials.forRole(turn.role)) || null;
    const fresh = entry && entry.resetAt >= turn.floor ? entry : null;
    const p = flow && project(flow).byId.get(turn.pid);
    const who = p ? labels.participant(p, tier) : turn.role || "Model";
    partialBox.set(`${who} · live`, fresh);
  }

  /** The cost strip of a replay frame: the run so far at that operation, from the frame's own totals. */
  function drawFrameCost(frame) {
    const totals = Array.isArray(frame.totals) ? frame.totals : [];
    const sum = (kind, field) => totals.filter((t) => t.kind === kind).reduce((n, t) => n + (Number(t[field]) || 0), 0);
    const start = epochMs(runView && runView.startTime);
    const at = epochMs(frameTime(frame));
    const elapsed = start !== null && at !== null ? Math.max(0, (at - start) / 1000) : null;
    const parts = [
      `Elapsed ${elapsed === null ? "—" : duration(elapsed)}`,
      `${sum("tool", "count")} tool calls`,
      `Tokens ${compact(sum("role", "tokens"))} · ${compact(sum("role", "cachedPromptTokens"))} cached`,
    ];
    setText(cost, `At this operation: ${parts.join("   ·   ")}`);
    cost.dataset.source = "frame";
  }

  function drawCost() {
    cost.dataset.source = "run";
    const b = runView && runView.budgets;
    if (!b) {
      setText(cost, "");
      return;
    }
    const t = b.tokenBreakdown;
    const parts = [
      `Elapsed ${duration(b.elapsedSeconds)}`,
      `${b.toolCalls ?? 0} tool calls`,
      t ? `Tokens ${compact(t.promptTokens)} prompt · ${compact(t.cachedPromptTokens)} cached · ${compact(t.completionTokens)} completion`
        : b.tokensUsed != null ? `Tokens ${compact(b.tokensUsed)}` : "Tokens —",
    ];
    setText(cost, parts.join("   ·   "));
  }

  function typeInfo(t) {
    if (t.kind !== "role" || !runView) return null;
    const stats = (runView.roles || []).find((r) => r.role === t.role);
    return stats && Number.isFinite(stats.lastPromptTokens) ? `Last prompt: ${compact(stats.lastPromptTokens)} tokens` : null;
  }

  function draw() {
    if (!flow) return;
    const sig = flowSig;
    const partialAt = partialTarget();
    const proj = project(flow);
    const replaying = replay.caption();
    const shown = !replaying && ctx.statusNote ? ctx.statusNote(flow.status) : null; // the shell's: a question answered elsewhere
    const said = shown && shown.caption ? shown.caption : labels.caption(flow, proj.byId, tier, proj.activeOp, proj.multi);
    setText(caption, replaying ? `${replaying} · ${said}` : said);
    // one status word per screen: a replay's badge says it is a replay (the frame's state is in its title),
    // so "Running" never sits under the header's "Done"
    const status = replaying ? "replay" : shown ? shown.status : flow.status;
    setText(badge, replaying ? "Replay" : statusWord(status));
    badge.className = `rv-status status-${status}`;
    badge.dataset.status = status;
    badge.title = replaying ? `At this operation the run was: ${statusWord(flow.status)}` : "";
    const omitted = Number(flow.operationsOmitted) || 0;
    note.hidden = !(omitted > 0) || replay.active; // replay frames are windowed by design
    if (omitted > 0) setText(noteText, `${omitted.toLocaleString()} earlier operations not shown`);
    showAll.hidden = typeof ctx.showAllOperations !== "function";
    if (replaying) drawFrameCost(flow);
    else drawCost();
    const whole = mode === "flow" ? wholeTree() : null;
    const extraKey = `${runView ? JSON.stringify(runView.roles || []).length : 0}|${whole ? tree.key : ""}`;
    const options = { tier, sig, partialAt, partialBox, typeInfo, extraKey, tree: whole };
    if (mode === "flow") {
      graph.update(flow, options);
      drawTree(); // during a replay the call tree stays, its waterfall marking the frame's moment
    } else sequence.update(flow, options);
    partialBox.el.hidden = !partialAt;
    if (partialAt) drawPartial();
  }

  /** Make `next` the model drawn (an unchanged one keeps the previous object, so every cache hits). */
  function showModel(next, redraw = false) {
    if (next) {
      const sig = signature(next);
      if (sig !== flowSig) {
        flow = next;
        flowSig = sig;
      }
    }
    if (redraw) draw();
  }

  return {
    render(nextFlow, nextView) {
      if (nextFlow && typeof nextFlow === "object" && Array.isArray(nextFlow.operations)) {
        polled = nextFlow;
        replay.live(nextFlow);
        if (!replay.active) showModel(nextFlow);
      }
      if (nextView && typeof nextView === "object") runView = nextView;
      const key = runView && runView.roleTree ? JSON.stringify(runView.roleTree).length + (flow ? flow.participants.length : 0) : null;
      if (flow && key !== mapsKey) {
        mapsKey = key;
        maps = instanceMaps(flow, runView);
      }
      draw();
      search.afterRender(Boolean(runView));
      lastRenderAt = performance.now();
    },
    setMode(next) {
      const m = next === "sequence" ? "sequence" : "flow";
      if (m === mode) return;
      mode = m;
      flowPane.hidden = mode !== "flow";
      seqPane.hidden = mode !== "sequence";
      graph.invalidate();
      sequence.invalidate();
      draw();
    },
    setTier(next) {
      if (!next || next === tier) return;
      tier = next;
      draw();
    },
    /** Select `op-N` in the current view: its card, its sequence row, the inspector at its turn. */
    focusOperation(opId) {
      replay.close(); // a jump goes to the live view of the run
      return search.focusOperation(opId);
    },
    /** Open the replay scrubber at operation 1 and play (the shell's #watch/<run>/replay). */
    startReplay() {
      replay.open({ play: true, at: 1 });
    },
    /** Where the replay is: {at, total, playing, frame} (frame: the model on screen; null when closed). */
    get replayState() {
      return replay.position;
    },
    /** The current mode (for shells that show a toggle). */
    get mode() {
      return mode;
    },
    destroy() {
      if (frame) cancelAnimationFrame(frame);
      replay.destroy();
      if (unlisten) unlisten();
      if (inspector) inspector.close();
      search.destroy();
      graph.destroy();
      sequence.destroy();
      tree.dead = true;
      if (tree.timer) clearTimeout(tree.timer);
      callTree.destroy();
      view.remove();
    },
  };
}
