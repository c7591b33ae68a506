"""Template tags of the KB debate's page: what the human moderator's console shows now (its sections in order,
the pickers filled from the ledger and the KB, and the fix a refused closure offers)."""

from __future__ import annotations

from typing import Any

from django import template

from debates.protocols.kb_debate.console import console_context

register = template.Library()


@register.simple_tag
def kb_console(form: Any) -> dict[str, Any]:
    """{% kb_console form as console %}: see console.console_context."""
    return console_context(form if isinstance(form, dict) else {})
