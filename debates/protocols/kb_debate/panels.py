"""Template tags of the KB debate's page: what the human moderator's console shows now (its sections in order,
the pickers filled from the ledger and the KB, and the fix a refused closure offers)."""

from __future__ import annotations

from typing import Any

from django import template

from debates.protocols.kb_debate.console import console_context
from debates.protocols.kb_debate.ledger import position_label as _position_label
from debates.protocols.kb_debate.schema import verdict_words
from kb.models import mutation_kind_words

register = template.Library()


@register.filter
def position_label(position: Any) -> str:
    """{{ entry.position|position_label }}: "pro-pricing" shown as "For pricing" (ledger.position_label)."""
    return _position_label(str(position or ""))


@register.filter
def position_labels(positions: Any) -> str:
    """{{ row.engaged_by|position_labels }}: "For pricing, Against pricing"."""
    return ", ".join(_position_label(str(p)) for p in positions or ())


@register.filter
def mutation_kind(kind: Any) -> str:
    """{{ m.kind|mutation_kind }}: "status-downgrade" shown as "lower a rating" (kb.models.MUTATION_KIND_WORDS)."""
    return mutation_kind_words(str(kind or ""))


@register.filter
def verdict_label(verdict: Any) -> str:
    """{{ verdict|verdict_label }}: a synthesis verdict in words, "Better grounded: For pricing"."""
    if not isinstance(verdict, dict):
        return ""
    position = str(verdict.get("position") or "")
    return verdict_words(str(verdict.get("label") or ""), _position_label(position) if position else "")


@register.simple_tag
def kb_console(form: Any) -> dict[str, Any]:
    """{% kb_console form as console %}: see console.console_context."""
    return console_context(form if isinstance(form, dict) else {})
