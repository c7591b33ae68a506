"""The human's seat in a real browser: a run that starts waiting shows up in "Needs you" (the nav's count and the
tab's title change live, on another page), the item leads straight to the form; a finished comparison puts the
decision form and the scorecard on one screen, at a desktop and a phone size; recording the decision confirms it
where the form was and moves the focus there; cancelling a run asks first."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import RUN
from tests.e2e.test_run_journeys import start_run

pytestmark = pytest.mark.e2e

SEE = 15_000
SCREEN = 900  # one screen of a 1440×900 window


def comparison(page: Page, base_url: str) -> None:
    """The comparison's demo, started from its card on the home page (one click); we land on its run page."""
    page.goto(f"{base_url}/")
    page.locator("#demo-start-comparative").click()
    expect(page.locator("#run-topic")).to_be_visible(timeout=SEE)


@pytest.mark.parametrize(
    "viewport", [{"width": 1440, "height": 900}, {"width": 390, "height": 844}], ids=["desktop", "phone"]
)
def test_the_decision_and_the_scorecard_share_one_screen_and_the_decision_is_confirmed(
    moderator_page: Page, live_daphne: str, viewport: dict[str, int]
) -> None:
    page = moderator_page
    page.set_viewport_size(viewport)
    comparison(page, live_daphne)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "completed", timeout=RUN)
    pick, scorecard = page.locator("#pick-form"), page.locator("#scorecard")
    expect(pick).to_be_visible(timeout=SEE)
    expect(scorecard).to_be_visible(timeout=SEE)
    pick_top = pick.bounding_box()["y"]  # type: ignore[index]
    scorecard_top = scorecard.bounding_box()["y"]  # type: ignore[index]
    print(
        f"\n#pick to #scorecard at {viewport['width']}x{viewport['height']}: {scorecard_top - pick_top:.0f} px"
    )
    assert 0 < scorecard_top - pick_top <= SCREEN
    # The outcome comes before the transcript.
    transcript_top = page.locator("#transcript").bounding_box()["y"]  # type: ignore[index]
    assert scorecard_top < transcript_top

    pick.locator("#pick-submit").click()  # the judge's pick comes pre-selected: agree
    recorded = page.locator("#pick-recorded")
    expect(recorded).to_contain_text("Recorded: you agree with the judge", timeout=SEE)
    expect(recorded).to_be_focused()
    expect(page.locator("#pick-form")).to_be_hidden()  # folded under "Revise your decision"
    expect(page.locator("#decision")).to_contain_text("agrees with the judge")


def test_needs_you_counts_live_and_leads_to_the_form(moderator_page: Page, live_daphne: str) -> None:
    page = moderator_page
    page.goto(f"{live_daphne}/decisions/")
    count = page.locator("#needs-you-count")
    expect(count).to_have_attribute("data-count", "0")
    title = page.title()
    # A run with a human examiner starts in another tab while the user is on this page: the count and the title
    # follow, pushed by the server.
    other = page.context.new_page()
    run_id = start_run(other, live_daphne, cps=2000, examiner="human")
    expect(count).to_have_attribute("data-count", "1", timeout=RUN)
    expect(page).to_have_title(f"(1) {title}")

    page.locator("#needs-you-link").click()
    item = page.locator("#needs-you li.needs-turn")
    expect(item).to_have_count(1)
    expect(item).to_contain_text("Ask the analysts questions, as ")
    expect(item).not_to_contain_text("r2/")  # no internal step key
    item.get_by_role("link", name="Open the form").click()
    expect(page).to_have_url(f"{live_daphne}/runs/{run_id}/#human-form-r2-questions-examiner")
    expect(page.locator("#human-form-r2-questions-examiner")).to_be_visible()


def test_cancel_asks_first_and_a_dismissed_dialog_changes_nothing(
    moderator_page: Page, live_daphne: str
) -> None:
    page = moderator_page
    start_run(page, live_daphne, cps=2000, examiner="human")
    expect(page.locator("#run-status")).to_have_attribute("data-status", "awaiting_human", timeout=RUN)
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.locator("#control-cancel").click()
    page.wait_for_timeout(500)
    assert asked and asked[0].startswith("Cancel this run?")
    expect(page.locator("#run-status")).to_have_attribute("data-status", "awaiting_human")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#control-cancel").click()
    expect(page.locator("#run-status")).to_have_attribute("data-status", "cancelled", timeout=SEE)
    confirmation = page.locator("#action-confirmation")
    expect(confirmation).to_be_visible()
    expect(confirmation).to_be_focused()
