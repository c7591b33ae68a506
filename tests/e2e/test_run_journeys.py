"""Journeys through a real browser against a live Daphne: start a run and watch it stream, reload mid-run, take
the examiner's seat as a human, pause and resume. Each test asserts what a person sees on the page."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, WebSocketRoute, expect

from debates.models import Run, Turn
from debates.services import runs as services
from tests.conftest import ANALYSTS as ANALYST_LIST
from tests.conftest import MATERIAL
from tests.e2e.conftest import RUN

pytestmark = pytest.mark.e2e

TOPIC = "Should the city charge cars entering the centre?"
ANALYSTS = "Ada: economic costs and benefits\nBo: risks and second-order effects\nCy: evidence quality"
HANDLES = ["analyst-ada", "analyst-bo", "analyst-cy"]
# Bounded waits (ms). A full run of agents at 300 characters per second takes about 20 s here.
SEE = 10_000
TURN = 20_000


def start_run(
    page: Page,
    base_url: str,
    *,
    cps: int,
    examiner: str = "agent",
    per_analyst: int = 3,
    seed: int = 7,
) -> int:
    """Fill in and submit the new-run form; return the id of the run page we land on, once its socket is live."""
    page.goto(f"{base_url}/runs/new/")
    form = page.locator("#run-form")
    form.get_by_label("Question or topic").fill(TOPIC)
    form.get_by_label("Material to analyse").fill(MATERIAL)
    form.get_by_label("Analysts").fill(ANALYSTS)
    form.locator(f"input[name=examiner][value={examiner}]").check()
    form.get_by_label("Questions per analyst").select_option(str(per_analyst))
    form.locator("input[name=backend][value=simulated]").check()
    form.locator("#rehearsal-options summary").click()  # the seed and the pace are folded away
    form.get_by_label("Seed").fill(str(seed))
    form.get_by_label("Streaming pace").fill(str(cps))
    form.locator("#start-run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=SEE)
    run_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))  # type: ignore[union-attr]
    expect(page.locator("#run-topic")).to_have_text(TOPIC)
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)
    return run_id


def run_status(page: Page) -> Locator:
    return page.locator("#run-status")


def turns(page: Page) -> Locator:
    return page.locator("#transcript article[id^=turn-]")


def wait_completed(page: Page) -> None:
    expect(run_status(page)).to_have_attribute("data-status", "completed", timeout=RUN)
    expect(page.locator("#summary-table")).to_be_visible(timeout=SEE)


def summary_rows(page: Page) -> dict[str, list[str]]:
    """Analyst handle -> the row's cells: name, questions, defended, conceded, deflected."""
    rows = page.locator("#summary-table tbody tr")
    return {
        row.get_attribute("data-analyst") or "": [c.strip() for c in row.locator("td").all_inner_texts()]
        for row in rows.all()
    }


def db_turn_keys(run_id: int) -> set[str]:
    return set(Turn.objects.filter(run_id=run_id).values_list("key", flat=True))


def test_a_started_run_streams_turns_live_and_completes(
    moderator_page: Page, live_daphne: str, screenshot: Callable[..., Path]
) -> None:
    page = moderator_page
    run_id = start_run(page, live_daphne, cps=300)

    # The three independent analyses start; the page shows them streaming.
    streaming = page.locator("#transcript article[data-status=streaming]")
    expect(streaming.first).to_be_visible(timeout=SEE)
    expect(run_status(page)).to_have_attribute("data-status", "running", timeout=SEE)

    # The examiner's questions are the longest turn: watch its live body grow while it streams.
    questions = page.locator('#transcript article[data-key="r2/questions/examiner"]')
    expect(questions).to_have_attribute("data-status", "streaming", timeout=TURN)
    live = questions.locator(".turn-body.live")
    expect(live.locator(".cursor")).to_have_text("▍ streaming")
    expect(live.locator("li.question").first).to_be_visible(timeout=SEE)
    text = live.locator("ol.questions")
    first = text.inner_text()
    page.wait_for_timeout(1_000)
    second = text.inner_text()
    assert len(second) > len(first), "the streaming turn's text did not grow"
    assert second.startswith(first.splitlines()[0]), "the streamed text was replaced, not extended"
    screenshot("run-streaming")

    # When it commits, the live body and its cursor give way to the committed rendering.
    expect(questions).to_have_attribute("data-status", "committed", timeout=TURN)
    expect(questions.locator(".turn-body.live")).to_have_count(0)
    expect(questions.locator(".cursor")).to_have_count(0)
    expect(questions.locator("header .badge.status-committed")).to_have_text("done")
    committed = Turn.objects.get(run_id=run_id, key="r2/questions/examiner")
    expect(questions.locator(".turn-body li.question")).to_have_count(len(committed.payload["questions"]))

    wait_completed(page)
    keys = db_turn_keys(run_id)
    expect(turns(page)).to_have_count(len(keys))
    expect(page.locator("#transcript article[data-status=committed]")).to_have_count(len(keys))
    rows = summary_rows(page)
    assert sorted(rows) == HANDLES
    assert all(cells[1] == "3" for cells in rows.values()), rows
    expect(page.locator("#run-status-label")).to_have_text("Completed")
    # The integrity signals fill in as the run completes, without a reload.
    integrity = page.locator("#integrity")
    expect(integrity).to_have_attribute("data-applicable", "true", timeout=SEE)
    expect(integrity.locator("tr[data-integrity-seat]")).to_have_count(len(HANDLES))
    shot = screenshot("run-completed")
    assert shot.stat().st_size > 0


def test_b_reloading_mid_run_shows_each_turn_once(moderator_page: Page, live_daphne: str) -> None:
    page = moderator_page
    run_id = start_run(page, live_daphne, cps=400, per_analyst=2)

    # Reload while the analyses stream, and again while the answers stream.
    expect(page.locator("#transcript article[data-status=streaming]").first).to_be_visible(timeout=SEE)
    page.reload()
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)
    answers = page.locator('#transcript article[data-key^="r3/answers/"][data-status=streaming]')
    expect(answers.first).to_be_visible(timeout=RUN)
    page.reload()
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)

    wait_completed(page)
    expected = db_turn_keys(run_id)
    assert len(expected) == len(HANDLES) * 2 + 2
    expect(turns(page)).to_have_count(len(expected))
    shown = turns(page).evaluate_all("els => els.map(e => e.dataset.key)")
    assert sorted(shown) == sorted(expected), "a turn is missing or shown twice"
    assert len(set(shown)) == len(shown)

    # What the live page ended with is what the server renders on a fresh load.
    def rendered(target: Page) -> dict[str, tuple[str | None, str]]:
        return {
            article.get_attribute("data-key") or "": (
                article.get_attribute("data-status"),
                article.inner_text(),
            )
            for article in turns(target).all()
        }

    fresh = page.context.new_page()
    fresh.goto(f"{live_daphne}/runs/{run_id}/")
    expect(fresh.locator("#connection")).to_have_text("live", timeout=SEE)
    expect(turns(fresh)).to_have_count(len(expected))
    live_view, fresh_view = rendered(page), rendered(fresh)
    assert live_view == fresh_view
    assert {status for status, _ in live_view.values()} == {"committed"}
    assert page.locator("#outcome").inner_text() == fresh.locator("#outcome").inner_text()
    fresh.close()


def test_c_human_examiner_asks_and_classifies(moderator_page: Page, live_daphne: str) -> None:
    page = moderator_page
    run_id = start_run(page, live_daphne, cps=250, examiner="human")

    # The analyses run; then the run waits for me with the questions form.
    expect(run_status(page)).to_have_attribute("data-status", "awaiting_human", timeout=RUN)
    expect(page.locator("#run-status-label")).to_have_text("Waiting for a human")
    form = page.locator("#moderator form.human-form")
    expect(form).to_be_visible(timeout=SEE)
    expect(form.locator("h3")).to_contain_text("ask 2–3 questions per analyst")
    for handle in HANDLES:
        fieldset = form.locator(f"fieldset.analyst[data-analyst={handle}]")
        expect(fieldset).to_be_visible()
        for row, claim in ((1, "c2"), (2, "c1")):
            fieldset.locator(f"select[name={handle}-{row}-claim]").select_option(claim)
            fieldset.locator(f"textarea[name={handle}-{row}-gap]").fill(
                f"The claim {claim} rests on one sentence; nothing measures the size of the effect."
            )
            fieldset.locator(f"textarea[name={handle}-{row}-question]").fill(
                f"Which figure in the material shows how large the effect in {claim} is?"
            )
    # What the page shows while the answers stream is recorded as it happens: they stream for about two seconds,
    # and on a loaded machine (CI runs this beside the PostgreSQL pass) polling from the test missed them once.
    page.evaluate(
        """() => {
            window.whileAnswering = [];
            const look = () => {
                const answer = document.querySelector(
                    '#transcript article[data-key^="r3/answers/"][data-status=streaming] .cursor');
                if (answer) {
                    const seen = JSON.stringify({
                        cursor: answer.textContent.trim(),
                        status: document.getElementById('run-status').dataset.status,
                        forms: document.querySelectorAll('#moderator form.human-form').length,
                    });
                    if (!window.whileAnswering.includes(seen)) window.whileAnswering.push(seen);
                }
            };
            new MutationObserver(look).observe(document.body, {childList: true, subtree: true, attributes: true});
        }"""
    )
    form.get_by_role("button", name="Send questions").click()
    # The analysts' answers stream in; the form has gone (the "Submitted" notice that replaced it is itself
    # replaced by the next live frame, so it is not asserted).
    shown = json.dumps({"cursor": "▍ streaming", "status": "running", "forms": 0}, ensure_ascii=False)
    page.wait_for_function(
        "(shown) => window.whileAnswering.includes(JSON.stringify(JSON.parse(shown)))", arg=shown, timeout=RUN
    )

    # My questions are the examiner's committed turn, marked human.
    mine = page.locator('#transcript article[data-key="r2/questions/examiner"]')
    expect(mine).to_have_attribute("data-status", "committed")
    expect(mine.locator(".badge.human")).to_be_visible()
    expect(mine.locator("li.question")).to_have_count(len(HANDLES) * 2)
    expect(mine.locator("li.question").first).to_contain_text("Which figure in the material shows")

    # Then the assessment form: classify every answer as defended.
    assessment = page.locator("#moderator form.human-form")
    expect(assessment.locator("h3")).to_contain_text("classify each answer", timeout=RUN)
    expect(run_status(page)).to_have_attribute("data-status", "awaiting_human")
    expect(page.locator("#transcript article[data-key^='r3/answers/'][data-status=committed]")).to_have_count(
        len(HANDLES)
    )
    choices = assessment.locator("fieldset.classify")
    expect(choices).to_have_count(len(HANDLES) * 2)
    for fieldset in choices.all():
        fieldset.locator("input[value=DEFENDED]").check()
    assessment.get_by_role("button", name="Record classification").click()

    wait_completed(page)
    rows = summary_rows(page)
    assert sorted(rows) == HANDLES
    for cells in rows.values():
        assert cells[1:] == ["2", "2", "0", "0"], rows  # questions, defended, conceded, deflected
    expect(page.locator("#moderator form.human-form")).to_have_count(0)
    run = Run.objects.get(pk=run_id)
    assert [row["defended"] for row in run.outcome["summary"]] == [2, 2, 2]


def test_d_moderator_pauses_and_resumes_and_a_viewer_cannot(
    moderator_page: Page, viewer_page: Page, live_daphne: str
) -> None:
    page = moderator_page
    run_id = start_run(page, live_daphne, cps=300, per_analyst=2)
    expect(page.locator("#transcript article[data-status=streaming]").first).to_be_visible(timeout=SEE)

    page.locator("#control-pause").click()
    expect(page.locator("#control-pause")).to_be_disabled(timeout=SEE)
    expect(page.locator("#control-resume")).to_be_enabled()
    # The turns in flight finish; then the run stops, showing nothing streaming.
    expect(run_status(page)).to_have_attribute("data-status", "paused", timeout=TURN)
    expect(page.locator("#run-status-label")).to_have_text("Paused")
    expect(page.locator("#transcript article[data-status=streaming]")).to_have_count(0)
    expect(page.locator("#control-step")).to_be_enabled()
    shown = turns(page).count()
    assert shown >= 1
    page.wait_for_timeout(2_500)
    expect(turns(page)).to_have_count(shown)
    expect(run_status(page)).to_have_attribute("data-status", "paused")
    assert Turn.objects.filter(run_id=run_id).count() == shown

    # A viewer sees the paused run but no controls and no forms.
    viewer_page.goto(f"{live_daphne}/runs/{run_id}/")
    expect(viewer_page.locator("#connection")).to_have_text("live", timeout=SEE)
    expect(viewer_page.locator("#run-status")).to_have_attribute("data-status", "paused")
    expect(viewer_page.locator("#moderator")).to_contain_text("You are watching as a viewer")
    for control in ("pause", "resume", "step", "cancel"):
        expect(viewer_page.locator(f"#control-{control}")).to_have_count(0)
    expect(viewer_page.locator("#moderator button, #moderator form")).to_have_count(0)
    expect(viewer_page.get_by_role("link", name="New run")).to_have_count(0)

    page.locator("#control-resume").click()
    expect(page.locator("#control-resume")).to_be_disabled(timeout=SEE)
    expect(run_status(page)).to_have_attribute("data-status", "running", timeout=SEE)
    wait_completed(page)
    expect(turns(page)).to_have_count(len(db_turn_keys(run_id)))
    # The viewer's page followed along live, still without controls.
    expect(viewer_page.locator("#summary-table")).to_be_visible(timeout=SEE)
    expect(viewer_page.locator("#moderator button")).to_have_count(0)


def test_e_on_a_phone_the_controls_stay_in_reach_while_turns_stream(
    moderator_page: Page, live_daphne: str
) -> None:
    """On one column the moderator panel comes after the transcript. While the run can be steered, its controls
    are a bar at the foot of the screen: in view wherever the reader is, still while turns stream above, hiding
    none of the page; a tap leaves the reader where they were and says what it did above the bar; once the run is
    over the buttons go back into the panel."""
    page = moderator_page
    page.set_viewport_size({"width": 390, "height": 844})
    start_run(page, live_daphne, cps=300, per_analyst=2)
    expect(page.locator("#transcript article[data-status=streaming]").first).to_be_visible(timeout=SEE)
    pause = page.locator("#control-pause")

    def place() -> dict[str, float]:
        box = pause.bounding_box()
        assert box is not None
        return box

    for scroll in ("0", "document.documentElement.scrollHeight / 2"):
        page.evaluate(f"window.scrollTo(0, {scroll})")
        box = place()
        assert box["y"] >= 0 and box["y"] + box["height"] <= 844, box  # on screen, without scrolling to it
        assert box["height"] >= 44, box  # a thumb's size
    before, shown = place(), turns(page).count()
    # Turns keep streaming and arriving above it; the buttons stay where they are.
    expect(page.locator("#transcript article[data-status=committed]")).not_to_have_count(0, timeout=TURN)
    page.wait_for_timeout(1_500)
    assert turns(page).count() >= shown
    assert place() == before
    # The bar hides nothing: scrolled to the end, the page's last content ends above it.
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    bar_top = page.locator("#moderator .controls").bounding_box()["y"]  # type: ignore[index]
    content_bottom = page.evaluate(
        "Math.max(...[...document.querySelectorAll('.run-side > *')].map(e => e.getBoundingClientRect().bottom))"
    )
    assert content_bottom <= bar_top, (content_bottom, bar_top)
    # A real tap (Playwright checks that the button is still and nothing covers it) pauses the run. The reader
    # stays where they were, and what the tap did shows just above the bar, until they tap elsewhere.
    page.evaluate("window.scrollTo(0, 300)")
    pause.click()
    confirmation = page.locator("#action-confirmation")
    expect(confirmation).to_be_focused(timeout=SEE)
    expect(confirmation).to_contain_text("Pause requested")
    # (Give or take what the browser's scroll anchoring adds as the status card above changes: the fault was a jump of
    # thousands of pixels, down past the transcript to the confirmation's place.)
    assert abs(page.evaluate("window.scrollY") - 300) <= 120
    shown_at = confirmation.bounding_box()
    bar_top = page.locator("#moderator .controls").bounding_box()["y"]  # type: ignore[index]
    assert shown_at is not None and shown_at["y"] >= 0 and shown_at["y"] + shown_at["height"] <= bar_top, (
        shown_at
    )
    page.locator("#run-topic").click()
    expect(confirmation).not_to_be_focused()
    assert confirmation.evaluate("e => getComputedStyle(e).position") == "static"
    expect(run_status(page)).to_have_attribute("data-status", "paused", timeout=TURN)
    expect(page.locator("#control-resume")).to_be_enabled()
    page.once("dialog", lambda dialog: dialog.accept())  # "Cancel this run?"
    page.locator("#control-cancel").click()
    expect(run_status(page)).to_have_attribute("data-status", "cancelled", timeout=SEE)
    # Nothing left to steer: the buttons are back in the panel, out of the way.
    assert page.locator("#moderator .controls").evaluate("e => getComputedStyle(e).position") == "static"


def test_f_a_control_that_has_just_appeared_works_at_once(moderator_page: Page, live_daphne: str) -> None:
    """htmx wires up what it swaps in during its settle step. With htmx's default settle delay that came 20 ms
    after the swap, and a tap in between did nothing at all; with none, the swap wires it up itself. Resume,
    clicked the moment Pause's answer puts it on the page, resumes the run. (The socket's frames are held back
    meanwhile: they swap the panel in too, and would otherwise often come first.)"""
    run = services.run_create(
        protocol="cross-examination",
        topic=TOPIC,
        config={"analysts": ANALYST_LIST},
        material=MATERIAL,
        enqueue=False,  # queued and left there: pausing and resuming it is all this needs
    )
    holding = False  # the server's frames are held back once this is set
    held: list[str | bytes] = []

    def route(socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()
        server.on_message(lambda frame: held.append(frame) if holding else socket.send(frame))

    page = moderator_page
    page.route_web_socket(re.compile(r"/ws/runs/\d+/"), route)
    page.goto(f"{live_daphne}/runs/{run.pk}/")
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)
    expect(page.locator("#control-pause")).to_be_enabled()
    holding = True
    # A mutation observer runs as soon as the swap's task ends: before any tap a person could make.
    page.evaluate(
        """() => {
            const observer = new MutationObserver(() => {
                const resume = document.querySelector('#control-resume');
                if (resume && !resume.disabled) {
                    observer.disconnect();
                    resume.click();
                }
            });
            observer.observe(document.body, {childList: true, subtree: true});
            document.querySelector('#control-pause').click();
        }"""
    )
    expect(page.locator("#action-confirmation")).to_contain_text("Resumed", timeout=SEE)
    run.refresh_from_db()
    assert not run.pause_requested  # (and it runs, in the server, until the test's server stops)
