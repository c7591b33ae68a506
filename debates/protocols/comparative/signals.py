"""Integrity signals of a comparison (debates.selectors.integrity): each advocate's acknowledgements of the other
side's claims and its own claims that survived rebuttal, and the judge's arithmetic that code recomputed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from debates.contract import SeatSignals
from debates.protocols.signals import as_dict, as_list, measure

# The committed turns the signals read.
TASKS = ("rebuttal",)


def seat_signals(
    outcome: Mapping[str, Any],
    config: Mapping[str, Any],
    names: Mapping[str, str],
    turns: Sequence[tuple[str, str, Any]],
) -> SeatSignals:
    openings = as_dict(outcome.get("openings"))
    rebuttals = [as_dict(r) for r in as_list(outcome.get("rebuttals"))]
    if not rebuttals:
        return [], "not applicable: no rebuttal round in this run (subagent or single mode)", None
    option_names = as_dict(outcome.get("options"))
    acknowledged: dict[str, int] = {}
    for seat, task, payload in turns:
        if task == "rebuttal":
            option = seat.rsplit("-", 1)[-1].upper()  # advocate-a / advocate-b
            acknowledged[option] = len(as_list(as_dict(payload).get("acknowledged_strong")))
    seats = []
    for option in ("A", "B"):
        other = "B" if option == "A" else "A"
        their_claims = len(as_list(as_dict(openings.get(other)).get("arguments")))
        attacked = [r for r in rebuttals if r.get("target") == option and r.get("verdict")]
        survived = sum(1 for r in attacked if r.get("verdict") == "SURVIVE")
        seats.append(
            {
                "handle": f"advocate-{option.lower()}",
                "name": names.get(f"advocate-{option.lower()}")
                or f"Advocate {option}" + (f" ({option_names[option]})" if option in option_names else ""),
                "conceded": measure(
                    acknowledged.get(option, 0), their_claims, "opponent's claims acknowledged as strong"
                ),
                "deflected": None,
                "defended": measure(survived, len(attacked), "own claims rebutted that SURVIVE (judge)"),
            }
        )
    return seats, "", None  # the rebuttal round requires rebuttals: a side cannot only concede


def arithmetic_mismatches(outcome: Mapping[str, Any]) -> list[Any] | None:
    """The judge's weighted totals that differ from code's (None: no scorecard)."""
    card = outcome.get("scorecard")
    return as_list(as_dict(card).get("mismatches")) if isinstance(card, Mapping) else None
