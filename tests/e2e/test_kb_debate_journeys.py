"""Journeys through a kb-debate run page in a real browser against a live Daphne: a moderator starts a debate over
the demo KB holding the moderator seat, rules a claim closed and calls out a deflection through the console,
approves the downgrade the ruling rests on in the approvals panel, and watches the claims ledger, the KB rating
and the revision update live (and a viewer's page with it) without a reload; then a short debate to its
synthesis, where the moderator dissents from the verdict. Each test asserts what a person sees on the page."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Locator, Page, expect

from debates.models import Run
from debates.protocols.kb_debate.ledger import ORBIT_EDGES, position_label
from debates.selectors.panels import run_protocol_context
from kb.models import Argument, ProposedMutation
from tests.e2e.conftest import RUN

pytestmark = pytest.mark.e2e

TOPIC = "Does urban congestion pricing reduce traffic without unfair harm?"
SLUG = "congestion-pricing"
# Bounded waits (ms). Simulated agents at 300 characters per second take a few seconds per turn.
SEE = 10_000
TURN = 30_000


@pytest.fixture
def demo_kb(allow_async_unsafe: None) -> Any:
    from kb.demo import demo_kbs_load

    return next(kb for kb in demo_kbs_load() if kb.slug == SLUG)


@pytest.fixture
def console_errors(moderator_page: Page) -> Iterator[list[str]]:
    """Console errors and page errors (a CSP violation, an out-of-band swap without a target, a script error)."""
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(f"console: {message.text} ({message.location.get('url')})")

    moderator_page.on("console", on_console)
    moderator_page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    yield errors
    moderator_page.remove_listener("console", on_console)


def start_kb_debate(page: Page, base_url: str, kb: Any, *, max_turns: int = 16, seed: int = 11) -> int:
    """Fill in the new-run form for a KB debate with me in the moderator seat; return the run id."""
    page.goto(f"{base_url}/runs/new/")
    form = page.locator("#run-form")
    form.locator("select[name=protocol]").select_option("kb-debate")
    form.get_by_label("Question or topic").fill(TOPIC)
    form.locator("select[name=kb]").select_option(str(kb.pk))
    form.locator("input[name=kb_moderator][value=human]").check()
    form.locator("input[name=max_turns]").fill(str(max_turns))
    form.locator("input[name=backend][value=simulated]").check()
    rehearsal = form.locator("details#rehearsal-options")  # the seed and the pace, folded
    if rehearsal.count() and rehearsal.get_attribute("open") is None:
        rehearsal.locator("summary").click()
    form.locator("input[name=seed]").fill(str(seed))
    form.locator("input[name=sim_cps]").fill("300")
    form.locator("#start-run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=SEE)
    run_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))  # type: ignore[union-attr]
    expect(page.locator("#run-topic")).to_have_text(TOPIC)
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)
    return run_id


def console(page: Page) -> Locator:
    return page.locator("#moderator form.console")


def open_section(form: Locator, name: str) -> Locator:
    """Open a section of the console (callouts, deflection, close, press, kb) the way a person does, if it is collapsed."""
    section = form.locator(f"details.console-section[data-section={name}]")
    if section.get_attribute("open") is None:
        section.locator("summary").click()
    expect(section).to_have_attribute("open", "")
    return section


def entry(page: Page, entry_id: str) -> Locator:
    return page.locator(f"#ledger #ledger-{entry_id}")


def mark_page(page: Page) -> None:
    """A marker that a reload or a navigation would wipe."""
    page.evaluate("window.__disputaNoReload = 'still here'")


def not_reloaded(page: Page) -> bool:
    return page.evaluate("window.__disputaNoReload") == "still here"


def the_moves(run_id: int) -> dict[str, Any]:
    """From the ledger after the openings: a live claim to close on its contested / weak argument, and a
    deflection: a position that cited an argument orbiting (tangential / scope-mismatched / layer-shifted) a
    central question's argument it did not cite."""
    run = Run.objects.get(pk=run_id)
    kb = run_protocol_context(run)
    assert kb is not None
    ruling = next(
        (e, r["arg"])
        for e in kb["ledger"]
        if e["status"] in ("open", "partially-rebutted")
        for r in e["references"]
        if r["status"] in ("contested", "weak")
    )
    edges = list(run.kb.edges.filter(type__in=ORBIT_EDGES).values_list("src", "type", "target"))  # type: ignore[union-attr]
    deflection = next(
        (e["position"], e["turn"], src, target)
        for e in kb["ledger"]
        for src, _, target in edges
        if src in [r["arg"] for r in e["references"]] and target in kb["args"]
    )
    return {"entry": ruling[0], "arg": ruling[1], "deflection": deflection}


def test_a_ruling_a_deflection_callout_and_an_approved_downgrade_update_the_page_live(
    moderator_page: Page,
    viewer_page: Page,
    live_daphne: str,
    demo_kb: Any,
    console_errors: list[str],
    screenshot: Callable[..., Path],
) -> None:
    page = moderator_page
    run_id = start_kb_debate(page, live_daphne, demo_kb)
    mark_page(page)
    expect(page.locator("#run-dir-zip")).to_have_text("Run directory (zip)")

    # A viewer watches the same run from another browser.
    viewer_page.goto(f"{live_daphne}/runs/{run_id}/")
    expect(viewer_page.locator("#connection")).to_have_text("live", timeout=SEE)

    # The openings stream; their claims enter the ledger live, with citation badges and KB ratings.
    streaming = page.locator("#transcript article[data-status=streaming]")
    expect(streaming.first).to_be_visible(timeout=SEE)
    expect(page.locator("#ledger li.ledger-entry").first).to_be_visible(timeout=TURN)
    opening = page.locator("#transcript article.task-opening[data-status=committed]").first
    badge = opening.locator("a.cite-arg").first
    expect(badge).to_have_attribute("href", re.compile(rf"^/kb/{SLUG}/arguments/arg-\d{{3}}/$"))
    expect(opening.locator(".kb-status").first).to_have_text(
        re.compile(r"robust|strong|contested|weak|refuted|baseless")
    )

    # Then the run waits for me: the moderator console.
    expect(page.locator("#run-status")).to_have_attribute("data-status", "awaiting_human", timeout=TURN)
    form = console(page)
    expect(form).to_be_visible(timeout=SEE)
    moves = the_moves(run_id)
    entry_id, arg = moves["entry"]["id"], moves["arg"]
    position, turn, cited, target = moves["deflection"]
    expect(entry(page, entry_id)).to_have_attribute("data-status", re.compile("open|partially-rebutted"))
    rated_before = Argument.objects.get(kb=demo_kb, arg_id=arg).status
    screenshot("kb-debate-console")

    # A ruling closing the claim on its argument, with the downgrade to refuted it needs, and a deflection callout.
    form.locator("textarea[name=text]").fill(f"Closing {entry_id}; calling out a deflection by {position}.")
    open_section(form, "close")
    form.locator("select[name=ruling_entry]").select_option(entry_id)
    form.locator("select[name=ruling_arg]").select_option(arg)
    form.locator("select[name=ruling_as]").select_option("refuted")
    form.locator("textarea[name=ruling_justification]").fill(
        f"Traceback of {arg} finds no controlled primary study."
    )
    form.locator(f"input[name=ruling_turns][value='{moves['entry']['turn']}']").check()
    open_section(form, "kb")
    form.locator("select[name=mutation_arg]").select_option(arg)
    form.locator("select[name=mutation_to]").select_option("refuted")
    form.locator("textarea[name=mutation_justification]").fill(
        f"Turn {moves['entry']['turn']}: the claim rests on an uncontrolled series."
    )
    open_section(form, "deflection")
    form.locator("select[name=deflection_position]").select_option(position)
    form.locator(f"input[name=deflection_args][value='{cited}']").check()
    form.locator(f"input[name=deflection_turns][value='{turn}']").check()
    form.locator("select[name=deflection_target]").select_option(target)
    form.get_by_role("button", name="Send moderator turn").click()

    # My turn is committed and shown in the seed's form; the ledger entry turns closed, live.
    mine = page.locator("#transcript article.task-moderator[data-status=committed]").first
    expect(mine).to_be_visible(timeout=TURN)
    expect(mine.locator("header .badge.human")).to_have_text("human")
    expect(mine.locator(".ruling")).to_contain_text(f"({arg}")
    expect(mine.locator(".ruling")).to_contain_text("is CLOSED as refuted.")
    expect(mine.locator(".ruling")).to_contain_text("Justification: Traceback of")
    deflection = mine.locator(".deflection")
    side = position_label(position)  # shown by name ("Against pricing"), not by its id
    expect(deflection).to_contain_text(f"Deflection: {side} has cited {cited}")
    expect(deflection).to_contain_text("(layer: ")
    expect(deflection).to_contain_text(f"{side} has not engaged {target} at its actual layer")
    for watcher in (page, viewer_page):
        expect(entry(watcher, entry_id)).to_have_attribute("data-status", "closed", timeout=SEE)
        expect(entry(watcher, entry_id).locator(".closure")).to_contain_text(f"({arg}) is CLOSED as refuted.")
    expect(console(page)).to_have_count(0)

    # The downgrade waits in the approvals panel; the viewer sees it without buttons.
    approval = page.locator(
        f"#approvals article[data-status=pending]:has(a[href$='/arguments/{arg}/'])"
    ).first
    expect(approval).to_be_visible(timeout=SEE)
    expect(
        viewer_page.locator(
            f"#approvals article[data-status=pending]:has(a[href$='/arguments/{arg}/'])"
        ).first
    ).to_be_visible(timeout=SEE)
    expect(viewer_page.locator("#approvals form.decide")).to_have_count(0)
    mutation_id = int(approval.get_attribute("data-mutation") or 0)
    approval.get_by_role("button", name="Approve").click()

    # Applied with a revision; the KB rating of the argument changes everywhere on both pages, without a reload.
    decided = page.locator(f"#approvals #approval-{mutation_id}")
    expect(decided).to_have_attribute("data-status", "applied", timeout=SEE)
    revision = ProposedMutation.objects.select_related("revision").get(pk=mutation_id).revision
    assert revision is not None and re.fullmatch(r"R-\d{3}", revision.r_id)
    expect(decided.locator("a.revision")).to_have_text(revision.r_id)
    # (The "Approved … logged as R-NNN" notice of the answer is replaced at once by the live frame of the decision.)
    rerated = f"refuted (was {rated_before})"
    for watcher in (page, viewer_page):
        expect(watcher.locator(f"#ledger-{entry_id} .kbs-{arg}").first).to_have_text(rerated, timeout=SEE)
        expect(watcher.locator(f"#ledger-rerated .kbs-{arg}")).to_have_text(rerated)
        expect(watcher.locator(f"#approvals #approval-{mutation_id} a.revision")).to_have_text(
            revision.r_id, timeout=SEE
        )
        # Every badge of the argument in the transcript shows the new rating too.
        marks = watcher.locator(f"#transcript .kbs-{arg}")
        expect(marks.first).to_have_text(rerated, timeout=SEE)
        assert set(marks.all_inner_texts()) == {rerated}
        expect(watcher.locator(f"#transcript .mstate-{mutation_id}")).to_have_text(
            f"applied as {revision.r_id}"
        )
    assert Argument.objects.get(kb=demo_kb, arg_id=arg).status == "refuted"
    assert not_reloaded(page), "the page was reloaded"
    screenshot("kb-debate-approved")
    screenshot("kb-debate-viewer", viewer_page)

    # What the live page shows is what a fresh load renders.
    expect(page.locator("#run-status")).to_have_attribute("data-status", "awaiting_human", timeout=RUN)
    fresh = page.context.new_page()
    fresh.goto(f"{live_daphne}/runs/{run_id}/")
    expect(fresh.locator("#connection")).to_have_text("live", timeout=SEE)
    assert fresh.locator("#ledger").inner_text() == page.locator("#ledger").inner_text()
    assert fresh.locator("#approvals").inner_text() == page.locator("#approvals").inner_text()
    fresh.close()
    assert console_errors == [], console_errors


def test_a_short_debate_ends_with_the_verdict_and_my_dissent(
    moderator_page: Page,
    live_daphne: str,
    demo_kb: Any,
    console_errors: list[str],
    screenshot: Callable[..., Path],
) -> None:
    page = moderator_page
    run_id = start_kb_debate(page, live_daphne, demo_kb, max_turns=4, seed=5)
    mark_page(page)

    # My moderator turn: a summary and a callout of the flag the orchestrator passes on.
    form = console(page)
    expect(form).to_be_visible(timeout=TURN)
    flags = form.locator(".flags li")
    form.locator("textarea[name=text]").fill("Noted; carry on.")
    if flags.count():
        open_section(form, "callouts")
        kind = flags.first.locator(".callout-type").inner_text()
        form.locator("select[name=callout_type]").select_option(kind if kind != "untraced" else "overreach")
    form.get_by_role("button", name="Send moderator turn").click()
    expect(console(page)).to_have_count(0, timeout=SEE)

    # The synthesis streams and gives its verdict; then I review it.
    synthesis = page.locator("#transcript article.task-synthesis")
    expect(synthesis).to_have_attribute("data-status", "committed", timeout=RUN)
    expect(synthesis.locator(".verdict-label")).to_be_visible()
    review = page.locator("#moderator form.verdict-review")
    expect(review).to_be_visible(timeout=TURN)
    label = review.locator(".verdict-label").inner_text()
    assert label == synthesis.locator(".verdict-label").inner_text()
    review.locator("input[name=decision][value=dissent]").check()
    review.locator("textarea[name=text]").fill("The fairness question deserved a longer exchange.")
    review.get_by_role("button", name="Record my review").click()

    expect(page.locator("#run-status")).to_have_attribute("data-status", "completed", timeout=RUN)
    outcome = page.locator("#kb-debate-outcome")
    expect(outcome).to_be_visible(timeout=SEE)
    expect(outcome.locator("#verdict .verdict-label")).to_have_text(label)
    expect(outcome.locator("#verdict-review")).to_contain_text("dissent")
    expect(outcome.locator("#verdict-review")).to_contain_text(
        "The fairness question deserved a longer exchange."
    )
    expect(outcome.locator("#engagement-table tbody tr")).to_have_count(demo_kb.central_questions.count())
    run = Run.objects.get(pk=run_id)
    assert run.outcome["review"] == {
        "decision": "dissent",
        "text": "The fairness question deserved a longer exchange.",
    }
    assert not_reloaded(page)
    screenshot("kb-debate-outcome")
    assert console_errors == [], console_errors
