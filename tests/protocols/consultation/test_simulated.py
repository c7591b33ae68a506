"""The consultation's simulated agents stay on the run's own topic and material: a rehearsal reads like the debate
the user asked for. Without material they cite no stand-in facts (neither the demo's nor any other debate's): they
say plainly that none was supplied and argue the topic from general experience, at a lower confidence. With
material they cite it."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from django.core.management import call_command

from debates import demo
from debates.engine import registry
from debates.models import Run, RunStatus
from debates.protocols.consultation.protocol import KEY_VERDICT, key_independent
from debates.services import runs as services
from tests.conftest import MATERIAL, run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)

TOPIC = "Should we adopt trunk-based development?"
OFF_TOPIC = re.compile(r"congestion|traffic|charg", re.IGNORECASE)  # the demo material's subject
HANDLES = ("agent-security-expert", "agent-architect", "agent-pragmatist")


def everything_said(run: Run) -> str:
    """Every committed answer and the outcome, as one text."""
    payloads = [turn.payload for turn in run.turns.order_by("id")]
    return json.dumps([payloads, run.outcome], ensure_ascii=False)


def headless(*args: str) -> Run:
    out = io.StringIO()
    call_command(
        "run_debate", "--protocol", "consultation", "--topic", TOPIC, "--seed", "3", "--no-progress", *args,
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    return Run.objects.get(pk=int(out.getvalue().split()[-1]))


def assert_on_topic_without_material(run: Run) -> None:
    assert run.status == RunStatus.COMPLETED and run.material == ""
    said = everything_said(run)
    assert not OFF_TOPIC.search(said), OFF_TOPIC.search(said)
    assert "trunk-based development" in said
    for handle in HANDLES:
        position: Any = run.turns.get(key=key_independent(handle)).payload
        assert "trunk-based development" in position["rationale"]
        assert "No material was supplied" in position["key_points"][0]  # says so, plainly, first
        assert position["confidence"] < 0.7  # no evidence, no high confidence
    verdict: Any = run.turns.get(key=KEY_VERDICT).payload
    assert "trunk-based development" in verdict["recommendation"]
    assert "No material was supplied" in verdict["analysis"]


def test_a_headless_run_on_another_topic_without_material_never_cites_the_demo_material() -> None:
    assert_on_topic_without_material(headless())


def test_a_run_created_without_material_argues_its_own_topic_and_says_it_has_none() -> None:
    run = services.run_create(
        protocol="consultation", topic=TOPIC, material="", config={}, seed=5, backend_options={"cps": 0},
        enqueue=False,
    )  # fmt: skip
    assert run_to_stop(run) == "done"
    assert_on_topic_without_material(run)


def test_an_explore_run_without_material_offers_its_menu_on_its_own_topic() -> None:
    run = headless("--config", '{"mode": "explore"}')
    said = everything_said(run)
    assert run.status == RunStatus.COMPLETED and not OFF_TOPIC.search(said)
    verdict: Any = run.turns.get(key=KEY_VERDICT).payload
    assert "trunk-based development" in verdict["summary"]
    assert all("the material:" not in option["description"] for option in verdict["recommendations"])


def test_with_material_the_agents_cite_it() -> None:
    run = services.run_create(
        protocol="consultation", topic="Should the city charge cars entering the centre?", material=MATERIAL,
        config={}, seed=5, backend_options={"cps": 0}, enqueue=False,
    )  # fmt: skip
    assert run_to_stop(run) == "done"
    for handle in HANDLES:
        position: Any = run.turns.get(key=key_independent(handle)).payload
        assert position["key_points"][0].startswith("The material is clear on this: ")
        assert position["key_points"][0].removeprefix("The material is clear on this: ") in MATERIAL
    assert "No material was supplied" not in everything_said(run)


def test_the_demo_topic_still_gets_the_demo_material_headless() -> None:
    out = io.StringIO()
    topic = registry.get("consultation").demo.topic  # type: ignore[union-attr]
    call_command(
        "run_debate", "--protocol", "consultation", "--topic", topic, "--no-progress",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    run = Run.objects.get(pk=int(out.getvalue().split()[-1]))
    assert run.material == demo.DEMO_COMPARISON_MATERIAL
