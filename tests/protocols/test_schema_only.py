"""Every protocol against a model that honours the JSON schema it is sent and nothing else (issue 22).

The fake LLM server's schema-only mode answers an arbitrary valid instance of the request's schema and ignores the
prompt. A protocol whose contract lives in its step schemas (enums of what exists, one property per item) and in
code (what code knows is filled in, what no schema can check is flagged) completes against it on both real
backends, with no failed turn, no step down its fallback chain and almost no repair calls."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import pytest

from debates.agents.base import Result
from debates.contract import Accepted, Flag, RunView, Step
from debates.devtools.fake_llm import schema_instance
from debates.devtools.robustness import TARGET_REPAIR_SHARE, measure_robustness
from debates.engine import registry
from debates.engine.runner import _output_errors, run_execute
from debates.services.demos import run_headless_demo_create

PROTOCOLS = sorted(p.name for p in registry.all_protocols())
# Answers drawn per step and schema in the property test (each draw is an arbitrary valid instance).
DRAWS = 3


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["anthropic", "openai"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_protocol_completes_against_a_model_that_only_honours_the_schema(protocol: str, backend: str):
    result = measure_robustness(protocol=protocol, backend=backend, mode="schema-only", seed=1)

    assert result["status"] == "completed", result["reason"]
    assert result["failed_keys"] == []
    assert result["step_downs"] == 0
    # A repair is a second call for the same turn: a schema that carries the contract leaves almost none.
    assert result["repairs"] <= max(1, int(TARGET_REPAIR_SHARE * result["calls"])), result["repair_reasons"]


def _steps_of_a_run(protocol: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Step, RunView]]:
    """Every step of the protocol's headless demo (simulated agents) with the view it was answered in, one per
    task: what a model was asked in a real run."""
    seen: dict[str, tuple[Step, RunView]] = {}
    instance = registry.get(protocol)
    accept = instance.accept

    def recording(step: Step, payload: Any, view: RunView) -> Accepted:
        seen.setdefault(step.task, (step, view))
        return accept(step, payload, view)

    monkeypatch.setattr(instance, "accept", recording)
    run = run_headless_demo_create(
        protocol=protocol, backend="simulated", model="", seed=3, backend_options={"cps": 0}
    )
    asyncio.run(run_execute(run.pk))
    monkeypatch.undo()
    return list(seen.values())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_any_schema_valid_answer_of_any_step_is_accepted_or_flagged_never_refused(
    protocol: str, monkeypatch: pytest.MonkeyPatch
):
    """The property, over each step of a real run: an answer valid against the schema the model is sent (as
    Anthropic's decoder sees it, with lengths and ranges moved into descriptions, and as an OpenAI-compatible
    server sees it) passes the step's schema and the protocol's rules, and `accept` commits it without raising,
    flagging what it cannot verify."""
    instance = registry.get(protocol)
    steps = _steps_of_a_run(protocol, monkeypatch)
    assert steps, f"{protocol}'s demo asked no step"
    refused: list[str] = []
    flagged = 0
    for step, view in steps:
        for wire, schema in (
            ("anthropic", anthropic.transform_schema(step.schema)),
            ("openai", step.schema.model_json_schema()),
        ):
            for draw in range(DRAWS):
                answer = schema_instance(schema, seed=draw)
                errors = _output_errors(instance, step, Result(json.dumps(answer), answer), view)
                if errors:
                    refused.append(f"{step.task} ({wire}, draw {draw}): {'; '.join(errors)[:300]}")
                    continue
                accepted = instance.accept(step, step.schema.model_validate(answer), view)
                json.dumps(accepted.payload)  # stored as JSON
                assert all(isinstance(flag, Flag) for flag in accepted.flags)
                flagged += len(accepted.flags)
    assert refused == []
