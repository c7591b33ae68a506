"""Seed 004's cross-examination rule, enforced: "each agent must challenge or refute at least half of its opponent's
arguments" (refute, question_evidence or partial; a concession does not count).

- By construction: the cross step's schema is one property per opponent argument, by its number, so every answer
  is about the opponent's own arguments, each answered once, and the fewest arguments any opponent of the stage
  made must be answered (with 2-4 arguments a seat, at least half of anyone's). Numbered rather than named, the
  stage's seats share one schema whoever their opponent.
- No schema can count concessions: an answer that challenges fewer than half is sent back once with the reason
  (`MarketPanel.repair_asks`, asked by the engine on a turn's first answer only); a repaired answer still short of
  it is committed as written and flagged, never refused (a model that only honours the schema completes the run)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from debates.agents.base import AgentRequest, Repair
from debates.agents.simulated import SimulatedBackend
from debates.contract import Flag, RunView, Step
from debates.models import Run
from debates.protocols.market_panel.protocol import key_opening
from tests.conftest import run_to_stop
from tests.protocols.market_panel.test_protocol import PROTOCOL, opening, openings, view
from tests.protocols.market_panel.test_simulated import panel


def cross_steps(history: dict[str, dict[str, Any] | None]) -> dict[str, Step]:
    plan = PROTOCOL.plan(view(history))
    return {s.seat: s for s in plan.steps}  # type: ignore[union-attr]


def answer(*kinds: str) -> dict[str, Any]:
    return {f"on_arg_{n}": {"challenge_type": k, "reasoning": "Because."} for n, k in enumerate(kinds)}


def asks(step: Step, given: dict[str, Any], history: dict[str, dict[str, Any] | None]) -> list[str]:
    the_view: RunView = view(history)
    model = step.schema.model_validate(given)
    assert PROTOCOL.validate(step, model, the_view) == []  # never refused
    return PROTOCOL.repair_asks(step, model, the_view)


# Every seat made two arguments but tech_bear three: tech_bull must challenge two of them.
HISTORY = {**openings(), key_opening("tech_bear"): opening("tech_bear", 3)}


def test_the_schema_asks_one_answer_per_opponent_argument_the_fewest_any_opponent_made_required() -> None:
    steps = cross_steps(HISTORY)
    assert len({s.schema for s in steps.values()}) == 1  # one schema for the stage
    sent = steps["tech_bull"].schema.model_json_schema()
    assert list(sent["properties"]) == ["on_arg_0", "on_arg_1", "on_arg_2"]
    assert sent["required"] == ["on_arg_0", "on_arg_1"]  # at least half of three, by construction
    assert steps["tech_bull"].context["must_challenge"] == 2
    assert steps["fund_bull"].context["must_challenge"] == 1


def test_an_answer_that_challenges_fewer_than_half_is_sent_back_once_with_the_reason() -> None:
    step = cross_steps(HISTORY)["tech_bull"]
    assert asks(step, answer("refute", "concede"), HISTORY) == [
        "on_arg_0, on_arg_1, on_arg_2: It challenges 1 of Technical bear's 3 arguments; each side must challenge at "
        "least 2. Challenge (refute, question_evidence or partial) at least half; concede only what truly holds."
    ]
    assert asks(step, answer("refute", "partial"), HISTORY) == []


@pytest.mark.parametrize(
    ("kinds", "short"),
    [
        (("concede", "concede", "concede"), True),
        (("refute", "concede", "concede"), True),
        (("question_evidence", "concede", "partial"), False),
        (("partial", "partial"), False),  # the third left unanswered: two of three challenged
    ],
)
def test_a_concession_does_not_count_toward_the_half(kinds: tuple[str, ...], short: bool) -> None:
    step = cross_steps(HISTORY)["tech_bull"]
    assert bool(asks(step, answer(*kinds), HISTORY)) is short


def test_only_a_cross_examination_is_asked_to_repair() -> None:
    step = cross_steps({})["tech_bull"]
    argument = {"claim": "RSI is firm", "evidence": "technicals.SPX.rsi_14 = 58.4", "confidence": 0.7}
    model = step.schema.model_validate({"argument_0": argument, "argument_1": argument})
    assert PROTOCOL.repair_asks(step, model, view({})) == []


def test_an_answer_still_short_after_the_repair_is_kept_as_written_and_flagged() -> None:
    step = cross_steps(HISTORY)["tech_bull"]
    the_view = view(HISTORY)
    accepted = PROTOCOL.accept(
        step, step.schema.model_validate(answer("refute", "concede", "concede")), the_view
    )
    assert [c["challenge_type"] for c in accepted.payload["challenges"]] == ["refute", "concede", "concede"]
    assert list(accepted.flags) == [
        Flag(
            "too_few_challenges",
            "challenges",
            "It challenges 1 of Technical bear's 3 arguments; each side must challenge at least 2.",
        )
    ]
    enough = PROTOCOL.accept(step, step.schema.model_validate(answer("refute", "partial")), the_view)
    assert enough.flags == ()


@pytest.mark.django_db(transaction=True)
def test_in_a_run_the_short_side_is_sent_back_once_then_committed_flagged() -> None:
    """The simulated handshake pair concedes all but one argument and keeps its concessions when sent back."""
    run = panel()
    assert run.status == "completed", run.status_reason
    restarted = {e.payload["key"]: e.payload for e in run.events.filter(kind="turn_restarted")}
    assert sorted(restarted) == ["r2/cross/senti/1", "r2/cross/senti/2"]
    assert all("each side must challenge at least" in r["reason"] for r in restarted.values())
    for turn in run.turns.filter(key__startswith="r2/"):
        flagged = [f["kind"] for f in turn.flags]
        if "/senti/" in turn.key:
            assert turn.attempt == 2 and flagged == ["too_few_challenges"]
        else:
            assert turn.attempt == 1 and flagged == []


class ProcessDied(BaseException):
    """The runner's process killed while the model rewrites a reply sent back (nothing of the runner goes on)."""


@pytest.mark.django_db(transaction=True)
def test_a_reply_taken_over_during_its_repair_is_asked_the_same_repair_and_never_a_second_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Asked once" holds whichever process asks: the repair is kept with the turn's restart, and the runner that
    takes the turn over shows the model the same answer and reason, then commits and flags what comes back."""
    reference = panel()
    asked: list[tuple[str, int, Repair | None]] = []
    real_stream = SimulatedBackend.stream

    async def stream(self: SimulatedBackend, request: AgentRequest) -> AsyncIterator[Any]:
        asked.append((request.step.key, request.attempt, request.repair))
        if request.repair is not None and not any(repair for _, _, repair in asked[:-1]):
            raise ProcessDied
        async for item in real_stream(self, request):
            yield item

    monkeypatch.setattr(SimulatedBackend, "stream", stream)
    with pytest.raises(ProcessDied):
        panel(tag="taken-over")
    run = Run.objects.get(backend_options__tag="taken-over")
    died, _, repair = next(call for call in asked if call[2] is not None)
    assert run.turns.get(key=died).status == "streaming"
    # Its lease runs out; another runner takes the run over.
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run_to_stop(run) == "done"

    assert [(attempt, again) for key, attempt, again in asked if key == died] == [
        (1, None),
        (2, repair),
        (3, repair),  # the same repair, by the runner that took the turn over
    ]
    restarts = [
        e.payload for e in run.events.filter(kind="turn_restarted", payload__key=died).order_by("seq")
    ]
    assert [r["reason"] for r in restarts][1:] == ["an earlier attempt was interrupted"]
    assert "each side must challenge at least" in restarts[0]["reason"]

    def own_restarts(of: Run) -> list[tuple[str, str]]:
        return sorted(
            (e.payload["key"], e.payload["reason"])
            for e in of.events.filter(kind="turn_restarted")
            if e.payload["reason"] != "an earlier attempt was interrupted"
        )

    assert own_restarts(run) == own_restarts(reference)
    assert dict(run.turns.values_list("key", "payload")) == dict(
        reference.turns.values_list("key", "payload")
    )
    assert run.turns.get(key=died).flags == reference.turns.get(key=died).flags
    assert [f["kind"] for f in run.turns.get(key=died).flags] == ["too_few_challenges"]
