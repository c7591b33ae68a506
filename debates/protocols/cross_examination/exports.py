"""Cross-examination's sections of the Markdown transcript (`export_run --format transcript`): seed 000's own output
after the generic turns and outcome —

    ## Graceful degradation           (only when the run degraded: what failed and how the run went on)
    ## Cross-examination              per analyst (#### name, the seed's level), per question:
                                        **Q1**: the quoted claim and the examiner's question (and its gap)
                                        **A1**: DEFEND / CONCEDE, the answer, its evidence, the revised position
                                        **Assessment**: Defended / Conceded / Deflected, and why
    ## Cross-examination summary      the table Analyst | Questions | Defended | Conceded | Deflected, then the
                                      claims surviving (defended), revised (conceded: claim → revised position)
                                      and weakened (deflected: treat with low confidence)

When the examiner asked nothing the cross-examination was skipped: the analyses' claims are listed instead. When
the assessment failed (or nobody answered) the raw Q&A stands unclassified. What code flagged in an answer or a
classification (a quote that is not the material's words, a concession without a revised position, a
classification contradicting the answer) is marked where it occurs, as on the run page.

Rendered from the stored outcome and the flags of the committed turns, so it reads the same whenever it is
exported. Model and user text is written inert (`inline`: one line per value, table cells through `table`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from debates.platform.markdown import inline, table

if TYPE_CHECKING:
    from debates.models import Run

SUMMARY_HEADER = ("Analyst", "Questions", "Defended", "Conceded", "Deflected")
CLASSIFICATIONS = ("DEFENDED", "CONCEDED", "DEFLECTED")
# What the run page's flag marks say (cross_examination.html#flag-mark).
FLAG_MARKS = {
    "unverified_quote": "unverified",
    "out_of_range": "clamped",
    "missing_revision": "no revised position",
    "contradicts_answer": "contradicts the answer",
}


def _break(line: str) -> str:
    """A line ending in a hard line break (CommonMark's trailing backslash), as the seed's Q / A / Assessment
    lines stand one under the other; a line that ends in a backslash of its own keeps it literal."""
    return line + (" \\" if line.endswith("\\") else "\\")


def _marks(flags: Sequence[Mapping[str, Any]], where: str) -> str:
    kinds = [str(f.get("kind", "")) for f in flags if f.get("where") == where]
    return "".join(f" _({FLAG_MARKS.get(kind, 'flagged')})_" for kind in kinds)


def _flags_by_question(run: Run) -> dict[str, list[dict[str, str]]]:
    """The flags of the answers and of the assessment, each re-anchored on its question id: `answer.<rest>` for
    an answer's item, `assessment.<rest>` for its classification."""
    found: dict[str, list[dict[str, str]]] = {}
    turns = run.turns.filter(task__in=("answers", "assessment"), status="committed").order_by("first_seq")
    for turn in turns:
        payload = turn.payload if isinstance(turn.payload, Mapping) else {}
        field, prefix = ("answers", "answer") if turn.task == "answers" else ("classifications", "assessment")
        items = payload.get(field) or []
        for flag in turn.flags or []:
            if not isinstance(flag, Mapping):
                continue
            parts = str(flag.get("where", "")).split(".", 2)
            if len(parts) < 2 or parts[0] != field or not parts[1].isdigit() or int(parts[1]) >= len(items):
                continue
            question_id = str(items[int(parts[1])].get("question_id", ""))
            rest = parts[2] if len(parts) > 2 else ""
            found.setdefault(question_id, []).append(
                {"kind": str(flag.get("kind", "")), "where": f"{prefix}.{rest}".rstrip(".")}
            )
    return found


def _evidence(items: Sequence[Mapping[str, Any]], flags: Sequence[Mapping[str, Any]], at: str) -> str:
    quoted = []
    for index, item in enumerate(items):
        source = str(item.get("source") or "").strip()
        text = f"“{inline(item.get('quote', ''))}”" + (f" ({inline(source)})" if source else "")
        quoted.append(text + _marks(flags, f"{at}.{index}.quote"))
    return "; ".join(quoted)


def _question_lines(
    number: int, item: Mapping[str, Any], mode: str, flags: Sequence[Mapping[str, Any]]
) -> list[str]:
    question = item.get("question") or {}
    claim = str(question.get("quoted_claim") or "").strip()
    where = f"{inline(item.get('question_id', ''))}, claim {inline(question.get('claim_id', '?'))}"
    asked = f"**Q{number}** ({where}): "
    asked += f"“{inline(claim)}” — " if claim else ""
    asked += inline(question.get("question", ""))
    if str(question.get("gap") or "").strip():
        asked += f" _Gap: {inline(question['gap'])}_"

    answer = item.get("answer")
    if answer is None:
        answered = f"**A{number}**: _No answer: {inline(item.get('name', 'the analyst'))} did not answer._"
    else:
        answered = f"**A{number}**: {inline(answer.get('choice', ''))} — {inline(answer.get('response', ''))}"
        if answer.get("evidence"):
            answered += " Evidence: " + _evidence(answer["evidence"], flags, "answer.evidence")
        revised = str(answer.get("revised_position") or "").strip()
        if revised:
            answered += f" Revised position: {inline(revised)}"
        answered += _marks(flags, "answer.revised_position")

    assessment = item.get("assessment")
    if assessment:
        verdict = str(assessment.get("classification", ""))
        assessed = f"**Assessment**: {inline(verdict.capitalize())}" + _marks(
            flags, "assessment.classification"
        )
        if str(assessment.get("rationale") or "").strip():
            assessed += f" — {inline(assessment['rationale'])}"
    elif answer is None:
        assessed = "**Assessment**: — _(not answered)_"
    elif mode == "full":
        assessed = "**Assessment**: — _(not classified by the examiner)_"
    else:
        assessed = "**Assessment**: — _(unclassified)_"
    return [_break(asked), _break(answered), assessed, ""]


def _cross_examination(outcome: Mapping[str, Any], flags: Mapping[str, list[dict[str, str]]]) -> list[str]:
    lines = ["## Cross-examination", ""]
    record = list(outcome.get("record") or [])
    for row in outcome.get("summary") or []:
        lines += [f"#### {inline(row.get('name', row.get('analyst', '')))}", ""]
        items = [item for item in record if item.get("analyst") == row.get("analyst")]
        if row.get("analysis_failed"):
            lines += ["_No analysis (it failed): not questioned._", ""]
        elif not items:
            lines += ["_Not questioned._", ""]
        for number, item in enumerate(items, start=1):
            lines += _question_lines(
                number, item, str(outcome.get("mode", "")), flags.get(str(item.get("question_id")), [])
            )
    return lines


def _claims(title: str, claims: Sequence[Mapping[str, Any]], revised: bool = False) -> list[str]:
    lines = [title, ""]
    for claim in claims:
        text = f"- **{inline(claim.get('name', ''))}:** {inline(claim.get('claim', ''))}"
        lines.append(text + (f" → {inline(claim.get('revised') or '—')}" if revised else ""))
    return [*lines, *([] if claims else ["- None."]), ""]


def _summary(outcome: Mapping[str, Any]) -> list[str]:
    full = outcome.get("mode") == "full"
    rows = []
    for row in outcome.get("summary") or []:
        name = str(row.get("name", ""))
        unanswered = int(row.get("questions", 0)) - int(row.get("answered", 0))
        if row.get("analysis_failed"):
            name += " (analysis failed)"
        elif unanswered > 0:
            name += f" ({unanswered} unanswered)"
        counts = [row.get(c.lower(), 0) for c in CLASSIFICATIONS] if full else ["unclassified"] * 3
        rows.append([name, row.get("questions", 0), *counts])
    lines = ["## Cross-examination summary", "", *table(SUMMARY_HEADER, rows), ""]
    if not full:
        return [
            *lines,
            "_Unclassified: without the examiner's assessment no claim is counted as surviving, revised or "
            "weakened._",
            "",
        ]
    lines += _claims("**Claims surviving cross-examination** (defended with evidence):", outcome["surviving"])
    lines += _claims("**Claims revised** (conceded):", outcome["revised"], revised=True)
    lines += _claims("**Claims weakened** (deflected — treat with low confidence):", outcome["weakened"])
    return lines


def _analyses_only(outcome: Mapping[str, Any]) -> list[str]:
    lines = ["## Independent analyses only", "", "_No cross-examination: the claims stand unexamined._", ""]
    if not outcome.get("analyses"):
        lines += ["_None: every analysis failed._", ""]
    for analysis in outcome.get("analyses") or []:
        lines += [f"#### {inline(analysis.get('name', analysis.get('analyst', '')))}", ""]
        for claim in analysis.get("claims") or []:
            confidence = claim.get("confidence")
            level = f" (confidence {round(float(confidence) * 100)} %)" if confidence is not None else ""
            lines.append(f"- **{inline(claim.get('id', ''))}:** {inline(claim.get('text', ''))}{level}")
        lines.append("")
    return lines


def transcript_sections(run: Run) -> list[str]:
    """Cross-examination's part of the run's Markdown transcript (see the module's docstring); none without an
    outcome (a cancelled run)."""
    outcome = run.outcome or {}
    if outcome.get("protocol") != "cross-examination":
        return []
    lines: list[str] = []
    if outcome.get("notes"):
        lines += ["## Graceful degradation", ""]
        lines += [f"- {inline(note)}" for note in outcome["notes"]] + [""]
    if outcome.get("mode") == "analyses-only":
        return lines + _analyses_only(outcome)
    return lines + _cross_examination(outcome, _flags_by_question(run)) + _summary(outcome)
