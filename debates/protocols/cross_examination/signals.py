"""Integrity signals of a cross-examination (debates.selectors.integrity): each analyst's answers as the examiner
classified them."""

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
    seats = []
    for row in as_list(outcome.get("summary")):
        row = as_dict(row)
        classified = sum(int(row.get(k) or 0) for k in ("defended", "conceded", "deflected"))
        basis = "questions classified by the examiner"
        seats.append(
            {
                "handle": str(row.get("analyst", "")),
                "name": str(row.get("name") or row.get("analyst", "")),
                "conceded": measure(int(row.get("conceded") or 0), classified, basis),
                "deflected": measure(int(row.get("deflected") or 0), classified, basis),
                "defended": measure(int(row.get("defended") or 0), classified, basis),
            }
        )
    note = "" if seats else "no examiner classification in this run"
    return seats, note, None  # one-sided questioning: there are no rounds in which both sides answer
