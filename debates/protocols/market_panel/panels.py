"""Filters for the market panel's turn bodies (computed from a turn's own data and key, so they work while it
streams and in frames rendered without the database)."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def evidence_points(evidence: Any) -> list[dict[str, Any]]:
    """The {data_point, source} items of the list variant; [] for the string variant (or while it streams)."""
    if not isinstance(evidence, list):
        return []
    return [item for item in evidence if isinstance(item, dict)]


@register.filter
def evidence_string(evidence: Any) -> str:
    """The evidence of the string variant; '' for the list variant."""
    return evidence if isinstance(evidence, str) else ""


@register.filter
def key_seat(key: Any) -> str:
    """The seat of an opening or closing turn from its key (r1/opening/tech_bull → tech_bull)."""
    return str(key or "").rsplit("/", 1)[-1]


@register.filter
def arg_id(seat: Any, number: Any) -> str:
    """`<seat>_arg_<n>`, zero-based, as the protocol numbers arguments."""
    return f"{seat}_arg_{number}"


@register.filter
def weight_label(dimension: Any) -> str:
    return str(dimension or "").replace("_", " ").capitalize()
