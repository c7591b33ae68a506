"""The Competitive Review export of an adversarial run: the seed's section order, the verdict, the concern table,
numbered key narratives, agreement and contested zones, degradation notices, and the human's decision."""

from __future__ import annotations

import pytest

from debates.engine import registry
from debates.models import Run
from debates.protocols.adversarial.exports import adversarial_review_md
from tests.protocols.adversarial.test_protocol import (
    KEY_CASE,
    KEY_CONCERNS,
    KEY_JUDGEMENT,
    KEY_REVIEW,
    TOPIC,
    case,
    concerns,
    judgement,
    review,
    view,
)

PROTOCOL = registry.get("adversarial")


def run_with(history, **fields) -> Run:
    """An unsaved run carrying the outcome plan() gives for `history` (the export reads nothing else)."""
    outcome = PROTOCOL.plan(view(history)).outcome
    return Run(
        protocol="adversarial", topic=TOPIC, outcome=outcome, judge_pick=outcome["judge_pick"], **fields
    )


FULL = {KEY_CASE: case(), KEY_CONCERNS: concerns(), KEY_JUDGEMENT: judgement("reject")}


def test_the_review_follows_the_seeds_layout_in_order():
    text = adversarial_review_md(run_with(FULL))
    headings = [
        "## Competitive Review",
        "### Advocate Position",
        "### Challenger Position",
        "### Judge Synthesis",
        "**Key narratives**",
        "**Agreement zones**",
        "**Contested zones**",
    ]
    positions = [text.index(h) for h in headings]
    assert positions == sorted(positions)
    assert text.startswith("## Competitive Review\n")


def test_the_verdict_the_narratives_and_the_zones_are_stated():
    text = adversarial_review_md(run_with(FULL))
    assert "**Verdict:** REJECT — Reject the RFC (by the judge)" in text
    assert "**Verdict: REJECT.** Two serious concerns are unanswered." in text
    assert "1. Rollback is cheap.\n2. Durability is unproven." in text
    assert "**Agreement zones**\n\n- Rollback is cheap." in text
    assert "**Contested zones**\n\n- Durability of AOF." in text
    assert "**Pulled punches?** genuine: Concrete risks, honestly ranked." in text


def test_both_positions_quote_the_artifact():
    text = adversarial_review_md(run_with(FULL))
    assert (
        "- **s2** Rollback is cheap.\n  > Rollback is a configuration flag that points reads back to PostgreSQL."
        in text
    )
    assert "1. **[critical] Concern 1**\n   > Redis persistence will use AOF with fsync every second." in text
    assert "   Risk: Risk 1 in production.\n   Fix: Fix 1." in text


def test_the_concern_table_has_a_row_per_concern_with_its_assessment():
    text = adversarial_review_md(run_with(FULL))
    assert "| Rank | Severity | Concern | Addressed | Genuine / stretch | Score |" in text
    assert "| 1 | critical | Concern 1 | no | genuine | 5 |" in text
    assert "| 5 | low | Concern 5 | yes | stretch | 1 |" in text
    assert "3 genuine, 2 stretch; 3 unaddressed by the advocate (2 genuine and scored 4+)." in text


def test_softened_concerns_are_flagged():
    softened = concerns()
    softened["concerns"][3]["fix"] = "Just a thought: add a TTL."
    text = adversarial_review_md(run_with({**FULL, KEY_CONCERNS: softened}))
    assert "4. **[medium] Concern 4** _(softened: just a thought)_" in text
    assert "Softeners flagged: “just a thought” in concern 4" in text


@pytest.mark.parametrize(
    ("pick", "reason", "expected"),
    [
        ("reject", "", "**Human decision:** Reject the RFC (confirms the judge)."),
        (
            "approve",
            "The durability risk is accepted for sessions.",
            "**Human decision:** Approve the RFC (overrides the judge).\nReason: The durability risk is accepted for sessions.",
        ),
    ],
)
def test_the_humans_decision_is_recorded_against_the_judges(pick, reason, expected):
    text = adversarial_review_md(run_with(FULL, human_pick=pick, pick_reason=reason))
    assert expected in text


def test_without_a_human_pick_the_decision_is_pending():
    assert "**Human decision:** not recorded yet." in adversarial_review_md(run_with(FULL))


def test_a_failed_judge_leaves_the_positions_and_says_the_human_adjudicates():
    run = run_with({**FULL, KEY_JUDGEMENT: None}, human_pick="approve", pick_reason="The fixes are cheap.")
    text = adversarial_review_md(run)
    assert (
        "**Verdict:** none: the judge failed; the raw outputs are shown for the human to adjudicate." in text
    )
    assert "> Degraded full → raw: The judge failed (model overloaded)" in text
    assert "### Advocate Position" in text and "### Challenger Position" in text
    assert "_The judge failed: no synthesis. Read both positions above and decide._" in text
    assert "**Human decision:** Approve the RFC (adjudicated without a judge's verdict)." in text
    assert "| 1 | critical | Concern 1 | — | — | — |" in text


def test_a_one_sided_review_says_which_side_is_missing():
    one_sided = {**judgement("approve"), "concern_assessments": [], "pulled_punches": None}
    text = adversarial_review_md(run_with({KEY_CASE: case(), KEY_CONCERNS: None, KEY_JUDGEMENT: one_sided}))
    assert "_The challenger failed: no concerns were raised._" in text
    assert "> Degraded full → one-sided: The challenger failed" in text
    assert "**Verdict:** APPROVE — Approve the RFC (by the judge)" in text


def test_a_single_agent_review_replaces_the_two_positions():
    text = adversarial_review_md(run_with({KEY_CASE: None, KEY_CONCERNS: None, KEY_REVIEW: review()}))
    assert "### Single-agent review" in text and "### Advocate Position" not in text
    assert "(by the judge's single-agent review)" in text
    assert "1. Durability first.\n2. Reversible." in text
