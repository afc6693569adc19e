// The shell's routes, as URL hashes (pure: app.js applies them).
//   #watch                  follow the active run      #history  #compose  #queue  #foundry
//   #watch/<runId>          pin a run
//   #watch/<runId>/replay   pin it and start its replay (the run view's startReplay)
//   #watch/<runId>/op-<N>   pin it and focus operation op-N (the run view's focusOperation)

export const SCREENS = ["watch", "history", "compose", "queue", "foundry"];
const ACTION = /^(replay|op-\d+)$/;

function decode(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** `{screen, runId, action}` from a hash, or null when it names no screen. */
export function parseHash(hash) {
  const [screen, ...rest] = String(hash || "").replace(/^#\/?/, "").split("/").map(decode);
  if (!SCREENS.includes(screen)) return null;
  const runId = screen === "watch" && rest[0] ? rest[0] : null;
  const action = runId && ACTION.test(rest[1] || "") ? rest[1] : null;
  return { screen, runId, action };
}

/** The hash of a route (the inverse of parseHash). */
export function routeHash({ screen, runId = null, action = null }) {
  if (screen !== "watch" || !runId) return `#${screen}`;
  return `#watch/${encodeURIComponent(runId)}${action && ACTION.test(action) ? `/${action}` : ""}`;
}
