"""Filters for the market panel's turn bodies (computed from a turn's own data and key, so they work while it
streams and in frames rendered without the database)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from debates.protocols.market_panel import schema
from debates.protocols.market_panel.exports import weights_in_order
from debates.protocols.market_panel.protocol import arg_label as _arg_label
from debates.protocols.market_panel.protocol import seat_name
from debates.protocols.schemas import flags_at

register = template.Library()


@register.filter
def seat_label(handle: Any) -> str:
    """{{ row.seat|seat_label }}: "tech_bull" shown as "Technical bull" (protocol.seat_name)."""
    return seat_name(str(handle or ""))


@register.filter
def arg_label(argument_id: Any, seat: Any = True) -> str:
    """{{ id|arg_label }}: "tech_bull_arg_0" shown as "Technical bull, argument 1"; {{ id|arg_label:False }}
    "Argument 1" (protocol.arg_label)."""
    return _arg_label(str(argument_id or ""), seat=bool(seat))


@register.filter
def challenge_label(challenge_type: Any) -> str:
    """{{ c.challenge_type|challenge_label }}: "question_evidence" shown as "question evidence"."""
    return str(challenge_type or "").replace("_", " ")


# How a flagged item is marked beside it on the turn card (the card's flag list has the detail).
FLAG_MARKS = {
    "number_mismatch": "not the KB's value",
    "unknown_path": "unknown path",
    "outside_slice": "outside its slice",
    "empty": "empty",
    "out_of_range": "out of range",
    "claim_too_long": "over 99 characters",
    "stance_length": "not 50–100 words",
    "no_citation": "cites no data",
}


@register.filter
def opening_arguments(data: Any) -> list[Mapping[str, Any]]:
    """An opening's arguments: as stored (`arguments`), or while it streams as asked (`argument_0` … in order, the
    null ones left out, so they are numbered as code will number them)."""
    if not isinstance(data, Mapping):
        return []
    if isinstance(data.get("arguments"), list):
        return [a for a in data["arguments"] if isinstance(a, Mapping)]
    numbered = []
    for key, value in data.items():
        number = key.removeprefix("argument_") if isinstance(key, str) else ""
        if number != key and number.isdigit() and isinstance(value, Mapping):
            numbered.append((int(number), value))
    return [value for _, value in sorted(numbered, key=lambda item: item[0])]


@register.filter
def cross_challenges(data: Any) -> list[Mapping[str, Any]]:
    """A cross-examination's challenges: as stored (`challenges`, each with its target's id), or while it streams
    as asked (`on_arg_<n>`, one per opponent argument by its number: the target shown as `…_arg_<n>` until code
    names it)."""
    if not isinstance(data, Mapping):
        return []
    if isinstance(data.get("challenges"), list):
        return [c for c in data["challenges"] if isinstance(c, Mapping)]
    numbered = []
    for key, value in data.items():
        number = schema.challenge_number(key) if isinstance(key, str) else None
        if number is not None and isinstance(value, Mapping):
            numbered.append((number, {**value, "target_id": f"…_arg_{number}"}))
    return [value for _, value in sorted(numbered, key=lambda item: item[0])]


@register.filter
def judge_scores(scores: Any) -> list[Mapping[str, Any]]:
    """The judge's scores, a row per argument: as stored (a list, each with its `argument_id`), or while the
    judge streams as asked (one property per argument id, `schemas.one_per`), in the order they arrive."""
    if isinstance(scores, list):
        return [s for s in scores if isinstance(s, Mapping)]
    if not isinstance(scores, Mapping):
        return []
    return [{**row, "argument_id": arg} for arg, row in scores.items() if isinstance(row, Mapping)]


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
def in_dimension_order(weights: Any) -> list[tuple[str, Any]]:
    return weights_in_order(weights if isinstance(weights, Mapping) else None)


@register.filter
def weight_label(dimension: Any) -> str:
    return str(dimension or "").replace("_", " ").capitalize()


@register.simple_tag
def flag_marks(flags: Any, *parts: Any) -> SafeString:
    """A mark for each flag of the item at the payload path `parts` joined with dots (`"arguments" 0 "claim"`)."""
    if not flags:  # a streaming turn's body (it has none yet), or a turn flagged nowhere: most of them
        return SafeString()
    where = ".".join(str(part) for part in parts)
    found = flags_at(flags, where, inside=False)
    return format_html_join(
        " ",
        '<span class="flag-mark" data-flag-kind="{}" title="{}">{}</span>',
        (
            (flag.get("kind", ""), flag.get("detail", ""), FLAG_MARKS.get(str(flag.get("kind")), "flagged"))
            for flag in found
        ),
    )
