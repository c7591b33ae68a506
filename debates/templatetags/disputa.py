from __future__ import annotations

import re
from typing import Any

from django import template
from django.template.base import FilterExpression, Parser, Token
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from debates.engine import registry
from debates.models import Turn, turn_dom_id
from debates.platform.rendering import render_markdown, render_markdown_inline

register = template.Library()


@register.filter
def outcome_template(run: Any) -> str:
    """The partial that shows a run's outcome: `<its protocol's template>#outcome`."""
    return f"{registry.get(run.protocol).template}#outcome"


@register.filter
def protocol_title(name: Any) -> str:
    """A protocol's name (`cross-examination`) as people read it: its title; an unknown name as it is."""
    try:
        return registry.get(str(name)).title
    except LookupError:
        return str(name)


@register.filter
def turn_anchor(key: Any) -> str:
    """The DOM id of a turn, from its key (the key itself stays out of the page's text)."""
    return turn_dom_id(str(key))


@register.simple_tag
def task_label(protocol: Any, task: Any) -> str:
    """What a protocol's task asks, in plain words (Protocol.task_label)."""
    try:
        return registry.get(str(protocol)).task_label(str(task))
    except LookupError:
        return str(task)


@register.simple_tag
def turn_title(run_id: Any, key: Any) -> str:
    """A turn named as people read it ("Examiner: Ask the analysts questions"), from its run and key."""
    turn = Turn.objects.select_related("seat", "run").filter(run_id=run_id, key=str(key)).first()
    if turn is None:
        return "a turn"
    return f"{turn.seat.name}: {registry.get(turn.run.protocol).task_label(turn.task)}"


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


_ID = re.compile(r'(?<![\w-])id="([^"]+)"')
_LABEL_FOR = re.compile(r'(?<![\w-])for="([^"]+)"')
_ANCHOR = re.compile(r'(?<![\w-])href="#([^"]+)"')


class ScopedIdsNode(template.Node):
    def __init__(self, nodelist: template.NodeList, prefix: FilterExpression, page: FilterExpression) -> None:
        self.nodelist, self.prefix, self.page = nodelist, prefix, page

    def render(self, context: template.Context) -> SafeString:
        html = str(self.nodelist.render(context))  # rendered (escaped, sanitised) markup, not untrusted text
        # Escaped: they go inside attribute values of markup marked safe below.
        prefix, page = escape(self.prefix.resolve(context)), escape(self.page.resolve(context))
        ids = set(_ID.findall(html))
        html = _ID.sub(lambda m: f'id="{prefix}{m[1]}"', html)
        html = _LABEL_FOR.sub(lambda m: f'for="{prefix}{m[1]}"' if m[1] in ids else m[0], html)
        html = _ANCHOR.sub(
            lambda m: f'href="#{prefix}{m[1]}"' if m[1] in ids else f'href="{page}#{m[1]}"', html
        )
        return mark_safe(html)


@register.tag
def scoped_ids(parser: Parser, token: Token) -> ScopedIdsNode:
    """`{% scoped_ids PREFIX PAGE %}…{% endscoped_ids %}`: a partial shown twice on one page (the compare page's
    two outcomes) keeps its ids unique: each id gets PREFIX, links and labels inside follow it, and a link to an
    element that is not inside (a turn of that run) goes to PAGE, where it is."""
    bits = token.split_contents()
    if len(bits) != 3:
        raise template.TemplateSyntaxError("scoped_ids takes a prefix and the page the partial comes from")
    nodelist = parser.parse(("endscoped_ids",))
    parser.delete_first_token()
    return ScopedIdsNode(nodelist, parser.compile_filter(bits[1]), parser.compile_filter(bits[2]))
