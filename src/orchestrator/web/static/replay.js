// Replay of a run (issue 18): a scrubber over its operations 1..M that redraws the run view as it was
// right after any operation, so a finished run can be watched again and a live one rewound.
//
// Frames come from GET /api/runs/:id/replay?from=N&count=K (flow/replay.py): each is an ordinary
// (windowed) InteractionModel, so the flow graph and the sequence view draw it as they draw a poll.
// Frames are fetched in chunks of CHUNK operations, the next chunk before the scrubber reaches it, and
// kept in a bounded cache. Every change (play tick, drag, key, arriving chunk) only schedules a draw:
// at most one frame is drawn per animation frame, and a frame not loaded yet is waited for, never skipped.
//
// Speeds: 1× = four operations a second, 4× = sixteen, "full" = one operation per animation frame.
//
// Public interface (used by runview.js):
//   createReplay({runId, api: {get}, labels, getTier, show(frame|null)}) -> {
//     button (the "Replay" toggle), el (the scrubber bar), open({play}), close(), live(flow),
//     caption() -> "Replay · operation N of M" while open, else "", active, destroy() }
// `show(frame)` is called with the frame to draw, `show(null)` when the replay closes (draw the live
// model again). `live(flow)` tells the replay about every polled model (the run's length and status).

import { project } from "./projection.js";
import { boundedCache, el, ensureStylesheet, setText } from "./rvdom.js";

const CHUNK = 50;
const KEPT_CHUNKS = 12;
/** Operations ahead of the scrubber whose chunk is asked for already. */
const AHEAD = 30;
/** A chunk that came back short (a live run's end) is asked again at most this often. */
const RETRY_MS = 500;
const SPEEDS = [
  { id: "1", label: "1×", perSecond: 4 },
  { id: "4", label: "4×", perSecond: 16 },
  { id: "full", label: "Full", perSecond: Infinity },
];
const LIVE = new Set(["running", "unknown", "needs_clarification"]);
const TIME = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });

/** An ISO timestamp as a time of day ("" when it does not parse); one shared formatter, as this runs per frame. */
function clock(value) {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? "" : TIME.format(date);
}

function button(text, testid, label) {
  const b = el("button", "rp-btn", text);
  b.type = "button";
  b.dataset.testid = testid;
  if (label) b.setAttribute("aria-label", label);
  return b;
}

export function createReplay({ runId, api, labels, getTier, show }) {
  ensureStylesheet("replay.css");
  const chunks = boundedCache(KEPT_CHUNKS);
  const loading = new Set();
  let open = false;
  let playing = false;
  let speed = SPEEDS[0];
  let total = 0;
  let liveStatus = "unknown";
  let pos = 1;
  let drawn = null; // the frame object last handed to show()
  let raf = 0;
  let lastTick = 0;
  let budget = 0;

  const toggle = button("Replay", "replay-open", "Replay this run operation by operation");
  toggle.classList.add("rp-open");
  toggle.hidden = true;
  const play = button("Play", "replay-play");
  const back = button("◀", "replay-back", "Step back one operation");
  const forward = button("▶", "replay-forward", "Step forward one operation");
  const scrubber = el("input", "rp-scrubber");
  scrubber.type = "range";
  scrubber.min = "1";
  scrubber.step = "1";
  scrubber.dataset.testid = "replay-scrubber";
  scrubber.setAttribute("aria-label", "Operation to show (← and → step)");
  const speedSelect = el("select", "rp-speed");
  speedSelect.dataset.testid = "replay-speed";
  speedSelect.setAttribute("aria-label", "Replay speed");
  for (const s of SPEEDS) {
    const option = el("option", null, s.label);
    option.value = s.id;
    speedSelect.appendChild(option);
  }
  const where = el("span", "rp-where");
  where.dataset.testid = "replay-position";
  where.setAttribute("aria-live", "off");
  const exit = button("Close replay", "replay-exit");
  const bar = el("div", "rp", el("span", "rp-title", "Replay"), back, play, forward, scrubber, speedSelect, exit, where);
  bar.dataset.testid = "replay-bar";
  bar.setAttribute("role", "group");
  bar.setAttribute("aria-label", "Replay of the run");
  bar.hidden = true;

  function chunkOf(n) {
    return Math.floor((n - 1) / CHUNK);
  }

  /** A kept chunk that holds the run's newest operation (as it was then) while the run has moved on. */
  function stale(entry) {
    if (entry.first + entry.frames.length - 1 < entry.total) return false;
    const last = entry.frames[entry.frames.length - 1];
    return total > entry.total || Boolean(last && last.status !== liveStatus);
  }

  /** Ask for chunk `c` unless it is here and current, on its way, or was asked for just now. */
  function request(c) {
    if (c < 0 || loading.has(c) || c * CHUNK + 1 > Math.max(total, 1)) return;
    const entry = chunks.get(c);
    if (entry) {
      const short = entry.frames.length < CHUNK && entry.first + entry.frames.length <= total;
      if (!(short || stale(entry)) || performance.now() - entry.at < RETRY_MS) return;
    }
    loading.add(c);
    const first = c * CHUNK + 1;
    api.get(`/api/runs/${encodeURIComponent(runId)}/replay?from=${first}&count=${CHUNK}`).then(
      (answer) => {
        loading.delete(c);
        const frames = answer && Array.isArray(answer.frames) ? answer.frames : [];
        const length = Number(answer && answer.operationsTotal) || 0;
        chunks.set(c, { first, frames, total: length, at: performance.now() });
        if (length > total) setTotal(length);
        schedule();
      },
      () => {
        loading.delete(c);
        chunks.set(c, { first, frames: [], total: 0, at: performance.now() });
        setTimeout(schedule, RETRY_MS + 20); // asked again then
      },
    );
  }

  /** The frame of operation `n` when it is loaded (asking for it, or for a fresher one, otherwise). */
  function frameAt(n) {
    const c = chunkOf(n);
    const entry = chunks.get(c);
    const frame = entry ? entry.frames[n - entry.first] : undefined;
    if (!frame || stale(entry)) request(c);
    return frame || null;
  }

  function setTotal(n) {
    total = Math.max(0, n);
    scrubber.max = String(Math.max(1, total));
    toggle.hidden = open || total === 0;
  }

  function schedule() {
    if (!raf && open) raf = requestAnimationFrame(tick);
  }

  function setPlaying(on) {
    playing = Boolean(on);
    bar.dataset.playing = playing ? speed.id : "";
    setText(play, playing ? "Pause" : "Play");
    play.setAttribute("aria-pressed", playing ? "true" : "false");
    budget = 0;
    lastTick = 0;
    schedule();
  }

  function goTo(n) {
    pos = Math.min(Math.max(1, Math.round(n) || 1), Math.max(1, total));
    schedule();
  }

  function tick(now) {
    raf = 0;
    if (!open) return;
    if (playing) {
      if (speed.perSecond === Infinity) budget = 1;
      else budget += lastTick ? ((now - lastTick) * speed.perSecond) / 1000 : 0;
      lastTick = now;
      // advance only over frames that are here: a replay waits for its frames, it never skips them
      while (budget >= 1 && pos < total && frameAt(pos + 1)) {
        pos += 1;
        budget -= 1;
        if (speed.perSecond === Infinity) break;
      }
      budget = Math.min(budget, 1);
      if (total > 0 && pos >= total) setPlaying(false);
    }
    draw();
    if (pos + AHEAD <= total) request(chunkOf(pos + AHEAD));
    if (playing) schedule();
  }

  function draw() {
    if (String(pos) !== scrubber.value) scrubber.value = String(pos);
    const spoken = `Operation ${pos} of ${total}`;
    if (scrubber.getAttribute("aria-valuetext") !== spoken) scrubber.setAttribute("aria-valuetext", spoken);
    back.disabled = pos <= 1;
    forward.disabled = pos >= total;
    const frame = frameAt(pos);
    if (!frame) {
      setText(where, `Operation ${pos} of ${total} · loading…`);
      return;
    }
    if (frame === drawn) return;
    drawn = frame;
    const ops = frame.operations || [];
    const op = ops.find((o) => o.id === `op-${pos}`) || ops[ops.length - 1] || null;
    const label = op ? labels.operation(op, project(frame).byId, getTier()) : "";
    setText(where, `Operation ${pos} of ${total}${label ? ` · ${label}` : ""}${op ? ` · ${clock(op.startedAt)}` : ""}`);
    show(frame);
  }

  function step(delta) {
    setPlaying(false);
    goTo(pos + delta);
  }

  play.addEventListener("click", () => {
    if (!playing && pos >= total) goTo(1);
    setPlaying(!playing);
  });
  back.addEventListener("click", () => step(-1));
  forward.addEventListener("click", () => step(1));
  scrubber.addEventListener("input", () => {
    setPlaying(false);
    goTo(Number(scrubber.value));
  });
  scrubber.addEventListener("keydown", (event) => {
    if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
      event.preventDefault();
      step(event.key === "ArrowLeft" ? -1 : 1);
    }
  });
  speedSelect.addEventListener("change", () => {
    speed = SPEEDS.find((s) => s.id === speedSelect.value) || SPEEDS[0];
    if (playing) bar.dataset.playing = speed.id;
    budget = 0;
    lastTick = 0;
  });
  exit.addEventListener("click", () => close());
  toggle.addEventListener("click", () => openReplay({ play: false }));

  function openReplay({ play: autoplay = true, at = 1 } = {}) {
    open = true;
    bar.hidden = false;
    toggle.hidden = true;
    drawn = null;
    goTo(at);
    setPlaying(autoplay);
    scrubber.focus({ preventScroll: true });
    schedule();
  }

  function close() {
    if (!open) return;
    const hadFocus = bar.contains(document.activeElement);
    open = false;
    setPlaying(false);
    if (raf) cancelAnimationFrame(raf);
    raf = 0;
    drawn = null;
    bar.hidden = true;
    toggle.hidden = total === 0;
    show(null);
    if (hadFocus && !toggle.hidden) toggle.focus({ preventScroll: true });
  }

  return {
    button: toggle,
    el: bar,
    open: openReplay,
    close,
    live(flow) {
      if (!flow || !Array.isArray(flow.operations)) return;
      const length = Number.isFinite(flow.operationsTotal) && flow.operationsTotal > 0 ? flow.operationsTotal : flow.operations.length;
      liveStatus = flow.status || "unknown";
      setText(exit, LIVE.has(liveStatus) ? "Back to live" : "Close replay");
      if (length !== total) setTotal(length);
      if (open) schedule();
    },
    caption() {
      return open ? `Replay · operation ${pos} of ${total}` : "";
    },
    get active() {
      return open;
    },
    /** For tests and the shell: where the scrubber is, and the frame on screen. */
    get position() {
      return { at: pos, total, playing, frame: drawn };
    },
    destroy() {
      open = false;
      if (raf) cancelAnimationFrame(raf);
      raf = 0;
    },
  };
}
