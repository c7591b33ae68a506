"""A comparison through a real browser against a live Daphne: set it up (three options triaged to two, a decision
type that pre-fills the criteria, edited weights), review the evidence and add a source, watch the advocates
stream, read the scorecard table and chart, then pick the other option with a reason and see it recorded beside
the judge's recommendation, in the runs list and on the decisions page; download the decision brief."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from debates.models import Run
from tests.e2e.conftest import RUN

pytestmark = pytest.mark.e2e

SEE = 10_000
DECISION = "Which database should the order-tracking service use?"
MATERIAL = (
    "The service stores about 40 million orders a year. Four of six engineers have run PostgreSQL in production. "
    "Carrier integrations add a new field set roughly every quarter. The first release must ship within six months."
)
REASON = "Our platform team already runs PostgreSQL; the migration risk outweighs the flexibility argument."


def test_set_up_a_comparison_watch_it_and_override_the_judge(
    moderator_page: Page, live_daphne: str, screenshot: Callable[..., Path]
) -> None:
    page = moderator_page
    page.goto(f"{live_daphne}/runs/new/")
    form = page.locator("#run-form")
    form.locator("select[name=protocol]").select_option("comparative")
    # Only the comparison's fields are shown for this protocol.
    expect(form.locator("#comparative-setup")).to_be_visible()
    expect(form.get_by_label("Analysts")).to_be_hidden()
    form.get_by_label("Question or topic").fill(DECISION)
    form.get_by_label("Material to analyse").fill(MATERIAL)
    form.get_by_label("Options (exactly two)").fill("MongoDB\nPostgreSQL\nDynamoDB")

    # The decision type pre-fills its default criteria; the weights are then edited by hand.
    form.get_by_label("Decision type").select_option("tool")
    criteria = form.locator("textarea[name=criteria]")
    expect(criteria).to_have_value(re.compile(r"^Developer experience \| High\nFeature completeness \| High"))
    form.get_by_label("Decision type").select_option("architecture")
    expect(criteria).to_have_value(re.compile(r"^Complexity \| High\n"))
    criteria.fill(
        "Operational burden | High\nMigration effort | Medium\nTeam familiarity | Medium\nExtensibility | Low"
    )
    form.locator("textarea[name=evidence_a]").fill("Carrier audit | Doc | A new field set every quarter")
    form.locator("textarea[name=evidence_b]").fill("Platform runbook | Doc | Two clusters with failover")
    form.locator("textarea[name=stakeholders]").fill("Head of platform | prefers PostgreSQL | stated")
    form.locator("input[name=backend][value=simulated]").check()
    form.locator("#rehearsal-options summary").click()  # the seed and the pace are folded away
    form.get_by_label("Seed").fill("11")
    form.get_by_label("Streaming pace").fill("900")
    form.locator("#start-run").click()

    # Three options: the form asks to triage them to two, keeping everything typed.
    expect(page.locator("#id_cmp_options").locator("xpath=..")).to_contain_text(
        "a comparison takes exactly two"
    )
    expect(form.locator("textarea[name=criteria]")).to_have_value(re.compile("^Operational burden"))
    triage = page.locator("#triage")
    triage.get_by_label("MongoDB").check()
    triage.get_by_label("PostgreSQL").check()
    page.locator("#start-run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=SEE)
    run_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))  # type: ignore[union-attr]
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)

    # The evidence review: the setup is shown; add a source for B, then proceed.
    status = page.locator("#run-status")
    expect(status).to_have_attribute("data-status", "awaiting_human", timeout=SEE)
    review = page.locator("#moderator form.evidence-review")
    expect(review.locator(".criteria-table")).to_contain_text("Operational burden")
    expect(review.locator(".stakeholders")).to_contain_text("prefers PostgreSQL")
    review.locator("textarea[name=evidence_b]").fill(
        "Skills survey | Interview | Four of six engineers ran PostgreSQL"
    )
    review.locator("#review-add-evidence").click()
    review = page.locator("#moderator form.evidence-review")
    expect(review.locator("h3")).to_have_text("Evidence review (again)", timeout=SEE)
    expect(review.locator(".evidence-base")).to_contain_text("Skills survey")
    review.locator("#review-proceed").click()

    # The advocates stream in parallel, then rebuttals, then the judge.
    opening = page.locator('#transcript article[data-key="r1/opening/advocate-b"]')
    expect(opening).to_have_attribute("data-status", "streaming", timeout=SEE)
    expect(opening.locator(".turn-body.live li.criterion-arg").first).to_be_visible(timeout=SEE)
    screenshot("comparative-streaming")
    expect(status).to_have_attribute("data-status", "completed", timeout=RUN)
    expect(page.locator('#transcript article[data-status="committed"]')).to_have_count(
        7
    )  # 2 reviews, 2 openings, 2 rebuttals, the judge

    # The scorecard: one row per criterion with its weight and the math, the totals, and the chart drawn.
    run = Run.objects.get(pk=run_id)
    card = run.outcome["scorecard"]
    table = page.locator("#scorecard-table")
    expect(table.locator("tbody tr")).to_have_count(4)
    first = table.locator("tbody tr").first
    expect(first).to_contain_text("Operational burden")
    expect(first).to_contain_text(f"{card['rows'][0]['score_a']} × 3 = {card['rows'][0]['weighted_a']}")
    expect(page.locator("#total-a")).to_contain_text(str(card["total_a"]))
    expect(page.locator("#total-b")).to_contain_text(str(card["total_b"]))
    expect(page.locator("#scorecard-chart")).to_have_attribute("data-chart-ready", "1", timeout=SEE)
    expect(page.locator("#totals-chart")).to_have_attribute("data-chart-ready", "1")
    assert page.locator("#scorecard-chart").bounding_box()["height"] > 100  # type: ignore[index]
    expect(page.locator("#rebuttal-analysis tbody tr")).to_have_count(6)
    expect(page.locator("#rebuttal-analysis")).to_contain_text("COLLAPSE")
    judge = run.judge_pick
    other = "B" if judge == "A" else "A"
    names = dict(run.outcome["pick_options"])
    expect(page.locator("#judge-recommendation")).to_contain_text(f"Judge recommends {judge}: {names[judge]}")
    screenshot("comparative-scorecard")

    # Pick the other option: a reason is required to override the judge.
    pick = page.locator("#pick-form")
    pick.locator(f"input[name=pick][value={other}]").check()
    pick.locator("#pick-submit").click()
    expect(page.locator("#pick-form [role=alert]")).to_contain_text("reason", timeout=SEE)
    pick = page.locator("#pick-form")
    pick.locator(f"input[name=pick][value={other}]").check()
    pick.locator("textarea[name=reason]").fill(REASON)
    pick.locator("#pick-submit").click()
    decision = page.locator("#decision")
    expect(decision).to_contain_text(f"Human's pick: {names[other]}", timeout=SEE)
    expect(decision).to_contain_text("overrides the judge")
    expect(decision).to_contain_text(REASON)
    expect(decision).to_contain_text(f"Judge's pick: {names[judge]}")
    run.refresh_from_db()
    assert (run.human_pick, run.pick_reason) == (other, REASON)

    # The runs list shows both picks; the decisions page counts the override.
    page.goto(f"{live_daphne}/")
    row = page.locator(f"#run-row-{run_id}")
    expect(row).to_contain_text(names[judge])
    expect(row).to_contain_text(names[other])
    expect(row.locator(".badge", has_text="override")).to_be_visible()
    page.goto(f"{live_daphne}/decisions/")
    expect(page.locator("#override-rate")).to_have_text("100.0%")
    expect(page.locator("#count-overridden")).to_have_text("1")
    expect(page.locator("body")).to_contain_text(REASON)

    # The decision brief downloads with the seed's sections in order and the human's decision.
    page.goto(f"{live_daphne}/runs/{run_id}/")
    # Once live, the socket's snapshot has replaced the outcome (the link with it): a click during that swap, which
    # a loaded machine can delay by seconds, started no download (CI, beside the scaled pass).
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)
    with page.expect_download() as download_info:
        page.locator("#brief-download").click()
    text = Path(download_info.value.path()).read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Executive Summary",
        "## Evaluation Scorecard",
        "## Case for MongoDB (strategic lens)",
        "## Case for PostgreSQL (pragmatic lens)",
        "## Judge Synthesis",
        "## Recommendation",
        "## Open Questions",
        "## Stakeholder Input",
        "## Evidence Base",
    ]
    assert f"**Decided: {names[other]}** — overrides the judge" in text and REASON in text
