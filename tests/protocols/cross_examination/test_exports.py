"""Cross-examination's part of the Markdown transcript (`export_run --format transcript`): seed 000's own output
after the turns and the outcome — per analyst, per question the Q / A / Assessment lines; the summary table
Analyst | Questions | Defended | Conceded | Deflected; the claims surviving, revised (claim → revised position)
and weakened; and, when the run degraded, what failed and how it went on. Model text stays inert."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command

from debates.engine import registry
from debates.exports.transcript import run_transcript_md
from debates.models import Run, Turn
from debates.protocols.cross_examination.exports import SUMMARY_HEADER
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)

PROTOCOL = registry.get("cross-examination")
FAST_FAILURES = {"RETRY_BACKOFF_SECONDS": 0, "MAX_ATTEMPTS": 1}


@pytest.fixture
def finished(make_run: Callable[..., Run], settings: Any) -> Callable[..., Run]:
    """A simulated cross-examination run to its end; `fail`: the turn keys whose calls fail."""
    settings.DISPUTA = {**settings.DISPUTA, **FAST_FAILURES}

    def finish(*fail: str, **options: Any) -> Run:
        run = make_run(backend_options={"fail": list(fail), **options})
        run_to_stop(run)
        assert run.is_terminal
        return run

    return finish


def section(lines: list[str], heading: str) -> list[str]:
    """The lines of one `## ` section, its heading and the blank line after it excluded."""
    start = lines.index(heading) + 2
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def table_rows(lines: list[str]) -> list[list[str]]:
    start = lines.index("| " + " | ".join(SUMMARY_HEADER) + " |") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def qa_blocks(lines: list[str]) -> dict[str, list[list[str]]]:
    """Per analyst (#### name, as in the seed) the Q / A / Assessment triples, in order."""
    blocks: dict[str, list[list[str]]] = {}
    analyst = ""
    for index, line in enumerate(lines):
        if line.startswith("#### "):
            analyst = line[5:]
            blocks[analyst] = []
        elif line.startswith("**Q"):
            blocks[analyst].append(lines[index : index + 3])
    return blocks


class CompletedRunTests:
    def test_each_question_is_laid_out_as_q_a_and_assessment_under_its_analyst(self, finished):
        run = finished()
        outcome = run.outcome
        assert outcome["mode"] == "full"
        lines = PROTOCOL.transcript_sections(run)
        assert lines[0] == "## Cross-examination"
        assert "## Graceful degradation" not in lines  # nothing failed

        blocks = qa_blocks(section(lines, "## Cross-examination"))
        assert list(blocks) == ["Ada", "Bo", "Cy"]
        for name, triples in blocks.items():
            items = [item for item in outcome["record"] if item["name"] == name]
            assert len(triples) == len(items) >= 2
            for number, ((q, a, assessed), item) in enumerate(zip(triples, items, strict=True), start=1):
                question, answer = item["question"], item["answer"]
                assert q.startswith(f"**Q{number}** ({item['question_id']}, claim {question['claim_id']}): ")
                assert f"“{question['quoted_claim']}” — {question['question']}" in q
                assert f"_Gap: {question['gap']}_" in q and q.endswith(
                    "\\"
                )  # a hard break: one under the other
                assert a.startswith(f"**A{number}**: {answer['choice']} — {answer['response']}")
                if answer["choice"] == "CONCEDE":
                    assert f"Revised position: {answer['revised_position']}" in a
                for evidence in answer["evidence"]:
                    assert f"“{evidence['quote']}”" in a
                verdict = item["assessment"]["classification"]
                assert (
                    assessed == f"**Assessment**: {verdict.capitalize()} — {item['assessment']['rationale']}"
                )

    def test_the_summary_table_and_the_three_claim_lists_follow(self, finished):
        run = finished()
        outcome = run.outcome
        lines = PROTOCOL.transcript_sections(run)
        summary = section(lines, "## Cross-examination summary")
        assert [
            [
                row["name"],
                str(row["questions"]),
                str(row["defended"]),
                str(row["conceded"]),
                str(row["deflected"]),
            ]
            for row in outcome["summary"]
        ] == table_rows(summary)
        assert sum(row["defended"] + row["conceded"] + row["deflected"] for row in outcome["summary"]) == len(
            outcome["record"]
        )

        def listed(title: str) -> list[str]:
            start = summary.index(title) + 2
            return summary[start : summary.index("", start)]

        assert listed("**Claims surviving cross-examination** (defended with evidence):") == [
            f"- **{c['name']}:** {c['claim']}" for c in outcome["surviving"]
        ]
        assert listed("**Claims revised** (conceded):") == [
            f"- **{c['name']}:** {c['claim']} → {c['revised']}" for c in outcome["revised"]
        ]
        assert listed("**Claims weakened** (deflected — treat with low confidence):") == [
            f"- **{c['name']}:** {c['claim']}" for c in outcome["weakened"]
        ]
        # The mixed simulated answers give every kind of outcome.
        assert outcome["surviving"] and outcome["revised"] and outcome["weakened"]

    def test_an_empty_claim_list_says_none(self, finished):
        run = finished(answers="concede")
        assert run.outcome["revised"] and not run.outcome["surviving"] and not run.outcome["weakened"]
        summary = section(PROTOCOL.transcript_sections(run), "## Cross-examination summary")
        for title in (
            "**Claims surviving cross-examination** (defended with evidence):",
            "**Claims weakened** (deflected — treat with low confidence):",
        ):
            assert summary[summary.index(title) + 2 : summary.index(title) + 4] == ["- None.", ""]

    def test_the_transcript_export_carries_the_sections_after_the_outcome(self, finished, tmp_path):
        run = finished()
        out = tmp_path / "transcript.md"
        call_command(
            "export_run", str(run.pk), "--format", "transcript", "--out", str(out), stdout=io.StringIO()
        )
        text = out.read_text(encoding="utf-8")
        assert text == run_transcript_md(run)
        assert "\n".join(PROTOCOL.transcript_sections(run)) in text
        assert (
            text.index("## Outcome")
            < text.index("\n## Cross-examination\n")
            < text.index("\n## Cross-examination summary\n")
        )
        assert PROTOCOL.transcript_sections(run) == PROTOCOL.transcript_sections(
            run
        )  # the same bytes every time


class DegradedRunTests:
    def test_a_failed_analysis_is_noted_and_its_analyst_left_unquestioned(self, finished):
        run = finished("r1/analysis/analyst-bo")
        assert run.status == "completed" and run.outcome["mode"] == "full"
        lines = PROTOCOL.transcript_sections(run)
        assert lines[:3] == [
            "## Graceful degradation",
            "",
            "- Bo failed to produce an analysis; the run proceeds without it.",
        ]
        bo = section(lines, "## Cross-examination")
        assert bo[bo.index("#### Bo") + 2] == "_No analysis (it failed): not questioned._"
        assert list(qa_blocks(bo)) == ["Ada", "Bo", "Cy"] and qa_blocks(bo)["Bo"] == []
        rows = table_rows(section(lines, "## Cross-examination summary"))
        assert rows[1] == ["Bo (analysis failed)", "0", "0", "0", "0"]

    def test_an_analyst_who_fails_to_answer_leaves_the_gap_visible(self, finished):
        run = finished("r3/answers/analyst-bo")
        lines = PROTOCOL.transcript_sections(run)
        assert "- Bo failed to answer; their questions stand unanswered." in section(
            lines, "## Graceful degradation"
        )
        for q, a, assessed in qa_blocks(section(lines, "## Cross-examination"))["Bo"]:
            assert q.startswith("**Q")
            assert a.endswith("_No answer: Bo did not answer._\\")
            assert assessed == "**Assessment**: — _(not answered)_"
        rows = table_rows(section(lines, "## Cross-examination summary"))
        asked = run.outcome["summary"][1]["questions"]
        assert rows[1] == [f"Bo ({asked} unanswered)", str(asked), "0", "0", "0"]

    def test_a_failed_assessment_leaves_the_raw_qa_unclassified(self, finished):
        run = finished("r4/assessment/examiner")
        assert run.outcome["mode"] == "unclassified"
        lines = PROTOCOL.transcript_sections(run)
        assert "- The examiner's assessment failed: the raw Q&A is shown without classification." in lines
        triples = [t for ts in qa_blocks(section(lines, "## Cross-examination")).values() for t in ts]
        assert len(triples) == len(run.outcome["record"])
        assert all(assessed == "**Assessment**: — _(unclassified)_" for _, _, assessed in triples)
        summary = section(lines, "## Cross-examination summary")
        assert all(row[2:] == ["unclassified"] * 3 for row in table_rows(summary))
        assert not any(line.startswith("**Claims") for line in summary)

    def test_no_questions_skip_the_cross_examination_for_the_analyses_alone(self, finished):
        run = finished(no_questions=True)
        assert run.outcome["mode"] == "analyses-only"
        lines = PROTOCOL.transcript_sections(run)
        assert "## Cross-examination" not in lines
        only = section(lines, "## Independent analyses only")
        assert only[:2] == ["_No cross-examination: the claims stand unexamined._", ""]
        ada = run.outcome["analyses"][0]["claims"][0]
        assert f"- **c1:** {ada['text']} (confidence {round(ada['confidence'] * 100)} %)" in only

    def test_every_analyst_failing_lists_no_analysis(self, finished):
        run = finished("r1/analysis/*")
        assert run.status == "failed"
        only = section(PROTOCOL.transcript_sections(run), "## Independent analyses only")
        assert "_None: every analysis failed._" in only


class MarkTests:
    def test_flagged_items_are_marked_where_they_occur(self, finished):
        run = finished(answers="defend")
        answers = Turn.objects.get(run=run, key="r3/answers/analyst-ada")
        assessment = Turn.objects.get(run=run, key="r4/assessment/examiner")
        answers.flags = [{"kind": "unverified_quote", "where": "answers.1.evidence.0.quote", "detail": "x"}]
        answers.save(update_fields=["flags"])
        assessment.flags = [
            {"kind": "contradicts_answer", "where": "classifications.0.classification", "detail": "y"}
        ]
        assessment.save(update_fields=["flags"])
        (first, second, *_) = qa_blocks(section(PROTOCOL.transcript_sections(run), "## Cross-examination"))[
            "Ada"
        ]
        assert "_(unverified)_" not in first[1] and "_(unverified)_" in second[1]
        assert first[2].startswith("**Assessment**: ") and " _(contradicts the answer)_" in first[2]
        assert "contradicts" not in second[2]

    def test_model_text_cannot_open_a_heading_or_a_list_of_its_own(self, finished):
        run = finished()
        outcome = run.outcome
        outcome["record"][0]["answer"]["response"] = "fine\n## Injected heading\n- injected item"
        outcome["surviving"] = [{"name": "Ada", "claim": "\n# Claim heading"}]
        Run.objects.filter(pk=run.pk).update(outcome=outcome)
        run.refresh_from_db()
        lines = PROTOCOL.transcript_sections(run)
        assert not any(line.startswith(("## Injected", "- injected", "# Claim")) for line in lines)
        assert "fine ## Injected heading - injected item" in "\n".join(lines)
