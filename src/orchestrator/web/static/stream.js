// The live token stream client (GET /ws/stream) and the partial-text accumulator the views read.
//
// Public interface:
//   createStream({url = '/ws/stream', onDelta, onState}) -> {
//     subscribe(runId)   follow one run (re-sent after every reconnect; a re-subscribe replaces it)
//     onDelta(fn)        add a delta listener; returns the function that removes it
//     state()            'connecting' | 'open' | 'subscribed' | 'closed'
//     close()            stop for good
//   }
//   createPartials(limit = 32) -> { apply(delta) -> entry|null, get(roleId), forRole(role), clear() }
//
// Protocol: client → {"type":"subscribe","runId"} or {"type":"ping"} (on open when there is nothing to
// follow, then every 20 s: the server closes sockets silent past its idle limit); server → {"type":"pong"},
// {"type":"subscribed","runId"} (the ack) and
// {"type":"delta","runId","roleId","role","field":"content"|"reasoning","text","reset"?,"since"?} (`since`
// on every reset: when the turn's first token came); right after the ack, the text the turn in flight
// streamed so far comes as a reset delta. Reconnects with
// capped backoff (500 ms doubling to 8 s), reset by an ack. The stream is optional: a blocked, absent or
// dying socket is retried quietly and never surfaces an error; polling stays the authority on run state.
// `onState` hears state changes; `onDelta` (and listeners) hear well-formed deltas of the subscribed run.

const MIN_DELAY_MS = 500;
const MAX_DELAY_MS = 8000;
/** Per-field cap of accumulated partial text (the head is dropped beyond it). */
const MAX_PARTIAL_CHARS = 64_000;
/** Keep-alive interval: well inside the server's idle limit (90 s by default; first message 30 s). */
const PING_MS = 20_000;

function absolute(url) {
  if (/^wss?:\/\//.test(url)) return url;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${location.host}${url.startsWith("/") ? "" : "/"}${url}`;
}

export function createStream({ url = "/ws/stream", onDelta = null, onState = null } = {}) {
  const listeners = new Set();
  if (typeof onDelta === "function") listeners.add(onDelta);
  let socket = null;
  let runId = null;
  let delay = MIN_DELAY_MS;
  let timer = null;
  let pinger = null;
  let closed = false;
  let current = "closed";

  function setState(next) {
    if (next === current) return;
    current = next;
    if (typeof onState === "function") {
      try {
        onState(next);
      } catch {
        // a listener's failure is not the stream's
      }
    }
  }

  function send(message) {
    if (socket && socket.readyState === 1) {
      try {
        socket.send(JSON.stringify(message));
      } catch {
        // the close handler reconnects
      }
    }
  }

  function stopPinging() {
    if (pinger !== null) clearInterval(pinger);
    pinger = null;
  }

  function schedule() {
    if (closed || timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      connect();
    }, delay);
    delay = Math.min(delay * 2, MAX_DELAY_MS);
  }

  function receive(event) {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    if (!message || typeof message !== "object") return;
    if (message.type === "subscribed") {
      if (message.runId === runId) {
        delay = MIN_DELAY_MS;
        setState("subscribed");
      }
      return;
    }
    if (
      message.type !== "delta" || message.runId !== runId || typeof message.text !== "string" ||
      (message.field !== "content" && message.field !== "reasoning")
    ) {
      return;
    }
    for (const fn of listeners) {
      try {
        fn(message);
      } catch {
        // keep delivering to the others
      }
    }
  }

  function connect() {
    if (closed) return;
    let next;
    setState("connecting");
    try {
      next = new WebSocket(absolute(url));
    } catch {
      setState("closed");
      schedule();
      return;
    }
    socket = next;
    next.onopen = () => {
      if (socket !== next) return;
      setState("open");
      send(runId !== null ? { type: "subscribe", runId } : { type: "ping" });
      if (pinger === null) pinger = setInterval(() => send({ type: "ping" }), PING_MS);
    };
    next.onmessage = (event) => {
      if (socket === next) receive(event);
    };
    next.onerror = () => {}; // the close event follows; nothing to surface
    next.onclose = () => {
      if (socket !== next) return;
      socket = null;
      stopPinging();
      setState("closed");
      schedule();
    };
  }

  connect();

  return {
    subscribe(id) {
      runId = id == null ? null : String(id);
      if (runId !== null) send({ type: "subscribe", runId });
    },
    onDelta(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    state: () => current,
    close() {
      closed = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      stopPinging();
      listeners.clear();
      if (socket) {
        const old = socket;
        socket = null;
        try {
          old.close();
        } catch {
          // already gone
        }
      }
      setState("closed");
    },
  };
}

/** Wall-clock ms of a turn's start: the server's `since` (a catch-up's) when it parses, else now. */
function wallClock(since) {
  const parsed = typeof since === "string" ? Date.parse(since) : NaN;
  return Number.isFinite(parsed) ? parsed : Date.now();
}

/**
 * In-flight partial text per role instance, folded from deltas: `reset` clears both fields before
 * appending (a retried attempt re-emits from zero). Entries: {runId, roleId, role, content, reasoning,
 * resetAt, startedAt, updatedAt, seq}; `startedAt` is the wall-clock ms the turn's text started (a
 * catch-up delta's `since`), the other times are `performance.now()` values. At most `limit` instances are kept.
 */
export function createPartials(limit = 32) {
  const entries = new Map();
  let seq = 0;
  return {
    apply(delta) {
      if (!delta || typeof delta.text !== "string" || (delta.field !== "content" && delta.field !== "reasoning")) {
        return null;
      }
      const key = String(delta.roleId || delta.role || "");
      const now = performance.now();
      let entry = entries.get(key);
      if (entry === undefined || entry.runId !== delta.runId) {
        entry = { runId: delta.runId, roleId: delta.roleId || null, role: delta.role || null, content: "", reasoning: "", resetAt: now, startedAt: wallClock(delta.since), updatedAt: now, seq: 0 };
      }
      entries.delete(key);
      entries.set(key, entry);
      while (entries.size > limit) entries.delete(entries.keys().next().value);
      if (delta.reset) {
        entry.content = "";
        entry.reasoning = "";
        entry.resetAt = now;
        entry.startedAt = wallClock(delta.since);
      }
      let text = entry[delta.field] + delta.text;
      if (text.length > MAX_PARTIAL_CHARS) text = text.slice(text.length - MAX_PARTIAL_CHARS);
      entry[delta.field] = text;
      entry.updatedAt = now;
      entry.seq = ++seq;
      return entry;
    },
    get(roleId) {
      return entries.get(String(roleId)) || null;
    },
    /** The most recently updated entry of role name `role` (the fallback when a side has no instance id). */
    forRole(role) {
      let best = null;
      for (const entry of entries.values()) if (entry.role === role && (!best || entry.seq > best.seq)) best = entry;
      return best;
    },
    clear() {
      entries.clear();
    },
  };
}
