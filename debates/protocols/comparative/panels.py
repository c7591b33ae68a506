"""Filters for the comparative debate's turn bodies (computed from a turn's own data, so they work while it
streams and in frames rendered without the database)."""

from __future__ import annotations

from typing import Any

from django import template

from debates.protocols.comparative.protocol import hedges_find, opening_texts, rebuttal_texts

register = template.Library()


@register.filter
def opening_hedges(data: Any) -> list[dict[str, str]]:
    return hedges_find(opening_texts(data)) if isinstance(data, dict) else []


@register.filter
def rebuttal_hedges(data: Any) -> list[dict[str, str]]:
    return hedges_find(rebuttal_texts(data)) if isinstance(data, dict) else []
