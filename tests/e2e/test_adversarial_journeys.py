"""An adversarial review through a real browser: start it from the form with an RFC as the material, watch the
advocate and the challenger argue in parallel, read the judge's binary verdict with the five ranked concerns,
and confirm the verdict — recorded beside the judge's as agreeing."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from debates.models import Run
from tests.e2e.conftest import RUN

pytestmark = pytest.mark.e2e

SEE = 10_000
RFC = (
    "We will move user sessions from the database to a single Redis instance. "
    "Sessions will expire after 30 days of inactivity. "
    "The migration runs in one step during the Sunday maintenance window. "
    "There is no plan to run the old and new session stores side by side. "
    "Redis persistence will be left at its default settings. "
    "Load tests showed a 40 percent drop in page latency on the staging cluster. "
    "The on-call team has not operated Redis in production before."
)


def test_review_an_rfc_and_confirm_the_verdict(moderator_page: Page, live_daphne: str) -> None:
    page = moderator_page
    page.goto(f"{live_daphne}/runs/new/")
    form = page.locator("#run-form")
    form.locator("select[name=protocol]").select_option("adversarial")
    expect(form.get_by_label("What is reviewed")).to_be_visible()
    expect(form.locator("#comparative-setup")).to_be_hidden()
    form.get_by_label("Question or topic").fill("Approve the RFC: move sessions to Redis?")
    form.get_by_label("Material to analyse").fill(RFC)
    form.get_by_label("What is reviewed").fill("RFC")
    form.locator("input[name=backend][value=simulated]").check()
    form.locator("#rehearsal-options summary").click()  # the seed and the pace are folded away
    form.get_by_label("Seed").fill("5")
    form.get_by_label("Streaming pace").fill("900")
    form.locator("#start-run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=SEE)
    run_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))  # type: ignore[union-attr]

    # Advocate and challenger stream side by side; then the judge.
    expect(page.locator("#transcript article[data-status=streaming]")).to_have_count(2, timeout=SEE)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "completed", timeout=RUN)
    run = Run.objects.get(pk=run_id)
    verdict = run.outcome["verdict"]
    expect(page.locator("#adversarial-verdict")).to_have_attribute("data-verdict", verdict)
    expect(page.locator("#adversarial-concern-table tbody tr")).to_have_count(5)

    # Confirm the judge's verdict: no reason needed to agree.
    pick = page.locator("#pick-form")
    pick.locator(f"input[name=pick][value={verdict}]").check()
    pick.locator("#pick-submit").click()
    expect(page.locator("#decision")).to_have_attribute("data-state", "agrees", timeout=SEE)
    expect(page.locator("#decision-human")).to_contain_text("agrees with the judge")
    run.refresh_from_db()
    assert run.human_pick == run.judge_pick == verdict
