"""The one way untrusted text (model output, KB content, human input) becomes HTML: markdown-it-py with the
js-default preset (raw HTML off), then nh3 with an allowlist. Nothing is marked safe before this."""

from __future__ import annotations

from functools import lru_cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_markdown = MarkdownIt("js-default")

ALLOWED_TAGS = {
    "p",
    "br",
    "h1",
    "h2",
    "h3",
    "h4",
    "strong",
    "em",
    "code",
    "pre",
    "ul",
    "ol",
    "li",
    "blockquote",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "hr",
    "del",
    "s",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}


def sanitize_html(html: str) -> str:
    return nh3.clean(
        html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes={"http", "https", "mailto"}
    )


# A committed turn's text never changes, yet the run page renders it again on every load and live frame: memoise
# by content (bounded, so memory stays flat). The key is the text itself, so a hit is always the same output.
@lru_cache(maxsize=10_000)
def _render_block(text: str) -> str:
    return sanitize_html(_markdown.render(text))


@lru_cache(maxsize=10_000)
def _render_inline(text: str) -> str:
    return sanitize_html(_markdown.renderInline(text))


def render_markdown(text: str) -> SafeString:
    return mark_safe(_render_block(text or ""))  # noqa: S308 - sanitised in _render_block


def render_markdown_inline(text: str) -> SafeString:
    return mark_safe(_render_inline(text or ""))  # noqa: S308 - sanitised in _render_inline
