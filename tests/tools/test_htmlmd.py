"""``html_to_markdown``: the converter behind ``fetch_url``'s direct fetch, on its own (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.tools.htmlmd import html_to_markdown


@pytest.mark.parametrize(
    ("html", "markdown"),
    [
        ("", ""),
        ("<title>Only</title>", "# Only\n"),
        (
            "<html><head><title>T  x</title><script>bad()</script></head><body><p>Hello <b>world</b></p></body></html>",
            "# T x\n\nHello **world**\n",
        ),
        ("<h2>Sub</h2><p>text</p>", "## Sub\n\ntext\n"),
        (
            "<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul><ol><li>first</li><li>second</li></ol>",
            "- one\n- two\n  - nested\n\n1. first\n2. second\n",
        ),
        (
            "<pre><code>x = 1\n  y</code></pre><p>use <code>f()</code></p><blockquote>q</blockquote>",
            "```\nx = 1\n  y\n```\n\nuse `f()`\n\n> q\n",
        ),
        ("<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>", "| a | b |\n| 1 | 2 |\n"),
        ("<style>p{}</style><noscript>no</noscript><p>  spaced   out  </p><br><em>e</em>", "spaced out\n\n*e*\n"),
    ],
)
def test_each_element_kind_converts(html: str, markdown: str) -> None:
    assert html_to_markdown(html) == markdown


def test_links_keep_safe_schemes_and_drop_the_rest_keeping_the_text() -> None:
    html = (
        '<p><a href="https://e.com/x">web</a> <a href="mailto:a@b.c">mail</a> <a href="/rel">rel</a> '
        '<a href="javascript:alert(1)">js</a> <a href="data:text/html,x">data</a></p>'
    )
    assert html_to_markdown(html) == "[web](https://e.com/x) [mail](mailto:a@b.c) [rel](/rel) js data\n"


def test_a_body_heading_wins_over_the_title() -> None:
    assert html_to_markdown("<title>Page</title><h1>Real heading</h1>") == "# Real heading\n"


_TAGS = st.sampled_from(["p", "div", "a", "b", "em", "code", "pre", "ul", "li", "h1", "table", "td", "script", "br"])
_FRAGMENT = st.one_of(
    st.text(max_size=20),
    _TAGS.map(lambda t: f"<{t}>"),
    _TAGS.map(lambda t: f"</{t}>"),
    st.sampled_from(
        ['<a href="javascript:x()">', '<a href="JaVaScRiPt:x">', '<a href=" javascript:x">', "&amp;", "&#0;"]
    ),
)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_FRAGMENT, max_size=30))
def test_any_markup_converts_without_raising_and_never_links_a_script(parts: list[str]) -> None:
    markdown = html_to_markdown("".join(parts))
    assert markdown == "" or markdown.endswith("\n")
    assert "](javascript" not in markdown.lower() and "]( javascript" not in markdown.lower()
