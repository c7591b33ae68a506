from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from debates.rendering import render_markdown, render_markdown_inline

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(value: Any) -> SafeString:
    return render_markdown("" if value is None else str(value))


@register.filter(name="markdown_inline")
def markdown_inline_filter(value: Any) -> SafeString:
    return render_markdown_inline("" if value is None else str(value))


@register.filter
def percent(value: Any) -> str:
    try:
        return f"{float(value):.0%}"
    except (TypeError, ValueError):
        return ""


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.simple_tag
def posted(values: Any, prefix: str, suffix: str) -> str:
    """The value a user posted for `prefix + suffix`, so a form re-shown with errors loses nothing."""
    try:
        return str(values.get(f"{prefix}{suffix}", ""))
    except AttributeError:
        return ""


@register.filter
def tojson(value: Any) -> str:
    """JSON for a data attribute (autoescaping then escapes it for the attribute): charts read it in JS."""
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
