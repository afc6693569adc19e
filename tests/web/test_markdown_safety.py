"""renderMarkdown keeps hostile agent prose inert.

Every payload tries to run ``window.__pwned = '<name>'`` (or open a dialog). The rendered fragments are
inserted into the live document, so a handler that survived would fire; a control image — inserted by
the test itself, outside the renderer — must fire its error handler first, which proves the page had
the chance to run the hostile ones. Then the whole DOM is checked against the allow-list: tags,
attributes, and href schemes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from tests.web.harness import UiService, allow_console_errors, allow_sanitizer_parse_reports, call, finish, turn
from tests.web.runview_page import mount, open_host

PAYLOADS: dict[str, str] = {
    "img": "<img src=x onerror=\"window.__pwned='img'\">",
    "md-link": "[x](javascript:window.__pwned='md-link')",
    "md-link-entity": "[x](jav&#x09;ascript:window.__pwned='md-entity')",
    "md-image": "![x](javascript:window.__pwned='md-image')",
    "script": "<script>window.__pwned='script'</script> after",
    "svg": '<svg onload="window.__pwned=\'svg\'"><circle r="4"></circle></svg>',
    "svg-script": "<svg><script>window.__pwned='svg-script'</script></svg>",
    "tab-scheme": "<a href=\"jav&#x09;ascript:window.__pwned='tab'\">tab</a>",
    "newline-scheme": "<a href=\"java\nscript:window.__pwned='nl'\">nl</a>",
    "control-scheme": "<a href=\"\u0001\u0002javascript:window.__pwned='ctl'\">ctl</a>",
    "case-scheme": "<a href=\" JaVaScRiPt:window.__pwned='case'\">case</a>",
    "data-scheme": '<a href="data:text/html,<script>alert(1)</script>">data</a>',
    "vbscript": '<a href="vbscript:msgbox(1)">vb</a>',
    "iframe": "<iframe src=\"javascript:window.parent.__pwned='iframe'\"></iframe>",
    "srcdoc": "<iframe srcdoc=\"<script>parent.__pwned='srcdoc'</script>\"></iframe>",
    "style-attr": "<p style=\"background:url(javascript:window.__pwned='style')\">styled</p>",
    "style-tag": "<style>body { display: none }</style>visible",
    "details": "<details open ontoggle=\"window.__pwned='details'\"><summary>s</summary>d</details>",
    "onclick": '<a href="https://ok.example/" onclick="window.__pwned=\'onclick\'">ok link</a>',
    "form": '<form action="javascript:x"><input autofocus onfocus="window.__pwned=\'focus\'"></form>',
    "object": '<object data="javascript:window.__pwned=\'object\'"></object><embed src="javascript:x">',
    "media": "<video><source onerror=\"window.__pwned='video'\"></video>"
    "<audio src=x onerror=\"window.__pwned='audio'\">",
    "body": "<body onload=\"window.__pwned='body'\">body text",
    "mxss-noscript": "<noscript><p title=\"</noscript><img src=x onerror=window.__pwned='noscript'>\"></noscript>",
    "mxss-math": "<math><mtext><table><mglyph><style><img src=x onerror=window.__pwned='math'></style>"
    "</mglyph></table></mtext></math>",
    "meta": '<meta http-equiv="refresh" content="0;url=javascript:window.__pwned=\'meta\'">',
    "link": '<link rel="stylesheet" href="javascript:x">',
    "class-inject": '<code class="language-js" onmouseover="window.__pwned=\'code\'">code</code>',
    "template": "<template><img src=x onerror=\"window.__pwned='template'\"></template>",
    "marquee": "<marquee onstart=\"window.__pwned='marquee'\">m</marquee>",
    "mixed": "**bold** and <b onmouseover=\"x\">b</b> and `<img src=x onerror=window.__pwned='code-span'>`",
}

ALLOWED = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "pre", "code", "blockquote",
    "em", "strong", "del", "s", "a", "span", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip

#: Every element inside the rendered containers matching a selector that breaks the allow-list.
AUDIT = """([selector, allowedTags]) => {
  const allowed = new Set(allowedTags);
  const bad = [];
  const roots = [...document.querySelectorAll(selector)];
  if (!roots.length) bad.push(`nothing matches ${selector}`);
  for (const el of roots.flatMap((root) => [...root.querySelectorAll('*')])) {
    const tag = el.localName;
    if (!allowed.has(tag)) bad.push(`tag <${tag}>`);
    for (const attr of el.attributes) {
      const ok = (tag === 'a' && (attr.name === 'href' || attr.name === 'title')) ||
        (attr.name === 'class' && ['code', 'pre', 'span'].includes(tag));
      if (!ok) bad.push(`attribute ${attr.name} on <${tag}>`);
    }
    if (tag === 'a' && el.hasAttribute('href')) {
      const href = el.getAttribute('href').replace(/[\\u0000-\\u0020\\u007f-\\u009f]/g, '');
      const m = /^([^/?#]*?):/.exec(href);
      if (m && !['http', 'https', 'mailto'].includes(m[1].toLowerCase())) bad.push(`href ${href}`);
    }
  }
  return bad;
}"""


def _arm(page: Any) -> list[str]:
    """Record dialogs (dismissed) and reset the flags."""
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.evaluate("window.__pwned = null; window.__control = null")
    return dialogs


def _control_fires(page: Any) -> None:
    """Insert (outside the renderer) an image whose error handler sets a flag, and wait for it: by
    then every hostile image, iframe and media element in the page has had its chance to fire."""
    allow_console_errors(page, r"__missing-control\.png")
    page.evaluate(  # a listener, not an inline onerror: the page's CSP refuses inline handlers
        """() => { const img = document.createElement('img');
                   img.addEventListener('error', () => { window.__control = 1; });
                   img.src = '/static/__missing-control.png';
                   document.body.appendChild(img); }"""
    )
    page.wait_for_function("() => window.__control === 1")  # a function: a bare expression needs eval
    page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


def test_hostile_markdown_renders_inert(ui_service: UiService, page: Any) -> None:
    allow_sanitizer_parse_reports(page)  # the payloads' inline handlers, blocked by the CSP while parsed
    open_host(page)
    dialogs = _arm(page)
    results = page.evaluate(
        """(payloads) => {
          const out = {};
          for (const [name, text] of Object.entries(payloads)) {
            const box = document.createElement('div');
            box.className = 'md-test';
            box.dataset.name = name;
            box.appendChild(rvHost.markdown.renderMarkdown(text));
            document.getElementById('host').appendChild(box);
            out[name] = { html: box.innerHTML, text: box.textContent };
          }
          return out;
        }""",
        PAYLOADS,
    )
    _control_fires(page)
    # Poke what survived, so any event handler left behind would run (links are not followed).
    page.evaluate(
        """() => { const types = ['mouseover', 'mouseenter', 'focus', 'toggle', 'load', 'error', 'animationstart'];
                   for (const el of document.querySelectorAll('.md-test *')) {
                     for (const type of types) el.dispatchEvent(new Event(type));
                     if (el.localName !== 'a') el.click(); } }"""
    )
    bad = page.evaluate(AUDIT, [".md-test", sorted(ALLOWED)])
    assert bad == [], bad
    assert page.evaluate("window.__pwned") is None
    assert dialogs == []
    assert page.evaluate("getComputedStyle(document.body).display") != "none"
    # What is legitimate survives: text, emphasis, a safe link (without its handler), code.
    assert "ok.example" in results["onclick"]["html"] and "onclick" not in results["onclick"]["html"]
    assert "<strong>bold</strong>" in results["mixed"]["html"]
    assert "<code>&lt;img" in results["mixed"]["html"]
    assert results["style-attr"]["text"] == "styled"
    assert results["script"]["text"].strip() == "after"
    assert "href" not in results["tab-scheme"]["html"] and results["tab-scheme"]["text"] == "tab"
    for name in ("md-link", "md-link-entity", "md-image", "control-scheme", "case-scheme", "data-scheme", "vbscript"):
        assert "href" not in results[name]["html"], (name, results[name]["html"])


def test_renderer_failure_falls_back_to_plain_text(ui_service: UiService, page: Any) -> None:
    open_host(page)
    text = page.evaluate(
        """() => {
          const original = window.DOMParser;
          window.DOMParser = function () { throw new Error('boom'); };
          try {
            const box = document.createElement('div');
            box.appendChild(rvHost.markdown.renderMarkdown('**x** <img src=x onerror="window.__pwned=1">'));
            return { html: box.innerHTML, text: box.textContent };
          } finally { window.DOMParser = original; }
        }"""
    )
    assert text["text"] == '**x** <img src=x onerror="window.__pwned=1">'
    assert "<" not in text["html"].replace("&lt;", "")


def test_a_run_carrying_the_payloads_renders_inert_in_the_inspector_and_cards(
    ui_service: UiService, page: Any, tmp_path: Path
) -> None:
    """The payloads in a real run: the coder's reply (Markdown), a shell result (the tool return's
    card renders it as Markdown), and the finish summary (the finish card and the return's card)."""
    hostile = "\n\n".join(PAYLOADS.values())
    (ui_service.workspace / "payload.txt").write_text(hostile)
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="Summarise payload.txt\n\n" + PAYLOADS["img"])),
            turn("coder", call("run_shell", command="cat payload.txt"), content=hostile),
            turn("coder", finish(hostile)),
            turn("lead", finish("done")),
        ]
    )
    run_id = ui_service.http.post("/api/runs", json={"task": "Look at the payloads"}).json()["runId"]
    ui_service.run_status(run_id, "success")
    allow_sanitizer_parse_reports(page)
    open_host(page)
    dialogs = _arm(page)
    mount(page, run_id)
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    page.evaluate("rvHost.view.setMode('sequence')")
    model = ui_service.json(f"/api/runs/{run_id}/flow")
    by_id = {p["id"]: p for p in model["participants"]}
    tool_return = next(o for o in model["operations"] if o["kind"] == "return" and by_id[o["source"]]["kind"] == "tool")
    coder_return = next(o for o in model["operations"] if o["kind"] == "return" and o["source"] == "role:coder:1")
    # The shell's return shows its result by type: the payloads are stdout text, no element of theirs.
    page.locator(f'.seq-row[data-op="{tool_return["id"]}"]').click()
    result = page.get_by_test_id("operation-result")
    expect(result.get_by_test_id("tool-stdout")).to_contain_text('onclick="window.__pwned')
    injected = "[data-testid=operation-result] :is(a, img, script, iframe, svg, form)"
    assert page.evaluate("(selector) => document.querySelectorAll(selector).length", injected) == 0
    page.locator(f'.seq-row[data-op="{coder_return["id"]}"]').click()
    details = page.get_by_test_id("operation-details")
    expect(details).not_to_contain_text("Loading")
    expect(details).to_contain_text("ok link")
    assert page.evaluate(AUDIT, ["[data-testid=operation-details]", sorted(ALLOWED)]) == []
    page.get_by_test_id("card-open-transcript").first.click()
    transcript = page.get_by_test_id("inspector-transcript")
    expect(transcript.get_by_test_id("transcript-reply")).to_contain_text("ok link")
    expect(transcript.get_by_test_id("transcript-finish")).to_contain_text("ok link")
    expect(transcript.get_by_test_id("tool-stdout")).to_contain_text("onerror")  # shown as text
    transcript.get_by_test_id("wire-expander").first.locator("summary").click()
    expect(transcript.get_by_test_id("wire-body").first).to_contain_text("window.__pwned")  # as text
    _control_fires(page)
    bad = page.evaluate(AUDIT, ["[data-testid=inspector] .md", sorted(ALLOWED)])
    assert bad == [], bad
    assert page.evaluate("window.__pwned") is None
    assert dialogs == []
    ui_service.wait_idle()
