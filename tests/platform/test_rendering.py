"""Untrusted text reaches pages only through markdown-it-py (js-default) + nh3: nothing executable survives."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.template.loader import render_to_string

from debates.platform.rendering import (
    ALLOWED_TAGS,
    markdown_streaming_mend,
    render_markdown,
    render_markdown_inline,
)
from debates.selectors.cards import live_card

XSS_CORPUS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<svg onload=alert(1)>",
    "<iframe src='javascript:alert(1)'></iframe>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![img](javascript:alert(1))",
    "<a href='javascript:alert(1)'>x</a>",
    "<div hx-get='/admin/' hx-trigger='load'>gadget</div>",
    "<button hx-post='/runs/1/control/cancel/'>x</button>",
    "<form action='/x'><input name=a></form>",
    "<object data='x.swf'></object>",
    "<embed src='x.swf'>",
    "<style>body{display:none}</style>",
    "<link rel=stylesheet href=//evil>",
    "<meta http-equiv=refresh content='0;url=//evil'>",
    "<base href='//evil/'>",
    "<body onload=alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "[x](vbscript:msgbox(1))",
    '<a href="&#106;avascript:alert(1)">x</a>',
    "`<script>` in code is fine",
    "<input autofocus onfocus=alert(1)>",
    "<video><source onerror=alert(1)></video>",
]
FRAGMENT_TAGS = ALLOWED_TAGS | {"article", "div", "span", "header", "cite"}  # wrappers of a rendered turn
# A whole page's own markup around the sanitised text.
PAGE_TAGS = FRAGMENT_TAGS | {
    "article",
    "div",
    "span",
    "header",
    "cite",
    "html",
    "head",
    "meta",
    "title",
    "link",
    "script",
    "body",
    "nav",
    "main",
    "section",
    "form",
    "input",
    "button",
    "label",
    "select",
    "option",
    "h1",
    "h2",
    "h3",
    "small",
    "details",
    "summary",
    "aside",
    "noscript",
    "progress",
    "time",
    "dl",
    "dt",
    "dd",
}
# htmx attributes the page itself uses; sanitised text never carries any (nh3 drops them).
PAGE_HTMX = {
    "hx-swap-oob",
    "hx-headers",
    "hx-get",
    "hx-post",
    "hx-target",
    "hx-swap",
    "hx-trigger",
    "hx-ext",
    "hx-vals",
    "hx-confirm",
}
OWN_SCRIPTS = re.compile(r"^/static/(vendor|disputa)/[\w.-]+\.js$")
SAFE_URL = re.compile(r"^(https?:|mailto:|#|/)", re.IGNORECASE)


class _ExecutableFinder(HTMLParser):
    """Collects what a browser could execute: unknown tags, event handlers, htmx attributes, script URLs."""

    def __init__(self, *, page: bool) -> None:
        super().__init__()
        self.page = page
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag not in (PAGE_TAGS if self.page else FRAGMENT_TAGS):
            self.found.append(f"<{tag}>")
        if tag == "script" and not (
            OWN_SCRIPTS.match(attributes.get("src") or "") or attributes.get("type") == "application/json"
        ):
            self.found.append(f"<script {attributes}>")
        for name, value in attrs:
            if name.startswith("on") or (
                name.startswith("hx-") and not (self.page and name in PAGE_HTMX) and name != "hx-swap-oob"
            ):
                self.found.append(f"{tag}[{name}]")
            if (
                name in {"href", "src", "action", "formaction"}
                and value
                and not SAFE_URL.match(value.strip())
            ):
                self.found.append(f"{tag}[{name}={value}]")


def executable_parts(html: str, *, page: bool = False) -> list[str]:
    """What could execute in `html`; `page=True` allows the page's own tags, scripts and htmx attributes."""
    finder = _ExecutableFinder(page=page)
    finder.feed(html)
    return finder.found


@pytest.mark.parametrize("payload", XSS_CORPUS)
def test_no_payload_survives_markdown_rendering(payload):
    assert executable_parts(render_markdown(payload)) == []
    assert executable_parts(render_markdown_inline(payload)) == []


@pytest.mark.parametrize("payload", XSS_CORPUS)
def test_no_payload_survives_a_streamed_turn(payload):
    text = '{"summary": "%s", "claims": [{"id": "c1", "text": "%s", "evidence": [{"quote": "%s"' % (
        (payload.replace('"', '\\"'),) * 3
    )
    html = render_to_string(
        "debates/run_detail.html#turn-live",
        {"card": live_card(key="r1/analysis/a", task="analysis", protocol="cross-examination", text=text)},
    )
    assert executable_parts(html) == []


def test_ordinary_markdown_still_renders():
    html = render_markdown("**bold** and [a link](https://example.org)")
    assert "<strong>bold</strong>" in html
    assert 'href="https://example.org"' in html and 'rel="noopener noreferrer"' in html


def test_the_checker_flags_every_raw_html_payload():
    raw = [p for p in XSS_CORPUS if p.startswith("<")]
    assert raw and all(executable_parts(p) for p in raw)


@pytest.mark.parametrize(
    ("streamed", "shown"),
    [
        ("Pricing **For", "Pricing **For**"),  # a bold still open is closed
        ("**For ", "**For**"),
        ("weighs **", "weighs"),  # an opener with nothing after it yet is left out
        ("Points:\n- one\n- ", "Points:\n- one"),  # a list item begun, with no text yet
        ("Points:\n1. one\n2.", "Points:\n1. one"),
        ("uses `ma20", "uses `ma20`"),
        ("```python\nx = 1", "```python\nx = 1\n```"),  # inside a code block: closed, its text left as it is
        ("done **bold** and `code`", "done **bold** and `code`"),  # balanced text is left as it is
        ("", ""),
    ],
)
def test_streaming_markdown_is_mended_to_render_as_it_will_once_finished(streamed, shown):
    assert markdown_streaming_mend(streamed) == shown
