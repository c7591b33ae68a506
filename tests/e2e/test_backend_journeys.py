"""Journeys on a paid backend: the Anthropic backend of a live Daphne talks, through the real SDK, to the local
fake Anthropic server; the person sees the backends offered, approves the estimated cost, watches cost and cache
figures grow, and raises a budget that stopped the run."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from debates.devtools.fake_llm import FakeLLMServer
from debates.models import Run
from tests.conftest import FAKE_KEY, LONG_MATERIAL
from tests.e2e.conftest import RUN
from tests.e2e.test_run_journeys import ANALYSTS, SEE, TOPIC, run_status

pytestmark = pytest.mark.e2e


@pytest.fixture
def paid_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """Set before the server starts: the spawned Daphne reads its settings from this environment."""
    with FakeLLMServer(chunk_chars=24, chunk_delay=0.004) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("DISPUTA_CONSENT_THRESHOLD_USD", "0.01")
        monkeypatch.setenv("DISPUTA_RETRY_BACKOFF_SECONDS", "0.05")
        yield server


@pytest.fixture
def paid_page(paid_env: FakeLLMServer, moderator_page: Page) -> Page:
    return moderator_page


def start_paid_run(page: Page, base_url: str, *, budget: str) -> int:
    page.goto(f"{base_url}/runs/new/")
    form = page.locator("#run-form")
    anthropic = form.locator("input[name=backend][value=anthropic]")
    expect(anthropic).to_be_enabled()
    anthropic.check()
    form.locator("select[name=model]").select_option("claude-sonnet-5-5")
    form.get_by_label("Question or topic").fill(TOPIC)
    form.get_by_label("Material to analyse").fill(LONG_MATERIAL)
    form.get_by_label("Analysts").fill(ANALYSTS)
    form.get_by_label("Budget (USD)").fill(budget)
    form.locator("#start-run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=SEE)
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)
    return int(re.search(r"/runs/(\d+)/$", page.url).group(1))  # type: ignore[union-attr]


def test_without_a_key_the_paid_backends_are_shown_disabled_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, moderator_page: Page, live_daphne: str
) -> None:
    page = moderator_page
    page.goto(f"{live_daphne}/runs/new/")
    anthropic = page.locator("input[name=backend][value=anthropic]")
    expect(anthropic).to_be_disabled()
    label = page.locator("label", has=anthropic)
    expect(label).to_contain_text("Unavailable: ANTHROPIC_API_KEY is not set in the server's environment.")
    openai = page.locator("label", has=page.locator("input[name=backend][value=openai]"))
    expect(openai).to_contain_text("Unavailable: Set OPENAI_BASE_URL")
    expect(page.locator("input[name=backend][value=simulated]")).to_be_enabled()


def test_approve_the_estimate_then_watch_cost_and_cache_on_the_page(
    paid_page: Page, live_daphne: str, paid_env: FakeLLMServer, screenshot: object
) -> None:
    page = paid_page
    run_id = start_paid_run(page, live_daphne, budget="5")
    # Above the (test) threshold of $0.01: nothing is called until the moderator approves the estimate.
    expect(run_status(page)).to_have_attribute("data-status", "awaiting_human", timeout=SEE)
    consent = page.locator("#consent")
    expect(consent).to_contain_text("Approve the estimated cost?")
    expect(consent).to_contain_text("claude-sonnet-5-5")
    expect(page.locator("#cost-estimate")).to_contain_text("$")
    assert not [r for r in paid_env.requests if r.api == "anthropic"]
    page.locator("#consent-approve").click()
    expect(page.locator("#consent")).to_have_count(0, timeout=SEE)
    expect(run_status(page)).to_have_attribute("data-status", "completed", timeout=RUN)
    expect(page.locator("#summary-table")).to_be_visible(timeout=SEE)
    run = Run.objects.get(pk=run_id)
    assert run.cost_usd > 0 and run.cache_read_tokens > 0
    cost = page.locator("#cost")
    expect(page.locator("#cost-usd")).to_have_text(f"${run.cost_usd:.4f}")
    expect(cost).to_contain_text(f"{run.cache_read_tokens} cache read")
    expect(cost).to_contain_text("Shared (cache warm-ups)")
    expect(page.locator("#seat-costs tbody tr[data-seat]")).to_have_count(
        4
    )  # three analysts and the examiner
    expect(page.locator("#budget-usd")).to_contain_text("of $5.00")
    first_turn = page.locator("#transcript article").first
    expect(first_turn.locator(".tokens")).to_contain_text("$")
    expect(first_turn.locator(".tokens")).to_contain_text("claude-sonnet-5-5")
    screenshot("paid-run-completed")  # type: ignore[operator]


def test_a_run_stopped_by_its_budget_goes_on_when_the_budget_is_raised(
    paid_page: Page, live_daphne: str, paid_env: FakeLLMServer
) -> None:
    page = paid_page
    run_id = start_paid_run(page, live_daphne, budget="0.10")
    page.locator("#consent-approve").click()
    expect(run_status(page)).to_have_attribute("data-status", "paused", timeout=RUN)
    expect(run_status(page)).to_contain_text("Budget reached: $")
    expect(page.locator("#budget-form")).to_contain_text("Stopped by its budget")
    expect(page.locator("#transcript .turn-held")).to_contain_text("Held: Budget reached")
    run = Run.objects.get(pk=run_id)
    assert run.budget_stopped and run.cost_usd <= Decimal("0.10")
    page.locator("#budget-form input[name=budget_usd]").fill("5")
    page.locator("#budget-save").click()
    expect(run_status(page)).to_have_attribute("data-status", "completed", timeout=RUN)
    expect(page.locator("#budget-usd")).to_contain_text("of $5.00")
    expect(page.locator("#transcript .turn-held")).to_have_count(0)
