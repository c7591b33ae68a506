"""Untrusted text reaches pages only through markdown-it-py (js-default) + nh3: nothing executable survives."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.template.loader import render_to_string

from debates.rendering import ALLOWED_TAGS, render_markdown, render_markdown_inline
from debates.selectors import live_card

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
SAFE_TAGS = ALLOWED_TAGS | {"article", "div", "span", "header", "cite"}  # the page's own wrappers
SAFE_URL = re.compile(r"^(https?:|mailto:|#|/)", re.IGNORECASE)


class _ExecutableFinder(HTMLParser):
    """Collects what a browser could execute: unknown tags, event handlers, htmx attributes, script URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in SAFE_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on") or (name.startswith("hx-") and name != "hx-swap-oob"):
                self.found.append(f"{tag}[{name}]")
            if (
                name in {"href", "src", "action", "formaction"}
                and value
                and not SAFE_URL.match(value.strip())
            ):
                self.found.append(f"{tag}[{name}={value}]")


def executable_parts(html: str) -> list[str]:
    finder = _ExecutableFinder()
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
