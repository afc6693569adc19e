// The live poll's flow model by deltas (issue 26): GET /api/runs/:id/flow?since=<cursor> answers only what
// changed since the answer the page holds (the server's flow/delta.py), and `applyFlowDelta` merges it
// into the model held, so a long live run costs bytes proportional to its news, not ~350 KB a second.
//
//   applyFlowDelta(held | null, answer) -> {model, positions, cursor} | null
//     held: the previous result; answer: the ?since= answer (full when `delta` is false).
//     null: a delta that does not apply to what is held (another cursor, an operation missing) — ask
//     again with `since=` empty for the full model.
//   createFlowPoll(get) -> {poll(path) -> Promise<model>, reset()}: one run's poll with its held state.
//
// The merged model is exactly what GET /flow (same window) would have answered: the operation list is
// rebuilt from `livePositions` below `windowStart` and then `windowStart` up to `operationsTotal` (the
// server's windowing rule), and a windowed model keeps only the participants its operations and stacks
// name, in their order of first appearance (`participantPositions`).

const CURSOR_FIELDS = ["cursor", "delta", "since", "participantPositions", "livePositions", "windowStart"];

function position(id) {
  return Number(String(id).slice(3)) - 1; // "op-N" is position N - 1
}

function plain(answer, operations, participants) {
  const model = { ...answer, operations, participants };
  for (const key of CURSOR_FIELDS) delete model[key];
  return model;
}

export function applyFlowDelta(held, answer) {
  if (!answer || typeof answer !== "object" || !Array.isArray(answer.operations) || !Array.isArray(answer.participants)) return null;
  const sent = Array.isArray(answer.participantPositions) ? answer.participantPositions : [];
  if (!answer.delta) {
    const positions = new Map(answer.participants.map((p, i) => [p.id, sent[i] ?? i]));
    return { model: plain(answer, answer.operations, answer.participants), positions, cursor: answer.cursor };
  }
  if (!held || held.cursor !== answer.since || !Array.isArray(answer.livePositions)) return null;
  const byPosition = new Map(held.model.operations.map((op) => [position(op.id), op]));
  for (const op of answer.operations) byPosition.set(position(op.id), op);
  const start = Number(answer.windowStart);
  const total = Number(answer.operationsTotal);
  const order = answer.livePositions.filter((p) => p < start);
  for (let p = start; p < total; p += 1) order.push(p);
  const operations = [];
  for (const p of order) {
    const op = byPosition.get(p);
    if (op === undefined) return null;
    operations.push(op);
  }
  const people = new Map(held.model.participants.map((p) => [p.id, p]));
  const positions = new Map(held.positions);
  answer.participants.forEach((p, i) => {
    people.set(p.id, p);
    positions.set(p.id, sent[i]);
  });
  let participants = [...people.values()];
  if (Number(answer.operationsOmitted) > 0) {
    const keep = new Set(["human:root"]);
    for (const s of answer.stacks || []) keep.add(s.root);
    for (const op of operations) {
      keep.add(op.source);
      keep.add(op.destination);
    }
    participants = participants.filter((p) => keep.has(p.id));
  }
  if (participants.some((p) => !Number.isFinite(positions.get(p.id)))) return null;
  participants.sort((a, b) => positions.get(a.id) - positions.get(b.id));
  const kept = new Map(participants.map((p) => [p.id, positions.get(p.id)]));
  return { model: plain(answer, operations, participants), positions: kept, cursor: answer.cursor };
}

/** One run's delta poll: `poll(path)` (the /flow path, with or without `?window=`) resolves to the model. */
export function createFlowPoll(get) {
  let held = null; // {path, answer, model, positions, cursor}
  const ask = (path, cursor) => get(`${path}${path.includes("?") ? "&" : "?"}since=${encodeURIComponent(cursor)}`);
  return {
    async poll(path) {
      const mine = held && held.path === path ? held : null;
      let answer = await ask(path, mine ? mine.cursor : "");
      if (mine && answer === mine.answer) return mine.model; // a 304: the very answer already merged
      let next = applyFlowDelta(mine, answer);
      if (next === null && answer && answer.delta) {
        answer = await ask(path, ""); // the delta did not fit what is held: start over
        next = applyFlowDelta(null, answer);
      }
      held = next ? { path, answer, ...next } : null;
      return next ? next.model : answer;
    },
    reset() {
      held = null;
    },
  };
}
