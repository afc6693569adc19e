// The run-view modules (runview.js, stream.js, markdown.js, labels.js) loaded behind guards: when one
// fails to load, the shell keeps working with a plain fallback instead of a blank page.

const loaded = { markdown: null, labels: null, runview: null, stream: null };

/** Load every optional module once; resolves with what loaded (failures stay null). */
export async function loadOptional() {
  const names = Object.keys(loaded);
  const results = await Promise.allSettled(names.map((name) => import(`./${name}.js`)));
  results.forEach((result, i) => {
    loaded[names[i]] = result.status === "fulfilled" ? result.value : null;
  });
  return loaded;
}

/** Plain-text fallback: paragraphs as text nodes, line breaks kept by CSS. */
function plain(text) {
  const fragment = document.createDocumentFragment();
  for (const block of String(text ?? "").split(/\n{2,}/)) {
    if (!block.trim()) continue;
    const p = document.createElement("p");
    p.className = "plain-text";
    p.appendChild(document.createTextNode(block));
    fragment.appendChild(p);
  }
  return fragment;
}

/**
 * Agent prose → a sanitized DocumentFragment (markdown.js), or plain text when the renderer is missing
 * or throws. Never HTML insertion.
 */
export function markdown(text) {
  const render = loaded.markdown && loaded.markdown.renderMarkdown;
  if (typeof render === "function") {
    try {
      const out = render(String(text ?? ""));
      if (out instanceof Node) return out;
    } catch {
      // fall through to plain text
    }
  }
  return plain(text);
}

/** A container element holding the rendered Markdown of `text`. */
export function markdownBlock(text, className = "md", testid = null) {
  const div = document.createElement("div");
  div.className = className;
  if (testid) div.dataset.testid = testid;
  div.appendChild(markdown(text));
  return div;
}

/** The label tiers (labels.js exports TIERS when present). */
export function tiers() {
  const list = loaded.labels && loaded.labels.TIERS;
  return Array.isArray(list) && list.length ? list : ["detailed", "friendly", "whimsical"];
}

export function optional() {
  return loaded;
}
