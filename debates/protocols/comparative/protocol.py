"""Comparative debate (seed 003, `/evaluate`): two options judged on weighted criteria. Advocate A argues for
option A through the long-term strategic lens, advocate B for option B through the pragmatic near-term lens, in
parallel; in team mode each then rebuts exactly 3 of the other's claims; a judge scores every criterion 1–5, the
rebuttals SURVIVE / COLLAPSE, audits the arguments and recommends. Code recomputes the judge's weighted scorecard
and the "within 5 %" rule and shows every mismatch instead of correcting it. Each step's schema is built from the
run's state (schema.py), so every criterion argued and scored, three risks, every stakeholder addressed and every
rebuttal scored hold by construction; `accept` fills in the claim ids, criteria and quotes and flags what no schema
can check (an empty text, a closing not of 3 sentences, a claim attacked twice, too few or too many items). The
fallback chain team → subagent → single → raw outputs, the evidence-review gate and the human's pick all live in
this module."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from debates import demo as demo_values
from debates.contract import (
    Accepted,
    DemoStart,
    Done,
    ExportFormat,
    Flag,
    Plan,
    Protocol,
    RunView,
    SeatSignals,
    SeatSpec,
    Stage,
    Step,
    Steps,
)
from debates.engine.registry import register
from debates.protocols.comparative import exports, schema, signals
from debates.protocols.fallback import Chain, failure_reason
from debates.protocols.schemas import at_most, per_key, said

WEIGHTS = {"High": 3, "Medium": 2, "Low": 1}
WEIGHT_LETTER = {"High": "H", "Medium": "M", "Low": "L"}
CLOSE_PERCENT = 5.0

# Seed 003 / evaluate.md: default criteria by decision type (weights are the user's to adjust).
DEFAULT_CRITERIA: dict[str, tuple[tuple[str, str], ...]] = {
    "vendor": (
        ("Cost", "High"),
        ("Feature completeness", "High"),
        ("API/Integration quality", "Medium"),
        ("Vendor stability", "Medium"),
        ("Migration effort", "Medium"),
        ("Team preference", "Low"),
        ("Support quality", "Low"),
    ),
    "architecture": (
        ("Complexity", "High"),
        ("Performance", "Medium"),
        ("Maintainability", "High"),
        ("Team familiarity", "Medium"),
        ("Migration effort", "Medium"),
        ("Extensibility", "Low"),
        ("Operational burden", "High"),
    ),
    "tool": (
        ("Developer experience", "High"),
        ("Feature completeness", "High"),
        ("Community/ecosystem", "Medium"),
        ("Cost", "Medium"),
        ("Integration effort", "Medium"),
        ("Learning curve", "Low"),
    ),
    "strategy": (
        ("Strategic alignment", "High"),
        ("Risk", "High"),
        ("Effort", "Medium"),
        ("Reversibility", "Medium"),
        ("Stakeholder buy-in", "Medium"),
        ("Time to value", "Low"),
    ),
}
DECISION_TYPES = tuple(DEFAULT_CRITERIA)
EVIDENCE_TYPES = ("Doc", "Web", "Slack", "Email", "Interview", "KB", "Data", "Other")

LENSES = {
    "A": "LONG-TERM STRATEGIC FIT: durability, scalability, ecosystem trajectory, and how well the option "
    "positions the organisation for the next 2-3 years",
    "B": "PRAGMATIC NEAR-TERM EXECUTION: implementation speed, risk reduction, team productivity in the next "
    "6-12 months, and practical integration concerns",
}
LENS_SHORT = {"A": "long-term strategic fit", "B": "pragmatic near-term execution"}

# The seed bans these in advocates' arguments; they are flagged (and shown to the judge), not refused.
HEDGES = (
    "both are good options",
    "it depends on your priorities",
    "it depends",
    "either could work",
    "minor concern",
    "slight edge",
)

Mode = Literal["team", "subagent", "single"]


class CriterionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=120)
    weight: Literal["High", "Medium", "Low"] = "Medium"


class StakeholderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=120)
    position: str = Field(default="", max_length=300, description="Known position, e.g. 'prefers A'.")
    confidence: Literal["stated", "inferred"] = "inferred"
    notes: str = Field(default="", max_length=500)


class ComparativeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    option_a: str = Field(min_length=1, max_length=120)
    option_b: str = Field(min_length=1, max_length=120)
    decision_type: Literal["vendor", "architecture", "tool", "strategy"] = "vendor"
    criteria: list[CriterionConfig] = Field(min_length=1, max_length=12)
    evidence: list[schema.EvidenceItem] = Field(default_factory=list, max_length=60)
    stakeholders: list[StakeholderConfig] = Field(default_factory=list, max_length=12)
    evidence_gaps: list[str] = Field(default_factory=list, max_length=20)
    evidence_review: Literal["human", "proceed"] = Field(
        default="proceed",
        description="human: a moderator reviews the evidence and criteria before the debate; proceed: headless.",
    )
    mode: Mode = Field(default="team", description="team (3 rounds) | subagent (no rebuttals) | single.")

    @model_validator(mode="after")
    def _distinct(self) -> ComparativeConfig:
        if _norm(self.option_a) == _norm(self.option_b):
            raise ValueError("option_b: the two options must differ")
        names = [_norm(c.name) for c in self.criteria]
        first = {_norm(c.name): c.name for c in reversed(self.criteria)}
        repeated = sorted({first[n] for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"criteria: {', '.join(repeated)} listed twice")
        return self


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", str(text)).strip().strip("\"'“”‘’").lower()


class ConfigError(ValueError):
    """A config refused in one line; `setting` is the top-level setting it is about ("criteria"), `index` the item of
    a list setting when it is about one."""

    def __init__(self, message: str, setting: str = "", index: int | None = None) -> None:
        super().__init__(message)
        self.setting = setting
        self.index = index


def default_criteria(decision_type: str) -> list[dict[str, str]]:
    return [
        {"name": n, "weight": w} for n, w in DEFAULT_CRITERIA.get(decision_type, DEFAULT_CRITERIA["vendor"])
    ]


# --- line formats shared by the new-run form and the evidence-review gate ----------------------------------------


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("|")]


# How a weight may be written: the seed's High/Medium/Low, its letters H/M/L, or the points 3/2/1.
WEIGHT_SPELLINGS = {
    **dict.fromkeys(("high", "h", "3"), "High"),
    **dict.fromkeys(("medium", "med", "m", "2"), "Medium"),
    **dict.fromkeys(("low", "l", "1"), "Low"),
}
WEIGHT_HELP = "use High, Medium or Low (or H/M/L, or 3/2/1)"


def weight_read(value: Any) -> str | None:
    """A weight as the config stores it (High, Medium or Low); None when `value` is no weight."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        value = str(int(value))
    return WEIGHT_SPELLINGS.get(value.strip().lower()) if isinstance(value, str) else None


def _shown(value: Any, limit: int = 60) -> str:
    """A value as an error message quotes it: short, on one line."""
    text = repr(value) if isinstance(value, str) else _compact(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def criterion_line(line: str, where: str) -> dict[str, str]:
    """One 'Criterion | High' line (the weight may be H/M/L or 3/2/1, and left out for Medium); the error names
    `where` and the value that is wrong."""
    cells = _cells(line)
    name, weight = cells[0], (cells[1] if len(cells) > 1 else "Medium")
    if not name or len(cells) > 2:
        raise ValueError(f"{where}: write 'Criterion | High', 'Medium' or 'Low' (got {line.strip()!r})")
    read = weight_read(weight)
    if read is None:
        raise ValueError(f"{where}: {name!r} has weight {weight!r}; {WEIGHT_HELP}")
    return {"name": name[:120], "weight": read}


def criteria_parse(text: str, label: str = "Criteria") -> list[dict[str, str]]:
    """'Criterion | High/Medium/Low' (or H/M/L, or 3/2/1) per line; an error names the line and the value."""
    criteria: list[dict[str, str]] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        criterion = criterion_line(line, f"{label}, line {number}")
        if _norm(criterion["name"]) in seen:
            raise ValueError(f"{label}, line {number}: {criterion['name']!r} is listed twice")
        seen.add(_norm(criterion["name"]))
        criteria.append(criterion)
    return criteria


def criteria_read(value: Any) -> list[Any]:
    """The config's `criteria` (from `run_debate --config`, the API or the form) with every weight spelt as the
    config stores it: a list of {"name", "weight"} objects or of 'Criterion | High' lines, or the form's text.
    A weight that is none of High/Medium/Low (H/M/L, 3/2/1) is refused in one line naming the criterion and the
    value; anything else the model checks (config_error words its errors the same way)."""
    if isinstance(value, str):
        try:
            return criteria_parse(value, "criteria")
        except ValueError as error:
            raise ConfigError(str(error), "criteria") from None
    if not isinstance(value, list):
        raise ConfigError(
            f'criteria: give a list like [{{"name": "Cost", "weight": "High"}}], not {_shown(value)}',
            "criteria",
        )
    criteria: list[Any] = []
    for number, item in enumerate(value, start=1):
        where = f"criteria: criterion {number}"
        if isinstance(item, str):
            try:
                criteria.append(criterion_line(item, where))
            except ValueError as error:
                raise ConfigError(str(error), "criteria", number - 1) from None
        elif isinstance(item, Mapping):
            item = dict(item)
            if "weight" in item:
                weight = weight_read(item["weight"])
                if weight is None:
                    named = f" ({item['name']!r})" if isinstance(item.get("name"), str) else ""
                    raise ConfigError(
                        f"{where}{named} has weight {_shown(item['weight'])}; {WEIGHT_HELP}",
                        "criteria",
                        number - 1,
                    )
                item["weight"] = weight
            criteria.append(item)
        else:
            raise ConfigError(
                f'{where} should be an object like {{"name": "Cost", "weight": "High"}}, not {_shown(item)}',
                "criteria",
                number - 1,
            )
    return criteria


def criteria_text(criteria: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(f"{c['name']} | {c['weight']}" for c in criteria)


def evidence_parse(text: str, option: str, label: str) -> list[dict[str, str]]:
    """'Source | Type | Summary' (or 'Source | Summary') per line."""
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cells = _cells(line)
        if len(cells) == 2:
            cells = [cells[0], "Doc", cells[1]]
        if len(cells) != 3 or not cells[0] or not cells[2]:
            raise ValueError(f"{label}, line {number}: write 'Source | Type | Summary' (got {line!r})")
        kind = next((t for t in EVIDENCE_TYPES if t.lower() == cells[1].lower()), cells[1] or "Doc")
        items.append(
            {"option": option, "source": cells[0][:200], "type": kind[:40], "summary": cells[2][:2000]}
        )
    return items


def stakeholders_parse(text: str, label: str = "Stakeholders") -> list[dict[str, str]]:
    """'Name | Known position | stated/inferred | notes' per line (the last two optional)."""
    stakeholders = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cells = _cells(line) + ["", "", ""]
        name, position, confidence, notes = cells[0], cells[1], cells[2].lower() or "inferred", cells[3]
        if not name or confidence not in {"stated", "inferred"} or len(_cells(line)) > 4:
            raise ValueError(
                f"{label}, line {number}: write 'Name | Known position | stated or inferred | notes' (got {line!r})"
            )
        stakeholders.append({"name": name, "position": position, "confidence": confidence, "notes": notes})
    return stakeholders


def lines_parse(text: str) -> list[str]:
    return [
        line.strip().lstrip("-*").strip() for line in text.splitlines() if line.strip().lstrip("-*").strip()
    ]


def options_triage(text: str) -> list[str]:
    """The options as listed, one per line — or comma-separated when written on one line ("Postgres, Mongo"),
    so an option named "Acme, Inc." on its own line stays whole. The caller refuses anything but two."""
    separator = "\n" if "\n" in text.strip() else ","
    parts = [p.strip() for p in text.split(separator) if p.strip()]
    return list(dict.fromkeys(parts))


# --- hedging, sentences, arithmetic -----------------------------------------------------------------------------


def hedges_find(texts: Mapping[str, str]) -> list[dict[str, str]]:
    """Banned hedging phrases in an advocate's texts: [{phrase, where, excerpt}]. 'it depends' inside
    'it depends on your priorities' counts once."""
    found = []
    for where, text in texts.items():
        lowered = _norm(text)
        taken: list[tuple[int, int]] = []
        for phrase in HEDGES:
            for match in re.finditer(r"\b" + re.escape(phrase) + r"\b", lowered):
                if any(s <= match.start() < e for s, e in taken):
                    continue
                taken.append((match.start(), match.end()))
                start = max(0, match.start() - 40)
                found.append({"phrase": phrase, "where": where, "excerpt": lowered[start : match.end() + 40]})
    return found


def opening_texts(opening: Mapping[str, Any]) -> dict[str, str]:
    texts = {}
    for arg in opening.get("arguments", []):
        texts[f"{arg.get('id', '?')} ({arg.get('criterion', '')})"] = " ".join(
            str(arg.get(k, "")) for k in ("claim", "why_ours_scores_well", "why_theirs_falls_short")
        )
    for number, risk in enumerate(opening.get("risks_of_other", []), start=1):
        texts[f"risk {number}"] = f"{risk.get('risk', '')} {risk.get('evidence', '')}"
    for item in opening.get("stakeholders", []):
        texts[f"stakeholder {item.get('stakeholder', '')}"] = str(item.get("response", ""))
    texts["closing"] = str(opening.get("closing", ""))
    return texts


def rebuttal_texts(rebuttals: Mapping[str, Any]) -> dict[str, str]:
    return {
        f"rebuttal of {r.get('claim_id', '?')}": f"{r.get('why_it_fails', '')} {r.get('counter_evidence', '')}"
        for r in rebuttals.get("rebuttals", [])
    }


# Words whose full stop does not end a sentence ("vs. Mongo", "e.g. cost", "Acme Inc. ships").
ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "vs",
        "etc",
        "inc",
        "ltd",
        "co",
        "corp",
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "no",
        "approx",
        "est",
        "fig",
        "dept",
        "jr",
        "sr",
        "cf",
        "al",
        "u.s",
        "u.k",
    ]
)
SENTENCE_END = re.compile(r"(?P<word>[\w.]*)(?P<mark>[.!?])[\"'”’)]*\s+(?=(?P<next>\S))")


def sentences_count(text: str) -> int:
    """Sentences as a reader counts them: a run of text ending in . ! or ? (or the end). A full stop after a
    known abbreviation or a single initial, or followed by a lower-case word, does not end a sentence."""
    count, start = 0, 0
    text = text.strip()
    for match in SENTENCE_END.finditer(text):
        word = match["word"].lower().rstrip(".")
        if match["mark"] == "." and (
            word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or match["next"].islower()
        ):
            continue
        if re.search(r"\w", text[start : match.end()]):
            count += 1
        start = match.end()
    return count + (1 if re.search(r"\w", text[start:]) else 0)


def scorecard_compute(criteria: Sequence[Mapping[str, Any]], judgement: Mapping[str, Any]) -> dict[str, Any]:
    """The weighted scorecard recomputed from the judge's 1–5 scores and the run's weights, beside the judge's
    own arithmetic. Every difference is listed in `mismatches`; nothing the judge wrote is changed."""
    scores = {_norm(s["criterion"]): s for s in judgement.get("criterion_scores", [])}
    card = judgement.get("scorecard") or {}
    judge_rows = {_norm(r["criterion"]): r for r in card.get("rows", [])}
    rows, mismatches = [], []
    for criterion in criteria:
        name, label = criterion["name"], criterion["weight"]
        weight = WEIGHTS[label]
        score = scores.get(_norm(name))
        judge = judge_rows.get(_norm(name))
        row: dict[str, Any] = {
            "criterion": name,
            "weight": weight,
            "weight_label": label,
            "weight_letter": WEIGHT_LETTER[label],
            "score_a": score["score_a"] if score else None,
            "score_b": score["score_b"] if score else None,
            "weighted_a": score["score_a"] * weight if score else 0,
            "weighted_b": score["score_b"] * weight if score else 0,
            "judge_weight": judge["weight"] if judge else None,
            "judge_weighted_a": judge["weighted_a"] if judge else None,
            "judge_weighted_b": judge["weighted_b"] if judge else None,
            "mismatch": [],
        }
        if score is None:
            mismatches.append(f"{name}: the judge gave no 1–5 scores (counted as 0)")
            row["mismatch"].append("scores")
        if judge is None:
            mismatches.append(f"{name}: missing from the judge's weighted scorecard")
            row["mismatch"].append("row")
        else:
            if judge["weight"] != weight:
                mismatches.append(
                    f"{name}: the judge used weight {judge['weight']}, the run's weight is {weight}"
                )
                row["mismatch"].append("weight")
            for side in ("a", "b"):
                if score and judge[f"weighted_{side}"] != row[f"weighted_{side}"]:
                    mismatches.append(
                        f"{name}: the judge wrote {side.upper()} weighted = {judge[f'weighted_{side}']}, "
                        f"but {score[f'score_{side}']} × {weight} = {row[f'weighted_{side}']}"
                    )
                    row["mismatch"].append(f"weighted_{side}")
        rows.append(row)
    total_a, total_b = sum(r["weighted_a"] for r in rows), sum(r["weighted_b"] for r in rows)
    judge_total_a, judge_total_b = card.get("total_a"), card.get("total_b")
    for side, code, judged in (("A", total_a, judge_total_a), ("B", total_b, judge_total_b)):
        if judged is not None and judged != code:
            mismatches.append(f"Total {side}: the judge wrote {judged}, the recomputed total is {code}")
    top = max(total_a, total_b)
    gap_percent = round(100 * abs(total_a - total_b) / top, 2) if top else 0.0
    close = 100 * abs(total_a - total_b) <= CLOSE_PERCENT * top  # exact: 119 vs 113 (5.04 %) is not close
    leader = "tie" if total_a == total_b else ("A" if total_a > total_b else "B")
    flags = []
    recommendation = judgement.get("recommendation") or {}
    if recommendation.get("its_close") and not close:
        flags.append(
            f"The judge calls it close, but the weighted totals differ by {gap_percent} % "
            f"(“it's close” is allowed only within {CLOSE_PERCENT:g} %)."
        )
    if recommendation.get("option") and leader != "tie" and recommendation["option"] != leader:
        flags.append(
            f"The judge recommends {recommendation['option']}, but {leader} has the higher recomputed weighted "
            f"total ({max(total_a, total_b)} vs {min(total_a, total_b)})."
        )
    return {
        "rows": rows,
        "total_a": total_a,
        "total_b": total_b,
        "max_total": 5 * sum(r["weight"] for r in rows),
        "judge_total_a": judge_total_a,
        "judge_total_b": judge_total_b,
        "total_mismatch": judge_total_a != total_a or judge_total_b != total_b,
        "mismatches": mismatches,
        "gap_percent": gap_percent,
        "close": close,
        "leader": leader,
        "flags": flags,
    }


# --- step keys -------------------------------------------------------------------------------------------------------


def key_review(number: int) -> str:
    return f"r0/review/{number}"


def key_opening(option: str) -> str:
    return f"r1/opening/advocate-{option.lower()}"


def key_rebuttal(option: str) -> str:
    return f"r2/rebuttal/advocate-{option.lower()}"


KEY_JUDGEMENT = "r3/judgement/judge"
OTHER = {"A": "B", "B": "A"}


@dataclass
class Setup:
    """The evidence base and criteria the debate runs on: the config, amended at the evidence-review gate."""

    criteria: list[dict[str, Any]]
    evidence: list[dict[str, Any]]
    gaps: list[str]
    stakeholders: list[dict[str, Any]]
    reviews: list[dict[str, Any]] = field(default_factory=list)
    passed: bool = True


@register
class Comparative(Protocol[ComparativeConfig]):
    name = "comparative"
    title = "Comparison of two options (weighted scorecard)"
    task_labels = {
        "opening": "Argue for an option",
        "rebuttal": "Rebut the other options",
        "judgement": "Score the options",
        "evidence_review": "Review the evidence",
    }
    description = (
        "Two options, weighted criteria (High 3 / Medium 2 / Low 1). Advocate A argues long-term strategic fit, "
        "advocate B pragmatic near-term execution; each rebuts 3 of the other's claims; a judge scores every "
        "criterion 1–5, rates the rebuttals SURVIVE / COLLAPSE and recommends; code checks the arithmetic; you "
        "pick the winner."
    )
    config_model = ComparativeConfig
    template = "debates/protocols/comparative.html"
    stages = (
        Stage("review", "Evidence review"),
        Stage("openings", "Opening arguments"),
        Stage("rebuttals", "Rebuttals"),
        Stage("judgement", "Judge"),
        Stage("done", "Scorecard"),
    )
    form = "debates.protocols.comparative.form.ComparativeForm"
    # Headless: the evidence-review gate proceeds; the options come from --config '{"options": ["X", "Y"]}'.
    headless_config = {"evidence_review": "proceed"}
    purpose = (
        "Two advocates argue for two options against criteria you weight, then rebut each other's claims; a "
        "judge scores every criterion from 1 to 5 and recommends one. Disputa re-checks the judge's arithmetic, "
        "and you pick the winner."
    )
    when_to_use = (
        "You must choose between two options (a vendor, an architecture, a tool, a strategy) and want the "
        "trade-offs laid out criterion by criterion."
    )
    demo = DemoStart(
        topic=demo_values.DEMO_COMPARISON_TOPIC,
        material=demo_values.DEMO_COMPARISON_MATERIAL,
        config={**demo_values.DEMO_COMPARISON, "evidence_review": "proceed"},
    )
    export_formats = (
        ExportFormat(
            "brief",
            build=exports.brief_file,
            refusal=exports.BRIEF_REFUSAL,
            label="Decision brief",
            url_name="run-export-brief",
            outcome_label="Decision brief (Markdown)",
            needs_outcome=True,
        ),
    )
    signal_tasks = signals.TASKS

    def seat_signals(
        self,
        outcome: Mapping[str, Any],
        config: Mapping[str, Any],
        names: Mapping[str, str],
        turns: Sequence[tuple[str, str, Any]],
    ) -> SeatSignals:
        return signals.seat_signals(outcome, config, names, turns)

    def arithmetic_mismatches(self, outcome: Mapping[str, Any]) -> list[Any] | None:
        return signals.arithmetic_mismatches(outcome)

    def prepare(self, config: dict[str, Any], kb: Any) -> dict[str, Any]:
        """The config as given (the form, `run_debate --config`, the API) made whole: `options` as A and B, the
        criteria's weights spelt High/Medium/Low, the decision type's criteria when none are given, the KB as a
        source. Whatever is wrong is refused in one line naming the setting and the value."""
        config = dict(config)
        options = config.pop("options", None)
        if options is not None:
            if isinstance(options, str):
                listed = options_triage(options)
            elif isinstance(options, list):
                listed = [str(o).strip() for o in options if str(o).strip()]
            else:
                raise ValueError(
                    f'options: give the two options as a list, e.g. ["PostgreSQL", "MongoDB"], not {_shown(options)}'
                )
            if len(listed) != 2:  # seed 003: more than two options are triaged to two first
                raise ValueError(
                    f"options: a comparison takes exactly two options; {len(listed)} were given "
                    f"({', '.join(listed) or 'none'}). Triage them to the two strongest first."
                )
            config["option_a"], config["option_b"] = listed
        if not (config.get("option_a") and config.get("option_b")):
            raise ValueError(
                'options: name the two options to compare, e.g. {"options": ["PostgreSQL", "MongoDB"]}'
            )
        if config.get("criteria"):
            config["criteria"] = criteria_read(config["criteria"])
        else:
            config["criteria"] = default_criteria(str(config.get("decision_type") or "vendor"))
        if kb is not None:
            evidence = list(config.get("evidence") or [])
            if not any(item.get("type") == "KB" for item in evidence):
                evidence.append(
                    {
                        "option": "both",
                        "source": f"Knowledge base: {kb.title}"[:200],
                        "type": "KB",
                        "summary": "The arguments, sources and edges of the knowledge base (the run's material).",
                    }
                )
            config["evidence"] = evidence
        config_check(config)  # a bad setting is refused here in one line, not in pydantic's report
        return config

    def seats(self, config: ComparativeConfig) -> list[SeatSpec]:
        seats = [
            SeatSpec("advocate-a", f"Advocate for {config.option_a}"[:100], "advocate", LENS_SHORT["A"]),
            SeatSpec("advocate-b", f"Advocate for {config.option_b}"[:100], "advocate", LENS_SHORT["B"]),
            SeatSpec("judge", "Judge", "judge"),
        ]
        if config.evidence_review == "human":
            seats.insert(0, SeatSpec("decider", "Decision owner", "decider", human=True))
        return seats

    # --- planning ---------------------------------------------------------------------------------------------

    def setup(self, view: RunView) -> Setup:
        config = self.view_config(view)
        setup = Setup(
            criteria=[c.model_dump() for c in config.criteria],
            evidence=[e.model_dump() for e in config.evidence],
            gaps=list(config.evidence_gaps),
            stakeholders=[s.model_dump() for s in config.stakeholders],
            passed=config.evidence_review != "human",
        )
        number = 1
        while (review := view.payload(key_review(number))) is not None:
            if review.get("criteria"):
                setup.criteria = [dict(c) for c in review["criteria"]]
            setup.evidence += [dict(e) for e in review.get("added_evidence", [])]
            setup.gaps += list(review.get("added_gaps", []))
            setup.reviews.append({"number": number, **dict(review)})
            setup.passed = review["choice"] == "proceed"
            number += 1
        return setup

    def plan(self, view: RunView) -> Plan:
        config = self.view_config(view)
        setup = self.setup(view)
        if not setup.passed:
            return Steps((self._review_step(view, setup, len(setup.reviews) + 1),))

        chain = Chain(config.mode)
        openings: dict[str, Mapping[str, Any] | None] = {"A": None, "B": None}
        if chain.mode in {"team", "subagent"}:
            pending = [o for o in "AB" if not view.finished(key_opening(o))]
            if pending:
                return Steps(tuple(self._opening_step(view, setup, o) for o in pending))
            openings = {o: view.payload(key_opening(o)) for o in "AB"}
            failed = [o for o in "AB" if openings[o] is None]
            if failed and chain.mode == "team":
                chain.down(
                    "subagent",
                    " and ".join(
                        f"advocate {o}'s opening failed ({failure_reason(view, key_opening(o))})"
                        for o in failed
                    )
                    + ": rebuttals need both openings, so the judge scores the openings alone.",
                )
            if len(failed) == 2:
                chain.down(
                    "single", "Both advocates failed: the judge scores both options from the evidence alone."
                )
            elif failed:
                chain.notes.append(
                    f"Only advocate {OTHER[failed[0]]} argued: the judge scores option {failed[0]} from the evidence "
                    "alone (single-agent scoring of that option)."
                )

        rebuttals: dict[str, Mapping[str, Any] | None] = {"A": None, "B": None}
        if chain.mode == "team":
            pending = [o for o in "AB" if not view.finished(key_rebuttal(o))]
            if pending:
                return Steps(tuple(self._rebuttal_step(view, setup, o, openings) for o in pending))
            rebuttals = {o: view.payload(key_rebuttal(o)) for o in "AB"}
            failed = [o for o in "AB" if rebuttals[o] is None]
            if failed:
                chain.down(
                    "subagent",
                    " and ".join(
                        f"advocate {o}'s rebuttal failed ({failure_reason(view, key_rebuttal(o))})"
                        for o in failed
                    )
                    + ": the judge scores the openings only.",
                )
                rebuttals = {"A": None, "B": None}

        if not view.finished(KEY_JUDGEMENT):
            return Steps(
                (self._judgement_step(view, setup, chain, openings, rebuttals),),
                notices=chain.notices(),
            )
        judgement = view.payload(KEY_JUDGEMENT)
        if judgement is None:
            if not any(openings.values()):
                chain.down(
                    "raw", f"The judge failed ({failure_reason(view, KEY_JUDGEMENT)}) and no advocate argued."
                )
                return Done(
                    self._outcome(view, setup, chain, openings, rebuttals, None),
                    failed=True,
                    reason="Every agent failed: there is nothing to adjudicate.",
                )
            chain.down(
                "raw",
                f"The judge failed ({failure_reason(view, KEY_JUDGEMENT)}): the advocates' outputs are shown side by "
                "side for you to adjudicate.",
            )
        return Done(self._outcome(view, setup, chain, openings, rebuttals, judgement))

    def _common(self, view: RunView, setup: Setup) -> dict[str, Any]:
        config = self.view_config(view)
        return {
            "decision": view.topic,
            "decision_type": config.decision_type,
            "options": {"A": config.option_a, "B": config.option_b},
            "criteria": [
                {"name": c["name"], "weight": c["weight"], "points": WEIGHTS[c["weight"]]}
                for c in setup.criteria
            ],
            "evidence": setup.evidence,
            "stakeholders": setup.stakeholders,
            "evidence_gaps": setup.gaps,
        }

    def _review_step(self, view: RunView, setup: Setup, number: int) -> Step:
        return Step(
            key=key_review(number),
            seat="decider",
            stage="review",
            task="evidence_review",
            sees=None,  # the decider reviews the whole evidence base
            schema=schema.EvidenceReview,
            context={
                **self._common(view, setup),
                "number": number,
                "criteria_text": criteria_text(setup.criteria),
            },
        )

    def _opening_step(self, view: RunView, setup: Setup, option: str) -> Step:
        common = self._common(view, setup)
        return Step(
            key=key_opening(option),
            seat=f"advocate-{option.lower()}",
            stage="openings",
            task="opening",
            schema=schema.opening_schema(
                tuple(c["name"] for c in setup.criteria),
                tuple(schema.stakeholder_names(setup.stakeholders)),
                tuple(schema.evidence_sources(setup.evidence)),
            ),
            sees=("r0/",),  # openings are independent: neither advocate reads the other's
            context={
                **common,
                "option": option,
                "option_name": common["options"][option],
                "other": OTHER[option],
                "other_name": common["options"][OTHER[option]],
                "lens": LENSES[option],
                "name": view.seats[f"advocate-{option.lower()}"].name,
            },
        )

    def _rebuttal_step(self, view: RunView, setup: Setup, option: str, openings: Mapping[str, Any]) -> Step:
        config = self.view_config(view)
        names = {"A": config.option_a, "B": config.option_b}
        return Step(
            key=key_rebuttal(option),
            seat=f"advocate-{option.lower()}",
            stage="rebuttals",
            task="rebuttal",
            # The claim ids of both openings (c1.. in criteria order for each): one schema for both rebuttals.
            schema=schema.rebuttals_schema(
                tuple(dict.fromkeys(a["id"] for o in "AB" for a in (openings[o] or {}).get("arguments", [])))
            ),
            sees=("r0/", "r1/"),  # both openings, never the other side's rebuttal
            context={
                **self._common(view, setup),
                "option": option,
                "option_name": names[option],
                "opponent": OTHER[option],
                "opponent_name": names[OTHER[option]],
                "lens": LENSES[option],
                "name": view.seats[f"advocate-{option.lower()}"].name,
                "opponent_opening": dict(openings[OTHER[option]]),
            },
        )

    def _judgement_step(
        self,
        view: RunView,
        setup: Setup,
        chain: Chain,
        openings: Mapping[str, Mapping[str, Any] | None],
        rebuttals: Mapping[str, Mapping[str, Any] | None],
    ) -> Step:
        missing = [o for o in "AB" if openings[o] is None] if chain.mode != "single" else ["A", "B"]
        items = rebuttals_list(openings, rebuttals)
        return Step(
            key=KEY_JUDGEMENT,
            seat="judge",
            stage="judgement",
            task="judgement",
            schema=schema.judgement_schema(
                tuple(c["name"] for c in setup.criteria),
                tuple(r["id"] for r in items),
                schema.convincing_values(missing),
            ),
            # Below team mode the judge scores the openings only, so a surviving lone rebuttal is kept from it.
            sees=None if chain.mode == "team" else ("r0/", "r1/"),
            context={
                **self._common(view, setup),
                "mode": chain.mode,
                "openings": {o: dict(p) if p else None for o, p in openings.items()},
                "missing": missing,
                "rebuttals": items,
                "hedging": {o: hedges_find(opening_texts(p)) if p else [] for o, p in openings.items()},
                "notes": [d["reason"] for d in chain.degradations] + chain.notes,
            },
        )

    # --- validation and acceptance ----------------------------------------------------------------------------

    def validate(self, step: Step, payload: BaseModel, view: RunView) -> list[str]:
        """The agents' steps carry their contract in their schemas; only the human's review can be unusable."""
        if isinstance(payload, schema.EvidenceReview):
            if payload.choice == "adjust_criteria" and not payload.criteria:
                return ["criteria: adjusting the criteria needs at least one criterion"]
            names = [_norm(c.name) for c in payload.criteria]
            return [
                f"criteria: {n!r} is listed twice" for n in sorted({n for n in names if names.count(n) > 1})
            ]
        return []

    def accept(self, step: Step, payload: BaseModel, view: RunView) -> Accepted:
        flags: list[Flag] = []
        if step.task == "opening":
            return Accepted(opening_accept(payload, flags), tuple(flags))
        if step.task == "rebuttal":
            return Accepted(rebuttals_accept(step, payload, flags), tuple(flags))
        if step.task == "judgement":
            return Accepted(judgement_accept(step, payload, flags), tuple(flags))
        return super().accept(step, payload, view)

    # --- the human's evidence-review form ----------------------------------------------------------------------

    def human_payload(self, step: Step, data: Mapping[str, Any]) -> dict[str, Any]:
        if step.task != "evidence_review":
            return super().human_payload(step, data)

        def text(name: str) -> str:
            return str(data.get(name, "") or "")

        choice = text("choice")
        if choice not in {"proceed", "add_evidence", "adjust_criteria"}:
            # Never assume "proceed": the gate exists so the human decides.
            raise ValueError("Choose: proceed with the debate, add more evidence, or adjust the criteria.")
        criteria = criteria_parse(text("criteria"), "Criteria")
        added = (
            evidence_parse(text("evidence_a"), "A", f"Evidence for {step.context['options']['A']}")
            + evidence_parse(text("evidence_b"), "B", f"Evidence for {step.context['options']['B']}")
            + evidence_parse(text("evidence_both"), "both", "Evidence for both")
        )
        if choice == "add_evidence" and not added and not lines_parse(text("gaps")):
            raise ValueError("Add evidence: write at least one line 'Source | Type | Summary', or a gap.")
        return {
            "choice": choice,
            "added_evidence": added,
            "added_gaps": lines_parse(text("gaps")),
            "criteria": criteria,
            "note": text("note").strip()[:1000],
        }

    # --- progress and outcome ------------------------------------------------------------------------------------

    def expected_turns(self, view: RunView) -> int:
        config = self.view_config(view)
        reviews = sum(1 for key in view.turns if key.startswith("r0/"))
        rounds = {"team": 5, "subagent": 3, "single": 1}[config.mode]
        return max(len(view.turns), reviews + rounds)

    def _outcome(
        self,
        view: RunView,
        setup: Setup,
        chain: Chain,
        openings: Mapping[str, Mapping[str, Any] | None],
        rebuttals: Mapping[str, Mapping[str, Any] | None],
        judgement: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        common = self._common(view, setup)
        names = common["options"]
        scorecard = scorecard_compute(setup.criteria, judgement) if judgement else None
        items = rebuttals_list(openings, rebuttals)
        analysis = {r["rebuttal_id"]: r for r in (judgement or {}).get("rebuttal_analysis", [])}
        for item in items:
            scored = analysis.get(item["id"])
            item["effectiveness"] = scored["effectiveness"] if scored else None
            item["verdict"] = scored["verdict"] if scored else ""
        collapsed = {(i["target"], i["claim_id"]) for i in items if i["verdict"] == "COLLAPSE"}
        recommendation = dict(judgement["recommendation"]) if judgement else None
        if recommendation:
            recommendation["name"] = names[recommendation["option"]]
        hedging = {o: hedges_find(opening_texts(p)) if p else [] for o, p in openings.items()}
        for option, payload in rebuttals.items():
            if payload:
                hedging[option] += hedges_find(rebuttal_texts(payload))
        outcome = {
            "protocol": self.name,
            **common,
            "mode": chain.mode,
            "mode_requested": view.config.mode,  # type: ignore[attr-defined]
            "degradations": chain.degradations,
            "notes": chain.notes,
            "reviews": setup.reviews,
            "openings": {o: dict(p) if p else None for o, p in openings.items()},
            "rebuttals": items,
            "collapsed_claims": sorted(f"{o}:{c}" for o, c in collapsed),
            "hedging": hedging,
            "judgement": dict(judgement) if judgement else None,
            "scorecard": scorecard,
            "recommendation": recommendation,
            "rebuttal_summary": {
                "total": len(items),
                "effective": sum(1 for i in items if (i["effectiveness"] or 0) >= 4),
                "collapsed": sum(1 for i in items if i["verdict"] == "COLLAPSE"),
            },
            "judge_pick": recommendation["option"] if recommendation else "",
            "pick_options": [["A", names["A"]], ["B", names["B"]]],
        }
        outcome["chart"] = chart_config(outcome) if scorecard else None
        outcome["result_event"] = result_event(outcome)
        return outcome


# --- what accept fills and flags ------------------------------------------------------------------------------


def too_few(items: Sequence[Any], least: int, where: str, flags: list[Flag], what: str) -> None:
    """Fewer items than the seed asks for: kept as they are, and flagged."""
    if len(items) < least:
        flags.append(Flag("too_few", where, f"{len(items)} {what} given, at least {least} asked."))


def texts_said(items: Sequence[str], where: str, flags: list[Flag], what: str) -> list[str]:
    return [said(text, f"{where}.{index}", flags, what) for index, text in enumerate(items)]


def opening_accept(payload: BaseModel, flags: list[Flag]) -> dict[str, Any]:
    """An opening as stored: its arguments numbered c1.. in criteria order with their criterion filled in, the
    risks and stakeholder responses as lists. Flagged: an empty text, more than 5 sources cited, a closing that is
    not 3 sentences."""
    answer: Any = payload
    arguments = []
    for index, (criterion, given) in enumerate(per_key(answer.arguments).items()):
        where = f"arguments.{index}"
        cited = list(dict.fromkeys(getattr(given, "evidence", [])))
        arguments.append(
            {
                "id": f"c{index + 1}",
                "criterion": criterion,
                "claim": said(given.claim, f"{where}.claim", flags, "claim"),
                "why_ours_scores_well": said(
                    given.why_ours_scores_well, f"{where}.why_ours_scores_well", flags, "case for this option"
                ),
                "why_theirs_falls_short": said(
                    given.why_theirs_falls_short,
                    f"{where}.why_theirs_falls_short",
                    flags,
                    "case against the other",
                ),
                "evidence": at_most(
                    cited, schema.MAX_SOURCES_CITED, f"{where}.evidence", flags, "sources cited"
                ),
            }
        )
    risks = [
        {
            "risk": said(risk.risk, f"risks_of_other.{index}.risk", flags, "risk"),
            "evidence": said(
                risk.evidence, f"risks_of_other.{index}.evidence", flags, "evidence of the risk"
            ),
        }
        for index, risk in enumerate(getattr(answer.risks_of_other, key) for key in schema.RISK_KEYS)
    ]
    responses = per_key(answer.stakeholders) if "stakeholders" in type(answer).model_fields else {}
    stakeholders = [
        {"stakeholder": name, "response": said(text, f"stakeholders.{index}.response", flags, "response")}
        for index, (name, text) in enumerate(responses.items())
    ]
    closing = said(answer.closing, "closing", flags, "closing")
    if closing and (count := sentences_count(closing)) != 3:
        flags.append(Flag("sentence_count", "closing", f"The closing has {count} sentences, not 3."))
    return {"arguments": arguments, "risks_of_other": risks, "stakeholders": stakeholders, "closing": closing}


def rebuttals_accept(step: Step, payload: BaseModel, flags: list[Flag]) -> dict[str, Any]:
    """A rebuttal as stored: each attack with the targeted claim's words quoted by code. Flagged: a claim attacked
    twice, a claim both attacked and conceded as strong, an empty text, more than 6 concessions."""
    answer: Any = payload
    claims = {a["id"]: a for a in step.context["opponent_opening"].get("arguments", [])}
    rebuttals: list[dict[str, Any]] = []
    for index, given in enumerate(per_key(answer.rebuttals).values()):
        where = f"rebuttals.{index}"
        claim = claims.get(given.claim_id)
        if claim is None:  # the enum spans both openings' ids; a legacy opening may lack one
            flags.append(
                Flag("unknown_claim", f"{where}.claim_id", f"The opponent made no claim {given.claim_id}.")
            )
        if any(r["claim_id"] == given.claim_id for r in rebuttals):
            flags.append(
                Flag(
                    "attacked_twice",
                    f"{where}.claim_id",
                    f"Claim {given.claim_id} is attacked more than once.",
                )
            )
        rebuttals.append(
            {
                "claim_id": given.claim_id,
                "quoted_claim": claim["claim"] if claim else "",
                "failure": given.failure,
                "why_it_fails": said(given.why_it_fails, f"{where}.why_it_fails", flags, "reason it fails"),
                "counter_evidence": said(
                    given.counter_evidence, f"{where}.counter_evidence", flags, "counter-evidence"
                ),
            }
        )
    acknowledged = at_most(
        list(dict.fromkeys(answer.acknowledged_strong)),
        schema.MAX_ACKNOWLEDGED,
        "acknowledged_strong",
        flags,
        "claims acknowledged",
    )
    attacked = {r["claim_id"] for r in rebuttals}
    flags += [
        Flag(
            "acknowledged_and_attacked",
            f"acknowledged_strong.{index}",
            f"Claim {claim_id} is both acknowledged as strong and attacked.",
        )
        for index, claim_id in enumerate(acknowledged)
        if claim_id in attacked
    ]
    return {"rebuttals": rebuttals, "acknowledged_strong": acknowledged}


def judgement_accept(step: Step, payload: BaseModel, flags: list[Flag]) -> dict[str, Any]:
    """A judgement as stored: scores and scorecard rows as lists named by criterion, each rebuttal's verdict with
    the targeted claim and the rebuttal quoted by code. Flagged: an empty text, fewer or more items than the seed
    asks for. The judge's arithmetic is kept as written: code recomputes it in the outcome and shows mismatches."""
    answer: Any = payload
    fields = type(answer).model_fields
    scores = []
    for index, (criterion, given) in enumerate(per_key(answer.criterion_scores).items()):
        where = f"criterion_scores.{index}"
        scores.append(
            {
                "criterion": criterion,
                "score_a": given.score_a,
                "score_b": given.score_b,
                "justification_a": said(
                    given.justification_a, f"{where}.justification_a", flags, "justification"
                ),
                "justification_b": said(
                    given.justification_b, f"{where}.justification_b", flags, "justification"
                ),
                "more_convincing": given.more_convincing,
            }
        )
    rebuttals = {r["id"]: r for r in step.context["rebuttals"]}
    analysis = []
    for rebuttal_id, given in (
        per_key(answer.rebuttal_analysis) if "rebuttal_analysis" in fields else {}
    ).items():
        item = rebuttals.get(rebuttal_id, {})
        analysis.append(
            {
                "rebuttal_id": rebuttal_id,
                "targeted_claim": item.get("quoted_claim", ""),
                "rebuttal": f"{item.get('failure', '')}: {item.get('why_it_fails', '')}",
                "effectiveness": given.effectiveness,
                "verdict": given.verdict,
            }
        )
    audit = {
        name: [
            {
                "advocate": f.advocate,
                "instance": said(f.instance, f"audit.{name}.{index}.instance", flags, "finding"),
            }
            for index, f in enumerate(
                at_most(getattr(answer.audit, name), schema.MAX_FINDINGS, f"audit.{name}", flags, "findings")
            )
        ]
        for name in schema.Audit.model_fields
    }
    rows = [
        {
            "criterion": criterion,
            "weight": row.weight,
            "weighted_a": row.weighted_a,
            "weighted_b": row.weighted_b,
        }
        for criterion, row in per_key(answer.scorecard.rows).items()
    ]
    given_recommendation = answer.recommendation
    recommendation = {
        "option": given_recommendation.option,
        "its_close": given_recommendation.its_close,
        "rationale": said(given_recommendation.rationale, "recommendation.rationale", flags, "rationale"),
        "decisive_rebuttal": getattr(given_recommendation, "decisive_rebuttal", ""),
    }
    conditions = {}
    for name in ("choose_a_if", "choose_b_if"):
        where = f"decision_conditions.{name}"
        given = getattr(answer.decision_conditions, name)
        too_few(given, schema.CONDITIONS[0], where, flags, "conditions")
        conditions[name] = texts_said(
            at_most(given, schema.CONDITIONS[1], where, flags, "conditions"), where, flags, "condition"
        )
    too_few(answer.open_questions, schema.OPEN_QUESTIONS[0], "open_questions", flags, "open questions")
    questions = at_most(
        answer.open_questions, schema.OPEN_QUESTIONS[1], "open_questions", flags, "open questions"
    )
    too_few(answer.key_risks, schema.KEY_RISKS[0], "key_risks", flags, "key risks")
    risks = [
        {
            "risk": said(r.risk, f"key_risks.{index}.risk", flags, "risk"),
            "likelihood": r.likelihood,
            "mitigation": said(r.mitigation, f"key_risks.{index}.mitigation", flags, "mitigation"),
        }
        for index, r in enumerate(
            at_most(answer.key_risks, schema.KEY_RISKS[1], "key_risks", flags, "key risks")
        )
    ]
    zones = {
        name: texts_said(
            at_most(getattr(answer, name), schema.MAX_ZONES, name, flags, "zones"), name, flags, "zone"
        )
        for name in ("agreement_zones", "contested_zones")
    }
    return {
        "executive_summary": said(answer.executive_summary, "executive_summary", flags, "executive summary"),
        "criterion_scores": scores,
        "rebuttal_analysis": analysis,
        "audit": audit,
        "scorecard": {"rows": rows, "total_a": answer.scorecard.total_a, "total_b": answer.scorecard.total_b},
        "recommendation": recommendation,
        "decision_conditions": conditions,
        "open_questions": texts_said(questions, "open_questions", flags, "open question"),
        "key_risks": risks,
        **zones,
    }


def rebuttals_list(
    openings: Mapping[str, Mapping[str, Any] | None], rebuttals: Mapping[str, Mapping[str, Any] | None]
) -> list[dict[str, Any]]:
    """The 6 rebuttals of team mode with their ids (A1–A3 by advocate A, B1–B3 by advocate B)."""
    items = []
    for option in "AB":
        payload = rebuttals.get(option)
        target = openings.get(OTHER[option]) or {}
        claims = {a["id"]: a for a in target.get("arguments", [])}
        for number, rebuttal in enumerate((payload or {}).get("rebuttals", []), start=1):
            claim = claims.get(rebuttal["claim_id"], {})
            items.append(
                {
                    "id": f"{option}{number}",
                    "by": option,
                    "target": OTHER[option],
                    "criterion": claim.get("criterion", ""),
                    **dict(rebuttal),
                }
            )
    return items


def chart_config(outcome: Mapping[str, Any]) -> dict[str, Any]:
    """Chart.js configs: the per-criterion 1–5 scores of A and B, and the weighted totals."""
    card = outcome["scorecard"]
    names = outcome["options"]
    colours = {"A": "#2f6fb0", "B": "#c0672b"}
    labels = [f"{r['criterion']} ({r['weight_letter']})" for r in card["rows"]]
    return {
        "scores": {
            "type": "bar",
            "data": {
                "labels": labels,
                "datasets": [
                    {
                        "label": f"A: {names[o]}" if o == "A" else f"B: {names[o]}",
                        "data": [r[f"score_{o.lower()}"] for r in card["rows"]],
                        "backgroundColor": colours[o],
                    }
                    for o in "AB"
                ],
            },
            "options": {
                "animation": False,
                "maintainAspectRatio": False,
                "scales": {
                    "y": {
                        "min": 0,
                        "max": 5,
                        "ticks": {"stepSize": 1},
                        "title": {"display": True, "text": "score 1–5"},
                    }
                },
                "plugins": {"title": {"display": True, "text": "Scores per criterion"}},
            },
        },
        "totals": {
            "type": "bar",
            "data": {
                "labels": [f"A: {names['A']}", f"B: {names['B']}"],
                "datasets": [
                    {
                        "label": "Weighted total",
                        "data": [card["total_a"], card["total_b"]],
                        "backgroundColor": [colours["A"], colours["B"]],
                    }
                ],
            },
            "options": {
                "animation": False,
                "maintainAspectRatio": False,
                "indexAxis": "y",
                "scales": {"x": {"min": 0, "max": card["max_total"]}},
                "plugins": {
                    "legend": {"display": False},
                    "title": {"display": True, "text": f"Weighted totals (of {card['max_total']})"},
                },
            },
        },
    }


def result_event(outcome: Mapping[str, Any]) -> str:
    """The seed's `[evaluate-result: …]` line, for the audit trail and the brief."""
    card = outcome.get("scorecard") or {}
    summary = outcome.get("rebuttal_summary") or {}
    mode = {"team": "team-debate", "subagent": "subagent-debate", "single": "single", "raw": "raw"}[
        outcome["mode"]
    ]
    rounds = {"team": 3, "subagent": 1, "single": 0, "raw": 0}[outcome["mode"]]
    recommendation = outcome.get("recommendation") or {}
    return (
        f"[evaluate-result: topic={outcome['decision']}, type={outcome['decision_type']}, "
        f"option_a={outcome['options']['A']}, option_b={outcome['options']['B']}, "
        f"recommendation={recommendation.get('name', 'none')}, score_a={card.get('total_a', '-')}, "
        f"score_b={card.get('total_b', '-')}, mode={mode}, rounds={rounds}, "
        f"rebuttals_effective={summary.get('effective', 0)}/{summary.get('total', 0)}, "
        f"claims_collapsed={summary.get('collapsed', 0)}, stakeholders={len(outcome.get('stakeholders', []))}]"
    )


# The settings of each part of the config, named when an unknown one is given.
_SETTINGS: dict[str, type[BaseModel]] = {
    "": ComparativeConfig,
    "criteria": CriterionConfig,
    "stakeholders": StakeholderConfig,
    "evidence": schema.EvidenceItem,
}
_ITEM = {"criteria": "criterion", "stakeholders": "stakeholder", "evidence": "source", "evidence_gaps": "gap"}


def _config_path(loc: Sequence[Any], config: Mapping[str, Any]) -> str:
    """Where a config error is, in the words of the config: "criteria: criterion 2 ('Risk') weight"."""
    parts = [str(p) for p in loc]
    if len(loc) >= 2 and isinstance(loc[1], int) and str(loc[0]) in _ITEM:
        items = config.get(str(loc[0]))
        item = items[loc[1]] if isinstance(items, list) and 0 <= loc[1] < len(items) else None
        named = ""
        if isinstance(item, Mapping) and isinstance(item.get("name") or item.get("source"), str):
            named = f" ({item.get('name') or item.get('source')!r})"
        where = f"{loc[0]}: {_ITEM[str(loc[0])]} {loc[1] + 1}{named}"
        return " ".join([where, *parts[2:]])
    return ".".join(parts)


def config_error(error: ValidationError, config: Mapping[str, Any] | None = None) -> str:
    """A config's validation errors in one line, each naming the setting and the value (not pydantic's report)."""
    config = config or {}
    lines = []
    for e in error.errors():
        loc, kind, ctx, given = e["loc"], e["type"], e.get("ctx") or {}, e.get("input")
        path = _config_path(loc, config)
        if kind == "literal_error":
            text = f"{path}: {_shown(given)} is not one of {ctx.get('expected', '')}"
        elif kind == "extra_forbidden":
            model = _SETTINGS.get(str(loc[0]) if len(loc) > 1 else "")
            settings = [
                *(["options"] if model is ComparativeConfig else []),
                *(model.model_fields if model else []),
            ]
            known = f" (the settings are {', '.join(settings)})" if settings else ""
            text = f"{path}: no such setting{known}"
        elif kind == "missing":
            text = f"{path}: missing"
        elif kind == "too_long":
            text = f"{path}: at most {ctx.get('max_length')} allowed, {ctx.get('actual_length')} given"
        elif kind == "too_short":
            text = f"{path}: at least {ctx.get('min_length')} needed, {ctx.get('actual_length')} given"
        elif kind == "string_too_long":
            text = f"{path}: at most {ctx.get('max_length')} characters, {len(str(given))} given"
        elif kind == "string_too_short":
            text = f"{path}: must not be empty"
        elif kind == "value_error":  # the model's own checks name their setting
            text = str(ctx.get("error") or e["msg"].removeprefix("Value error, "))
        else:
            text = f"{path}: {e['msg'][:1].lower()}{e['msg'][1:]} (got {_shown(given)})"
        lines.append(text)
    more = f" (and {len(lines) - 3} more)" if len(lines) > 3 else ""
    return "; ".join(lines[:3]) + more


def config_check(config: Mapping[str, Any]) -> ComparativeConfig:
    """`config` validated, or a ConfigError of one line naming the setting and the value."""
    try:
        return ComparativeConfig.model_validate(config)
    except ValidationError as error:
        message = config_error(error, config)
        loc = error.errors()[0]["loc"]
        setting = str(loc[0]) if loc else message.split(":", 1)[0]
        index = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
        raise ConfigError(message, setting, index) from None
