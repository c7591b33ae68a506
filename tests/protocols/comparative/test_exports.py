"""The decision brief (`export_run --format brief`, the run page's download), written from a completed run's outcome:
every section of the seed's template, and no text the brief writes behind a label of its own that repeats that
label ("Choose PostgreSQL if Choose PostgreSQL if …", "Priya (CTO): Priya (CTO)'s …", "missing evidence: Missing
evidence: …"), whatever the agents wrote."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from debates.models import Run
from debates.protocols.comparative.exports import (
    condition_clause,
    run_export_brief,
    without_lead,
)
from debates.services import runs as services
from tests.conftest import run_to_stop
from tests.protocols.comparative.test_simulated import CONFIG, MATERIAL, TOPIC

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads

SECTIONS = (
    "Executive Summary",
    "Evaluation Scorecard",
    "Case for Kestrel Streams",
    "Case for Harbor MQ",
    "Judge Synthesis",
    "Recommendation",
    "Open Questions",
    "Stakeholder Input",
    "Evidence Base",
)
# "- **Label:** text", "  - Label: text", "Label: text", "1. Label: text": a text written behind its label.
LABELLED = re.compile(
    r"^\s*(?:[-*]|\d+\.)?\s*(?:\*\*)?(?P<label>[^:*|]{2,80}?)(?:\*\*)?:(?:\*\*)?\s+(?P<text>.+)$"
)


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def repeated_run(line: str) -> str:
    """The first run of 3 or more words said twice in a row in `line` ("choose x if choose x if"), or ""."""
    said = words(line)
    for start in range(len(said)):
        for size in range(3, (len(said) - start) // 2 + 1):
            if said[start : start + size] == said[start + size : start + 2 * size]:
                return " ".join(said[start : start + size])
    return ""


def label_repeated(line: str) -> bool:
    """Whether the text behind a label starts with the label's own words."""
    match = LABELLED.match(line)
    if not match or line.lstrip().startswith("|"):
        return False
    label = words(match["label"])
    return bool(label) and words(match["text"])[: len(label)] == label


def sections(brief: str) -> dict[str, list[str]]:
    """The brief's `## ` sections (the frontmatter and title under ""), each as its lines."""
    found: dict[str, list[str]] = {"": []}
    current = ""
    for line in brief.splitlines():
        if line.startswith("## "):
            current = line[3:].split(" (")[0]
            found[current] = []
        else:
            found[current].append(line)
    return found


def problems(brief: str) -> list[str]:
    """Every line of every section that says a phrase twice in a row or repeats its label."""
    found = []
    for title, lines in sections(brief).items():
        for line in lines:
            if run := repeated_run(line):
                found.append(f"{title}: “{run}” twice in a row in: {line}")
            if label_repeated(line):
                found.append(f"{title}: the text repeats its label: {line}")
    return found


def completed(**overrides: Any) -> Run:
    run = services.run_create(
        protocol="comparative",
        topic=overrides.pop("topic", TOPIC),
        material=overrides.pop("material", MATERIAL),
        config=overrides.pop("config", CONFIG),
        seed=overrides.pop("seed", 3),
        backend_options={"cps": 0, **overrides.pop("options", {})},
        enqueue=False,
    )
    assert run_to_stop(run) == "done"
    assert run.status == "completed", run.status_reason
    return run


@pytest.fixture(autouse=True)
def _no_backoff(settings: Any) -> None:
    settings.DISPUTA = {**settings.DISPUTA, "RETRY_BACKOFF_SECONDS": 0.0}


# --- the checks themselves -------------------------------------------------------------------------------------


def test_the_checks_catch_a_doubled_lead_in_and_a_repeated_label() -> None:
    assert (
        repeated_run("- Choose PostgreSQL if Choose PostgreSQL if the team grows.") == "choose postgresql if"
    )
    assert repeated_run("- Choose PostgreSQL if the team grows.") == ""
    assert label_repeated("- Priya (CTO): Priya (CTO)'s support for it is clear.")
    assert label_repeated("  - Why Harbor MQ scores well: Why Harbor MQ scores well: it ships.")
    assert not label_repeated("- Priya (CTO): Your support for it is clear.")
    assert not label_repeated("| Cost | 4: Cost is low. |")


# --- every section of briefs of completed simulated runs -------------------------------------------------------


@pytest.mark.parametrize(
    "variant",
    [
        # Team mode with stakeholders, gaps, a hedge, a judge's slip, and the human's decision.
        {
            "options": {"hedge": True, "judge_slip": True},
            "pick": ("B", "Delivery this year matters most to us."),
        },
        # The judge failed: both cases side by side, the human adjudicates.
        {
            "options": {"fail": ["r3/judgement/judge"]},
            "pick": ("A", "The strategic case is the stronger one."),
        },
        # A rebuttal failed: the debate stepped down to openings and a judge.
        {"options": {"fail": ["r2/rebuttal/advocate-b"]}},
    ],
    ids=["team-hedge-slip-picked", "judge-failed", "rebuttal-failed"],
)
def test_no_section_of_the_brief_says_a_phrase_twice_or_repeats_its_label(
    variant: dict[str, Any], moderator
) -> None:
    run = completed(options=variant["options"])
    if "pick" in variant:
        pick, reason = variant["pick"]
        services.run_pick_record(run_id=run.pk, pick=pick, reason=reason, user=moderator)
        run.refresh_from_db()
    brief = run_export_brief(run)
    found = sections(brief)
    assert [t for t in found if t] == list(SECTIONS)  # every section is there, so every section is checked
    assert all(any(line.strip() for line in found[t]) for t in SECTIONS)
    assert problems(brief) == []
    if "pick" in variant:
        assert "Reason: " in brief


def test_the_brief_of_a_run_without_material_or_sources_repeats_nothing_and_says_what_it_rests_on() -> None:
    run = completed(
        topic="Which CI service should the mobile team adopt?",
        material="",
        config={"option_a": "GitHub Actions", "option_b": "Jenkins", "decision_type": "tool"},
    )
    brief = run_export_brief(run)
    assert problems(brief) == []
    assert "no material was given: the advocates argued from the options and the criteria alone" in brief


# --- the lead-ins an agent may write itself ----------------------------------------------------------------------


def test_conditions_written_whole_by_the_judge_read_once_in_the_brief_and_on_the_page(
    moderator_client: Client,
) -> None:
    run = completed()
    judgement = run.outcome["judgement"]
    judgement["decision_conditions"] = {  # as a model (or a run stored before this fix) may write them
        "choose_a_if": [
            "Choose Kestrel Streams if volume doubles within two years.",
            "If the team can learn it.",
        ],
        "choose_b_if": [
            "Choose Harbor MQ if the migration must finish this year.",
            "choose option B when on-call load is the main worry",
            "Choose Harbor MQ over Kestrel Streams if cost dominates.",
        ],
    }
    Run.objects.filter(pk=run.pk).update(outcome=run.outcome)
    run.refresh_from_db()
    brief = run_export_brief(run)
    conditions = brief.split("### Decision Conditions\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert conditions == [
        "- Choose Kestrel Streams if volume doubles within two years.",
        "- Choose Kestrel Streams if the team can learn it.",
        "- Choose Harbor MQ if the migration must finish this year.",
        "- Choose Harbor MQ if on-call load is the main worry",
        "- Choose Harbor MQ if cost dominates.",
    ]
    assert problems(brief) == []
    page = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    shown = re.search(r'<div class="conditions" id="decision-conditions">(.*?)</div>\s*<h3>', page, re.S)
    assert shown is not None
    assert "<h4>Choose Harbor MQ if…</h4><ul><li>the migration must finish this year.</li>" in shown.group(1)
    assert "Choose Harbor MQ if" not in re.sub(r"<h4>.*?</h4>", "", shown.group(1))


def test_a_response_failure_or_closing_that_starts_with_its_label_is_written_once() -> None:
    run = completed()
    opening = run.outcome["openings"]["A"]
    opening["stakeholders"][0]["response"] = "Priya (CTO): your support is borne out."
    opening["closing"] = "Closing: Kestrel Streams wins. It scales. Choose it."
    rebuttal = run.outcome["rebuttals"][0]
    rebuttal["why_it_fails"] = f"{rebuttal['failure'].capitalize()}: the claim cites nothing."
    rebuttal["counter_evidence"] = "Counter-evidence: the load test."
    Run.objects.filter(pk=run.pk).update(outcome=run.outcome)
    run.refresh_from_db()
    brief = run_export_brief(run)
    assert "- Priya (CTO): your support is borne out." in brief
    assert "**Closing:** Kestrel Streams wins. It scales. Choose it." in brief
    assert f"— {rebuttal['failure']}: the claim cites nothing. Counter-evidence: the load test." in brief
    assert problems(brief) == []


@pytest.mark.parametrize(
    ("written", "clause"),
    [
        ("Choose PostgreSQL if the team must ship in six months.", "the team must ship in six months."),
        ("choose postgresql if: joins matter", "joins matter"),
        ("Choose B when the team grows.", "the team grows."),
        ("Choose option B only if cost matters", "cost matters"),
        ("Choose PostgreSQL over MongoDB if joins matter", "joins matter"),
        ("If cost matters", "cost matters"),
        ("- Choose it if… the team stays", "the team stays"),
        ("the team grows", "the team grows"),
        ("Ifrit attacks", "Ifrit attacks"),
        ("Choose MongoDB if x", "Choose MongoDB if x"),  # the other option: the judge's slip stays visible
        ("Choose PostgreSQL if", "Choose PostgreSQL if"),  # nothing after it: kept as written
    ],
)
def test_a_condition_is_the_words_after_choose_option_if(written: str, clause: str) -> None:
    assert condition_clause(written, "B", "PostgreSQL") == clause


def test_only_a_lead_in_followed_by_a_colon_or_dash_is_dropped() -> None:
    assert without_lead("Priya (CTO): hello", "Priya (CTO)") == "hello"
    assert without_lead("**Closing:** we win", "closing") == "we win"
    assert without_lead("Finance — you", "Finance") == "you"
    assert without_lead("Priya (CTO)'s support", "Priya (CTO)") == "Priya (CTO)'s support"
    assert without_lead("Closing-time is near", "closing") == "Closing-time is near"
    assert without_lead("Reason:", "reason") == "Reason:"  # nothing after it: kept
