// Display prose for the run view, by tier. The model carries identifiers only; every word
// the views show about a participant or an operation comes from here.
//
// Public interface:
//   TIERS = ['detailed', 'friendly', 'whimsical']           (the UI default is 'detailed')
//   createLabels(config) -> {
//     participant(p, tier)            identity label (first variant; stable for the participant's life)
//     column(key, tier)               sequence column header: a role name, or 'human'/'tools'/'interrupt'
//     description(p, tier)            the role's / tool's description, or null
//     operation(op, byId, tier, multi?) an operation's label (variant rotated by a hash of the op id), with
//                                     its subject (path, command, task, exit status) and, for the role
//                                     names in the Set `multi` (roles that ran more than once), "#n"
//     instance(p, tier, multi?)       a participant's label with "#n" when its role is in `multi`
//     working(p, tier, seed)          what a participant is doing while it holds the turn, or null
//     caption(model, byId, tier, activeOp, multi?) the "now" caption: transit → operation label; working → working
//                                     label → generic working template → operation label
//     status(status, tier)            a run status in words
//   }
//   severityOf(op) -> "warn" | "fail" | null   a return's problem badge (server-classified, flow/outcome.py)
//   badge(op) -> "⚠ exit 1" | "✖ timeout" | ""  the badge text every tier's operation label starts with
//   instanceNumber(pid) -> "3" | ""              the instance number of a participant id ("role:coder:3")
//   elapsedMs(op) -> number | null              a call's duration (metrics.elapsedMs, else whole seconds)
//   preciseDuration(ms) -> "0.184 s" | "2.3 s" | "1 m 05 s" | "1 h 02 m" | ""
//
// Sources, all from GET /api/config: roles[name].{label, description, workingLabel}; tools[name].
// {humanLabel, humanDescription, humanCallLabel, humanWorkingLabel}; visualization.{pseudoRoleLabels
// (human|interrupt|tools), operationTemplates[kind]["<srcKind>-><dstKind>"], genericOperationTemplates
// [kind], workingTemplates[kind]}. Each value is an array of variants per tier (a bare string is read
// as one variant). Lookup tries the requested tier, then detailed → friendly → whimsical, then the
// built-in defaults below, then the title-cased name. Placeholders: {source} {destination}
// {sourceRole} {destinationRole} {sourceKind} {destinationKind} {stack} {outcome} {subject} {participant}
// {participantRole}; an unknown placeholder stays visible as typed. An operation's `subject` (the
// server's one-line "what about", flow/subject.py) is appended as " · subject" to every tier's label
// whose template does not place it, unless it only repeats the failure badge's note.

export const TIERS = ["detailed", "friendly", "whimsical"];

const T = (detailed, friendly, whimsical) => ({ detailed: [detailed], friendly: [friendly], whimsical: [whimsical] });

/** Built-in wording for guilds whose visualization section leaves something out. */
const DEFAULT_PSEUDO = {
  human: T("Operator", "You", "The patron"),
  interrupt: T("Interrupt", "Check-in", "Tap on the shoulder"),
  tools: T("Tools", "Tools", "Toolbox"),
};

const DEFAULT_OPERATIONS = {
  call: {
    "human->role": T("{source} assigns the task to {destination}", "{destination} takes on the job", "{source} summons {destination}"),
    "role->role": T("{source} delegates to {destination}", "{source} asks {destination} for help", "{source} passes the torch to {destination}"),
    "role->tool": T("{source} calls {destination}", "{source} uses {destination}", "{source} reaches for {destination}"),
    "role->human": T("{source} asks {destination} a question", "{source} has a question for {destination}", "{source} sends a note to {destination}"),
    "interrupt->role": T("{source} starts {destination}", "{source} brings in {destination}", "{source} wakes {destination}"),
  },
  return: {
    "role->role": T("{source} returns {outcome} to {destination}", "{source} reports back to {destination}", "{source} scurries back to {destination}"),
    "tool->role": T("{source} returns {outcome} to {destination}", "{source} gives {destination} the result", "{source} hands {destination} a trinket"),
    "human->role": T("{source} answers {destination}", "Answer sent to {destination}", "{source} whispers back to {destination}"),
    "role->human": T("{source} returns {outcome} to {destination}", "{source} reports to {destination}", "{source} bows to {destination}"),
  },
};

const DEFAULT_GENERIC = {
  call: T("{source} → {destination}", "{source} calls on {destination}", "{source} beckons {destination}"),
  return: T("{source} returns {outcome} to {destination}", "{source} reports back to {destination}", "{source} scampers back to {destination}"),
  observe: T("{source} inspects {destination}", "{source} checks on {destination}", "{source} peeks at {destination}"),
  terminate: T("{source} terminates {destination}", "{source} stops {destination}", "{source} sends {destination} home"),
};

const DEFAULT_WORKING = {
  role: T("{participant} is working", "{participant} is on it", "{participant} is busy as a bee"),
  tool: T("{participant} is running", "{participant} is running", "{participant} is whirring"),
  human: T("Waiting for {participant}", "Waiting for you", "Awaiting word from {participant}"),
  interrupt: T("{participant} is checking in", "A check-in is under way", "{participant} taps a shoulder"),
};

const STATUS = {
  running: T("Running", "Working on it", "The show is on"),
  success: T("Done", "All done", "Curtain call"),
  error: T("Failed", "Something went wrong", "The show fell apart"),
  needs_clarification: T("Waiting for an answer", "Waiting for your answer", "Awaiting your word"),
  interrupted: T("Stopped", "Stopped before finishing", "The music stopped"),
  cancelled: T("Cancelled", "Stopped on request", "The curtain came down early"),
  unknown: T("Status unknown", "Not sure what happened", "Lost in the fog"),
};

/** "warn" (amber) / "fail" (red) for a return the server classified as a problem, else null. */
export function severityOf(op) {
  if (!op || op.kind !== "return") return null;
  if (op.severity === "warn" || op.severity === "fail") return op.severity;
  return op.outcome === "error" ? "fail" : null;
}

/** The problem badge of an operation (empty when there is none): a mark plus the server's short reason. */
export function badge(op) {
  const severity = severityOf(op);
  if (!severity) return "";
  return `${severity === "warn" ? "⚠" : "✖"} ${op.note || "failed"}`;
}

/** A call tree's instances numbered per role in tree order: `numbers` (instanceId → 1, 2 …) and
 * `counts` (role → how many instances it had). */
export function numberInstances(nodes) {
  const counts = new Map();
  const numbers = new Map();
  for (const n of nodes) {
    const k = (counts.get(n.role) || 0) + 1;
    counts.set(n.role, k);
    numbers.set(n.instanceId, k);
  }
  return { numbers, counts };
}

/** "role:coder:3" → "3" ("" when the id carries no instance number). */
export function instanceNumber(pid) {
  const m = /:(\d+)$/.exec(pid || "");
  return m ? m[1] : "";
}

/** A call's duration in milliseconds (the model's elapsedMs, else its whole seconds), or null. */
export function elapsedMs(op) {
  const m = op && op.metrics;
  if (!m) return null;
  if (Number.isFinite(m.elapsedMs)) return m.elapsedMs;
  return Number.isFinite(m.elapsedSeconds) ? m.elapsedSeconds * 1000 : null;
}

/** Milliseconds as "0.184 s" (under a second), "2.3 s" (under a minute), "1 m 05 s", "1 h 02 m"; "" for null. */
export function preciseDuration(ms) {
  if (ms == null || !Number.isFinite(Number(ms))) return "";
  const v = Math.max(0, Number(ms));
  if (v < 1000) return `${(v / 1000).toFixed(3)} s`;
  if (v < 60_000) return `${(Math.floor(v / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(v / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} m`;
}

/** A deterministic non-negative hash of a string (seeds variant rotation). */
export function hashString(value) {
  let hash = 0;
  const text = String(value);
  for (let i = 0; i < text.length; i += 1) hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
  return Math.abs(hash);
}

/** "read_file" → "Read File". */
export function titleCase(name) {
  return String(name || "")
    .split(/[_\s-]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join(" ");
}

function variants(entry, tier) {
  if (!entry || typeof entry !== "object") return null;
  const order = [tier, ...TIERS.filter((t) => t !== tier)];
  for (const name of order) {
    const value = entry[name];
    if (typeof value === "string" && value) return [value];
    if (Array.isArray(value)) {
      const list = value.filter((v) => typeof v === "string" && v);
      if (list.length) return list;
    }
  }
  return null;
}

function fill(template, values) {
  return template.replace(/\{(\w+)\}/g, (match, name) =>
    Object.prototype.hasOwnProperty.call(values, name) ? String(values[name] ?? "") : match,
  );
}

/** The label service over a `/api/config` answer (null or partial configs are fine). */
export function createLabels(config) {
  const roles = (config && config.roles) || {};
  const tools = (config && config.tools) || {};
  const vis = (config && config.visualization) || {};
  const pseudo = vis.pseudoRoleLabels || {};
  const templates = vis.operationTemplates || {};
  const generic = vis.genericOperationTemplates || {};
  const working = vis.workingTemplates || {};
  const memo = new Map();

  function pick(entries, tier, seed) {
    for (const entry of entries) {
      const list = variants(entry, tier);
      if (list) return list[seed % list.length];
    }
    return null;
  }

  function entryOf(p) {
    if (p.kind === "role") return roles[p.role] && roles[p.role].label;
    if (p.kind === "tool") return tools[p.role] && tools[p.role].humanLabel;
    return pseudo[p.kind] || pseudo[p.role];
  }

  function participant(p, tier) {
    if (!p) return "?";
    const key = `${tier}|${p.kind}|${p.role}`;
    let text = memo.get(key);
    if (text === undefined) {
      const fallback = p.kind === "role" || p.kind === "tool" ? null : DEFAULT_PSEUDO[p.kind];
      text = pick([entryOf(p), fallback], tier, 0) || titleCase(p.role);
      memo.set(key, text);
    }
    return text;
  }

  /** The participant's label, with "#n" when its role ran more than once (`multi`: a Set of role names). */
  function instance(p, tier, multi) {
    const text = participant(p, tier);
    if (!p || p.kind !== "role" || !multi || !multi.has(p.role)) return text;
    const n = instanceNumber(p.id);
    return n ? `${text} #${n}` : text;
  }

  function column(key, tier) {
    if (key === "human" || key === "tools" || key === "interrupt") {
      return pick([pseudo[key], DEFAULT_PSEUDO[key]], tier, 0) || titleCase(key);
    }
    return participant({ kind: "role", role: key }, tier);
  }

  function description(p, tier) {
    if (!p) return null;
    if (p.kind === "role") return pick([roles[p.role] && roles[p.role].description], tier, 0);
    if (p.kind === "tool") return pick([tools[p.role] && tools[p.role].humanDescription], tier, 0);
    return null;
  }

  function values(op, src, dst, tier, multi) {
    return {
      source: instance(src, tier, multi),
      destination: instance(dst, tier, multi),
      sourceRole: src ? src.role : "",
      destinationRole: dst ? dst.role : "",
      sourceKind: src ? src.kind : "",
      destinationKind: dst ? dst.kind : "",
      stack: op.stack,
      outcome: op.outcome || "",
      subject: op.subject || "",
    };
  }

  function operation(op, byId, tier, multi) {
    const src = byId.get(op.source) || { id: op.source, role: op.source, kind: "role" };
    const dst = byId.get(op.destination) || { id: op.destination, role: op.destination, kind: "role" };
    const seed = hashString(op.id);
    const pair = `${src.kind}->${dst.kind}`;
    const entries = [];
    if (op.kind === "call" && dst.kind === "tool") entries.push(tools[dst.role] && tools[dst.role].humanCallLabel);
    entries.push(templates[op.kind] && templates[op.kind][pair], generic[op.kind]);
    entries.push(DEFAULT_OPERATIONS[op.kind] && DEFAULT_OPERATIONS[op.kind][pair], DEFAULT_GENERIC[op.kind]);
    const template = pick(entries, tier, seed) || "{source} → {destination}";
    let text = fill(template, values(op, src, dst, tier, multi));
    // The subject says what the call was about (or what came back); every tier shows it.
    const subject = typeof op.subject === "string" ? op.subject : "";
    if (subject && !template.includes("{subject}") && subject !== op.note) text = `${text} · ${subject}`;
    const mark = badge(op);
    // Every tier names a failure (a friendly "gives Coder the result" must not hide an exit 1), first,
    // so a label cut short by its column still shows it.
    return mark ? `${mark} · ${text}` : text;
  }

  function workingLabel(p, tier, seed) {
    if (!p) return null;
    const own = p.kind === "role" ? roles[p.role] && roles[p.role].workingLabel
      : p.kind === "tool" ? tools[p.role] && tools[p.role].humanWorkingLabel : null;
    const template = pick([own, working[p.kind]], tier, seed);
    if (template === null) return null;
    return fill(template, { participant: participant(p, tier), participantRole: p.role, participantKind: p.kind, participantId: p.id });
  }

  function genericWorking(p, tier, seed) {
    const template = pick([DEFAULT_WORKING[p.kind]], tier, seed);
    return template === null ? null : fill(template, { participant: participant(p, tier), participantRole: p.role });
  }

  function status(value, tier) {
    return pick([STATUS[value] || STATUS.unknown], tier, 0);
  }

  /** The "now" caption of `model`; `activeOp` is the active stack's latest call/return (or null). */
  function caption(model, byId, tier, activeOp, multi) {
    if (!model) return "";
    if (model.status !== "running" && model.status !== "unknown") return status(model.status, tier);
    const who = byId.get(model.activeParticipant);
    if (activeOp && activeOp.lifecycle === "in_flight") return operation(activeOp, byId, tier, multi);
    const seed = hashString(activeOp ? activeOp.id : model.activeParticipant || "");
    return (
      workingLabel(who, tier, seed) ||
      (who && genericWorking(who, tier, seed)) ||
      (activeOp ? operation(activeOp, byId, tier, multi) : status(model.status, tier))
    );
  }

  return { participant, instance, column, description, operation, working: workingLabel, caption, status };
}
