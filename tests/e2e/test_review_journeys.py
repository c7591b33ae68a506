"""Reviewing finished runs in a real browser against a live Daphne: from a finished kb-debate's run page to its
transcript reader, following a ledger entry to the turns of its thread and a KB revision to the turn that
triggered it (each deep link targets the turn and scrolls it into view), back from a turn to its revision; then
comparing two runs of the same topic with different seeds, their outcomes side by side. The two debates are run
to the end beforehand by the simulated agents (instant), so the journeys are about reading, not waiting."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from debates.models import Run
from debates.protocols.kb_debate.ledger import position_label
from debates.protocols.kb_debate.schema import verdict_words
from kb.models import Revision
from tests.e2e.conftest import run_to_the_end

pytestmark = pytest.mark.e2e

TOPIC = "Does urban congestion pricing reduce traffic without unfair harm?"
SEE = 10_000


def debate_to_the_end(kb: Any, seed: int) -> Run:
    """A kb-debate on the KB run to its end by the simulated agents, KB changes applied as they come."""
    return run_to_the_end(
        protocol="kb-debate",
        topic=TOPIC,
        kb=kb,
        config={"auto_approve": True},
        backend_options={"cps": 0},
        seed=seed,
    )


@pytest.fixture
def finished_runs(allow_async_unsafe: None) -> tuple[Run, Run]:
    """Two finished kb-debates on the demo KB, same topic, seeds 7 and 8, KB changes applied as they come."""
    from kb.demo import demo_kbs_load

    kb = next(kb for kb in demo_kbs_load() if kb.slug == "congestion-pricing")
    return debate_to_the_end(kb, 7), debate_to_the_end(kb, 8)


@pytest.fixture
def console_errors(viewer_page: Page) -> Iterator[list[str]]:
    """Console errors and page errors (a CSP violation, a script error)."""
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(f"console: {message.text} ({message.location.get('url')})")

    viewer_page.on("console", on_console)
    viewer_page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    yield errors
    viewer_page.remove_listener("console", on_console)


def hash_of(page: Page) -> str:
    return str(page.evaluate("location.hash"))


def expect_targeted(page: Page, dom_id: str) -> None:
    """The URL's fragment names the turn, the turn is the :target, and it is on screen."""
    expect(page).to_have_url(re.compile(f"#{re.escape(dom_id)}$"), timeout=SEE)
    expect(page.locator(":target")).to_have_attribute("id", dom_id)
    expect(page.locator(f"#{dom_id}")).to_be_in_viewport()


def test_read_a_finished_debate_follow_its_threads_and_revisions_and_compare_two_seeds(
    viewer_page: Page,
    live_daphne: str,
    finished_runs: tuple[Run, Run],
    console_errors: list[str],
    screenshot: Any,
    output_path: str,
) -> None:
    a, b = finished_runs
    page = viewer_page
    page.goto(f"{live_daphne}/runs/{a.pk}/")
    page.locator(".run-head-actions").get_by_role("link", name="Read transcript").click()
    expect(page).to_have_url(f"{live_daphne}/runs/{a.pk}/read/", timeout=SEE)
    expect(page.locator("#reader #round-1 .round-title")).to_have_text("Round 1 · Openings")
    expect(page.locator("#reader article.turn")).to_have_count(a.turns.count())
    verdict = a.outcome["verdict"]
    raw = verdict["label"] + (f":{verdict['position']}" if verdict.get("position") else "")
    badge = page.locator("#reader #kb-debate-outcome .verdict-label").first
    expect(badge).to_have_attribute("data-verdict", raw)
    # In words: "Genuinely contested", "Better grounded: For pricing".
    named = position_label(verdict["position"]) if verdict.get("position") else ""
    expect(badge).to_have_text(verdict_words(verdict["label"], named))

    # A ledger entry debated over several turns: follow its thread.
    entry = next(e for e in a.outcome["ledger"] if len(e["thread"]) >= 2)
    keys = [t.key for t in a.turns.order_by("first_seq", "id")]
    thread_ids = ["turn-" + re.sub(r"[^A-Za-z0-9_-]+", "-", keys[n - 1]) for n in entry["thread"]]
    ledger_entry = page.locator(f"#reader-ledger #ledger-{entry['id']}")
    expect(ledger_entry.locator("a.turn-link")).to_have_count(len(entry["thread"]))
    ledger_entry.get_by_role("link", name="Follow the thread").click()
    expect_targeted(page, thread_ids[0])
    expect(page.locator("#reader-thread")).to_contain_text(f"Thread of {entry['id']}")
    for dom_id in thread_ids:
        expect(page.locator(f"#{dom_id}")).to_have_class(re.compile(r"\bin-thread\b"))
    page.locator("#reader-thread").get_by_role("link", name=f"turn {entry['thread'][-1]}").click()
    expect_targeted(page, thread_ids[-1])
    page.screenshot(path=str(Path(output_path) / "reader-thread-viewport.png"))  # what the reader sees there
    # From the last turn of the thread back to the ledger entry it raised or answered.
    page.locator(f"#{thread_ids[-1]} .turn-links a[data-entry='{entry['id']}']").click()
    expect(page).to_have_url(re.compile(f"#ledger-{entry['id']}$"), timeout=SEE)
    expect(ledger_entry).to_be_in_viewport()

    # A KB revision the debate caused: to the turn that triggered it, and back.
    revision = Revision.objects.filter(run=a).select_related("turn").order_by("r_id").last()
    assert revision is not None and revision.turn is not None
    item = page.locator(f"#reader-revisions #revision-{revision.r_id}")
    item.locator("a.revision-turn").click()
    expect_targeted(page, revision.turn.dom_id)
    page.locator(f"#{revision.turn.dom_id} a.revision[data-revision='{revision.r_id}']").click()
    expect(page).to_have_url(re.compile(f"#revision-{revision.r_id}$"), timeout=SEE)
    expect(item).to_be_in_viewport()

    # A deep link opened cold lands on the turn.
    page.goto(f"{live_daphne}/runs/{a.pk}/read/#{thread_ids[-1]}")
    expect_targeted(page, thread_ids[-1])

    # Compare with the other seed: picked from the runs on the same topic.
    page.locator(".run-head-actions").get_by_role("link", name="Compare with…").click()
    candidates = page.locator("#compare-candidates")
    expect(candidates.locator(f"li[data-run='{b.pk}']")).to_contain_text("same topic")
    candidates.get_by_role("link", name=f"Run {b.pk}").click()
    expect(page).to_have_url(f"{live_daphne}/runs/compare/?a={a.pk}&b={b.pk}", timeout=SEE)
    column_a, column_b = page.locator("#compare-a"), page.locator("#compare-b")
    for column, run in ((column_a, a), (column_b, b)):
        v = run.outcome["verdict"]
        expect(column.locator(".compare-verdict")).to_have_text(
            v["label"] + (f":{v['position']}" if v.get("position") else "")
        )
        expect(column.locator(".outcome-card")).to_be_visible()
    box_a, box_b = column_a.bounding_box(), column_b.bounding_box()
    assert box_a and box_b and box_a["x"] + box_a["width"] <= box_b["x"] and abs(box_a["y"] - box_b["y"]) < 2
    expect(page.locator("#compare-config-diff tr[data-setting='seed'] td")).to_have_text(["7", "8"])
    expect(page.locator("#compare-config-diff tr[data-setting='seed']")).to_have_class(
        re.compile(r"\bdiffers\b")
    )
    expect(page.locator("#compare-cost tr[data-measure='turns'] td")).to_have_text(
        [str(a.turns.count()), str(b.turns.count())]
    )
    screenshot("compare", page)
    assert console_errors == []
