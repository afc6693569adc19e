// Read-only projections of an InteractionModel for the views (pure; memoized per model object).
//
// The single invariant — activeStack / activeParticipant — is read from the model, never re-derived.
// What is projected here is layout: each stack's open call chain by depth (replaying its calls and
// returns), its lingering return, its recent observe/terminate marks, which stacks are still live, and
// per-type totals for the top strip. A stack is *paused* iff it has open work and is not the active
// stack; a line animates iff it is in flight and its stack is not paused.
//
//   project(model) -> {byId, stacks: Map<id, StackView>, live: StackView[], activeOp, paused(stackId),
//                      animates(op), types: TypeTotal[], multi: Set<role name>, instances: Map<role, n>}
//   multi: the roles that ran more than once in the whole run (the server's totals when present, else
//   the model's participants and instance numbers), whose labels carry "#n"; instances: how many times.
//   StackView = {id, root, index, chain: Operation[] (open calls, outermost first), last (latest
//                call/return), lingering (last if it is an in-flight return), marks (recent observe/
//                terminate ops), opCount, dead}
//   signature(model) -> string   changes whenever anything a view draws changes (cheap, O(n)).

const cache = new WeakMap();
const MARKS_KEPT = 4;

/** A compact fingerprint of everything the views draw from `model`. */
export function signature(model) {
  if (!model) return "";
  const ops = model.operations || [];
  let sig = `${model.status}|${model.activeStack}|${model.activeParticipant}|${(model.stacks || []).length}|` +
    `${(model.participants || []).length}|${ops.length}|${model.operationsOmitted || 0}`;
  for (let i = 0; i < ops.length; i += 1) sig += `;${opSignature(ops[i])}`;
  return sig;
}

/** What can change about one operation between polls. */
export function opSignature(op) {
  const m = op.metrics;
  return `${op.id}${op.lifecycle === "in_flight" ? "~" : ""}${op.outcome ? op.outcome[0] : ""}${op.severity ? op.severity[0] : ""}` +
    (m ? `${m.tokens},${m.elapsedMs ?? m.elapsedSeconds}` : "");
}

export function project(model) {
  let view = cache.get(model);
  if (view === undefined) {
    view = build(model);
    cache.set(model, view);
  }
  return view;
}

function build(model) {
  const byId = new Map();
  for (const p of model.participants || []) byId.set(p.id, p);
  const records = model.stacks && model.stacks.length ? model.stacks : [{ id: "main", root: "human:root" }];
  const stacks = new Map();
  records.forEach((record, index) => {
    stacks.set(record.id, { id: record.id, root: record.root, index, chain: [], last: null, lingering: null, marks: [], opCount: 0, dead: false });
  });
  const ensure = (id) => {
    let s = stacks.get(id);
    if (s === undefined) {
      s = { id, root: null, index: stacks.size, chain: [], last: null, lingering: null, marks: [], opCount: 0, dead: false };
      stacks.set(id, s);
    }
    return s;
  };
  const types = new Map();
  for (const op of model.operations || []) {
    const s = ensure(op.stack);
    s.opCount += 1;
    if (op.kind === "call" || op.kind === "return") {
      // Only the top stack receives calls and returns: any stack pushed after this one is gone.
      for (const other of stacks.values()) {
        if (other.index > s.index && other.opCount > 0 && !other.dead) {
          other.dead = true;
          other.chain = [];
          other.lingering = null;
        }
      }
      s.dead = false;
      s.last = op;
    }
    if (op.kind === "call") {
      const at = findFrom(s.chain, op.source);
      if (at >= 0) s.chain.length = at + 1;
      else if (op.source === s.root) s.chain.length = 0;
      s.chain.push(op);
      tally(types, byId.get(op.destination), op);
    } else if (op.kind === "return") {
      const at = findFrom(s.chain, op.source);
      if (at >= 0) s.chain.length = at;
      if (op.outcome === "error") {
        const t = types.get(typeKey(byId.get(op.source)));
        if (t !== undefined) t.errors += 1;
      }
    } else {
      s.marks.push(op);
      if (s.marks.length > MARKS_KEPT) s.marks.shift();
      if (op.kind === "terminate") {
        for (const other of stacks.values()) {
          const at = findFrom(other.chain, op.destination);
          if (at >= 0) {
            other.chain.length = at;
            break;
          }
        }
      }
    }
  }
  for (const s of stacks.values()) {
    s.lingering = !s.dead && s.last && s.last.kind === "return" && s.last.lifecycle === "in_flight" ? s.last : null;
  }
  const active = model.activeStack;
  const live = [];
  for (const s of stacks.values()) {
    const fresh = s.opCount === 0 && s.id === active;
    if (s.id === "main" || s.index === 0 || fresh || (!s.dead && (s.chain.length > 0 || s.lingering))) live.push(s);
  }
  const pausedSet = new Set(live.filter((s) => s.id !== active && s.chain.length > 0).map((s) => s.id));
  const activeStack = stacks.get(active);
  return {
    byId,
    stacks,
    live,
    activeOp: activeStack ? activeStack.last : null,
    paused: (id) => pausedSet.has(id),
    animates: (op) => op.lifecycle === "in_flight" && (op.kind === "call" || op.kind === "return") && !pausedSet.has(op.stack),
    types: wholeRun(types, model.totals, openMs(stacks, byId)),
    ...roleInstances(model),
  };
}

/** How many instances each role had (whole run when the model carries totals) and which ran more than once. */
function roleInstances(model) {
  const instances = new Map();
  for (const p of model.participants || []) {
    if (p.kind !== "role") continue;
    const n = Number(/:(\d+)$/.exec(p.id || "")?.[1]) || 1;
    instances.set(p.role, Math.max(instances.get(p.role) || 0, n));
  }
  for (const t of Array.isArray(model.totals) ? model.totals : []) {
    if (t.kind === "role") instances.set(t.name, Math.max(instances.get(t.name) || 0, t.count || 0));
  }
  const multi = new Set([...instances].filter(([, n]) => n > 1).map(([role]) => role));
  return { instances, multi };
}

/** Per type key, the time so far of its calls still open (each chain's calls have not returned). */
function openMs(stacks, byId) {
  const open = new Map();
  for (const s of stacks.values()) {
    if (s.dead) continue;
    for (const op of s.chain) {
      const key = typeKey(byId.get(op.destination));
      const ms = op.metrics ? op.metrics.elapsedMs ?? (op.metrics.elapsedSeconds || 0) * 1000 : 0;
      if (key && ms > 0) open.set(key, (open.get(key) || 0) + ms);
    }
  }
  return open;
}

/**
 * The strip's types: the server's whole-run totals when the model carries them (a windowed model's own
 * operations would undercount a long run), each keeping the window's sample participant when it has one.
 * The totals sum finished instances only, so a type's open calls add their time so far: a running role's
 * chip counts up with its node instead of reading "0.000 s".
 */
function wholeRun(types, totals, open) {
  if (!Array.isArray(totals) || totals.length === 0) return [...types.values()];
  return totals.map((t) => {
    const seen = types.get(t.key);
    const sample = seen ? seen.sample : { id: `${t.key}:1`, role: t.name, kind: t.kind, instanceId: null };
    const ms = t.ms + (open.get(t.key) || 0);
    return {
      key: t.key, kind: t.kind, role: t.name, sample, count: t.count, tokens: t.tokens,
      cached: t.cachedPromptTokens, seconds: Math.round(ms / 1000), ms, errors: t.errors,
    };
  });
}

/** Index of the innermost open call in `chain` whose callee is `participant` (-1 when none). */
function findFrom(chain, participant) {
  for (let i = chain.length - 1; i >= 0; i -= 1) if (chain[i].destination === participant) return i;
  return -1;
}

function typeKey(p) {
  return p ? `${p.kind}:${p.role}` : "";
}

function tally(types, p, op) {
  if (!p || (p.kind !== "role" && p.kind !== "tool")) return;
  const key = typeKey(p);
  let t = types.get(key);
  if (t === undefined) {
    t = { key, kind: p.kind, role: p.role, sample: p, count: 0, tokens: 0, cached: 0, seconds: 0, ms: 0, errors: 0 };
    types.set(key, t);
  }
  t.count += 1;
  if (op.metrics) {
    t.tokens += op.metrics.tokens || 0;
    t.cached += op.metrics.cachedPromptTokens || 0;
    t.seconds += op.metrics.elapsedSeconds || 0;
    t.ms += op.metrics.elapsedMs ?? (op.metrics.elapsedSeconds || 0) * 1000;
  }
}
