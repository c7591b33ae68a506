"""Filters for the comparative debate's turn bodies (computed from a turn's own data, so they work while it
streams and in frames rendered without the database)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django import template

from debates.protocols.comparative.exports import conditions_shown as conditions_written
from debates.protocols.comparative.exports import without_lead as lead_dropped
from debates.protocols.comparative.protocol import (
    DECISION_TYPES,
    default_criteria,
    hedges_find,
    opening_texts,
    rebuttal_texts,
)
from debates.protocols.schemas import flags_at, property_names

register = template.Library()

# A streaming answer names its criteria (and stakeholders) by property names, which the schema makes safe
# (schemas.property_key: "Team familiarity" -> "Team_familiarity") and titles with the real name. The live frame is
# rendered from the streamed text alone (debates.engine.stream: no step, no run config), so the run's own criteria
# are not at hand here: the property names of every decision type's default criteria are read back exactly, any
# other one as its words.
DEFAULT_CRITERIA_BY_PROPERTY = {
    prop: name
    for decision_type in DECISION_TYPES
    for name, prop in property_names([c["name"] for c in default_criteria(decision_type)]).items()
}
HASHED_PROPERTY = re.compile(r"^(?P<head>.{55})_[0-9a-f]{8}$")


def key_label(key: str) -> str:
    """The name a streaming answer's property stands for, as far as it can be told without the run: a default
    criterion exactly ("API_Integration_quality" -> "API/Integration quality"), else the property's words
    ("Cost_per_seat" -> "Cost per seat"; a name cut to 64 characters ends in "…"). Once the turn commits, `accept`
    has stored the real names."""
    if key in DEFAULT_CRITERIA_BY_PROPERTY:
        return DEFAULT_CRITERIA_BY_PROPERTY[key]
    hashed = HASHED_PROPERTY.match(key)
    if hashed:
        key = hashed["head"].rstrip("_") + "…"
    return key.replace("_", " ") if "_" in key and " " not in key else key


def _records(value: Any, key: str, text: str = "") -> list[dict[str, Any]]:
    """A stored list of records as it is, or an answer's object keyed by `key` (criterion, rebuttal id, ...) as that
    list: each property's value with its key filled in ("": not kept) as the name it stands for, a text value
    under `text`."""
    if isinstance(value, list):
        return [dict(item) for item in value if isinstance(item, Mapping)]
    if not isinstance(value, Mapping):
        return []
    records = []
    for name, item in value.items():
        if isinstance(item, Mapping):
            records.append({key: key_label(str(name)), **item} if key else dict(item))
        elif text and isinstance(item, str):
            records.append({key: key_label(str(name)), text: item})
    return records


@register.filter
def as_stored(data: Any, task: str) -> dict[str, Any]:
    """A turn's data in the stored shape. A committed turn is stored so already; a streaming one comes in its
    step's schema shape (one property per criterion, per risk, per stakeholder, per attack, per rebuttal id),
    which `accept` maps to lists when it commits: the same mapping here, as far as the answer has streamed."""
    if not isinstance(data, Mapping):
        return {}
    shaped = dict(data)
    if task == "opening":
        arguments = _records(data.get("arguments"), "criterion")
        shaped["arguments"] = [{"id": f"c{n}", **a} for n, a in enumerate(arguments, start=1)]
        shaped["risks_of_other"] = _records(data.get("risks_of_other"), "")
        shaped["stakeholders"] = _records(data.get("stakeholders"), "stakeholder", "response")
    elif task == "rebuttal":
        shaped["rebuttals"] = _records(data.get("rebuttals"), "")
        acknowledged = data.get("acknowledged_strong")
        shaped["acknowledged_strong"] = (
            [str(a) for a in acknowledged] if isinstance(acknowledged, list) else []
        )
    elif task == "judgement":
        shaped["criterion_scores"] = _records(data.get("criterion_scores"), "criterion")
        shaped["rebuttal_analysis"] = _records(data.get("rebuttal_analysis"), "rebuttal_id")
    return shaped


@register.filter
def conditions_shown(conditions: Any, names: Any) -> list[dict[str, Any]]:
    """The judge's decision conditions under their "Choose <option> if…" headings, each without that lead-in."""
    if not isinstance(conditions, Mapping) or not isinstance(names, Mapping):
        return []
    return conditions_written(conditions, names)


@register.filter
def without_lead(text: Any, lead: Any) -> str:
    """A text shown behind a label (a stakeholder's name, a rebuttal's failure) without those words at its start."""
    return lead_dropped(str(text or ""), str(lead or ""))


@register.filter
def opening_hedges(data: Any) -> list[dict[str, str]]:
    return hedges_find(opening_texts(data)) if isinstance(data, dict) else []


@register.filter
def rebuttal_hedges(data: Any) -> list[dict[str, str]]:
    return hedges_find(rebuttal_texts(data)) if isinstance(data, dict) else []


@register.filter
def item_path(field: str, index: int) -> str:
    """The path of a list item in a stored payload ("arguments", 0 -> "arguments.0"), as a flag's `where` names it."""
    return f"{field}.{index}"


register.filter("flags_at", flags_at)  # the flags on the item at `where` or inside it
