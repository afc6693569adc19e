// The operation inspector card: an operation's label, endpoints,
// counts and times from the model, and its detail body fetched on demand from
// GET /api/runs/:id/flow?operation=<id> — once per `<runId>|<opId>` for the browser session (bounded
// cache; a failed fetch is not cached, so reopening retries) — rendered as sanitized Markdown. A tool
// call or return shows its call and result by type instead (toolresult.js, from
// GET /api/runs/:id/toolresult?event=<logIndex>; a write with its diff), the Markdown as the fallback.
// "Transcript" opens the inspector at the turn of the operation's event (`logIndex` → focusIndex).
//
//   openOperationCard(ctx, {opId, model, labels, tier, host?, onInstance?(pid, focusIndex)}) -> {close()}
//   ctx = {runId, api: {get(path) -> Promise<json>}}
// The card replaces any card already open in `host` (default: a floating panel on document.body).

import { badge, elapsedMs, preciseDuration, severityOf } from "./labels.js";
import { renderMarkdown } from "./markdown.js";
import { boundedCache, clock, compact, copyText, el, ensureStylesheet } from "./rvdom.js";
import { renderToolResult } from "./toolresult.js";

const details = boundedCache(300);

/** An operation's detail answer {details (Markdown or null), logIndex (or null)}; cached per run and
 * operation. */
export function fetchOperation(ctx, opId) {
  const key = `${ctx.runId}|${opId}`;
  const hit = details.get(key);
  if (hit !== undefined) return hit;
  const path = `/api/runs/${encodeURIComponent(ctx.runId)}/flow?operation=${encodeURIComponent(opId)}`;
  const pending = Promise.resolve()
    .then(() => ctx.api.get(path))
    .then((body) => ({
      details: body && typeof body.details === "string" ? body.details : null,
      logIndex: body && Number.isInteger(body.logIndex) ? body.logIndex : null,
    }));
  details.set(key, pending);
  pending.catch(() => details.delete(key)); // failures are not cached
  return pending;
}

/** The detail Markdown of an operation (null when it has none); cached per run and operation. */
export function fetchOperationDetails(ctx, opId) {
  return fetchOperation(ctx, opId).then((answer) => answer.details);
}

const results = boundedCache(200);

/** GET …/toolresult?event=<index>[&full=1] (cached; failures are not). */
function fetchToolResult(ctx, index, full = false) {
  const key = `${ctx.runId}|${index}|${full ? 1 : 0}`;
  const hit = results.get(key);
  if (hit !== undefined) return hit;
  const path = `/api/runs/${encodeURIComponent(ctx.runId)}/toolresult?event=${encodeURIComponent(index)}${full ? "&full=1" : ""}`;
  const pending = Promise.resolve().then(() => ctx.api.get(path));
  results.set(key, pending);
  pending.catch(() => results.delete(key));
  return pending;
}

/** The card body of a tool operation: the call's result by type; null when the server has none. */
async function toolBody(ctx, logIndex) {
  const answer = await fetchToolResult(ctx, logIndex);
  if (!answer || !answer.result) return null;
  const diff = answer.diff;
  return renderToolResult(answer.result, {
    onShowAll: (view) => fetchToolResult(ctx, view.index ?? view.callIndex, true).then((body) => body.result),
    onDiff: () => Promise.resolve(diff || null),
  });
}

function row(name, value) {
  if (value == null || value === "") return null;
  return el("div", "rv-kv", el("span", "rv-k", name), el("span", "rv-v", value));
}

/** The outcome badge row: amber for a problem the model can act on, red for a call that failed. */
function badgeRow(op) {
  const value = el("span", `rv-badge sev-${severityOf(op)}`, badge(op));
  value.dataset.testid = "operation-badge";
  return el("div", "rv-kv", el("span", "rv-k", "Outcome"), value);
}

export function openOperationCard(ctx, { opId, model, labels, tier = "detailed", host = null, onInstance = null }) {
  ensureStylesheet("toolresult.css");
  const ops = (model && model.operations) || [];
  const op = ops.find((o) => o.id === opId);
  const byId = new Map(((model && model.participants) || []).map((p) => [p.id, p]));
  const target = host || document.body;
  for (const old of target.querySelectorAll(":scope > .rv-card")) old.remove();
  const card = el("section", `rv-card${host ? "" : " floating"}`);
  card.dataset.testid = "operation-card";
  card.dataset.op = opId;
  card.setAttribute("aria-label", "Operation details");
  const close = el("button", "rv-close", "×");
  close.type = "button";
  close.title = "Close";
  close.setAttribute("aria-label", "Close");
  const handle = {
    close() {
      card.remove();
      document.removeEventListener("keydown", onKey, true);
    },
  };
  close.addEventListener("click", () => handle.close());
  function onKey(event) {
    if (event.key === "Escape" && !document.querySelector(".rv-modal-backdrop")) {
      handle.close();
    }
  }
  document.addEventListener("keydown", onKey, true);

  const title = op ? labels.operation(op, byId, tier) : opId;
  // "Copy link": the address that reopens this run at this operation (#watch/<run>/op-N).
  const link = el("button", "rv-link rv-copy-link", "Copy link");
  link.type = "button";
  link.dataset.testid = "card-copy-link";
  link.dataset.link = `${location.origin}/#watch/${encodeURIComponent(ctx.runId)}/${opId}`;
  link.addEventListener("click", async () => {
    link.textContent = (await copyText(link.dataset.link)) ? "Copied" : "Copy failed";
  });
  card.append(el("header", "rv-card-head", el("h3", "rv-card-title", title), link, close));
  if (op) {
    const src = byId.get(op.source);
    const dst = byId.get(op.destination);
    const m = op.metrics;
    const involving = ops.reduce((n, o) => n + (o.destination === op.destination && o.kind === "call" ? 1 : 0), 0);
    const grid = el(
      "div",
      "rv-card-grid",
      row("Operation", `${op.id} · ${op.kind}`),
      row("From", src ? `${labels.participant(src, tier)} (${src.id})` : op.source),
      row("To", dst ? `${labels.participant(dst, tier)} (${dst.id})` : op.destination),
      row("Stack", op.stack),
      row("State", `${op.lifecycle === "in_flight" ? "in flight" : "settled"}${op.outcome ? ` · ${op.outcome}` : ""}`),
      severityOf(op) ? badgeRow(op) : null,
      row("Started", clock(op.startedAt)),
      row("Settled", op.settledAt ? clock(op.settledAt) : null),
      m ? row("Tokens", `${compact(m.tokens)} (cached prompt ${compact(m.cachedPromptTokens)})`) : null,
      m ? row("Elapsed", elapsedMs(op) == null ? "?" : preciseDuration(elapsedMs(op))) : null,
      row("Calls to this participant", involving ? String(involving) : null),
    );
    card.appendChild(grid);
    const actions = el("div", "rv-card-actions");
    for (const p of [src, dst]) {
      if (p && p.kind === "role" && onInstance) {
        const button = el("button", "rv-link", `Transcript: ${labels.participant(p, tier)} #${p.id.split(":").pop()}`);
        button.type = "button";
        button.dataset.testid = "card-open-transcript";
        button.addEventListener("click", async () => {
          let focusIndex = null;
          try {
            focusIndex = (await fetchOperation(ctx, opId)).logIndex;
          } catch {
            // opens at the newest turn
          }
          onInstance(p.id, focusIndex);
        });
        actions.appendChild(button);
      }
    }
    if (actions.childNodes.length) card.appendChild(actions);
  }
  const body = el("div", "rv-card-body md", el("p", "rv-muted", "Loading details…"));
  body.dataset.testid = "operation-details";
  card.appendChild(body);
  target.appendChild(card);

  const byTool = op && [op.source, op.destination].some((pid) => byId.get(pid)?.kind === "tool");
  fetchOperation(ctx, opId).then(
    async ({ details: text, logIndex }) => {
      const typed = byTool && logIndex !== null ? await toolBody(ctx, logIndex).catch(() => null) : null;
      if (typed) {
        body.classList.remove("md"); // machine text by type, not Markdown
        body.dataset.testid = "operation-result";
        body.replaceChildren(typed);
        return;
      }
      body.replaceChildren(text ? renderMarkdown(text) : el("p", "rv-muted", "No details for this operation."));
    },
    () => {
      body.replaceChildren(el("p", "rv-muted", "Details could not be loaded (reopen the card to retry)."));
    },
  );
  return handle;
}
