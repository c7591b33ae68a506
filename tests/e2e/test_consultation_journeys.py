"""A consultation through a real browser against a live Daphne: start it from the new-run form in explore mode
with an auto-approve amount of $0, approve the estimated cost at the consent gate, watch the independent answers
stream, see the progress strip walk the state machine to `complete` with the dropped-tension warning and the
verdict's menu of options, and pick one of them with a reason."""

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
QUESTION = "Should the city charge cars entering the centre?"
MATERIAL = (
    "Stockholm ran a seven-month congestion-charge trial in 2006. Traffic across the cordon fell by about 20 percent. "
    "Public support rose above 50 percent after the trial. Critics argue that a flat charge is regressive for poorer "
    "drivers. Singapore has priced road use since 1975."
)
REASON = "Waiting costs us little, and the fairness objection has not been answered yet."


def test_start_a_consultation_approve_its_cost_watch_it_and_pick_an_option(
    moderator_page: Page, live_daphne: str, screenshot: Callable[..., Path]
) -> None:
    page = moderator_page
    page.goto(f"{live_daphne}/runs/new/")
    form = page.locator("#run-form")
    form.locator("select[name=protocol]").select_option("consultation")
    expect(form.locator("#consultation-setup")).to_be_visible()
    expect(form.locator("#comparative-setup")).to_be_hidden()
    form.get_by_label("Question or topic").fill(QUESTION)
    form.get_by_label("Material to analyse").fill(MATERIAL)
    expect(form.locator("textarea[name=cons_agents]")).to_have_value(re.compile(r"^Security Expert: "))
    form.locator("textarea[name=cons_agents]").fill("Ada: economics\nBo: equity\nCy: evidence")
    form.locator("input[name=cons_mode][value=explore]").check()
    form.locator("input[name=cons_auto_approve]").fill("0")  # every estimate needs consent
    form.locator("input[name=backend][value=simulated]").check()
    form.locator("#rehearsal-options summary").click()  # the seed and the pace are folded away
    form.get_by_label("Seed").fill("4")
    form.get_by_label("Streaming pace").fill("700")
    form.locator("#start-run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=SEE)
    run_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))  # type: ignore[union-attr]
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)

    # The consent gate: the strip waits at awaiting_consent and no turn has started.
    states = page.locator("#consultation-states")
    expect(states.locator('[data-state="awaiting_consent"]')).to_have_attribute("data-status", "current")
    expect(states.locator('[data-state="idle"]')).to_have_attribute("data-status", "done")
    expect(page.locator("#run-status")).to_have_attribute("data-status", "awaiting_human")
    expect(page.locator("#consent")).to_contain_text("Approve the estimated cost?")
    expect(page.locator("#transcript article")).to_have_count(0)
    screenshot("consultation-consent")
    page.locator("#consent-approve").click()

    # Round 1 streams: three independent answers at once, and the strip moves to the first round.
    first = page.locator('#transcript article[data-key="r1/independent/agent-ada"]')
    expect(first).to_have_attribute("data-status", "streaming", timeout=SEE)
    expect(first.locator(".turn-body.live")).to_be_visible()
    expect(states.locator('[data-state="independent"]')).to_have_attribute(
        "data-status", "current", timeout=SEE
    )
    screenshot("consultation-streaming")

    # The whole state machine, to complete; the history records every transition with its reason.
    expect(page.locator("#run-status")).to_have_attribute("data-status", "completed", timeout=RUN)
    expect(states.locator('[data-state="complete"]')).to_have_attribute("data-status", "current", timeout=SEE)
    for state in ("estimating", "awaiting_consent", "independent", "synthesis", "cross_exam", "verdict"):
        expect(states.locator(f'[data-state="{state}"]')).to_have_attribute("data-status", "done")
    expect(page.locator("#consultation-transitions li")).to_have_count(7)
    expect(page.locator("#consultation-transitions")).to_contain_text("Explore mode never stops early.")
    expect(page.locator("#consultation-warnings")).to_contain_text("dropped: it has 1 viewpoint")
    expect(page.locator('#transcript article[data-status="committed"]')).to_have_count(9)  # 3 + 1 + 3 + 1 + 1

    # The verdict: a menu of options with pros, cons and when each is best.
    run = Run.objects.get(pk=run_id)
    options = run.outcome["pick_options"]
    verdict = page.locator("#consultation-verdict")
    expect(verdict.locator(".cons-option")).to_have_count(len(options))
    expect(verdict).to_contain_text("Best when:")
    for _, label in options:
        expect(verdict).to_contain_text(label)
    screenshot("consultation-verdict")

    # Pick the last option: it is not the judge's first, so a reason is required.
    value, label = options[-1]
    pick = page.locator("#pick-form")
    pick.locator(f"input[name=pick][value={value}]").check()
    pick.locator("#pick-submit").click()
    expect(page.locator("#pick-form [role=alert]")).to_contain_text("reason", timeout=SEE)
    pick = page.locator("#pick-form")
    pick.locator(f"input[name=pick][value={value}]").check()
    pick.locator("textarea[name=reason]").fill(REASON)
    pick.locator("#pick-submit").click()
    decision = page.locator("#decision")
    expect(decision).to_contain_text(f"Human's pick: {label}", timeout=SEE)
    expect(decision).to_contain_text(f"Judge's pick: {options[0][1]}")
    run.refresh_from_db()
    assert (run.human_pick, run.pick_reason) == (value, REASON)
