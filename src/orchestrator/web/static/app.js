// The shell of the web UI: screens (watch / history / compose / queue / foundry), the 1 s poll, the server banner,
// theme / label-tier / sound toggles, the favicon state, and the wiring of every panel module.
// Every action goes through the HTTP API; the live stream (stream.js) only adds in-flight deltas.

import { createApi, errorMessage, seg } from "./api.js";
import { createCompose, submitTask } from "./compose.js";
import { h, shortTime } from "./dom.js";
import { createFlowPoll } from "./flowdelta.js";
import { createFoundry } from "./foundry.js";
import { createHistory } from "./history.js";
import { createInbox } from "./inbox.js";
import { loadOptional, optional, tiers } from "./optional.js";
import { badgeCount, cleanQueue, createQueuePanel } from "./queue.js";
import { createResults } from "./result.js";
import { parseHash, routeHash, SCREENS } from "./routes.js";
import { resolveDefaults } from "./settings.js";
import { createWatch } from "./watch.js";

const POLL_MS = 1000;
const $ = (selector) => document.querySelector(selector);
const store = {
  get(key, fallback) {
    try {
      return localStorage.getItem(`ao.${key}`) ?? fallback;
    } catch {
      return fallback;
    }
  },
  set(key, value) {
    try {
      localStorage.setItem(`ao.${key}`, value);
    } catch {
      // private mode: the preference lasts for this page only
    }
  },
};

/** Everything the panels read. Only app.js assigns the polled fields. */
const state = {
  screen: null,
  runs: [],
  queue: [],
  questions: [],
  config: null,
  settings: null,
  defaults: { effort: "standard", logLevel: "full" },
  selectedRunId: null, // null: follow the active (else latest) run
  runView: null,
  /** Runs whose whole flow model the operator asked for (a long run's poll is windowed by default). */
  wholeFlow: new Set(),
  flow: null,
  viewError: null,
  reachable: true,
  polled: false,
  tier: store.get("tier", "detailed"),
  muted: store.get("muted", "0") === "1",
};

let queueVersion = 0;
const api = createApi({ onReachable: setReachable });
const flowPoll = createFlowPoll((path) => api.get(path)); // the watched run's model by deltas (?since=)

const app = {
  api,
  state,
  navigate,
  refresh: () => schedule(0),
  notify,
  store,
  /** A run is in flight (or being dispatched): new tasks go to the queue. */
  busy: () => state.queue.some((i) => i.status === "active") || state.runs.some((r) => r.status === "running"),
  activeRunId,
  watchedRunId,
  /** Call before a local queue change so an in-flight poll cannot overwrite the optimistic state. */
  queueMutated: () => ++queueVersion,
  setQueue(items) {
    state.queue = items;
    renderPanels();
  },
  continueFrom: (runId) => {
    navigate("compose");
    compose.setContinuation(runId);
  },
  /** Run `run`'s task again as a new run: started now (and watched), or queued behind the active one. */
  retry: async (run) => {
    try {
      const outcome = await submitTask(app, { task: run.task, ...(run.effort ? { effort: run.effort } : {}) });
      if (outcome.runId) {
        notify(`Retrying ${run.runId} as ${outcome.runId}.`, { testid: "retry-sent" });
        navigate("watch", outcome.runId);
      } else {
        notify(`Queued a retry of ${run.runId}: it starts when the slot frees.`, { testid: "retry-sent" });
      }
    } catch (err) {
      notify(errorMessage(err), { tone: "error", testid: "retry-error" });
    }
    schedule(0);
  },
};

// --- panels ---------------------------------------------------------------------------------------------

const compose = createCompose($("#screen-compose"), app);
const queuePanel = createQueuePanel($("#screen-queue"), app);
const historyPanel = createHistory($("#screen-history"), app);
const foundryPanel = createFoundry($("#screen-foundry"), app);
const watch = createWatch($("#screen-watch"), app);
const inbox = createInbox($("#inbox-dialog"), $('[data-testid="inbox-open"]'), app);
app.inbox = inbox;
const results = createResults($("#result-dialog"), app);
app.results = results;

// --- navigation ------------------------------------------------------------------------------------------

/** Show `screen` (and for watch, pin `runId`; no id follows the active run; `action`: "replay" / "op-N"). */
function navigate(screen, runId = null, { replace = false, action = null } = {}) {
  const hash = routeHash({ screen, runId, action });
  if (location.hash !== hash) window.history[replace ? "replaceState" : "pushState"](null, "", hash);
  applyRoute({ screen, runId, action });
}

function applyRoute(route) {
  const changedRun = route.screen === "watch" && route.runId !== state.selectedRunId;
  state.screen = route.screen;
  if (route.screen === "watch") {
    state.selectedRunId = route.runId;
    // replay / focus an operation once the run view has drawn this run (watch.js; the methods are optional)
    if (route.runId && route.action) watch.routeAction(route.runId, route.action);
  }
  for (const name of SCREENS) {
    const section = $(`#screen-${name}`);
    section.hidden = name !== route.screen;
    const button = $(`.nav-btn[data-screen="${name}"]`);
    button.classList.toggle("current", name === route.screen);
    if (name === route.screen) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
  if (changedRun) {
    state.runView = null;
    state.flow = null;
  }
  renderPanels();
  if (route.screen === "watch") schedule(0);
}

// A hash change while boot() is still loading is left to boot(), which reads the hash once it is ready:
// applying it here too would run a route's action (replay, focus) twice.
let booted = false;
window.addEventListener("popstate", () => {
  if (!booted) return;
  const route = parseHash(location.hash);
  if (route) applyRoute(route);
});

for (const button of document.querySelectorAll(".nav-btn")) {
  button.addEventListener("click", () => navigate(button.dataset.screen));
}

function activeRunId() {
  const item = state.queue.find((i) => i.status === "active" && i.runId);
  if (item) return item.runId;
  const running = state.runs.find((r) => r.status === "running");
  return running ? running.runId : null;
}

/** The run the watch screen shows: the pinned one, else the active one, else the newest. */
function watchedRunId() {
  if (state.selectedRunId) return state.selectedRunId;
  return activeRunId() || (state.runs[0] ? state.runs[0].runId : null);
}

// --- polling ---------------------------------------------------------------------------------------------

let timer = null;
let polling = false;
let pollAgain = false;

function schedule(ms) {
  if (polling) {
    if (ms === 0) pollAgain = true;
    return;
  }
  clearTimeout(timer);
  timer = setTimeout(poll, ms);
}

async function poll() {
  polling = true;
  const version = queueVersion;
  try {
    const [runs, pending, queue] = await Promise.all([
      api.get("/api/runs"),
      api.get("/api/questions"),
      api.get("/api/queue"),
    ]);
    state.runs = Array.isArray(runs) ? runs.filter((r) => r && typeof r.runId === "string") : [];
    state.questions = Array.isArray(pending) ? pending.filter((q) => q && typeof q.id === "string") : [];
    if (version === queueVersion) state.queue = cleanQueue(queue);
    if (state.screen === "watch") await pollRun();
    if (state.config === null) await loadConfig(); // the server was down at boot
    if (!state.polled) firstPoll();
  } catch (error) {
    if (!(error && error.unreachable)) state.viewError = error;
    if (state.screen === null) applyRoute({ screen: "compose", runId: null }); // down at load: still usable
  } finally {
    polling = false;
  }
  renderPanels();
  subscribeStream();
  const again = pollAgain;
  pollAgain = false;
  schedule(again ? 0 : POLL_MS);
}

async function pollRun() {
  const runId = watchedRunId();
  if (!runId) {
    state.runView = null;
    state.flow = null;
    return;
  }
  try {
    const [view, flow] = await Promise.all([
      // the run view does not show the recent log (only the fallback view does): ~23 KB a poll saved
      api.get(`/api/runs/${seg(runId)}${optional().runview ? "?recent=0" : ""}`),
      flowPoll.poll(`/api/runs/${seg(runId)}/flow${state.wholeFlow.has(runId) ? "?window=all" : ""}`),
    ]);
    if (runId !== watchedRunId()) return; // the selection moved while we waited
    state.runView = view;
    state.flow = flow;
    state.viewError = null;
  } catch (error) {
    if (error && error.unreachable) throw error;
    state.viewError = error;
  }
}

function firstPoll() {
  state.polled = true;
  results.baseline(state.runs);
  if (state.screen === null) {
    const active = activeRunId();
    navigate(active ? "watch" : "compose", null, { replace: true });
  }
}

function setReachable(ok) {
  if (ok === state.reachable) return;
  state.reachable = ok;
  $('[data-testid="server-banner"]').hidden = ok;
  document.body.classList.toggle("offline", !ok);
  if (ok && booted) loadConfig(); // back after a restart: a resumed run is announced, the config re-read
}

let resumeShown = "";

/** The run the service resumed from its checkpoint when it started (`/api/config` `resumed`): one
 * notice per resume, until dismissed (the dismissal is remembered). */
function announceResume(config) {
  const resumed = config && config.resumed;
  if (!resumed || typeof resumed.runId !== "string") return;
  const key = `${resumed.runId}@${resumed.interruptedAt || ""}`;
  if (resumeShown === key || store.get("resumeSeen", "") === key) return;
  resumeShown = key;
  const when = resumed.interruptedAt ? ` (interrupted at ${shortTime(resumed.interruptedAt)})` : "";
  const asks = typeof resumed.question === "string" ? ` It asks again: ${resumed.question}` : "";
  const text = `The service restarted and resumed run ${resumed.runId} from its checkpoint${when}.${asks}`;
  const card = notify(text, { testid: "resume-notice", timeoutMs: 0 });
  card.querySelector("button").addEventListener("click", () => store.set("resumeSeen", key));
}

// --- rendering -------------------------------------------------------------------------------------------

function renderPanels() {
  const count = badgeCount(state.queue);
  const badge = $('[data-testid="queue-badge"]');
  badge.hidden = count === 0;
  badge.textContent = String(count);
  badge.setAttribute("aria-label", `${count} waiting or needing your answer`);
  if (!state.polled) return;
  compose.render();
  queuePanel.render();
  historyPanel.render();
  foundryPanel.render();
  watch.render();
  inbox.render();
  results.render();
  renderFavicon();
}

function renderFavicon() {
  const needsAnswer = state.questions.length > 0 || state.queue.some((i) => i.status === "needs_input");
  const mode = needsAnswer ? "answer" : activeRunId() ? "running" : "idle";
  const icon = $("#favicon");
  if (icon.dataset.mode === mode) return;
  icon.dataset.mode = mode;
  const color = { idle: "#8a94a6", running: "#2f7de1", answer: "#e8891d" }[mode];
  const ring = mode === "idle" ? "" : `<circle cx='16' cy='16' r='14' fill='none' stroke='${color}' stroke-width='3'/>`;
  const svg = `<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'>${ring}<circle cx='16' cy='16' r='8' fill='${color}'/></svg>`;
  icon.href = `data:image/svg+xml,${encodeURIComponent(svg)}`;
  document.body.dataset.activity = mode;
}

const toasts = $('[data-testid="toasts"]');

/** A dismissible notice; `node` may be text or an element. Returns the card. */
function notify(node, { tone = "info", testid = "toast", timeoutMs = 6000 } = {}) {
  const close = h("button", { type: "button", class: "icon-btn small", "aria-label": "Dismiss" }, "×");
  const card = h("div", { class: `toast tone-${tone}`, testid, role: tone === "error" ? "alert" : "status" }, h("div", { class: "toast-body" }, node), close);
  close.addEventListener("click", () => card.remove());
  toasts.appendChild(card);
  if (timeoutMs) setTimeout(() => card.remove(), timeoutMs);
  return card;
}

// --- toggles ---------------------------------------------------------------------------------------------

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  const button = $('[data-testid="theme-toggle"]');
  button.setAttribute("aria-pressed", String(theme === "dark"));
  button.textContent = theme === "dark" ? "Light theme" : "Dark theme";
}

$('[data-testid="theme-toggle"]').addEventListener("click", () => {
  const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
  store.set("theme", next);
  applyTheme(next);
});

function applyMute() {
  const button = $('[data-testid="mute-toggle"]');
  button.setAttribute("aria-pressed", String(state.muted));
  button.textContent = state.muted ? "Sound off" : "Sound on";
  button.title = state.muted ? "Questions arrive silently" : "A beep announces new questions";
}

$('[data-testid="mute-toggle"]').addEventListener("click", () => {
  state.muted = !state.muted;
  store.set("muted", state.muted ? "1" : "0");
  applyMute();
});

function setupTiers() {
  const select = $('[data-testid="tier-select"]');
  const list = tiers();
  if (!list.includes(state.tier)) state.tier = "detailed";
  select.replaceChildren(...list.map((t) => h("option", { value: t }, t)));
  select.value = state.tier;
  select.addEventListener("change", () => {
    state.tier = select.value;
    store.set("tier", state.tier);
    watch.setTier(state.tier);
  });
}

// Audio may only start after a user gesture: prime it on the first one.
const prime = () => {
  inbox.primeAudio();
  window.removeEventListener("pointerdown", prime, true);
  window.removeEventListener("keydown", prime, true);
};
window.addEventListener("pointerdown", prime, true);
window.addEventListener("keydown", prime, true);

// --- live stream -----------------------------------------------------------------------------------------

let stream = null;
let streamRun = null;
const deltaListeners = new Set();

function startStream() {
  const module = optional().stream;
  if (!module || typeof module.createStream !== "function") return;
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/stream`;
  try {
    stream = module.createStream({
      url,
      onDelta: (delta) => deltaListeners.forEach((fn) => fn(delta)),
      onState: (s) => {
        const live = $('[data-testid="live-state"]');
        const open = s === "open" || s === "subscribed" || s === "live";
        live.textContent = open ? "live" : "";
        live.classList.toggle("on", open);
      },
    });
  } catch {
    stream = null; // polling alone still shows everything
  }
}

function subscribeStream() {
  const runId = activeRunId();
  if (!stream || !runId || runId === streamRun) return;
  streamRun = runId;
  try {
    stream.subscribe(runId);
  } catch {
    // the stream is optional
  }
}

/** What the run view receives as `ctx.stream`: the page's stream plus a delta fan-out. */
app.stream = {
  get connection() {
    return stream;
  },
  onDelta(fn) {
    deltaListeners.add(fn);
    return () => deltaListeners.delete(fn);
  },
  subscribe: (runId) => stream && stream.subscribe(runId),
  state: () => (stream ? stream.state() : "closed"),
};

// --- boot ------------------------------------------------------------------------------------------------

async function loadConfig() {
  const [config, settings] = await Promise.all([
    api.get("/api/config").catch(() => null),
    api.get("/api/settings").catch(() => null),
  ]);
  state.config = config;
  state.settings = settings;
  state.defaults = resolveDefaults(settings, config);
  const build = config && config.build;
  $('[data-testid="build-label"]').textContent = build && build.sha
    ? `build ${String(build.sha).slice(0, 10)}${build.builtAt ? ` · ${build.builtAt}` : ""}`
    : "development build";
  compose.applyDefaults();
  if (config) watch.configure(config);
  announceResume(config);
}

/** Settings changed in the panel: re-resolve the chain for the selectors the user has not touched. */
app.settingsSaved = (settings) => {
  state.settings = settings;
  state.defaults = resolveDefaults(settings, state.config);
  compose.applyDefaults();
};

async function boot() {
  applyTheme(store.get("theme", matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
  applyMute();
  await loadOptional();
  setupTiers();
  await loadConfig();
  startStream();
  booted = true;
  const route = parseHash(location.hash);
  if (route) applyRoute(route);
  schedule(0);
}

boot();
