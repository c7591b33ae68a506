"""Integrity signals of an adversarial review (debates.selectors.integrity): how many of the challenger's judged
concerns the advocate addressed."""

from __future__ import annotations

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
    table = [as_dict(r) for r in as_list(outcome.get("concern_table"))]
    assessed = [r for r in table if r.get("addressed") is not None]
    if not assessed:
        return [], "not applicable: no judged concerns in this run", None
    advocate = next((h for h, _ in names.items() if h.startswith("advocate")), "advocate")
    seats = [
        {
            "handle": advocate,
            "name": names.get(advocate, "Advocate"),
            "conceded": None,
            "deflected": None,
            "defended": measure(
                sum(1 for r in assessed if r.get("addressed")),
                len(assessed),
                "challenger's concerns addressed",
            ),
        }
    ]
    return seats, "", None
