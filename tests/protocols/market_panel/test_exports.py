"""The market panel's part of the Markdown transcript (`export_run --format transcript`): the run page's argument
trace as Markdown — one table row per argument with its cited figures as code verified them against the KB, the
challenges it received and its closing, the judge's four scores, the weighted score code recomputed (a judge's
differing figure beside it, not corrected) and the verdict — then the figures that do not match the KB, the half
rule of each pair, the judge's evidence issues and the closings. Model and KB text stays inert."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from debates.contract import Done
from debates.exports.transcript import run_transcript_md
from debates.protocols.market_panel.exports import TRACE_HEADER, trace_md
from debates.protocols.market_panel.protocol import KEY_JUDGEMENT
from tests.protocols.market_panel.test_protocol import (
    PROTOCOL,
    closings,
    crosses,
    full_history,
    openings,
    view,
)
from tests.protocols.market_panel.test_simulated import panel


def table_rows(lines: list[str]) -> list[list[str]]:
    """The trace table's body rows, split into cells (an escaped pipe stays inside its cell)."""
    start = lines.index("| " + " | ".join(TRACE_HEADER) + " |") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


@pytest.mark.django_db(transaction=True)
def test_the_transcript_section_is_the_pages_trace_with_recomputed_scores_and_verified_figures() -> None:
    run = panel(judge_slip=True)
    outcome = run.outcome
    lines = PROTOCOL.transcript_sections(run)
    assert lines[0] == "## Argument trace"
    assert "Judge weights: Logic 30 %, Evidence 30 %, Clarity 20 %, Persuasiveness 20 %" in lines[2]
    assert f"- **Key insight:** {outcome['synthesis']['key_insight']}" in lines
    rows = table_rows(lines)
    assert [r[0] for r in rows] == [f"`{r['id']}`" for r in outcome["rows"]]
    for cells, row in zip(rows, outcome["rows"], strict=True):
        score = row["score"]
        assert cells[6] == "·".join(str(score[d]) for d in ("logic", "evidence", "clarity", "persuasiveness"))
        assert cells[7].startswith(f"**{score['weighted']:g}**") and cells[8] == score["status"]
        assert len(cells[4].split("; ")) == len(row["citations"])
    # The judge's slip is shown beside the recomputed score, and listed; nothing is corrected.
    slipped = outcome["rows"][0]["score"]
    assert rows[0][7] == f"**{slipped['weighted']:g}** (judge: {slipped['judge_weighted']:g})"
    assert f"- {outcome['score_mismatches'][0]}" in lines
    # The misquoted figure: marked in its row and listed with the KB's value.
    misquoted = next(r for r in rows if r[0] == "`fund_bull_arg_0`")
    (mismatch,) = outcome["mismatches"]
    assert f"= {mismatch['quoted']} · mismatch (KB {mismatch['kb_value']:g})" in misquoted[4]
    assert misquoted[5].startswith("refute by fund_bear") and misquoted[5].endswith("→ abandoned")
    assert misquoted[8] == "REFUTED"
    assert any(line.startswith("- **mismatch:** fund_bull (fund_bull_arg_0)") for line in lines)
    # Each pair against the half rule; the closings.
    assert (
        "- **sentiment** (handshake round): senti_bull challenged 0 of 2 (needs 1) · senti_bear challenged 0 of 2 "
        "(needs 1)" in lines
    )
    assert "- **technical**: tech_bull challenged 3 of 4 · tech_bear challenged 3 of 4" in lines
    assert "| Seat | Conviction | Concessions |" in lines
    assert lines == PROTOCOL.transcript_sections(run)  # the same bytes whenever exported


@pytest.mark.django_db(transaction=True)
def test_the_markdown_transcript_carries_the_trace_after_the_turns() -> None:
    run = panel()
    text = run_transcript_md(run)
    section = "\n".join(PROTOCOL.transcript_sections(run))
    assert section in text and text.index("## Argument trace") > text.index("## Judge")


def test_an_unjudged_panel_exports_its_arguments_unscored() -> None:
    plan = PROTOCOL.plan(view({**openings(), **crosses(), **closings(), KEY_JUDGEMENT: None}))
    assert isinstance(plan, Done) and plan.failed
    lines = trace_md(plan.outcome)
    assert "_No judgement: the arguments below are unscored._" in lines
    assert all(r[6:] == ["—", "—", "unscored"] for r in table_rows(lines))
    assert any(line.startswith("_The judge failed") for line in lines)


def test_model_text_stays_inert_in_the_table() -> None:
    plan = PROTOCOL.plan(view(full_history()))
    assert isinstance(plan, Done)
    outcome: dict[str, Any] = copy.deepcopy(plan.outcome)
    outcome["rows"][0]["claim"] = "Up | down\n## Not a heading"
    outcome["synthesis"]["key_insight"] = "Line one\n# not a heading"
    outcome["rows"][0]["citations"][0]["path"] = "technicals.`SPX`\n.rsi_14"
    lines = trace_md(outcome)
    assert not any(line.startswith(("## Not", "# not")) for line in lines)
    row = table_rows(lines)[0]
    assert row[2] == "Up \\| down ## Not a heading" and len(row) == len(TRACE_HEADER)
    assert row[4].startswith("`technicals.SPX .rsi_14` = 58.4 · verified")
    assert trace_md({}) == []
