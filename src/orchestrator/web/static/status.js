// Status words: the one mapping from the API's status codes (runs, queue items, interrupts) to the plain
// words and tones the page shows. The shell's badges and the run view's status badge both use it; the
// code itself stays on each badge as data-status.

const WORDS = {
  running: "Running",
  active: "Running",
  starting: "Starting",
  success: "Done",
  done: "Done",
  error: "Failed",
  interrupted: "Stopped",
  needs_clarification: "Needs your answer",
  needs_input: "Needs your answer",
  answered: "Answered",
  waiting_for_you: "Waiting for you",
  waiting: "Waiting",
  cancelled: "Cancelled",
  ended: "Ended",
  checking: "Checking",
  decided: "Decided",
  unknown: "Unknown",
};

const TONES = {
  error: "bad", interrupted: "bad", success: "good", done: "good", answered: "good", decided: "good",
  running: "live", active: "live", starting: "live", checking: "live", needs_clarification: "warn",
  needs_input: "warn", waiting_for_you: "warn", waiting: "plain", ended: "muted", cancelled: "muted", unknown: "muted",
};

/** The plain word for a status code ("needs_clarification" → "Needs your answer"); unknown codes read
 * as their words ("some_state" → "Some state"). */
export function statusWord(status) {
  if (Object.hasOwn(WORDS, status)) return WORDS[status];
  const text = String(status || "unknown").replace(/_/g, " ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The badge tone of a status: good / bad / warn / live / plain / muted. */
export function statusTone(status) {
  return Object.hasOwn(TONES, status) ? TONES[status] : "plain";
}

/**
 * The status a run shows: "answered" for a run that stopped on a question which has since been answered —
 * a run continues it (`continuedBy`), or its parked queue item was answered and waits to continue —
 * "waiting_for_you" ("Waiting for you") for a running run while a live question is open (the service runs
 * one run at a time, so an open `ask_human` question is the running run's) or while its run view says
 * it is waiting on a human; else the run's own status.
 */
export function runStatus(run, queue = [], questions = []) {
  if (run && run.status === "running" && (questions.length > 0 || waitsOnHuman(run))) return "waiting_for_you";
  if (!run || run.status !== "needs_clarification") return run ? run.status : "unknown";
  if (Array.isArray(run.continuedBy) && run.continuedBy.length > 0) return "answered";
  const answered = queue.some((i) => i && i.continuesFrom === run.runId && i.status !== "needs_input");
  return answered ? "answered" : run.status;
}

/** True when a run view's current activity is an open `ask_human` call. */
function waitsOnHuman(run) {
  const activity = run.currentActivity;
  return Boolean(activity && activity.doing === "waiting" && activity.tool === "ask_human");
}
