"""The kb-debate moderator console in a real browser against a live Daphne: the moderator picks a claim, the
argument it rests on and the turns from the console's selects and checkboxes (nothing typed but words), sends a
closure the KB does not back yet, is refused with the rule and offered the fix, clicks "Also propose … → refuted",
and sees the same ruling committed with the downgrade proposed, on a phone-wide page (no wider than it, and
no critical or serious axe-core violation with the refusal shown)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from debates.models import Turn
from kb.models import ProposedMutation
from tests.e2e.test_accessibility import axe_blocking, page_width, widest_elements
from tests.e2e.test_kb_debate_journeys import (
    SEE,
    TURN,
    console,
    console_errors,  # noqa: F401 (a fixture)
    demo_kb,  # noqa: F401 (a fixture)
    entry,
    open_section,
    start_kb_debate,
    the_moves,
)

pytestmark = pytest.mark.e2e


def test_a_refused_closure_is_fixed_with_one_click(
    moderator_page: Page,
    live_daphne: str,
    demo_kb: Any,  # noqa: F811
    console_errors: list[str],  # noqa: F811
    screenshot: Callable[..., Path],
) -> None:
    page = moderator_page
    page.set_viewport_size({"width": 390, "height": 860})
    run_id = start_kb_debate(page, live_daphne, demo_kb, seed=11)
    form = console(page)
    expect(form).to_be_visible(timeout=TURN)
    moves = the_moves(run_id)
    entry_id, arg, turn = moves["entry"]["id"], moves["arg"], moves["entry"]["turn"]

    # Sections: what applies now is open, the rest collapsed; nothing asks for a typed id or turn number.
    sections = form.locator("details.console-section")
    expect(sections).to_have_count(5)
    expect(form.locator("input[type=text], input[type=number]")).to_have_count(0)

    # A ruling picked from the ledger and the KB, without the downgrade it needs.
    form.locator("textarea[name=text]").fill(f"Closing {entry_id}.")
    close = open_section(form, "close")
    claim = close.locator("select[name=ruling_entry]")
    expect(claim.locator(f"option[value='{entry_id}']")).to_contain_text(moves["entry"]["claim"][:30])
    claim.select_option(entry_id)
    close.locator("select[name=ruling_arg]").select_option(arg)
    close.locator("select[name=ruling_as]").select_option("refuted")
    close.locator("textarea[name=ruling_justification]").fill(
        f"Traceback of {arg} finds no controlled study."
    )
    close.get_by_label(re.compile(rf"\bTurn {turn} · ")).check()
    form.get_by_role("button", name="Send moderator turn").click()

    # Refused: the rule, in plain words by the ruling, and the fix; what was picked is still picked.
    ruling = page.locator("#moderator #console-ruling")
    expect(ruling.locator(".field-errors")).to_contain_text(
        f"Closing needs {arg} rated refuted or baseless", timeout=SEE
    )
    expect(ruling.locator(".field-errors")).not_to_contain_text("Ruling 1")
    expect(page.locator("#moderator details[data-section=close]")).to_have_attribute("open", "")
    expect(ruling.locator("select[name=ruling_entry]")).to_have_value(entry_id)
    expect(ruling.locator("select[name=ruling_arg]")).to_have_value(arg)
    expect(ruling.get_by_label(re.compile(rf"\bTurn {turn} · "))).to_be_checked()
    fix = ruling.get_by_role("button", name=f"Also propose {arg} → refuted")
    expect(fix).to_be_visible()
    assert page_width(page) <= 390, widest_elements(page, 390)
    assert axe_blocking(page) == []
    screenshot("kb-debate-console-refused")
    fix.click()

    # The same ruling, committed with the downgrade proposed; the claim is closed in the ledger, live.
    mine = page.locator("#transcript article.task-moderator[data-status=committed]").first
    expect(mine).to_be_visible(timeout=TURN)
    expect(mine.locator(".ruling")).to_contain_text(f"({arg}")
    expect(mine.locator(".ruling")).to_contain_text("is CLOSED as refuted.")
    expect(mine.locator(".proposal[data-kind=status-downgrade]")).to_contain_text(arg)
    expect(entry(page, entry_id)).to_have_attribute("data-status", "closed", timeout=SEE)
    approval = page.locator(f"#approvals article[data-status=pending]:has(a[href$='/arguments/{arg}/'])")
    expect(approval.first).to_be_visible(timeout=SEE)
    turn_row = Turn.objects.get(run_id=run_id, task="moderator", status="committed")
    assert turn_row.payload["rulings"][0]["turns"] == [turn]
    proposed = ProposedMutation.objects.get(run_id=run_id, turn=turn_row)
    assert proposed.payload == {"arg_id": arg, "to": "refuted"}
    assert page_width(page) <= 390, widest_elements(page, 390)
    screenshot("kb-debate-console-fixed")
    assert console_errors == [], console_errors
