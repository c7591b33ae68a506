"""Journeys through a real browser: download a finished run's exports from its page and read them; re-run a
finished run with another seed and fork one from a chosen turn, and follow the links between parent and child."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from debates.models import Run, Turn
from tests.conftest import MATERIAL
from tests.e2e.conftest import RUN

pytestmark = pytest.mark.e2e

TOPIC = "Should the city charge cars entering the centre?"
ANALYSTS = "Ada: economic costs and benefits\nBo: risks and second-order effects\nCy: evidence quality"
FORK_AT = "r2/questions/examiner"
SEE = 10_000


def run_id_of(page: Page) -> int:
    match = re.search(r"/runs/(\d+)/$", page.url)
    assert match is not None, page.url
    return int(match.group(1))


def start_finished_run(page: Page, base_url: str) -> int:
    """Start a simulated cross-examination from the new-run form and wait on its page until it completes."""
    page.goto(f"{base_url}/runs/new/")
    form = page.locator("#run-form")
    form.get_by_label("Question or topic").fill(TOPIC)
    form.get_by_label("Material to analyse").fill(MATERIAL)
    form.get_by_label("Analysts").fill(ANALYSTS)
    form.locator("input[name=backend][value=simulated]").check()
    form.locator("#rehearsal-options summary").click()  # the seed and the pace are folded away
    form.get_by_label("Seed").fill("7")
    form.get_by_label("Streaming pace").fill("3000")
    form.locator("#start-run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=SEE)
    wait_completed(page)
    return run_id_of(page)


def wait_completed(page: Page) -> None:
    expect(page.locator("#run-status")).to_have_attribute("data-status", "completed", timeout=RUN)


def download(page: Page, selector: str) -> Path:
    with page.expect_download() as info:
        page.locator(selector).click()
    return Path(info.value.path())


def test_download_the_transcript_and_the_json_from_the_run_page(
    moderator_page: Page, live_daphne: str
) -> None:
    page = moderator_page
    run_id = start_finished_run(page, live_daphne)
    exports = page.locator("#run-exports")
    expect(exports.locator("a")).to_have_count(
        2
    )  # a cross-examination has no brief, run directory or artifacts
    expect(page.locator("#export-brief, #export-run-dir, #export-artifacts")).to_have_count(0)

    text = download(page, "#export-transcript").read_text(encoding="utf-8")
    turns = list(Turn.objects.filter(run_id=run_id).select_related("seat").order_by("first_seq", "id"))
    assert len(turns) == 8
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    assert headings == [f"### {t.seat.name} ({t.seat.role}) — {t.task}" for t in turns]
    assert {"Ada", "Bo", "Cy", "Examiner"} == {h.split(" (")[0].removeprefix("### ") for h in headings}
    for turn in turns:
        assert f"`{turn.key}`" in text

    data = json.loads(download(page, "#export-json").read_text(encoding="utf-8"))
    assert data["run"]["id"] == run_id and data["run"]["parent"] is None
    assert [t["key"] for t in data["turns"]] == [t.key for t in turns]


def test_rerun_with_another_seed_and_fork_from_a_turn(moderator_page: Page, live_daphne: str) -> None:
    page = moderator_page
    parent_id = start_finished_run(page, live_daphne)

    # Re-run with another seed: the new run's page names its parent, and runs to the end.
    rerun = page.locator("#rerun-form")
    expect(rerun).to_be_visible(timeout=SEE)
    rerun.locator("#rerun-seed").fill("4242")
    rerun.locator("#rerun-submit").click()
    expect(page).not_to_have_url(f"{live_daphne}/runs/{parent_id}/", timeout=SEE)
    rerun_id = run_id_of(page)
    expect(page.locator("#run-parent")).to_contain_text(f"Re-run of run {parent_id}")
    expect(page.locator(".eyebrow")).to_contain_text("seed 4242")
    wait_completed(page)
    expect(page.locator("#transcript article[id^=turn-]")).to_have_count(8)
    expect(page.locator("#transcript .badge.copied")).to_have_count(0)

    # Fork the parent after the examiner's questions: those four turns are copied, the rest is generated.
    page.locator("#run-parent a").click()
    expect(page).to_have_url(f"{live_daphne}/runs/{parent_id}/")
    expect(page.locator("#run-children")).to_contain_text(f"run {rerun_id} (re-run, seed 4242)")
    fork = page.locator("#fork-form")
    expect(fork).to_be_visible(timeout=SEE)
    fork.locator("#fork-key").select_option(FORK_AT)
    fork.locator("#fork-submit").click()
    expect(page).not_to_have_url(f"{live_daphne}/runs/{parent_id}/", timeout=SEE)
    fork_id = run_id_of(page)
    assert fork_id != rerun_id
    # The fork point by its speaker and task (its key stays in a data attribute).
    expect(page.locator("#run-parent")).to_contain_text(
        f"Forked from run {parent_id} at Examiner: Ask the analysts questions"
    )
    expect(page.locator(f'#run-parent a[data-key="{FORK_AT}"]')).to_have_count(1)
    wait_completed(page)
    expect(page.locator("#transcript article[id^=turn-]")).to_have_count(8)
    copied = page.locator("#transcript .badge.copied")
    expect(copied).to_have_count(4)
    expect(copied.first).to_have_text(f"from parent run {parent_id}")
    expect(page.locator("#turn-r2-questions-examiner .badge.copied")).to_be_visible()
    expect(page.locator("#turn-r3-answers-analyst-ada .badge.copied")).to_have_count(0)

    child = Run.objects.get(pk=fork_id)
    assert child.parent_id == parent_id and child.forked_at_key == FORK_AT
    page.locator("#run-parent a").first.click()
    children = page.locator("#run-children a[data-run]")
    expect(children).to_have_count(2)
    expect(page.locator("#run-children")).to_contain_text(
        f"run {fork_id} (fork at Examiner: Ask the analysts questions"
    )
