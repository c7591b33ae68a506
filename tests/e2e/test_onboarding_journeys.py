"""Onboarding in a real browser (issue "The human's seat", item 4): from the home page a moderator starts each of
the six protocols in at most 2 clicks (the card's "Start a demo" is one) and lands on its live run page, at a desktop
and a phone size; the new-run form shows only the chosen protocol's and backend's fields and folds the rehearsal
options away. The click counts are printed (pytest -s)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from debates.engine import registry
from debates.models import Run

pytestmark = pytest.mark.e2e

SEE = 10_000
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
MAX_CLICKS = 2


@pytest.fixture
def server_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the live server starts (it reads its settings from this environment): no per-user run limit, as six
    demos are started one after the other, and a (never used) Anthropic key, so the paid backend can be chosen."""
    monkeypatch.setenv("DISPUTA_MAX_ACTIVE_RUNS_PER_USER", "0")
    monkeypatch.setenv("DISPUTA_MAX_RUNS_PER_HOUR", "0")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-e2e-never-called")


class Clicks:
    """Clicks counted on the way from the home page to a running debate."""

    def __init__(self) -> None:
        self.count = 0

    def click(self, target: Locator) -> None:
        self.count += 1
        target.click()


def page_width(page: Page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440x900", "390x844"])
def test_each_protocol_starts_from_the_home_page_in_at_most_two_clicks(
    server_env: None, moderator_page: Page, live_daphne: str, viewport: dict[str, int]
) -> None:
    page = moderator_page
    page.set_viewport_size(viewport)
    counts: dict[str, int] = {}
    for protocol in registry.all_protocols():
        demo = protocol.demo
        assert demo is not None
        page.goto(f"{live_daphne}/")
        expect(page.locator(".protocol-card")).to_have_count(6)
        assert page_width(page) <= viewport["width"], "the home page is wider than the screen"
        card = page.locator(f"#protocol-card-{protocol.name}")
        expect(card.get_by_role("heading", name=protocol.title)).to_be_visible()
        clicks = Clicks()
        clicks.click(card.get_by_role("button", name="Start a demo"))
        expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=SEE)
        expect(page.locator("#run-topic")).to_have_text(demo.topic)
        expect(page.locator("#connection")).to_have_text("live", timeout=SEE)
        run_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))  # type: ignore[union-attr]
        run = Run.objects.get(pk=run_id)
        assert (run.protocol, run.backend) == (protocol.name, "simulated")
        expect(page.locator("#run-status")).to_have_attribute(
            "data-status", re.compile("queued|running|awaiting_human|completed"), timeout=SEE
        )
        counts[protocol.name] = clicks.count
        # Keep the server light for the next one.
        cancel = page.locator("#control-cancel")
        if cancel.count() and cancel.is_enabled():
            page.once("dialog", lambda dialog: dialog.accept())  # "Cancel this run?"
            try:
                with page.expect_response(lambda r: "/control/cancel/" in r.url, timeout=2 * SEE) as answered:
                    # On a phone the controls are a bar at the foot of the screen (test_run_journeys' test_e): a
                    # real tap, though the transcript above keeps growing.
                    cancel.click()
            except PlaywrightTimeoutError:
                # A short simulated debate may end between the look and the click (the button is then disabled):
                # nothing is left to cancel. A cancel that hung would leave the run going, and fail here.
                expect(page.locator("#run-status")).to_have_attribute(
                    "data-status", re.compile("completed|failed|cancelled"), timeout=SEE
                )
            else:
                assert answered.value.ok, answered.value.status
                expect(page.locator("#run-status")).to_have_attribute("data-status", "cancelled", timeout=SEE)
    width, height = viewport["width"], viewport["height"]
    print(f"\nclicks from / to a running debate at {width}x{height}: {counts}")
    assert sorted(counts) == sorted(p.name for p in registry.all_protocols())
    assert all(count <= MAX_CLICKS for count in counts.values()), counts


def fieldset(page: Page, protocol: str) -> Locator:
    return page.locator(f"#run-form fieldset[data-protocol='{protocol}']")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440x900", "390x844"])
def test_the_new_run_form_shows_only_the_chosen_protocols_and_backends_fields(
    server_env: None, moderator_page: Page, live_daphne: str, viewport: dict[str, int]
) -> None:
    page = moderator_page
    page.set_viewport_size(viewport)
    page.goto(f"{live_daphne}/")
    # A card's "Set up your own" opens the form with that protocol chosen.
    page.locator("#protocol-card-comparative").get_by_role("link", name="Set up your own").click()
    expect(page).to_have_url(re.compile(r"/runs/new/\?protocol=comparative$"))
    form = page.locator("#run-form")
    expect(form.locator("select[name=protocol]")).to_have_value("comparative")
    expect(fieldset(page, "comparative")).to_be_visible()
    visible = [p.name for p in registry.all_protocols() if fieldset(page, p.name).is_visible()]
    assert visible == ["comparative"]
    expect(form.get_by_label("Analysts")).to_be_hidden()
    expect(form.locator(".protocol-purpose[data-protocol='comparative']")).to_be_visible()

    # Switching the protocol hides the previous one's fields and shows the new one's.
    form.locator("select[name=protocol]").select_option("adversarial")
    expect(fieldset(page, "comparative")).to_be_hidden()
    expect(fieldset(page, "adversarial")).to_be_visible()
    expect(form.get_by_label("What is reviewed")).to_be_visible()
    visible = [p.name for p in registry.all_protocols() if fieldset(page, p.name).is_visible()]
    assert visible == ["adversarial"]

    # Simulated agents: no model or budget to choose; the rehearsal options are folded away, after the main fields.
    rehearsal = form.locator("#rehearsal-options")
    expect(form.locator("input[name=backend][value=simulated]")).to_be_checked()
    expect(form.locator("select[name=model]")).to_be_hidden()
    expect(form.get_by_label("Budget (USD)")).to_be_hidden()
    expect(rehearsal).to_be_visible()
    assert rehearsal.evaluate("details => details.open") is False
    expect(form.get_by_label("Streaming pace")).to_be_hidden()
    expect(form.get_by_label("Seed")).to_be_hidden()
    rehearsal.locator("summary").click()
    expect(form.get_by_label("Streaming pace")).to_be_visible()
    expect(form.get_by_label("How serious the challenger's concerns are")).to_be_visible()
    expect(form.get_by_label("Simulated answers to the examiner")).to_be_hidden()  # the cross-examination's
    assert page_width(page) <= viewport["width"], "the form is wider than the screen"

    # A paid backend: its models and the budget, no rehearsal options.
    form.locator("input[name=backend][value=anthropic]").check()
    expect(form.locator("select[name=model]")).to_be_visible()
    expect(form.get_by_label("Budget (USD)")).to_be_visible()
    expect(rehearsal).to_be_hidden()
    model = form.locator("select[name=model]")
    assert model.input_value().startswith("claude-"), model.input_value()
    groups = model.locator("optgroup")
    shown = [g.get_attribute("data-backend") for g in groups.all() if g.get_attribute("hidden") is None]
    assert shown == ["anthropic"]
    form.locator("input[name=backend][value=simulated]").check()
    expect(form.locator("select[name=model]")).to_be_hidden()
    expect(rehearsal).to_be_visible()
    assert model.input_value() == "simulated"
