"""The one way untrusted text (model output, KB content, human input) becomes HTML: markdown-it-py with the
js-default preset (raw HTML off), then nh3 with an allowlist. Nothing is marked safe before this."""

from __future__ import annotations

import re
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


# Streaming text is cut anywhere: a bold opened and not yet closed shows its asterisks ("**For"), a list item begun
# shows an empty bullet. The text still being written is mended for display until the rest arrives; the committed
# turn renders the whole text as written.
_LIST_MARKER_ONLY = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])?[ \t]*")
_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.M)


def markdown_streaming_mend(text: str) -> str:
    """`text` as far as it has streamed, mended to render as it will once finished: a last line that is only a
    list marker is left out; an unclosed code fence, inline code span or bold is closed, or left out while
    nothing follows its opener yet."""
    head, _, last = text.rpartition("\n")
    if _LIST_MARKER_ONLY.fullmatch(last):
        text = head
    fences = _FENCE.findall(text)
    if len(fences) % 2:  # inside a code block: what follows is code, shown as it comes
        return f"{text}\n{fences[-1]}"
    for marker, count in (("`", text.count("`") - 3 * text.count("```")), ("**", text.count("**"))):
        if count % 2:
            text = text.rstrip()
            text = text.removesuffix(marker).rstrip() if text.endswith(marker) else text + marker
    return text
