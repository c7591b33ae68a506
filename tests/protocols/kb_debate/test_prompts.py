"""What a kb-debate seat reads (seed 002): before its first turn a debater reads the KB's argument index, edges,
contradictions and quality summary. They are the run's material, in the part of the prompt every seat shares (one
cached prefix), so each seat's prompt carries them and all carry the same."""

from __future__ import annotations

import json
import re

import pytest

from debates.agents.prompts import Prompt, prompt_render
from debates.contract import Step, Steps
from debates.engine.registry import get as protocol_get
from debates.engine.view import run_view_load
from debates.models import Run, Turn
from debates.protocols.kb_debate import schema
from debates.protocols.kb_debate.ledger import ledger_build
from debates.services import runs as services
from kb.demo import demo_kbs_load
from kb.models import KnowledgeBase

OPENINGS = {
    "t01/opening/debater-con-pricing": {
        "summary": "The traffic gains are overstated.",
        "claims": [{"text": "Traffic moves to the boundary.", "args": ["arg-014"], "presented_as": "weak"}],
    },
    "t02/opening/debater-pro-pricing": {
        "summary": "Pricing cuts traffic durably.",
        "claims": [
            {"text": "Stockholm cut traffic by a fifth.", "args": ["arg-001"], "presented_as": "robust"}
        ],
    },
}


@pytest.fixture
def demo_kb(db: None) -> KnowledgeBase:
    return demo_kbs_load()[0]


@pytest.fixture
def run(demo_kb: KnowledgeBase) -> Run:
    return services.run_create(
        protocol="kb-debate",
        topic="Does congestion pricing cut traffic without unfair harm?",
        kb=demo_kb,
        config={"moderator": "agent"},
        enqueue=False,
    )


def _material(prompt: Prompt) -> str:
    found = re.search(r"<material>(\".*\")</material>", prompt.shared, flags=re.DOTALL)
    assert found is not None
    return str(json.loads(found[1]))


def _render(run: Run, step: Step) -> Prompt:
    return prompt_render(protocol="kb-debate", step=step, view=run_view_load(run))


def _assert_the_kb_is_read(material: str, kb: KnowledgeBase) -> None:
    # the argument index
    assert "arg-001 (robust, pro-pricing, empirical): " in material
    # an edge, with its comment
    assert (
        "arg-001 contradicts arg-014 — counts show small boundary increases, not wholesale displacement"
        in material
    )
    assert "arg-007 contradicts arg-006" in material
    assert (
        "arg-010 derived-from-source kb/sources/media/missing-citation/open-roads-blog-2019-regressive-toll.md"
        in material
    )
    # a contradiction, with its fields
    assert "C-001: Did London's congestion reduction last?" in material
    assert "  Type: cross-source-disagreement" in material
    assert "  Status: unresolvable-given-current-corpus" in material
    # the quality summary, whole: the stable state, the central questions, the engagement asymmetries
    assert kb.quality_summary.strip() in material
    assert "Graph state: stable (pass 3 produced no new arguments" in material
    assert "**CQ1 (empirical):** Does congestion pricing durably reduce traffic" in material


def test_a_debaters_opening_prompt_carries_the_edges_contradictions_and_quality_summary(run, demo_kb):
    plan = protocol_get("kb-debate").plan(run_view_load(run))
    assert isinstance(plan, Steps)
    opening = plan.steps[0]
    assert opening.task == "opening" and opening.seat.startswith("debater-")
    _assert_the_kb_is_read(_material(_render(run, opening)), demo_kb)


def test_every_seat_reads_them_in_the_same_shared_prefix(run, demo_kb):
    protocol = protocol_get("kb-debate")
    openings = protocol.plan(run_view_load(run))
    assert isinstance(openings, Steps)
    shared = {_render(run, step).shared for step in openings.steps}
    for number, (key, payload) in enumerate(OPENINGS.items(), start=1):
        Turn.objects.create(
            run=run,
            key=key,
            seat=run.seats.get(handle=key.split("/")[2]),
            stage="openings",
            task="opening",
            status="committed",
            payload=schema.Opening.model_validate(payload).model_dump(mode="json"),
            schema_version=schema.SCHEMA_VERSION,
            first_seq=number * 10,
        )
    view = run_view_load(run)
    later = protocol.plan(view)
    assert isinstance(later, Steps) and later.steps[0].task == "turn"
    moderator = protocol._moderator(view, ledger_build(view), 3)
    shared |= {_render(run, later.steps[0]).shared, _render(run, moderator).shared}
    assert len(shared) == 1  # the debaters' and the moderator's prompts share one prefix
    _assert_the_kb_is_read(_material(_render(run, moderator)), demo_kb)
