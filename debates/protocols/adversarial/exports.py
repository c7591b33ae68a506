"""The Competitive Review of an adversarial run, in the seed's output format (`## Competitive Review` with
`### Advocate Position`, `### Challenger Position`, `### Judge Synthesis`, then "Key narratives" numbered 1–3,
"Agreement zones", "Contested zones"), plus the verdict and the human's decision. Rendered from the stored
outcome only, so it reads the same whenever it is exported."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from debates.contract import ExportFile, ExportUnavailable
from debates.platform.markdown import dated_filename, md_line

if TYPE_CHECKING:
    from debates.models import Run

# Why a run of another protocol has no review (ExportFormat.refusal: the format is the comparative brief's).
BRIEF_REFUSAL = (
    "run {pk} is a {protocol} run; the decision brief is written for comparative and adversarial runs"
)


def review_filename(run: Run) -> str:
    """`YYYY-MM-DD-review-<slug>.md`, as the decision brief is named (slug about 40 characters)."""
    return dated_filename((run.finished_at or run.created_at).date(), "review", run.topic, run.pk)


def review_file(run: Run) -> ExportFile:
    """`--format brief` of an adversarial run: the Competitive Review, Markdown."""
    if not run.outcome:
        raise ExportUnavailable(f"run {run.pk} has no outcome yet ({run.status})")
    return ExportFile(
        review_filename(run), "text/markdown; charset=utf-8", adversarial_review_md(run).encode()
    )


def _one_line(value: Any) -> str:
    return md_line(value if value is not None else "")


def _cell(value: Any) -> str:
    return _one_line(value if value not in (None, "") else "—").replace("|", "\\|")


def _bullets(items: Sequence[Any], empty: str = "None.") -> list[str]:
    return [f"- {_one_line(i)}" for i in items] or [f"- {empty}"]


def _quote(text: Any) -> str:
    return f"> {_one_line(text)}"


def _advocate(case: Mapping[str, Any] | None) -> list[str]:
    lines = ["### Advocate Position", ""]
    if not case:
        return [*lines, "_The advocate failed: no case was made for approval._", ""]
    lines += [_one_line(case.get("summary")), "", "**Strengths:**", ""]
    for s in case.get("strengths", []):
        lines += [f"- **{s['id']}** {_one_line(s['point'])}", f"  {_quote(s['quote'])}"]
        if s.get("why_it_matters"):
            lines.append(f"  Why it matters: {_one_line(s['why_it_matters'])}")
    lines += ["", "**Trade-offs acknowledged:**", "", *_bullets(case.get("tradeoffs_acknowledged", []))]
    lines += ["", "**Addressable blockers:**", ""]
    lines += _bullets(
        [f"{b['blocker']} → {b['how_addressed']}" for b in case.get("addressable_blockers", [])]
    )
    return [*lines, ""]


def _challenger(concerns: Mapping[str, Any] | None, flags: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["### Challenger Position", ""]
    if not concerns:
        return [*lines, "_The challenger failed: no concerns were raised._", ""]
    lines += ["**Acknowledged strengths:**", "", *_bullets(concerns.get("acknowledged_strengths", []))]
    lines += ["", "**Concerns, ranked by severity:**", ""]
    for c in concerns.get("concerns", []):
        softened = f" _(softened: {', '.join(c['softeners'])})_" if c.get("softeners") else ""
        lines += [
            f"{c['rank']}. **[{c['severity']}] {_one_line(c['title'])}**{softened}",
            f"   {_quote(c['quote'])}",
            f"   Risk: {_one_line(c['risk'])}",
            f"   Fix: {_one_line(c['fix'])}",
        ]
    if flags:
        lines += ["", "Softeners flagged: " + "; ".join(f"“{f['phrase']}” in {f['where']}" for f in flags)]
    return [*lines, ""]


def _table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    def addressed(value: Any) -> str:
        return {True: "yes", False: "no"}.get(value, "—")

    lines = [
        "| Rank | Severity | Concern | Addressed | Genuine / stretch | Score |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['rank']} | {r['severity']} | {_cell(r['title'])} | {addressed(r['addressed'])} | "
        f"{_cell(r['genuine'])} | {_cell(r['score'])} |"
        for r in rows
    ]
    return lines


def _label(outcome: Mapping[str, Any], value: str) -> str:
    return {str(v): str(label) for v, label in outcome.get("pick_options", [])}.get(value, value)


def _decision(run: Run, outcome: Mapping[str, Any]) -> list[str]:
    pick = str(getattr(run, "human_pick", "") or "")
    if not pick:
        return ["**Human decision:** not recorded yet."]
    judge = str(outcome.get("judge_pick") or "")
    if not judge:
        stance = "adjudicated without a judge's verdict"
    elif pick == judge:
        stance = "confirms the judge"
    else:
        stance = "overrides the judge"
    lines = [f"**Human decision:** {_label(outcome, pick)} ({stance})."]
    reason = _one_line(getattr(run, "pick_reason", "") or "")
    return [*lines, f"Reason: {reason}"] if reason else lines


def adversarial_review_md(run: Run) -> str:
    outcome: Mapping[str, Any] = run.outcome or {}
    verdict = str(outcome.get("verdict") or "")
    softeners = outcome.get("softeners") or {}
    by = "the judge's single-agent review" if outcome.get("verdict_by") == "single-review" else "the judge"
    lines = [
        "## Competitive Review",
        "",
        f"**Question:** {_one_line(run.topic)}",
        f"**Artifact:** {_one_line(outcome.get('artifact_type', ''))} · **Mode:** {outcome.get('mode', '')}",
        (
            f"**Verdict:** {verdict.upper()} — {_label(outcome, verdict)} (by {by})"
            if verdict
            else "**Verdict:** none: the judge failed; the raw outputs are shown for the human to adjudicate."
        ),
        *_decision(run, outcome),
        "",
    ]
    if outcome.get("framework"):
        lines += ["**Evaluation framework:** " + "; ".join(_one_line(f) for f in outcome["framework"]), ""]
    for d in outcome.get("degradations", []):
        lines.append(f"> Degraded {d['from']} → {d['to']}: {_one_line(d['reason'])}")
    for note in [*outcome.get("notes", []), *outcome.get("verdict_checks", [])]:
        lines.append(f"> {_one_line(note)}")
    if outcome.get("degradations") or outcome.get("notes") or outcome.get("verdict_checks"):
        lines.append("")

    if outcome.get("mode") == "single":
        review = outcome.get("review") or {}
        lines += ["### Single-agent review", "", _one_line(review.get("summary", "")), ""]
        lines += _bullets([f"{s['point']} (“{_one_line(s['quote'])}”)" for s in review.get("strengths", [])])
        lines.append("")
    else:
        lines += _advocate(outcome.get("case"))
        lines += _challenger(outcome.get("concerns"), softeners.get("challenger", []))
    if softeners.get("advocate"):
        lines += [
            "Advocate softeners flagged: "
            + "; ".join(f"“{f['phrase']}” in {f['where']}" for f in softeners["advocate"]),
            "",
        ]

    lines += ["### Judge Synthesis", ""]
    judgement = outcome.get("judgement")
    if verdict:
        lines += [f"**Verdict: {verdict.upper()}.** {_one_line(outcome.get('rationale', ''))}", ""]
    if judgement:
        surviving = [
            f"{s['strength_id']}: {s['point']} — {s['why']}" for s in outcome.get("surviving_arguments", [])
        ]
        lines += ["**Surviving advocate arguments:**", "", *_bullets(surviving), ""]
        pulled = outcome.get("pulled_punches")
        if pulled:
            lines += [f"**Pulled punches?** {pulled['verdict']}: {_one_line(pulled['explanation'])}", ""]
    elif outcome.get("mode") == "raw":
        lines += ["_The judge failed: no synthesis. Read both positions above and decide._", ""]
    if outcome.get("concern_table"):
        lines += [*_table(outcome["concern_table"]), ""]
        counts = outcome.get("concern_counts") or {}
        if counts.get("assessed"):
            lines += [
                f"{counts['genuine']} genuine, {counts['stretch']} stretch; {counts['unaddressed']} unaddressed by "
                f"the advocate ({counts['serious_unaddressed']} genuine and scored 4+).",
                "",
            ]

    narratives = outcome.get("key_narratives", [])
    lines += ["**Key narratives**", ""]
    lines += [f"{n}. {_one_line(text)}" for n, text in enumerate(narratives, start=1)] or ["None."]
    lines += ["", "**Agreement zones**", "", *_bullets(outcome.get("agreement_zones", []))]
    lines += ["", "**Contested zones**", "", *_bullets(outcome.get("contested_zones", []))]
    return "\n".join(lines).rstrip() + "\n"
