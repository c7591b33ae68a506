"""What the protocols' integrity signals share (each protocol's own are in its package's signals.py, asked for
by debates.selectors.integrity through Protocol.seat_signals and Protocol.arithmetic_mismatches). Outcomes are
read defensively: a key a protocol does not (yet) write makes its signal "not applicable", never an error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def rate(count: int, of: int) -> float | None:
    """A percentage rounded to one decimal; None when `of` is 0."""
    return round(100 * count / of, 1) if of else None


def measure(count: int, of: int, basis: str) -> dict[str, Any]:
    return {"count": count, "of": of, "rate": rate(count, of), "basis": basis}


def as_dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []
