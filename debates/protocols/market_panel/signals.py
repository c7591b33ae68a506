"""Integrity signals of a market panel (debates.selectors.integrity): each seat's concessions when challenging
and its own arguments kept in the closing, the cross-examination pairs in which both sides only conceded, and
the judge's weighted scores that code recomputed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from debates.contract import SeatSignals
from debates.protocols.signals import as_dict, as_list, measure


def seat_signals(
    outcome: Mapping[str, Any],
    config: Mapping[str, Any],
    names: Mapping[str, str],
    turns: Sequence[tuple[str, str, Any]],
) -> SeatSignals:
    rows = [as_dict(r) for r in as_list(outcome.get("rows"))]
    pairs = [as_dict(p) for p in as_list(outcome.get("pairs"))]
    if not rows:
        return [], "no arguments in this run", None
    made: dict[str, list[str]] = defaultdict(list)
    own: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        own[str(row.get("seat", ""))].append(str(as_dict(row.get("closing")).get("state", "")))
        for challenge in as_list(row.get("challenges")):
            challenge = as_dict(challenge)
            kind = challenge.get("challenge_type") or challenge.get("type") or ""
            made[str(challenge.get("by", ""))].append(str(kind))
    order = [str(s) for s in as_list(outcome.get("seats"))] or list(own)
    seats = []
    for handle in order:
        kinds = made.get(handle, [])
        states = own.get(handle, [])
        seats.append(
            {
                "handle": handle,
                "name": names.get(handle, handle),
                "conceded": measure(kinds.count("concede"), len(kinds), "challenges made"),
                "deflected": None,
                "defended": measure(
                    sum(1 for s in states if s and s != "abandoned" and s != "no closing"),
                    len(states),
                    "own arguments kept in the closing",
                ),
                "partial": measure(kinds.count("partial"), len(kinds), "challenges made"),
            }
        )
    handshake_rounds = []
    for pair in pairs:
        sides = [str(pair.get("first", "")), str(pair.get("second", ""))]
        if all(made.get(s) and all(k == "concede" for k in made[s]) for s in sides):
            handshake_rounds.append(f"cross-examination, {pair.get('lens', '?')} lens")
    handshakes = {
        "count": len(handshake_rounds),
        "rounds": handshake_rounds,
        "basis": "cross-examination pairs in which both sides' challenges were all concessions",
    }
    return seats, "", handshakes


def arithmetic_mismatches(outcome: Mapping[str, Any]) -> list[Any] | None:
    """The judge's weighted scores that differ from code's (None: not judged)."""
    return as_list(outcome.get("score_mismatches")) if outcome.get("judged") else None
