"""Source disputes and new sources in a KB debate (seed 002): a contested claim hinges on one source whose traceback
the KB left unresolved; the debater brings the source that settles it as a `new-source` change, asked in the shape
the step's schema gives it (its references enums of the KB's). Proposed in a committed turn, it waits for a
person's approval even where the run applies proposals at once; approved, the source is filed under
kb/sources/agents/<handle>/, the disputed source and argument record it, and the run directory exports it."""

from __future__ import annotations

from typing import Any

import pytest

from debates.contract import Step, Steps
from debates.engine.effects import TurnEffects
from debates.engine.registry import get as protocol_get
from debates.engine.view import run_view_load
from debates.models import Run, Turn
from debates.protocols.kb_debate import schema
from debates.protocols.kb_debate.exports import run_export_run_dir
from debates.services import runs as services
from kb.demo import demo_kbs_load
from kb.discipline import mutation_decide
from kb.models import SOURCE_TYPES, KnowledgeBase, ProposedMutation

PROTOCOL = protocol_get("kb-debate")
DISPUTED = "kb/sources/media/city-desk-2013-congestion-charge-at-ten.md"
OPENINGS = {
    "t01/opening/debater-con-pricing": {
        "summary": "London's gains did not last.",
        "claims": [
            {
                "text": "London's congestion returned to pre-charge levels.",
                "args": ["arg-006"],
                "sources": [DISPUTED],
                "presented_as": "contested",
            }
        ],
    },
    "t02/opening/debater-pro-pricing": {
        "summary": "Pricing cuts traffic durably.",
        "claims": [
            {"text": "Stockholm cut traffic by a fifth.", "args": ["arg-001"], "presented_as": "robust"}
        ],
    },
}
TEXT = (
    "The defence leans on one press piece. Its reading of arg-006 hinges on "
    f"{DISPUTED}, whose traceback the KB left open. TfL's sixth monitoring report separates volume from delay: "
    "entering traffic stayed about a fifth below 2002 while delay rose with road works and utility works across "
    "the zone in 2006 and 2007, which the press piece reads as failure. Nothing else changes."
)
NEW_SOURCE = {
    "kind": "new-source",
    "title": "Central London Congestion Charging: Impacts Monitoring, Sixth Annual Report",
    "journal_or_source": "Transport for London",
    "year": "2008",
    "source_type": "institutional",
    "url": "https://content.tfl.gov.uk/central-london-congestion-charging-impacts-monitoring-sixth-annual-report.pdf",
    "key_finding": "Traffic entering the zone stayed about a fifth below 2002 while delays rose with road works.",
    "text": "- Entering traffic 2007: about 21% below 2002.\n- Excess delay back near 2002 levels.",
    "arg_id": "arg-006",
    "note": "The rebound is in delay, not in the traffic entering the zone.",
    "disputes": DISPUTED,
    "criticism": "Reads the delay series as a traffic series.",
    "justification": "Debate turn 3: the rebound claim hinges on the press piece alone.",
}


@pytest.fixture
def run(db: None) -> Run:
    kb: KnowledgeBase = demo_kbs_load()[0]
    run = services.run_create(
        protocol="kb-debate",
        topic="Does congestion pricing cut traffic without unfair harm?",
        kb=kb,
        config={"auto_approve": True},
        enqueue=False,
    )
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
    return run


def _next_step(run: Run) -> Step:
    plan = PROTOCOL.plan(run_view_load(run))
    assert isinstance(plan, Steps)
    (step,) = plan.steps
    return step


def _commit(run: Run, step: Step, answer: dict[str, Any]) -> Turn:
    """The turn answered, accepted and committed with its effects, as the runner commits it."""
    view = run_view_load(run)
    accepted = PROTOCOL.accept(step, step.schema.model_validate(answer), view)
    turn = Turn.objects.create(
        run=run,
        key=step.key,
        seat=run.seats.get(handle=step.seat),
        stage=step.stage,
        task=step.task,
        status="committed",
        payload=accepted.payload,
        schema_version=schema.SCHEMA_VERSION,
        first_seq=30,
    )
    PROTOCOL.on_commit(step, accepted.payload, TurnEffects(run_id=run.pk, turn_id=turn.pk))
    return turn


def test_the_step_schema_asks_a_new_source_in_the_kbs_terms(run):
    step = _next_step(run)
    defs = step.schema.model_json_schema()["$defs"]
    asked = defs["NewSource"]["properties"]
    assert asked["kind"].get("enum", [asked["kind"].get("const")]) == ["new-source"]
    assert asked["source_type"]["enum"] == SOURCE_TYPES
    kb = run_view_load(run).kb
    assert kb is not None
    assert sorted(asked["arg_id"]["enum"]) == sorted(kb.arguments)
    disputes = next(option for option in asked["disputes"]["anyOf"] if "enum" in option)
    assert sorted(disputes["enum"]) == sorted(kb.sources)
    assert set(defs["NewSource"]["required"]) >= {
        "kind",
        "title",
        "source_type",
        "key_finding",
        "arg_id",
        "note",
    }


def test_proposed_approved_filed_and_exported(run, moderator):
    step = _next_step(run)
    assert step.task == "turn"
    move = "defend" if step.context["role"].startswith("defend") else "rebut"
    turn = _commit(run, step, {"move": move, "text": TEXT, "claims": [], "mutations": [NEW_SOURCE]})
    path = f"kb/sources/agents/{step.seat}/transport-for-london-2008-central-london-congestion-charging.md"

    # Proposed: it waits for a person, though the run applies proposals at once.
    mutation = ProposedMutation.objects.get(run=run, kind="new-source")
    assert (mutation.status, mutation.turn_id, mutation.proposed_by) == ("pending", turn.pk, step.seat)
    assert mutation.payload["content"].startswith("- Entering traffic 2007")
    assert not run.kb.sources.filter(path=path).exists()
    pending = run_export_run_dir(run)
    assert path not in pending
    assert (
        f"- new-source: {path} “{NEW_SOURCE['title']}”, on arg-006, disputing {DISPUTED} — pending approval."
        in (pending["output/transcript.md"])
    )

    # Approved: the source exists in the KB, filed under the debater's handle.
    mutation = mutation_decide(mutation=mutation, approve=True, user=moderator)
    assert mutation.status == "applied"
    source = run.kb.sources.get(path=path)
    assert source.frontmatter["key_finding"] == NEW_SOURCE["key_finding"]
    assert run.kb.sources.get(path=DISPUTED).criticism.endswith(
        f"Reads the delay series as a traffic series. (see {path}; debate turn 3, {step.seat})"
    )
    assert (
        f"Source dispute: {NEW_SOURCE['note']} [{path}]"
        in run.kb.arguments.get(arg_id="arg-006").traceback_notes
    )

    # Exported: the file, its index row, the revision quoting the turn, the disputed files edited in place.
    files = run_export_run_dir(run)
    assert files[path].startswith("---\ntitle: ")
    assert f"# {NEW_SOURCE['title']}\n" in files[path] and "- **Source type**: institutional" in files[path]
    assert path.removeprefix("kb/sources/") in files["kb/sources/index.md"]
    assert f"kb-snapshot-construction/{path.removeprefix('kb/')}" not in files
    revisions = files["kb/revisions.md"]
    assert "- **Type**: new-source\n" in revisions and f"- **Target**: {path}\n" in revisions
    triggered = next(line for line in revisions.splitlines() if line.startswith("- **Triggered by**"))
    # The words of the turn that triggered it: from the sentence naming what it is about, shortened.
    assert triggered.startswith(
        f"- **Triggered by**: {step.seat} at debate turn 3: “… Its reading of arg-006"
    )
    assert triggered.endswith("whose traceback the KB left open. …”") and len(triggered) < 300
    assert f"Reads the delay series as a traffic series. (see {path}" in files[DISPUTED]
    assert f"— applied as {mutation.revision.r_id}." in files["output/transcript.md"]
