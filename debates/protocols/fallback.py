"""A protocol's fallback chain (seed 003: team → subagent → single → raw): the mode it stands in now and every
step down with its reason, recorded so the page can show why a run did less than it was asked to."""

from __future__ import annotations

from dataclasses import dataclass, field

from debates.contract import RunView


@dataclass
class Chain:
    mode: str
    degradations: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def down(self, to: str, reason: str) -> None:
        self.degradations.append({"from": self.mode, "to": to, "reason": reason})
        self.mode = to

    def notices(self) -> tuple[str, ...]:
        """The steps down so far, as the run page's standing notices while the run goes on."""
        return tuple(f"Stepped down {d['from']} → {d['to']}: {d['reason']}" for d in self.degradations)


def failure_reason(view: RunView, key: str) -> str:
    """Why the turn at `key` gave nothing, for a step-down's reason (its error, shortened to one line's worth)."""
    turn = view.turn(key)
    error = (turn.error if turn else "") or "no output"
    return error if len(error) <= 200 else error[:199] + "…"
