"""A small HTML → Markdown converter on the standard library's ``html.parser`` (no I/O, no clock).

Good enough for reading documentation pages: headings, paragraphs, links, emphasis, inline code,
preformatted blocks, lists, block quotes and simple tables. Script, style and other non-content
elements are dropped with their content; link schemes other than http, https, mailto and relative
ones are dropped (the text stays).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_markdown"]

_DROP = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object", "embed", "head", "canvas"})
_BLOCK = frozenset(
    {
        "p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "figure",
        "figcaption", "form", "fieldset", "details", "summary", "dl", "dt", "dd", "address", "table",
    }
)  # fmt: skip
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "source", "track", "wbr"})
_SAFE_LINK = re.compile(r"^(https?:|mailto:|[^:]*$)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x20]+")


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.title = ""
        self._in_title = False
        self._drop = 0
        self._pre = 0
        self._lists: list[list[int]] = []  # per open list: [is_ordered, counter]
        self._links: list[str | None] = []
        self._quote = 0
        self._cell = 0
        self._trailing = 0
        self._has_text = False

    # --- output helpers -------------------------------------------------------------------------
    def _put(self, text: str) -> None:
        """Append ``text``, keeping track of the trailing newlines (no re-joining of the output)."""
        if not text:
            return
        self.out.append(text)
        stripped = text.rstrip("\n")
        if stripped:
            self._has_text = self._has_text or bool(stripped.strip())
            self._trailing = len(text) - len(stripped)
        else:
            self._trailing += len(text)

    def _newlines(self, count: int) -> None:
        if self._has_text and self._trailing < count:
            self._put("\n" * (count - self._trailing))

    def _emit(self, text: str) -> None:
        if self._trailing and self._quote:
            self._put("> " * self._quote)
        self._put(text)

    # --- parser callbacks -----------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag in _DROP:
            if tag not in _VOID:
                self._drop += 1
            return
        if tag == "title":
            self._in_title = True
            return
        if self._drop:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._newlines(2)
            self._emit("#" * int(tag[1]) + " ")
        elif tag in _BLOCK:
            self._newlines(2)
        elif tag == "br":
            self._put("\n")
        elif tag == "hr":
            self._newlines(2)
            self._put("---\n\n")
        elif tag == "pre":
            self._newlines(2)
            self._put("```\n")
            self._pre += 1
        elif tag == "code" and not self._pre:
            self._put("`")
        elif tag in ("strong", "b"):
            self._put("**")
        elif tag in ("em", "i"):
            self._put("*")
        elif tag in ("ul", "ol"):
            self._newlines(1 if self._lists else 2)
            self._lists.append([tag == "ol", 0])
        elif tag == "li":
            self._newlines(1)
            indent = "  " * max(len(self._lists) - 1, 0)
            marker = "- "
            if self._lists and self._lists[-1][0]:
                self._lists[-1][1] += 1
                marker = f"{self._lists[-1][1]}. "
            self._emit(indent + marker)
        elif tag == "blockquote":
            self._newlines(2)
            self._quote += 1
        elif tag == "tr":
            self._newlines(1)
            self._cell = 0
        elif tag in ("td", "th"):
            self._put(" | " if self._cell else "| ")
            self._cell += 1
        elif tag == "a":
            href = _CONTROL.sub("", attributes.get("href") or "")
            self._links.append(href if href and _SAFE_LINK.match(href) else None)
            self._put("[" if self._links[-1] else "")
        elif tag == "img":
            alt = (attributes.get("alt") or "").strip()
            if alt:
                self._put(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP:
            self._drop = max(self._drop - 1, 0)
            return
        if tag == "title":
            self._in_title = False
            return
        if self._drop:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") or tag in _BLOCK:
            self._newlines(2)
        elif tag == "pre" and self._pre:
            self._pre -= 1
            self._newlines(1)
            self._put("```\n\n")
        elif tag == "code" and not self._pre:
            self._put("`")
        elif tag in ("strong", "b"):
            self._put("**")
        elif tag in ("em", "i"):
            self._put("*")
        elif tag in ("ul", "ol") and self._lists:
            self._lists.pop()
            self._newlines(1 if self._lists else 2)
        elif tag == "blockquote" and self._quote:
            self._quote -= 1
            self._newlines(2)
        elif tag == "tr" and self._cell:
            self._put(" |")
            self._newlines(1)
        elif tag == "a" and self._links:
            href = self._links.pop()
            if href:
                self._put(f"]({href})")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._drop:
            return
        if self._pre:
            self._put(data)
            return
        text = re.sub(r"\s+", " ", data)
        if self._trailing or not self._has_text or self.out[-1].endswith(" "):
            text = text.lstrip()
        if text:
            self._emit(text)


def html_to_markdown(html: str) -> str:
    """Markdown for ``html`` (with the page title as a heading when the body has none)."""
    converter = _Converter()
    converter.feed(html)
    converter.close()
    text = "".join(converter.out)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    title = " ".join(converter.title.split())
    if title and not text.startswith("#"):
        text = f"# {title}\n\n{text}" if text else f"# {title}"
    return text + "\n" if text else ""
