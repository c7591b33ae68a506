"""Journeys through the knowledge-base pages in a real browser against a live Daphne: browse and filter the demo
KB, see its graph drawn, decide proposals in the approval inbox and find the decision in the KB, and look at the
inbox as a viewer. Each test asserts what a person sees on the page."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import ConsoleMessage, Locator, Page, expect

from kb.discipline import mutation_propose
from kb.models import KnowledgeBase, MutationStatus, ProposedMutation
from kb.services import kb_import_path

pytestmark = pytest.mark.e2e

DEMO = Path(__file__).resolve().parents[2] / "kb" / "demo" / "congestion-pricing" / "kb"
SLUG = "congestion-pricing"
DEMO_ARGUMENTS = 23
PROPOSER = "debater-con-pricing"
REJECT_REASON = (
    "One later study does not outweigh the evaluations behind it; the status stays until it is replicated."
)
# Bounded waits (ms).
SEE = 10_000


@dataclass
class DemoKB:
    kb: KnowledgeBase
    approve: ProposedMutation  # the first pending proposal: the moderator approves it
    reject: ProposedMutation  # the second: the moderator rejects it with a reason


@pytest.fixture
def demo_kb(allow_async_unsafe: None) -> DemoKB:
    """The demo KB imported into the database the live server reads, with two pending status downgrades
    (strong → contested) on two arguments that are strong now."""
    kb = kb_import_path(DEMO, slug=SLUG)
    strong = list(kb.arguments.filter(status="strong").order_by("arg_id").values_list("arg_id", flat=True))
    assert len(strong) >= 2, strong
    proposals = [
        mutation_propose(
            kb=kb,
            kind="status-downgrade",
            payload={"arg_id": arg_id, "to": "contested"},
            proposed_by=PROPOSER,
            justification=f"The evidence for {arg_id} is disputed by a later study.",
        )
        for arg_id in strong[:2]
    ]
    assert [p.status for p in proposals] == [MutationStatus.PENDING] * 2, [p.reason for p in proposals]
    return DemoKB(kb=kb, approve=proposals[0], reject=proposals[1])


@pytest.fixture
def console_errors(page: Page) -> Iterator[list[str]]:
    """Errors the default page logs (CSP violations among them) and uncaught exceptions; favicon 404s aside."""
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error" and "favicon" not in (message.location.get("url") or "") + message.text:
            errors.append(f"console: {message.text} ({message.location.get('url')})")

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    yield errors
    page.remove_listener("console", on_console)


def argument_rows(page: Page) -> Locator:
    return page.locator("#arguments-table tbody tr[data-arg]")


def kb_statuses(kb: KnowledgeBase) -> dict[str, str]:
    return dict(kb.arguments.values_list("arg_id", "status"))


def test_a_moderator_browses_the_kb_and_filters_by_status(
    moderator_page: Page, live_daphne: str, demo_kb: DemoKB, console_errors: list[str]
) -> None:
    page = moderator_page
    page.goto(f"{live_daphne}/kb/")
    listed = page.locator("#kb-table tbody tr").filter(has_text=demo_kb.kb.title)
    expect(listed).to_have_count(1)
    expect(listed.locator("td").nth(2)).to_have_text(str(DEMO_ARGUMENTS))  # the argument count
    expect(listed.locator("td").nth(4)).to_have_text("2")  # pending proposals
    listed.get_by_role("link", name=demo_kb.kb.title).click()
    expect(page).to_have_url(f"{live_daphne}/kb/{SLUG}/")
    expect(page.locator("main > h1")).to_have_text(demo_kb.kb.title)

    # All 23 arguments, each with a badge whose class names its status, as stored.
    statuses = kb_statuses(demo_kb.kb)
    assert len(statuses) == DEMO_ARGUMENTS
    rows = argument_rows(page)
    expect(rows).to_have_count(DEMO_ARGUMENTS)
    shown = {}
    for row in rows.all():
        badge = row.locator(".badge")
        status = badge.get_attribute("data-status") or ""
        expect(badge).to_have_class(f"badge status-{status}")
        expect(badge).to_have_text(status)
        shown[row.get_attribute("data-arg")] = status
    assert shown == statuses

    # Choosing "weak" in the Status filter swaps in a table of the weak arguments only, without leaving the page.
    weak = sorted(arg_id for arg_id, status in statuses.items() if status == "weak")
    assert 0 < len(weak) < DEMO_ARGUMENTS
    page.evaluate("window.__sameDocument = true")
    with page.expect_response(lambda r: f"/kb/{SLUG}/?" in r.url and "status=weak" in r.url) as swap:
        page.locator("#arguments form.filters").get_by_label("Status").select_option("weak")
    assert swap.value.request.headers.get("hx-request") == "true"
    expect(rows).to_have_count(len(weak))
    assert rows.evaluate_all("rows => rows.map(r => r.dataset.arg)") == weak
    expect(page.locator("#arguments-table .badge.status-weak")).to_have_count(len(weak))
    expect(page.locator("#arguments-table .badge:not(.status-weak)")).to_have_count(0)
    assert page.evaluate("window.__sameDocument") is True, "the filter reloaded the page instead of swapping"
    expect(page.locator("#kb-graph")).to_have_attribute("data-ready", "true")  # the rest of the page stayed

    # Back to all statuses.
    page.locator("#arguments form.filters").get_by_label("Status").select_option("")
    expect(rows).to_have_count(DEMO_ARGUMENTS)
    assert console_errors == []


def test_b_the_graph_renders_with_every_node_and_edge(
    moderator_page: Page,
    live_daphne: str,
    demo_kb: DemoKB,
    screenshot: Callable[..., Path],
    console_errors: list[str],
) -> None:
    page = moderator_page
    graph = page.request.get(f"{live_daphne}/kb/{SLUG}/graph.json")
    assert graph.ok
    data = graph.json()
    arguments = [n for n in data["nodes"] if n["data"]["kind"] == "argument"]
    assert len(arguments) == DEMO_ARGUMENTS
    assert data["edges"], "the demo KB has edges"

    page.goto(f"{live_daphne}/kb/{SLUG}/")
    box = page.locator("#kb-graph")
    expect(box).to_have_attribute("data-ready", "true", timeout=SEE)
    expect(box).to_have_attribute("data-nodes", str(len(data["nodes"])))
    expect(box).to_have_attribute("data-edges", str(len(data["edges"])))
    expect(box.locator("canvas").first).to_be_attached()
    # Cytoscape drew something: some canvas in the box has non-transparent pixels.
    page.wait_for_function(
        """() => [...document.querySelectorAll('#kb-graph canvas')].some(c => {
            if (!c.width || !c.height) return false;
            const pixels = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
            return false;
        })""",
        timeout=SEE,
    )
    section = page.locator("#graph")
    section.scroll_into_view_if_needed()
    assert section.bounding_box()["height"] > 400  # type: ignore[index]
    shot = screenshot("kb-page")
    section_shot = shot.with_name("kb-graph.png")
    section.screenshot(path=str(section_shot))
    assert section_shot.stat().st_size > 10_000  # a drawn graph, not an empty box
    assert console_errors == [], console_errors


def test_c_moderator_approves_and_rejects_proposals_and_the_kb_shows_it(
    moderator_page: Page, live_daphne: str, demo_kb: DemoKB, screenshot: Callable[..., Path]
) -> None:
    page = moderator_page
    approved, rejected = demo_kb.approve, demo_kb.reject
    approved_arg, rejected_arg = approved.payload["arg_id"], rejected.payload["arg_id"]

    page.goto(f"{live_daphne}/kb/inbox/")
    expect(page.locator("#pending h2")).to_have_text("Pending (2)")
    first, second = page.locator(f"#mutation-{approved.pk}"), page.locator(f"#mutation-{rejected.pk}")
    for card, arg_id in ((first, approved_arg), (second, rejected_arg)):
        expect(card).to_have_attribute("data-status", "pending")
        expect(card.locator(".change")).to_contain_text(f"{arg_id} → contested")
        expect(card).to_contain_text(PROPOSER)
        expect(card.get_by_role("button", name="Approve")).to_be_visible()
        expect(card.get_by_role("button", name="Reject")).to_be_visible()

    # Approve the first: the card turns applied in place and names the revision it wrote.
    first.get_by_role("button", name="Approve").click()
    expect(first).to_have_attribute("data-status", "applied", timeout=SEE)
    expect(first.locator("header .badge.status-applied")).to_have_text("applied")
    expect(first).to_contain_text("Applied as R-001")
    expect(first.get_by_role("link", name="R-001")).to_have_attribute("href", f"/kb/{SLUG}/#revision-R-001")
    expect(first.locator("form.decide")).to_have_count(0)

    # Rejecting needs a reason: without one the card says so and stays pending.
    second.get_by_role("button", name="Reject").click()
    expect(second.get_by_role("alert")).to_have_text("Say why the proposal is rejected.", timeout=SEE)
    expect(second).to_have_attribute("data-status", "pending")
    second.get_by_label("Reason").fill(REJECT_REASON)
    second.get_by_role("button", name="Reject").click()
    expect(second).to_have_attribute("data-status", "rejected", timeout=SEE)
    expect(second.locator("header .badge.status-rejected")).to_have_text("rejected")
    expect(second).to_contain_text(f"Reason: {REJECT_REASON}")
    expect(second.locator("form.decide")).to_have_count(0)
    screenshot("inbox-decided")

    # A fresh load files both under Decided.
    page.reload()
    expect(page.locator("#pending h2")).to_have_text("Pending (0)")
    expect(page.locator("#inbox-empty")).to_be_visible()
    expect(page.locator(f"#decided #mutation-{approved.pk}")).to_have_attribute("data-status", "applied")
    expect(page.locator(f"#decided #mutation-{rejected.pk}")).to_have_attribute("data-status", "rejected")

    # The approved argument now reads contested, with the downgrade noted in its strength assessment.
    page.locator(f"#mutation-{approved.pk} .change").get_by_role("link", name=approved_arg).click()
    expect(page).to_have_url(f"{live_daphne}/kb/{SLUG}/arguments/{approved_arg}/")
    status = page.locator("#argument-status")
    expect(status).to_have_text("contested")
    expect(status).to_have_class("badge status-contested")
    expect(page.locator("section.card").filter(has_text="Strength assessment")).to_contain_text(
        "Downgraded strong → contested"
    )
    page.goto(f"{live_daphne}/kb/{SLUG}/arguments/{rejected_arg}/")
    expect(page.locator("#argument-status")).to_have_text("strong")

    # The KB page logs the revision, and the rejected argument keeps its status.
    page.goto(f"{live_daphne}/kb/{SLUG}/")
    revision = page.locator("#revision-R-001")
    expect(revision).to_be_visible()
    expect(revision.locator("td").nth(2)).to_have_text("Lower a rating")  # the type in words
    expect(revision.locator("td").nth(2)).to_have_attribute("data-type", "status-downgrade")
    expect(revision.locator("td").nth(3)).to_have_text(approved_arg)
    expect(revision.locator("td").nth(4)).to_have_text("status strong → contested")
    expect(revision).to_contain_text(f"proposal #{approved.pk} by {PROPOSER}")
    expect(page.locator("#revisions tbody tr")).to_have_count(1)
    for arg_id, expected in ((approved_arg, "contested"), (rejected_arg, "strong")):
        badge = page.locator(f'#arguments-table tr[data-arg="{arg_id}"] .badge')
        expect(badge).to_have_attribute("data-status", expected)
        expect(badge).to_have_class(f"badge status-{expected}")
    expect(page.locator("#proposals")).to_contain_text("0 pending.")
    screenshot("kb-after-decisions")

    # What the pages showed is what the database holds.
    assert kb_statuses(demo_kb.kb)[approved_arg] == "contested"
    assert kb_statuses(demo_kb.kb)[rejected_arg] == "strong"
    approved.refresh_from_db()
    rejected.refresh_from_db()
    assert (approved.status, approved.revision.r_id) == (MutationStatus.APPLIED, "R-001")  # type: ignore[union-attr]
    assert (rejected.status, rejected.reason) == (MutationStatus.REJECTED, REJECT_REASON)
    assert approved.decided_by.username == rejected.decided_by.username == "moderator"  # type: ignore[union-attr]


def test_d_a_viewer_sees_the_inbox_but_cannot_decide(
    viewer_page: Page, live_daphne: str, demo_kb: DemoKB
) -> None:
    page = viewer_page
    page.goto(f"{live_daphne}/kb/inbox/")
    expect(page.locator("#pending h2")).to_have_text("Pending (2)")
    for proposal in (demo_kb.approve, demo_kb.reject):
        card = page.locator(f"#mutation-{proposal.pk}")
        expect(card).to_have_attribute("data-status", "pending")
        expect(card.locator(".change")).to_contain_text(f"{proposal.payload['arg_id']} → contested")
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    expect(page.get_by_role("button", name="Reject")).to_have_count(0)
    expect(page.locator("form.decide")).to_have_count(0)

    # The server refuses a viewer's decision too (with a valid CSRF token, so the refusal is the permission's).
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"{live_daphne}/kb/inbox/{demo_kb.approve.pk}/decide/",
        form={"decision": "approve"},
        headers={"X-CSRFToken": token, "Referer": f"{live_daphne}/kb/inbox/"},
    )
    assert response.status == 403
    demo_kb.approve.refresh_from_db()
    assert demo_kb.approve.status == MutationStatus.PENDING
    page.reload()
    expect(page.locator(f"#mutation-{demo_kb.approve.pk}")).to_have_attribute("data-status", "pending")
