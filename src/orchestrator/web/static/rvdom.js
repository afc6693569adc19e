// Small DOM helpers of the run-view modules (runview, flowgraph, sequence, inspector).
//
// Every string reaches the DOM as a text node or through setAttribute on an attribute we chose; nothing
// here assigns HTML. `keyedChild` + `sweep` give keyed reuse: a render marks what it touched with a
// generation number and the sweep removes the rest, so an unchanged frame costs a few comparisons.

export const SVG_NS = "http://www.w3.org/2000/svg";

/** An HTML element with `className` and children (nodes, strings, null skipped). */
export function el(tag, className, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An SVG element with attributes. */
export function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

/** Set an attribute only when it changed (no style recalc for an unchanged frame). */
export function setAttr(node, name, value) {
  if (value == null) {
    if (node.hasAttribute(name)) node.removeAttribute(name);
    return;
  }
  const text = String(value);
  if (node.getAttribute(name) !== text) node.setAttribute(name, text);
}

/** Set the text content only when it changed. */
export function setText(node, value) {
  const text = value == null ? "" : String(value);
  if (node.textContent !== text) node.textContent = text;
}

/** Toggle a class only when needed. */
export function setClass(node, name, on) {
  if (node.classList.contains(name) !== Boolean(on)) node.classList.toggle(name, Boolean(on));
}

/** Replace the class list (only when it changed). */
export function setClassName(node, value) {
  if (node.getAttribute("class") !== value) node.setAttribute("class", value);
}

/**
 * The child of `parent` stored under `key` in `map`, created with `make()` when missing; marked with
 * generation `gen` so `sweep(map, gen)` can remove what the current render did not touch.
 */
export function keyedChild(parent, map, key, gen, make) {
  let node = map.get(key);
  if (node === undefined) {
    node = make();
    map.set(key, node);
    parent.appendChild(node);
  }
  node.__gen = gen;
  return node;
}

/** Remove every node of `map` not marked with generation `gen`. */
export function sweep(map, gen) {
  for (const [key, node] of map) {
    if (node.__gen !== gen) {
      node.remove();
      map.delete(key);
    }
  }
}

/** Seconds as "1h 02m", "3m 05s" or "12s"; "" for null. */
export function duration(seconds) {
  if (seconds == null || !Number.isFinite(Number(seconds))) return "";
  const s = Math.max(0, Math.round(Number(seconds)));
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${s}s`;
}

/** 1234567 → "1.23M", 12345 → "12.3k", 999 → "999"; "" for null. */
export function compact(n) {
  if (n == null || !Number.isFinite(Number(n))) return "";
  const v = Number(n);
  if (Math.abs(v) >= 1e6) return `${(v / 1e6).toFixed(v >= 1e7 ? 1 : 2)}M`;
  if (Math.abs(v) >= 1e4) return `${(v / 1e3).toFixed(v >= 1e5 ? 0 : 1)}k`;
  return String(Math.round(v));
}

/** An ISO timestamp as a local time of day ("" when absent; the raw text when it does not parse). */
export function clock(value) {
  if (!value) return "";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

/** A bounded insertion-ordered cache (oldest evicted first). */
export function boundedCache(limit) {
  const map = new Map();
  return {
    get: (key) => map.get(key),
    has: (key) => map.has(key),
    set(key, value) {
      map.delete(key);
      map.set(key, value);
      while (map.size > limit) map.delete(map.keys().next().value);
    },
    delete: (key) => map.delete(key),
    get size() {
      return map.size;
    },
  };
}

/** Inject `/static/<name>` as a stylesheet once per document (the run view brings its own CSS). */
export function ensureStylesheet(name) {
  const href = `/static/${name}`;
  for (const link of document.querySelectorAll('link[rel="stylesheet"]')) {
    if (link.getAttribute("href") === href) return;
  }
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = href;
  document.head.appendChild(link);
}

/** Copy `text` to the clipboard; resolves true on success (never throws). */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}
