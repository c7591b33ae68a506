"""The one way untrusted text (model output, KB content, human input) becomes HTML: markdown-it-py with the
js-default preset (raw HTML off), then nh3 with an allowlist. Nothing is marked safe before this."""

from __future__ import annotations

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


def render_markdown(text: str) -> SafeString:
    return mark_safe(sanitize_html(_markdown.render(text or "")))  # noqa: S308 - sanitised just above


def render_markdown_inline(text: str) -> SafeString:
    return mark_safe(sanitize_html(_markdown.renderInline(text or "")))  # noqa: S308 - sanitised just above
