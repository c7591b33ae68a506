"""The consultation's state machine (seed 001, ConsultState): its states, the transitions it allows, and the
path between two states along the happy path, each step checked."""

from __future__ import annotations

from collections.abc import Mapping

from debates.contract import Transition

STATES = (
    "idle",
    "estimating",
    "awaiting_consent",
    "independent",
    "synthesis",
    "cross_exam",
    "verdict",
    "complete",
    "aborted",
)
ALLOWED: dict[str, frozenset[str]] = {
    "idle": frozenset({"estimating", "aborted"}),
    "estimating": frozenset({"awaiting_consent", "aborted"}),
    "awaiting_consent": frozenset({"independent", "aborted"}),
    "independent": frozenset({"synthesis", "complete", "aborted"}),  # complete: a single-round consultation
    "synthesis": frozenset({"cross_exam", "complete", "aborted"}),  # complete: early termination, quick mode
    "cross_exam": frozenset({"verdict", "complete", "aborted"}),
    "verdict": frozenset({"complete", "aborted"}),
    "complete": frozenset(),
    "aborted": frozenset(),
}
TERMINAL = frozenset({"complete", "aborted"})
FORWARD = STATES[:-1]  # the happy path, in order; aborted is reachable from every non-terminal state
ROUND_OF_STATE = {"independent": 1, "synthesis": 2, "cross_exam": 3, "verdict": 4}
STATE_LABELS = {
    "idle": "Idle",
    "estimating": "Estimating",
    "awaiting_consent": "Awaiting consent",
    "independent": "R1 Independent",
    "synthesis": "R2 Synthesis",
    "cross_exam": "R3 Cross-exam",
    "verdict": "R4 Verdict",
    "complete": "Complete",
    "aborted": "Aborted",
}


class IllegalTransition(ValueError):
    """A state change the seed's machine does not allow."""


def transition(src: str, dst: str, reason: str = "") -> Transition:
    """The transition src → dst, or IllegalTransition saying what src allows."""
    if src not in ALLOWED:
        raise IllegalTransition(f"Unknown state {src!r}; states: {', '.join(STATES)}.")
    if dst not in ALLOWED[src]:
        allowed = ", ".join(s for s in STATES if s in ALLOWED[src]) or "nothing: it is terminal"
        raise IllegalTransition(f"A consultation cannot go from {src} to {dst} (from {src}: {allowed}).")
    return Transition(src, dst, reason)


def transitions_to(src: str, dst: str, reasons: Mapping[str, str]) -> list[Transition]:
    """The transitions from src to dst along the happy path (a direct jump when the machine allows it, e.g.
    synthesis → complete on early termination), each checked. `reasons`: the reason for entering each state."""
    if src == dst or src in TERMINAL:
        return []
    if dst == "aborted":
        return [transition(src, dst, reasons.get(dst, ""))]
    if dst not in FORWARD or FORWARD.index(dst) < FORWARD.index(src):
        raise IllegalTransition(f"A consultation cannot go back from {src} to {dst}.")
    path, state = [], src
    while state != dst:
        following = dst if dst in ALLOWED[state] else FORWARD[FORWARD.index(state) + 1]
        path.append(transition(state, following, reasons.get(following, "")))
        state = following
    return path
