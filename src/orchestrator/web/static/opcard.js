// The operation inspector card: an operation's label, endpoints,
// counts and times from the model, and its detail body fetched on demand from
// GET /api/runs/:id/flow?operation=<id> — once per `<runId>|<opId>` for the browser session (bounded
// cache; a failed fetch is not cached, so reopening retries) — rendered as sanitized Markdown.
//
//   openOperationCard(ctx, {opId, model, labels, tier, host?, onInstance?(pid)}) -> {close()}
//   ctx = {runId, api: {get(path) -> Promise<json>}}
// The card replaces any card already open in `host` (default: a floating panel on document.body).

import { badge, severityOf } from "./labels.js";
import { renderMarkdown } from "./markdown.js";
import { boundedCache, clock, compact, copyText, duration, el } from "./rvdom.js";

const details = boundedCache(300);

/** The detail Markdown of an operation (null when it has none); cached per run and operation. */
export function fetchOperationDetails(ctx, opId) {
  const key = `${ctx.runId}|${opId}`;
  const hit = details.get(key);
  if (hit !== undefined) return hit;
  const path = `/api/runs/${encodeURIComponent(ctx.runId)}/flow?operation=${encodeURIComponent(opId)}`;
  const pending = Promise.resolve()
    .then(() => ctx.api.get(path))
    .then((body) => (body && typeof body.details === "string" ? body.details : null));
  details.set(key, pending);
  pending.catch(() => details.delete(key)); // failures are not cached
  return pending;
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
      m ? row("Elapsed", m.elapsedSeconds == null ? "?" : duration(m.elapsedSeconds)) : null,
      row("Calls to this participant", involving ? String(involving) : null),
    );
    card.appendChild(grid);
    const actions = el("div", "rv-card-actions");
    for (const p of [src, dst]) {
      if (p && p.kind === "role" && onInstance) {
        const button = el("button", "rv-link", `Transcript: ${labels.participant(p, tier)} #${p.id.split(":").pop()}`);
        button.type = "button";
        button.dataset.testid = "card-open-transcript";
        button.addEventListener("click", () => onInstance(p.id));
        actions.appendChild(button);
      }
    }
    if (actions.childNodes.length) card.appendChild(actions);
  }
  const body = el("div", "rv-card-body md", el("p", "rv-muted", "Loading details…"));
  body.dataset.testid = "operation-details";
  card.appendChild(body);
  target.appendChild(card);

  fetchOperationDetails(ctx, opId).then(
    (text) => {
      body.replaceChildren(text ? renderMarkdown(text) : el("p", "rv-muted", "No details for this operation."));
    },
    () => {
      body.replaceChildren(el("p", "rv-muted", "Details could not be loaded (reopen the card to retry)."));
    },
  );
  return handle;
}
