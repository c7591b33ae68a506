"""Independence of a parallel stage, for every registered protocol: the seats of a stage that runs in parallel (the
first plan with more than one step: its steps are siblings) write without seeing each other, so each sibling's
prompt is the same whether the stage runs

- in parallel (all siblings planned at once, from the same view);
- one turn at a time in step mode (a paused run given one step credit per turn: each later sibling is planned from
  a view that holds the earlier siblings' committed turns);
- after a crash in the middle of the stage (one sibling committed, the others left streaming by a runner that
  died; the next runner takes the run over when the lease expires and starts them again).

The prompts are those rendered for the runner's own calls (a request renders its prompt once). A sibling's turn
must never appear in another sibling's transcript: each step declares what it may see (`Step.sees`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from pydantic import BaseModel

from debates.agents import base as agents_base
from debates.agents.prompts import Prompt, prompt_render
from debates.contract import Step, Steps
from debates.engine import registry
from debates.engine.lease import lease_try_acquire
from debates.engine.turns import RunnerOutcome, run_decide
from debates.engine.view import run_view_load
from debates.models import Run, Turn
from debates.services import runs as services
from debates.services.demos import run_headless_demo_create
from kb.models import KnowledgeBase
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 23
# A protocol reaches its first parallel stage within this many single turns, or the test says it has none.
MAX_TURNS_BEFORE = 12

PROTOCOLS = [p.name for p in registry.all_protocols()]


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> dict[str, Prompt]:
    """The prompt of each step key as last rendered for a call of the runner (once per call: its request's)."""
    prompts: dict[str, Prompt] = {}

    def recording(*, protocol: str, step: Step, view: Any, schema_in_text: bool = False) -> Prompt:
        prompt = prompt_render(protocol=protocol, step=step, view=view, schema_in_text=schema_in_text)
        prompts[step.key] = prompt
        return prompt

    monkeypatch.setattr(agents_base, "prompt_render", recording)
    return prompts


def _paused_at_parallel_stage(protocol: str) -> tuple[Run, tuple[str, ...]]:
    """A headless demo run of the protocol, paused and stepped one turn at a time up to its first plan with more
    than one step; the keys of that plan's steps. Over a demo KB of its own: a finished run's KB mutations (seed
    002's downgrades) must not change what the next run reads."""
    demo = registry.get(protocol).demo
    if demo is not None and demo.kb:
        for kb in KnowledgeBase.objects.filter(slug=demo.kb):
            kb.slug = f"{demo.kb}-used-{kb.pk}"
            kb.save(update_fields=["slug"])
    run = run_headless_demo_create(
        protocol=protocol, seed=SEED, backend="simulated", backend_options={"cps": 0}
    )
    services.run_control(run_id=run.pk, action="pause", user=None)
    assert run_to_stop(run) == RunnerOutcome.PAUSED
    for _ in range(MAX_TURNS_BEFORE):
        plan = registry.get(protocol).plan(run_view_load(run))
        assert isinstance(plan, Steps), f"{protocol}: the run ended ({plan!r}) before any parallel stage"
        if len(plan.steps) > 1:
            return run, tuple(step.key for step in plan.steps)
        services.run_control(run_id=run.pk, action="step", user=None)
        assert run_to_stop(run) == RunnerOutcome.PAUSED
    pytest.fail(f"{protocol}: no parallel stage within {MAX_TURNS_BEFORE} turns")


def _step_one(run: Run) -> None:
    services.run_control(run_id=run.pk, action="step", user=None)
    assert run_to_stop(run) == RunnerOutcome.PAUSED


def _resume(run: Run) -> None:
    services.run_control(run_id=run.pk, action="resume", user=None)
    run_to_stop(run)
    assert run.is_terminal, f"run {run.pk}: {run.status} {run.status_reason}"


def _turn_keys(prompt: Prompt) -> list[str]:
    return [block.split('"')[1] for block in prompt.transcript]


def _parallel(protocol: str, rendered: dict[str, Prompt]) -> tuple[tuple[str, ...], dict[str, Prompt]]:
    run, siblings = _paused_at_parallel_stage(protocol)
    rendered.clear()
    _resume(run)  # the whole stage planned at once, its siblings called together
    return siblings, {key: rendered[key] for key in siblings}


def _stepped(protocol: str, rendered: dict[str, Prompt]) -> dict[str, Prompt]:
    run, siblings = _paused_at_parallel_stage(protocol)
    rendered.clear()
    for _ in siblings:
        _step_one(run)  # "Step one turn": each later sibling planned after the earlier ones committed
    assert set(Turn.objects.filter(run=run, status="committed").values_list("key", flat=True)) >= set(
        siblings
    )
    return {key: rendered[key] for key in siblings}


def _crashed(protocol: str, rendered: dict[str, Prompt]) -> tuple[str, dict[str, Prompt]]:
    """One sibling committed, then a runner claims the others (they start streaming) and dies; the next runner
    takes the run over once its lease has expired and starts them again."""
    run, siblings = _paused_at_parallel_stage(protocol)
    _step_one(run)
    first = set(Turn.objects.filter(run=run, key__in=siblings).values_list("key", flat=True))
    assert len(first) == 1
    services.run_control(run_id=run.pk, action="resume", user=None)
    assert lease_try_acquire(run.pk, "dead-runner")
    decision = run_decide(run.pk, "dead-runner")
    assert decision.outcome == RunnerOutcome.STEPS
    interrupted = {step.key for step in decision.steps}
    assert interrupted == set(siblings) - first
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    rendered.clear()
    run_to_stop(run)
    assert run.is_terminal, f"run {run.pk}: {run.status} {run.status_reason}"
    restarted = dict(Turn.objects.filter(run=run, key__in=interrupted).values_list("key", "attempt"))
    assert restarted == dict.fromkeys(interrupted, 2), "the interrupted siblings were started again"
    return next(iter(first)), {key: rendered[key] for key in interrupted}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_parallel_stage_renders_the_same_prompts_in_parallel_step_mode_and_after_a_crash(
    protocol: str, rendered: dict[str, Prompt]
) -> None:
    siblings, parallel = _parallel(protocol, rendered)
    stepped = _stepped(protocol, rendered)
    committed_first, resumed = _crashed(protocol, rendered)

    for key in siblings:
        others = set(siblings) - {key}
        assert not others & set(_turn_keys(parallel[key])), f"{key} sees a sibling when run in parallel"
        assert not others & set(_turn_keys(stepped[key])), (
            f"{protocol}: in step mode {key} sees its sibling(s) {sorted(others & set(_turn_keys(stepped[key])))}"
        )
        assert stepped[key].prefix == parallel[key].prefix, (
            f"{key}: step mode changes its prompt's transcript"
        )
        assert stepped[key].text == parallel[key].text, f"{key}: step mode changes its prompt"
    for key, prompt in resumed.items():
        assert committed_first not in _turn_keys(prompt), (
            f"{protocol}: after the crash {key} sees its sibling {committed_first}"
        )
        assert prompt.prefix == parallel[key].prefix, f"{key}: resuming after a crash changes its transcript"
        assert prompt.text == parallel[key].text, f"{key}: resuming after a crash changes its prompt"


def test_a_step_must_say_what_it_may_see():
    """No default that sees everything: a step planned without `sees` is a programming error."""
    with pytest.raises(TypeError, match="sees"):
        Step(key="r1/x/a", seat="a", stage="x", task="x", schema=BaseModel)  # type: ignore[call-arg]
    assert (
        Step(key="r1/x/a", seat="a", stage="x", task="x", schema=BaseModel, sees=()).may_see("r0/y/b")
        is False
    )
