"""The market panel's sections of the Markdown transcript (`export_run --format transcript`): what the run page's
outcome card shows, as Markdown, after the generic transcript's turns and outcome — the judge's weights and
synthesis, the argument trace table (each argument's claim, its cited figures with code's verification against the
KB, the challenges it received and what its closing made of it, the judge's four scores, the weighted score code
recomputed beside any differing figure of the judge's, and the verdict), the figures that do not match the KB, the
half rule of each cross-examination pair, the judge's evidence issues and the closings.

Rendered from the stored outcome only (what the page reads), so it reads the same whenever it is exported. Model
and KB text is written inert (`inline`): one line per value, pipes escaped in table cells (`table`), no backtick
inside a code span."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from debates.platform.markdown import inline, table
from debates.protocols.market_panel.schema import DIMENSIONS

if TYPE_CHECKING:
    from debates.models import Run


def weights_in_order(weights: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    """The judge's weights in the dimensions' order (a JSON column need not keep the order it was given)."""
    given = dict(weights or {})
    return [(d, given[d]) for d in DIMENSIONS if d in given] + [
        (k, v) for k, v in given.items() if k not in DIMENSIONS
    ]


TRACE_HEADER = (
    "Argument",
    "Seat",
    "Claim",
    "Confidence",
    "Evidence (verified by code)",
    "Challenged → closing",
    "L·E·C·P",
    "Weighted (recomputed)",
    "Verdict",
)


def _code(text: Any) -> str:
    """A KB path or an id as a code span: one line, no backtick of its own."""
    return f"`{' '.join(str(text).replace('`', '').split())}`"


def _percent(value: Any) -> str:
    try:
        return f"{float(value):.0%}"
    except (TypeError, ValueError):
        return "—"


def _number(value: Any) -> str:
    return "—" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _citation(citation: Mapping[str, Any]) -> str:
    """A cited data point as the page's badge reads: path = quoted · status (KB value) · outside its slice."""
    text = _code(citation.get("path", "?"))
    if citation.get("quoted"):
        text += f" = {citation['quoted']}"
    status = str(citation.get("status", ""))
    text += " · " + ("unknown path" if status == "unverified" else status)
    if status == "mismatch":
        text += f" (KB {_number(citation.get('kb_value'))})"
    if citation.get("outside_slice"):
        text += " · outside its slice"
    return text


def _challenged(row: Mapping[str, Any]) -> str:
    kinds = [f"{c.get('challenge_type', '?')} by {c.get('by', '?')}" for c in row.get("challenges", [])]
    closing = dict(row.get("closing") or {})
    after = str(closing.get("state", "—"))
    if closing.get("confidence_adjusted") is not None:
        after += f" ({_percent(closing['confidence_adjusted'])})"
    return f"{', '.join(kinds) or 'unchallenged'} → {after}"


def _score_cells(score: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """(L·E·C·P, the recomputed weighted score with the judge's differing figure, the verdict)."""
    if not score:
        return "—", "—", "unscored"
    scores = "·".join(str(score.get(d, "—")) for d in DIMENSIONS)
    weighted = f"**{_number(score.get('weighted'))}**"
    if score.get("weighted_mismatch"):
        weighted += f" (judge: {_number(score.get('judge_weighted'))})"
    return scores, weighted, str(score.get("status", "—"))


def trace_rows(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """The argument trace table's rows, one per argument, in the page's order."""
    table_rows = []
    for row in rows:
        scores, weighted, verdict = _score_cells(row.get("score"))
        citations = "; ".join(_citation(c) for c in row.get("citations", [])) or "no data path cited"
        table_rows.append(
            [
                _code(row.get("id", "?")),
                str(row.get("seat", "")),
                str(row.get("claim", "")),
                _percent(row.get("confidence")),
                citations,
                _challenged(row),
                scores,
                weighted,
                verdict,
            ]
        )
    return table_rows


def _weights(outcome: Mapping[str, Any]) -> str:
    weights = ", ".join(
        f"{str(name).capitalize()} {weight} %" for name, weight in weights_in_order(outcome.get("weights"))
    )
    return (
        f"Judge weights: {weights} — weighted score = Σ score × weight / 100 on the 1–10 scale, recomputed by "
        "code (a judge's differing figure is shown beside it, not corrected)."
    )


def _synthesis(outcome: Mapping[str, Any]) -> list[str]:
    synthesis = outcome.get("synthesis")
    if not synthesis:
        return ["_No judgement: the arguments below are unscored._", ""]
    means = dict(outcome.get("stance_means") or {})
    return [
        f"- **The judge finds the {inline(outcome.get('judge_pick') or '—')} case stronger** (mean recomputed "
        f"weighted score: bull {_number(means.get('bull'))}, bear {_number(means.get('bear'))}; the judge "
        "scores debate quality, not market direction).",
        f"- **Bull case:** {inline(synthesis.get('bull_case_summary', ''))}",
        f"- **Bear case:** {inline(synthesis.get('bear_case_summary', ''))}",
        f"- **Key insight:** {inline(synthesis.get('key_insight', ''))}",
        "",
    ]


def _alerts(outcome: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    if outcome.get("score_mismatches"):
        lines += [
            "**The judge's weighted scores differ from the recomputed ones** (shown as the judge wrote them, not "
            "corrected):",
            "",
        ]
        lines += [f"- {inline(m)}" for m in outcome["score_mismatches"]] + [""]
    if outcome.get("flags"):
        lines += ["**Flags:**", ""] + [f"- {inline(f)}" for f in outcome["flags"]] + [""]
    return lines


def _figures(outcome: Mapping[str, Any]) -> list[str]:
    lines = ["### Cited figures checked against the knowledge base", ""]
    found = [
        f"- **mismatch:** {inline(m.get('seat'))} ({inline(m.get('where'))}) quotes {inline(m.get('quoted'))} "
        f"for {_code(m.get('path'))}; the knowledge base has {inline(_number(m.get('kb_value')))}."
        for m in outcome.get("mismatches", [])
    ]
    found += [
        f"- **unknown path:** {inline(m.get('seat'))} ({inline(m.get('where'))}) cites {_code(m.get('path'))}: "
        f"{inline(m.get('detail'))}."
        for m in outcome.get("unknown_paths", [])
    ]
    return [*lines, *(found or ["Every cited figure matches the knowledge base."]), ""]


def _pairs(outcome: Mapping[str, Any]) -> list[str]:
    lines = ["### Cross-examination: each side must challenge at least half", ""]
    for pair in outcome.get("pairs", []):
        mark = (
            " (handshake round)"
            if pair.get("handshake")
            else " (pulled punches)"
            if pair.get("short")
            else ""
        )
        sides = []
        for side in pair.get("sides", []):
            text = f"{side['seat']} challenged {side['challenged']} of {side['targets']}"
            if side.get("missing"):
                text += " (its cross-examination failed)"
            elif side.get("short"):
                text += f" (needs {side['needed']})"
            sides.append(text)
        lines.append(f"- **{inline(pair.get('lens'))}**{mark}: {' · '.join(sides) or 'no cross-examination'}")
    return [*lines, ""]


def _closings(outcome: Mapping[str, Any]) -> list[str]:
    closings = dict(outcome.get("closings") or {})
    if not closings:
        return []
    rows = [
        [seat, str(c.get("conviction_change") or "—"), " / ".join(c.get("concessions") or []) or "none"]
        for seat, c in closings.items()
    ]
    return ["### Closings", "", *table(("Seat", "Conviction", "Concessions"), rows), ""]


def trace_md(outcome: Mapping[str, Any]) -> list[str]:
    """The outcome card of a market panel as Markdown lines (see the module's docstring); [] before an outcome."""
    rows = outcome.get("rows")
    if not rows:
        return []
    lines = ["## Argument trace", ""]
    lines += [f"_{inline(note)}_" for note in outcome.get("notes", [])]
    lines += [""] if outcome.get("notes") else []
    lines += [_weights(outcome), ""]
    lines += _synthesis(outcome)
    lines += _alerts(outcome)
    verdicts = dict(outcome.get("verdicts") or {})
    if outcome.get("judged") and verdicts:
        lines += ["Verdicts: " + " · ".join(f"{count} {verdict}" for verdict, count in verdicts.items()), ""]
    lines += [*table(TRACE_HEADER, trace_rows(rows)), ""]
    lines += _figures(outcome)
    lines += _pairs(outcome)
    if outcome.get("evidence_issues"):
        lines += ["### Evidence issues the judge noted", ""]
        lines += [f"- {inline(issue)}" for issue in outcome["evidence_issues"]] + [""]
    lines += _closings(outcome)
    return lines


def transcript_sections(run: Run) -> list[str]:
    """The market panel's part of the run's Markdown transcript (its argument trace), from the stored outcome."""
    return trace_md(run.outcome or {})
