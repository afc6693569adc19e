// Agent prose → safe DOM.
//
// Public interface (agreed with the shell):
//   renderMarkdown(text) -> DocumentFragment   Markdown → HTML string → inert parse (DOMParser: no
//                                              scripts run, nothing loads) → allow-list walk that builds
//                                              brand-new nodes in this document. Never assigns HTML.
//   textNode(s) -> Text                        machine fields are always text nodes.
//   sanitizeHtml(html) -> DocumentFragment     the allow-list walk alone (exported for tests).
//
// Allowed tags: p br hr h1–h6 ul ol li pre code blockquote em strong del s a span table thead tbody tr
// th td. Attributes: a[href,title]; class on code/pre/span (plain tokens only). href schemes: http,
// https, mailto, or none (relative); the scheme is read after removing whitespace and control
// characters. script style iframe object embed svg form input link meta audio video (and a few other
// non-content containers: template noscript math frameset …) are dropped with their content; any other
// tag is unwrapped (its children kept, sanitized). A renderer failure, or a text too large to render
// safely fast, falls back to plain text.
//
// The Markdown dialect is a compact CommonMark/GFM subset of our own: ATX/setext headings, paragraphs,
// hard breaks, fenced and indented code, block quotes, nested lists, thematic breaks, GFM tables, code
// spans, emphasis/strong/strikethrough, links, autolinks and bare URLs. Raw HTML passes through to the
// sanitizer, which is what makes it harmless.

const ALLOWED_TAGS = new Set([
  "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "pre", "code", "blockquote",
  "em", "strong", "del", "s", "a", "span", "table", "thead", "tbody", "tr", "th", "td",
]);
const DROP_WITH_CONTENT = new Set([
  "script", "style", "iframe", "object", "embed", "svg", "form", "input", "link", "meta", "audio", "video",
  "template", "noscript", "math", "frame", "frameset", "noembed", "noframes", "applet", "base", "head",
  "title", "xmp", "plaintext",
]);
const CLASS_TAGS = new Set(["code", "pre", "span"]);
const SAFE_SCHEMES = new Set(["http", "https", "mailto"]);
const HTML_NS = "http://www.w3.org/1999/xhtml";
const MAX_DEPTH = 400;
/** Texts longer than this render as plain text (the inline pass is not worth its cost there). */
const MAX_MARKDOWN_CHARS = 200_000;

// --- public ------------------------------------------------------------------------------------------

/** A text node for a machine field (never parsed). */
export function textNode(s) {
  return document.createTextNode(s == null ? "" : String(s));
}

/** Markdown `text` → a sanitized DocumentFragment; plain text when rendering fails. */
export function renderMarkdown(text) {
  const source = text == null ? "" : String(text);
  if (source.length > MAX_MARKDOWN_CHARS) return plainFragment(source);
  try {
    return sanitizeHtml(markdownToHtml(source));
  } catch {
    return plainFragment(source);
  }
}

/** Parse `html` inertly and rebuild only allow-listed nodes in the current document. */
export function sanitizeHtml(html) {
  const parsed = new DOMParser().parseFromString(String(html), "text/html");
  const out = document.createDocumentFragment();
  if (parsed.body) walk(parsed.body, out, 0);
  return out;
}

/** A safe href for `value`, or null when its scheme is not allowed. */
export function safeHref(value) {
  const raw = String(value ?? "");
  // Browsers ignore ASCII whitespace and control characters around and inside a scheme: so do we.
  const squeezed = raw.replace(/[\u0000-\u0020\u007f-\u009f\u00ad\u200b-\u200f\u2028\u2029\ufeff]/g, "");
  const match = /^([^/?#]*?):/.exec(squeezed);
  if (match && !SAFE_SCHEMES.has(match[1].toLowerCase())) return null;
  return raw.replace(/[\u0000-\u001f\u007f-\u009f]/g, "").trim();
}

// --- sanitizer ---------------------------------------------------------------------------------------

function plainFragment(text) {
  const fragment = document.createDocumentFragment();
  fragment.appendChild(document.createTextNode(text));
  return fragment;
}

function walk(source, target, depth) {
  for (let node = source.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType === 3) {
      target.appendChild(document.createTextNode(node.data));
      continue;
    }
    if (node.nodeType !== 1) continue; // comments, processing instructions: dropped
    const tag = node.localName;
    if (node.namespaceURI !== HTML_NS || DROP_WITH_CONTENT.has(tag)) continue;
    if (depth >= MAX_DEPTH) {
      target.appendChild(document.createTextNode(node.textContent || ""));
      continue;
    }
    if (ALLOWED_TAGS.has(tag)) {
      const copy = document.createElement(tag);
      copyAttributes(node, copy, tag);
      walk(node, copy, depth + 1);
      target.appendChild(copy);
    } else {
      walk(node, target, depth + 1); // unwrap
    }
  }
}

function copyAttributes(source, target, tag) {
  if (tag === "a") {
    const href = source.getAttribute("href");
    if (href !== null) {
      const safe = safeHref(href);
      if (safe !== null) target.setAttribute("href", safe);
    }
    const title = source.getAttribute("title");
    if (title !== null) target.setAttribute("title", title);
  } else if (CLASS_TAGS.has(tag)) {
    const tokens = (source.getAttribute("class") || "")
      .split(/\s+/)
      .filter((t) => /^[A-Za-z0-9_-]{1,64}$/.test(t))
      .slice(0, 4);
    if (tokens.length) target.setAttribute("class", tokens.join(" "));
  }
}

// --- Markdown → HTML ---------------------------------------------------------------------------------

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** Escape text but keep entity references (they decode to text in the parser). */
function escText(s) {
  return s
    .replace(/&(?!#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;");
}

const RE = {
  blank: /^[ \t]*$/,
  fence: /^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/,
  heading: /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/,
  hr: /^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$/,
  quote: /^ {0,3}> ?/,
  item: /^( {0,3})([-+*]|\d{1,9}[.)])(?:([ \t]+)(.*))?$/,
  html: /^ {0,3}<(?:!--|\/?[A-Za-z][A-Za-z0-9-]*(?:[\s/>]|$))/,
  indented: /^(?: {4}|\t)/,
  setext1: /^ {0,3}=+[ \t]*$/,
  setext2: /^ {0,3}-+[ \t]*$/,
  tableDelimiter: /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/,
};

/** The whole document's HTML. */
export function markdownToHtml(text) {
  const lines = text.replace(/\u0000/g, "\ufffd").replace(/\r\n?/g, "\n").split("\n");
  return blocks(lines, false).join("\n");
}

function startsBlock(line) {
  return (
    RE.fence.test(line) || RE.heading.test(line) || RE.hr.test(line) || RE.quote.test(line) ||
    RE.html.test(line) || isListStart(line)
  );
}

function isListStart(line) {
  const m = RE.item.exec(line);
  return m !== null && m[4] !== undefined && m[4].trim() !== "" && (/^[-+*]$/.test(m[2]) || /^1[.)]$/.test(m[2]));
}

function blocks(lines, tight) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (RE.blank.test(line)) {
      i += 1;
    } else if ((m = RE.fence.exec(line))) {
      const [, indent, fence, info] = m;
      const close = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}[ \\t]*$`);
      const body = [];
      i += 1;
      while (i < lines.length && !close.test(lines[i])) {
        body.push(lines[i].slice(Math.min(indent.length, lines[i].length - lines[i].trimStart().length)));
        i += 1;
      }
      i += 1;
      const cls = info ? ` class="language-${esc(info.replace(/[^A-Za-z0-9_-]/g, ""))}"` : "";
      out.push(`<pre><code${cls}>${esc(body.join("\n"))}</code></pre>`);
    } else if ((m = RE.heading.exec(line))) {
      out.push(`<h${m[1].length}>${inline(m[2] || "")}</h${m[1].length}>`);
      i += 1;
    } else if (RE.hr.test(line)) {
      out.push("<hr>");
      i += 1;
    } else if (RE.quote.test(line)) {
      const body = [];
      while (i < lines.length && !RE.blank.test(lines[i]) && (RE.quote.test(lines[i]) || !startsBlock(lines[i]))) {
        body.push(lines[i].replace(RE.quote, ""));
        i += 1;
      }
      out.push(`<blockquote>${blocks(body, false).join("\n")}</blockquote>`);
    } else if (RE.item.test(line)) {
      i = list(lines, i, out);
    } else if (RE.html.test(line)) {
      const body = [];
      while (i < lines.length && !RE.blank.test(lines[i])) body.push(lines[i++]);
      out.push(body.join("\n"));
    } else if (RE.indented.test(line)) {
      const body = [];
      while (i < lines.length && (RE.indented.test(lines[i]) || RE.blank.test(lines[i]))) {
        body.push(lines[i].replace(RE.indented, ""));
        i += 1;
      }
      while (body.length && RE.blank.test(body[body.length - 1])) body.pop();
      out.push(`<pre><code>${esc(body.join("\n"))}</code></pre>`);
    } else if (isTableStart(lines, i)) {
      i = table(lines, i, out);
    } else {
      const body = [line.replace(/^[ \t]+/, "")];
      i += 1;
      let setext = 0;
      while (i < lines.length && !RE.blank.test(lines[i])) {
        if (RE.setext1.test(lines[i])) { setext = 1; i += 1; break; }
        if (RE.setext2.test(lines[i])) { setext = 2; i += 1; break; }
        if (startsBlock(lines[i])) break;
        body.push(lines[i].replace(/^[ \t]+/, ""));
        i += 1;
      }
      const html = inline(body.join("\n").replace(/[ \t]+$/, ""));
      if (setext) out.push(`<h${setext}>${html}</h${setext}>`);
      else out.push(tight ? html : `<p>${html}</p>`);
    }
  }
  return out;
}

function list(lines, start, out) {
  const first = RE.item.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const delimiter = first[2].slice(-1);
  const items = [];
  let loose = false;
  let i = start;
  const same = (line) => {
    const m = RE.item.exec(line);
    return m !== null && /\d/.test(m[2]) === ordered && m[2].slice(-1) === delimiter ? m : null;
  };
  while (i < lines.length) {
    const m = same(lines[i]);
    if (!m) break;
    const width = m[1].length + m[2].length + Math.min((m[3] || " ").length, 4);
    const body = [m[4] || ""];
    i += 1;
    let sawBlank = false;
    while (i < lines.length) {
      const next = lines[i];
      if (RE.blank.test(next)) {
        sawBlank = true;
        body.push("");
        i += 1;
        continue;
      }
      const indent = next.length - next.replace(/^[ \t]+/, "").length;
      if (indent >= width) {
        if (sawBlank) loose = true;
        body.push(next.slice(width));
        sawBlank = false;
        i += 1;
      } else if (!sawBlank && !startsBlock(next) && !RE.item.test(next)) {
        body.push(next); // lazy paragraph continuation
        i += 1;
      } else {
        break;
      }
    }
    while (body.length && RE.blank.test(body[body.length - 1])) body.pop();
    items.push(body);
    const continues = i < lines.length && same(lines[i]) !== null;
    if (sawBlank && continues) loose = true;
    if (!continues) break;
  }
  const open = ordered && Number.parseInt(first[2], 10) !== 1 ? `<ol start="${Number.parseInt(first[2], 10)}">` : ordered ? "<ol>" : "<ul>";
  const rendered = items.map((body) => `<li>${blocks(body, !loose).join("\n")}</li>`);
  out.push(`${open}${rendered.join("")}${ordered ? "</ol>" : "</ul>"}`);
  return i;
}

function isTableStart(lines, i) {
  const head = lines[i];
  const delimiter = lines[i + 1];
  return (
    head.includes("|") && delimiter !== undefined && RE.tableDelimiter.test(delimiter) &&
    cells(delimiter).length === cells(head).length
  );
}

function cells(line) {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(lines, start, out) {
  const head = cells(lines[start]);
  let i = start + 2;
  const rows = [];
  while (i < lines.length && !RE.blank.test(lines[i]) && lines[i].includes("|") && !startsBlock(lines[i])) {
    rows.push(cells(lines[i]));
    i += 1;
  }
  const th = head.map((c) => `<th>${inline(c)}</th>`).join("");
  const body = rows
    .map((r) => `<tr>${head.map((_, k) => `<td>${inline(r[k] || "")}</td>`).join("")}</tr>`)
    .join("");
  out.push(`<table><thead><tr>${th}</tr></thead>${body ? `<tbody>${body}</tbody>` : ""}</table>`);
  return i;
}

// --- inline ------------------------------------------------------------------------------------------

const PLACEHOLDER = /\u0000(\d+)\u0000/g;

function inline(text) {
  const stash = [];
  let s = inlineRaw(text, stash);
  for (let guard = 0; guard < 8 && s.includes("\u0000"); guard += 1) {
    s = s.replace(PLACEHOLDER, (_, n) => stash[Number(n)] ?? "");
  }
  return s;
}

function inlineRaw(text, stash) {
  const put = (html) => `\u0000${stash.push(html) - 1}\u0000`;
  let s = text;
  s = s.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_, __, code) => {
    const body = code.replace(/\n/g, " ");
    const trimmed = /^ .*[^ ].* $/.test(body) ? body.slice(1, -1) : body;
    return put(`<code>${esc(trimmed)}</code>`);
  });
  s = s.replace(/\\([!-/:-@[-`{-~])/g, (_, ch) => put(esc(ch)));
  s = s.replace(/<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>/g, (_, url) => put(`<a href="${esc(url)}">${esc(url)}</a>`));
  s = s.replace(/<([^\s<>@]+@[^\s<>@]+\.[^\s<>@]+)>/g, (_, mail) => put(`<a href="mailto:${esc(mail)}">${esc(mail)}</a>`));
  s = s.replace(/<!--[\s\S]*?-->|<\/?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?\/?>/g, (tag) => put(tag));
  s = links(s, stash, put);
  s = s.replace(/\bhttps?:\/\/[^\s<>"\u0000]*[^\s<>"\u0000.,;:!?)\]'*_~]/g, (url) => put(`<a href="${esc(url)}">${esc(url)}</a>`));
  s = escText(s);
  s = s.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>");
  s = s.replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>");
  s = s.replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?![*\w])/g, "$1<em>$2</em>");
  s = s.replace(/(^|[^_\w])_(?=[^\s_])([^_]*?[^\s_])_(?![_\w])/g, "$1<em>$2</em>");
  s = s.replace(/~~(?=\S)([^~]*?\S)~~/g, "<del>$1</del>");
  s = s.replace(/(?: {2,}|\\)\n/g, "<br>\n");
  return s;
}

const NAMED = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", Tab: "\t", NewLine: "\n", colon: ":", sol: "/", lpar: "(", rpar: ")", nbsp: "\u00a0" };

/** Decode character references in a link destination or title (CommonMark does), before escaping. */
function decodeEntities(s) {
  return s.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});/g, (match, ref) => {
    if (ref[0] !== "#") return NAMED[ref] ?? match;
    const code = ref[1] === "x" || ref[1] === "X" ? Number.parseInt(ref.slice(2), 16) : Number.parseInt(ref.slice(1), 10);
    return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : "\ufffd";
  });
}

function matchBracket(s, open) {
  let depth = 0;
  for (let i = open; i < s.length; i += 1) {
    const c = s[i];
    if (c === "\\") i += 1;
    else if (c === "[") depth += 1;
    else if (c === "]" && --depth === 0) return i;
  }
  return -1;
}

function destination(s, start) {
  let i = start;
  while (s[i] === " " || s[i] === "\n") i += 1;
  let url = "";
  if (s[i] === "<") {
    const end = s.indexOf(">", i);
    if (end < 0) return null;
    url = s.slice(i + 1, end);
    i = end + 1;
  } else {
    let depth = 0;
    const from = i;
    for (; i < s.length; i += 1) {
      const c = s[i];
      if (c === "\\") { i += 1; continue; }
      if (c === "(") depth += 1;
      else if (c === ")") { if (depth === 0) break; depth -= 1; }
      else if (/\s/.test(c)) break;
    }
    url = s.slice(from, i);
  }
  while (s[i] === " " || s[i] === "\n") i += 1;
  let title = "";
  const quote = s[i];
  if (quote === '"' || quote === "'" || quote === "(") {
    const closer = quote === "(" ? ")" : quote;
    const end = s.indexOf(closer, i + 1);
    if (end < 0) return null;
    title = s.slice(i + 1, end);
    i = end + 1;
    while (s[i] === " " || s[i] === "\n") i += 1;
  }
  if (s[i] !== ")") return null;
  return { url, title, end: i + 1 };
}

function links(s, stash, put) {
  let out = "";
  let i = 0;
  while (i < s.length) {
    const image = s[i] === "!" && s[i + 1] === "[";
    if (s[i] === "[" || image) {
      const open = image ? i + 1 : i;
      const close = matchBracket(s, open);
      if (close > 0 && s[close + 1] === "(") {
        const dest = destination(s, close + 2);
        if (dest !== null) {
          const label = s.slice(open + 1, close);
          const inner = image ? escText(label) : inlineRaw(label, stash);
          const title = dest.title ? ` title="${esc(decodeEntities(dest.title))}"` : "";
          out += put(`<a href="${esc(decodeEntities(dest.url))}"${title}>${inner}</a>`);
          i = dest.end;
          continue;
        }
      }
    }
    out += s[i];
    i += 1;
  }
  return out;
}
