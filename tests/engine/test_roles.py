"""Per-role and per-stage call settings (DISPUTA_ROLES): a temperature is set by role or stage and sent only to
models that accept one."""

from __future__ import annotations

import re
from typing import Any

import pytest

from debates.agents.pricing import model_accepts_temperature
from debates.devtools.fake_llm import RecordedRequest
from tests.conftest import run_to_stop

ROLES = {
    "default": {"max_tokens": 4096, "effort": "medium"},
    "examiner": {"max_tokens": 6144, "effort": "high", "temperature": 0.7},
    "stage:analysis": {"temperature": 0.3},
}


def step_of(request: RecordedRequest) -> str:
    text = str(request.body.get("messages"))
    found = re.search(r'<step [^>]*key=\\?"([^"\\]+)', text)
    return found.group(1) if found else ""


def test_the_current_anthropic_models_refuse_a_temperature_and_a_local_model_takes_one():
    assert not model_accepts_temperature("claude-sonnet-5-5")
    assert not model_accepts_temperature("claude-opus-5-5")
    assert model_accepts_temperature("local-model")  # not in the price table: a local server


@pytest.mark.django_db(transaction=True)
def test_a_local_model_is_called_at_the_temperature_of_the_stage_or_the_role(
    make_run: Any, openai_api: Any, settings: Any
):
    settings.DISPUTA_ROLES = ROLES
    settings.DISPUTA = {**settings.DISPUTA, "OPENAI_MODELS": ["local-model"]}
    run = make_run(backend="openai", model="local-model")
    assert run_to_stop(run) == "done"
    by_step = {step_of(r): r.body.get("temperature") for r in openai_api.requests}
    assert {k: v for k, v in by_step.items() if "/analysis/" in k} == {
        f"r1/analysis/analyst-{n}": 0.3 for n in ("ada", "bo", "cy")
    }
    examiner = [v for k, v in by_step.items() if "/examiner" in k]
    assert examiner and set(examiner) == {0.7}
    assert [v for k, v in by_step.items() if "/answers/" in k] == [None] * 3  # the default sets none


@pytest.mark.django_db(transaction=True)
def test_an_anthropic_model_that_refuses_a_temperature_is_called_without_one(
    make_run: Any, anthropic_api: Any, settings: Any
):
    settings.DISPUTA_ROLES = ROLES
    run = make_run(backend="anthropic", model="claude-sonnet-5-5")
    assert run_to_stop(run) == "done"
    asked = [r for r in anthropic_api.requests if r.body.get("max_tokens")]
    assert asked and all("temperature" not in r.body for r in asked)
