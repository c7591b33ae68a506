"""comparative exports: `export_run --format brief`, the seed-003 decision brief (`templates/decision-brief.md` of
`/evaluate`: frontmatter, then Executive Summary, Evaluation Scorecard, Case for A, Case for B, Judge Synthesis,
Recommendation, Open Questions, Stakeholder Input, Evidence Base, in that order). Rendered from the stored
outcome, so the page and the command give the same file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from debates.contract import ExportFile, ExportUnavailable
from debates.platform.markdown import bullets, dated_filename, md_line, table, yaml_str

if TYPE_CHECKING:
    from debates.models import Run

PROTOCOL = "comparative"
# Why a run of another protocol has no brief (ExportFormat.refusal).
BRIEF_REFUSAL = (
    "run {pk} is a {protocol} run; the decision brief is written for comparative and adversarial runs"
)


# --- texts the brief (and the page) write behind a label of their own -----------------------------------------


def without_lead(text: str, *leads: str) -> str:
    """`text` without a lead-in its label already says ("Priya: Priya: ..." in the brief when the response starts
    with "Priya:"): a leading `lead` followed by a colon or a dash is dropped. Nothing else changes."""
    for lead in leads:
        if not lead.strip():
            continue
        words = r"\s+".join(re.escape(w) for w in lead.split())
        match = re.match(rf"\s*(?:\*\*)?{words}(?:\*\*)?\s*(?::|—|–|-\s)\s*(?:\*\*)?\s*", text, re.IGNORECASE)
        if match and text[match.end() :].strip():
            return text[match.end() :]
    return text


def condition_clause(text: str, option: str, name: str) -> str:
    """A decision condition as the words after "Choose <name> if", which the brief and the page write themselves:
    a condition written whole ("Choose PostgreSQL if the team ...", "Choose option B when ...", "If ...") loses its
    lead-in, so no brief reads "Choose PostgreSQL if Choose PostgreSQL if". Nothing else changes."""
    subjects = "|".join(
        r"\s+".join(re.escape(w) for w in s.split())
        for s in (name, f"option {option}", option, "it", "this option")
    )
    lead = (
        rf"^\s*(?:[-*•]\s*)?(?:(?:choose|pick|select|go\s+with|prefer|recommend)\s+(?:{subjects})(?!\w)"
        rf"(?:\s+(?:over|instead\s+of|rather\s+than)\s+[^,:;]+?)?\s*,?\s+(?:only\s+)?(?:if|when)(?!\w)|if(?!\w))"
        rf"[\s:,]*(?:\.\.\.|…)?\s*"
    )
    match = re.match(lead, text, re.IGNORECASE)
    return text[match.end() :] if match and text[match.end() :].strip() else text


def conditions_shown(conditions: Mapping[str, Any], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """The judge's decision conditions as the brief and the page show them: per option its name and the clauses
    that follow "Choose <name> if"."""
    return [
        {
            "option": option,
            "name": names[option],
            "clauses": [
                condition_clause(str(c), option, names[option])
                for c in conditions.get(f"choose_{option.lower()}_if", [])
            ],
        }
        for option in "AB"
    ]


class BriefUnavailable(ExportUnavailable):
    """This run has no brief; the message says why."""


def brief_filename(run: Run) -> str:
    """The seed's artifact name: `YYYY-MM-DD-evaluate-<slug>.md` (slug about 40 characters)."""
    return dated_filename((run.finished_at or run.created_at).date(), "evaluate", run.topic, run.pk)


def run_export_brief(run: Run) -> str:
    if run.protocol != PROTOCOL:
        raise BriefUnavailable(BRIEF_REFUSAL.format(pk=run.pk, protocol=run.protocol))
    if not run.outcome:
        raise BriefUnavailable(f"run {run.pk} has no outcome yet ({run.status})")
    return comparative_brief_md(run, run.outcome)


def brief_file(run: Run) -> ExportFile:
    """`--format brief` as a file: the decision brief, Markdown."""
    return ExportFile(brief_filename(run), "text/markdown; charset=utf-8", run_export_brief(run).encode())


def _case(outcome: Mapping[str, Any], option: str, lens: str) -> list[str]:
    """An advocate's case. Each text the brief labels ("Why X scores well:", "Closing:", a stakeholder's name, a
    rebuttal's failure) is written without the same words at its start, should the advocate have put them there."""
    name = outcome["options"][option]
    other = outcome["options"]["B" if option == "A" else "A"]
    opening = (outcome.get("openings") or {}).get(option)
    lines = [f"## Case for {name} ({lens})", ""]
    if not opening:
        return [*lines, f"No opening argument: advocate {option} failed.", ""]
    for arg in opening["arguments"]:
        cited = (
            f" _(evidence: {md_line(', '.join(arg['evidence']))})_"
            if arg.get("evidence")
            else " _(no evidence cited)_"
        )
        lines += [
            f"- **{md_line(arg['criterion'])}** ({md_line(arg['id'])}): {md_line(arg['claim'])}{cited}",
            f"  - Why {md_line(name)} scores well: "
            + md_line(
                without_lead(
                    arg["why_ours_scores_well"],
                    f"why {name} scores well",
                    "why it scores well",
                    "why ours scores well",
                )
            ),
            "  - Why the other falls short: "
            + md_line(
                without_lead(
                    arg["why_theirs_falls_short"], "why the other falls short", f"why {other} falls short"
                )
            ),
        ]
    lines += ["", "**Risks of the other option:**", ""]
    lines += [
        f"{n}. {md_line(r['risk'])} ({md_line(r['evidence'])})"
        for n, r in enumerate(opening["risks_of_other"], start=1)
    ]
    if opening.get("stakeholders"):
        lines += ["", "**To the stakeholders:**", ""]
        lines += [
            f"- {md_line(s['stakeholder'])}: {md_line(without_lead(s['response'], s['stakeholder']))}"
            for s in opening["stakeholders"]
        ]
    lines += ["", f"**Closing:** {md_line(without_lead(opening['closing'], 'closing', 'closing argument'))}"]
    flags = list((outcome.get("hedging") or {}).get(option, []))
    if flags:
        lines += [
            "",
            "**Hedging flagged by code:** "
            + "; ".join(f"“{md_line(f['phrase'])}” in {md_line(f['where'])}" for f in flags),
        ]
    rebuttals = [r for r in outcome.get("rebuttals", []) if r["by"] == option]
    if rebuttals:
        lines += ["", "**Rebuttals (round 2):**", ""]
        for r in rebuttals:
            verdict = f" → {r['verdict']} ({r['effectiveness']}/5)" if r.get("verdict") else ""
            why = without_lead(r["why_it_fails"], r["failure"], "why it fails")
            counter = without_lead(r["counter_evidence"], "counter-evidence", "counter evidence")
            lines.append(
                f"- {md_line(r['id'])} on {md_line(r['claim_id'])} “{md_line(r['quoted_claim'])}” — {md_line(r['failure'])}: "
                f"{md_line(why)} Counter-evidence: {md_line(counter)}{verdict}"
            )
    return [*lines, ""]


def comparative_brief_md(run: Run, outcome: Mapping[str, Any]) -> str:
    names = outcome["options"]
    judgement = outcome.get("judgement")
    card = outcome.get("scorecard")
    recommendation = outcome.get("recommendation")
    date = (run.finished_at or run.created_at).date().isoformat()
    lines = [
        "---",
        "type: work",
        "subtype: decision-brief",
        f"date: {date}",
        f"tags: [decision, evaluate, {outcome['decision_type']}]",
        "related: []",
        "status: draft",
        "stakeholders: [" + ", ".join(yaml_str(s["name"]) for s in outcome.get("stakeholders", [])) + "]",
        "---",
        "",
        f"# Decision brief: {md_line(outcome['decision'])}",
        "",
        f"Options: **A: {md_line(names['A'])}** vs **B: {md_line(names['B'])}** · Disputa run {run.pk} · "
        f"mode {outcome['mode']}",
        "",
        "## Executive Summary",
        "",
    ]
    if judgement:
        lines.append(md_line(judgement["executive_summary"]))
    else:
        lines.append(
            "The judge produced no assessment; the advocates' cases are below for the decision owner to adjudicate."
        )
    for step in outcome.get("degradations", []):
        lines += ["", f"> Stepped down {step['from']} → {step['to']}: {md_line(step['reason'])}"]
    for note in outcome.get("notes", []):
        lines += ["", f"> {md_line(note)}"]

    lines += ["", "## Evaluation Scorecard", ""]
    if card:
        rows = [
            [r["criterion"], r["weight_letter"], r["score_a"], r["score_b"], r["weighted_a"], r["weighted_b"]]
            for r in card["rows"]
        ]
        rows.append(["**Total**", "", "", "", f"**{card['total_a']}**", f"**{card['total_b']}**"])
        lines += table(
            [
                "Criterion",
                "Weight",
                names["A"],
                names["B"],
                f"{names['A']} Weighted",
                f"{names['B']} Weighted",
            ],
            rows,
        )
        lines += [
            "",
            f"Weights: H=3, M=2, L=1. Weighted totals recomputed by code; they differ by {card['gap_percent']} % "
            f"({'within' if card['close'] else 'not within'} 5 %).",
        ]
        if card["mismatches"]:
            lines += ["", "The judge's own arithmetic differed (kept as written, not corrected):", ""]
            lines += bullets(card["mismatches"])
        if card["flags"]:
            lines += ["", *bullets(card["flags"])]
    else:
        lines.append("No scorecard: the judge failed.")
    lines.append("")

    lines += _case(outcome, "A", "strategic lens")
    lines += _case(outcome, "B", "pragmatic lens")

    lines += ["## Judge Synthesis", ""]
    if judgement:
        lines += ["### Criterion Scores", ""]
        lines += table(
            ["Criterion", names["A"], names["B"], "More convincing"],
            [
                [
                    s["criterion"],
                    f"{s['score_a']}: {s['justification_a']}",
                    f"{s['score_b']}: {s['justification_b']}",
                    s["more_convincing"],
                ]
                for s in judgement["criterion_scores"]
            ],
        )
        if outcome.get("rebuttals"):
            summary = outcome["rebuttal_summary"]
            lines += [
                "",
                "### Rebuttal Analysis",
                "",
                f"{summary['effective']}/{summary['total']} rebuttals effective (4–5); {summary['collapsed']} claims collapsed.",
                "",
            ]
            lines += table(
                ["Rebuttal", "Targeted claim", "Effectiveness", "Verdict"],
                [
                    [r["id"], r["quoted_claim"], r.get("effectiveness"), r.get("verdict") or "—"]
                    for r in outcome["rebuttals"]
                ],
            )
        audit = judgement["audit"]
        lines += ["", "### Argument Audit", ""]
        for key, label in (
            ("strawman", "Strawman"),
            ("unsupported", "Unsupported claims"),
            ("new_unsupported_in_rebuttals", "New unsupported claims in rebuttals"),
            ("pulled_punches", "Pulled punches"),
        ):
            found = [f"{names[f['advocate']]}: {f['instance']}" for f in audit[key]]
            lines += [f"**{label}:**", *bullets(found, "None flagged."), ""]
        lines += ["### Agreement Zones", "", *bullets(judgement["agreement_zones"]), ""]
        lines += ["### Contested Zones", "", *bullets(judgement["contested_zones"]), ""]
    else:
        lines += ["The judge failed: no synthesis.", ""]

    lines += ["## Recommendation", ""]
    if recommendation and judgement:
        close = " (it's close)" if recommendation["its_close"] else ""
        lines += [
            f"**Recommend: {md_line(recommendation['name'])}**{close}",
            "",
            md_line(recommendation["rationale"]),
            "",
        ]
        if recommendation.get("decisive_rebuttal"):
            lines += [f"Most decisive rebuttal: {md_line(recommendation['decisive_rebuttal'])}.", ""]
        lines += ["### Key Risks", ""]
        lines += table(
            ["Risk", "Likelihood (H/M/L)", "Mitigation"],
            [[r["risk"], r["likelihood"], r["mitigation"]] for r in judgement["key_risks"]],
        )
        lines += ["", "### Decision Conditions", ""]
        lines += [
            f"- Choose {md_line(side['name'])} if {md_line(clause)}"
            for side in conditions_shown(judgement["decision_conditions"], names)
            for clause in side["clauses"]
        ]
        lines.append("")
    else:
        lines += ["No recommendation: the judge failed.", ""]
    lines += _decision_lines(run, outcome)

    lines += ["## Open Questions", ""]
    lines += [*bullets(judgement["open_questions"] if judgement else []), ""]

    lines += ["## Stakeholder Input", ""]
    stakeholders = outcome.get("stakeholders", [])
    if stakeholders:
        lines += table(
            ["Stakeholder", "Known Position", "Confidence", "Notes"],
            [
                [s["name"], s.get("position") or "—", s["confidence"].capitalize(), s.get("notes") or ""]
                for s in stakeholders
            ],
        )
    else:
        lines.append("No stakeholders were listed.")
    lines += ["", "## Evidence Base", "", "### Sources Consulted", ""]
    evidence = outcome.get("evidence", [])
    if evidence:
        for_option = {"A": names["A"], "B": names["B"], "both": "both"}
        lines += table(
            ["Source", "Type", "Summary"],
            [[f"{e['source']} ({for_option[e['option']]})", e["type"], e["summary"]] for e in evidence],
        )
    elif run.material.strip():
        lines.append("No sources were listed; the advocates argued from the run's material.")
    else:
        lines.append(
            "No sources were listed and no material was given: the advocates argued from the options and the "
            "criteria alone, and said so."
        )
    lines += ["", "### Evidence Gaps", ""]
    lines += [f"- [ ] {md_line(g)}" for g in outcome.get("evidence_gaps", [])] or ["- None recorded."]
    lines += ["", f"<!-- {md_line(outcome.get('result_event', ''))} -->", ""]
    return "\n".join(lines)


def _decision_lines(run: Run, outcome: Mapping[str, Any]) -> list[str]:
    """The human's pick beside the judge's recommendation."""
    human = getattr(run, "human_pick", "")
    if not human:
        return ["### Decision", "", "No human decision recorded yet.", ""]
    labels = dict(tuple(pair) for pair in outcome.get("pick_options", []))
    judge = outcome.get("judge_pick", "")
    if not judge:
        stance = "adjudicated without a judge"
    elif human == judge:
        stance = "agrees with the judge"
    else:
        stance = f"overrides the judge ({labels.get(judge, judge)})"
    picker = getattr(run, "picked_by", None)
    who = picker.get_username() if picker is not None else "someone"
    lines = [
        "### Decision",
        "",
        f"**Decided: {md_line(labels.get(human, human))}** — {md_line(stance)}; by {who}.",
    ]
    if getattr(run, "pick_reason", ""):
        lines += ["", f"Reason: {md_line(without_lead(run.pick_reason, 'reason'))}"]
    return [*lines, ""]
