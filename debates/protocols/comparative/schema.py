"""Turn outputs of the comparative debate (seed 003, `/evaluate`).

What a step asks the model is built from the run's state (debates/protocols/schemas.py), so the seed's counts hold
by construction: `arguments` has one required property per criterion and `stakeholders` one per stakeholder,
`risks_of_other` exactly three, `rebuttals` exactly min(3, claims) attacks naming a claim by an enum of the claim
ids, the judge's `criterion_scores` and scorecard `rows` one per criterion and `rebuttal_analysis` one per rebuttal
id; sources cited are an enum of the evidence base's sources, scores an enum of 1-5. What code knows is not asked
(a claim's id and criterion, the words of the claim a rebuttal picked, the quotes of a scored rebuttal): the
protocol fills it in `accept`, which maps the answer to the stored shape and flags what no schema can check.

The stored shape (what the templates, the exports, the signals and later seats read) is the seed's:
- opening: {arguments: [{id: c1.., criterion, claim, why_ours_scores_well, why_theirs_falls_short,
  evidence: [source]}], risks_of_other: [{risk, evidence}] × 3, stakeholders: [{stakeholder, response}], closing};
- rebuttal: {rebuttals: [{claim_id, quoted_claim, failure, why_it_fails, counter_evidence}],
  acknowledged_strong: [claim id]};
- judgement: {executive_summary, criterion_scores: [{criterion, score_a, score_b, justification_a,
  justification_b, more_convincing}], rebuttal_analysis: [{rebuttal_id, targeted_claim, rebuttal, effectiveness,
  verdict}], audit, scorecard: {rows: [{criterion, weight, weighted_a, weighted_b}], total_a, total_b},
  recommendation: {option, its_close, rationale, decisive_rebuttal}, decision_conditions, open_questions,
  key_risks, agreement_zones, contested_zones}.
The evidence-review gate is a human's form (`EvidenceReview`), stored as submitted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from debates.protocols.schemas import STRICT, choice, one_per, stated

SCHEMA_VERSION = "1.0"

Option = Literal["A", "B"]
Likelihood = Literal["H", "M", "L"]
Failure = Literal["logic gap", "missing evidence", "cherry-picked data", "ignores a trade-off"]
Verdict = Literal["SURVIVE", "COLLAPSE"]
Score = Literal[1, 2, 3, 4, 5]
Weight = Literal[1, 2, 3]

# The seed's counts, stated in the schema for the models that honour them and flagged by `accept` otherwise.
MAX_SOURCES_CITED = 5
MAX_ACKNOWLEDGED = 6
MAX_FINDINGS = 10
CONDITIONS = (2, 3)
OPEN_QUESTIONS = (2, 4)
KEY_RISKS = (2, 3)
MAX_ZONES = 6
MAX_REBUTTALS = 3
RISK_KEYS = ("risk_1", "risk_2", "risk_3")


class _Strict(BaseModel):
    model_config = STRICT


# --- round 1: the opening ---------------------------------------------------------------------------------------


class Risk(_Strict):
    risk: str = stated(
        minLength=1, maxLength=600, description="A concrete, specific risk of the other option."
    )
    evidence: str = stated(minLength=1, maxLength=600, description="What in the evidence base shows it.")


class Risks(_Strict):
    """Exactly three risks of choosing the other option."""

    risk_1: Risk
    risk_2: Risk
    risk_3: Risk


def evidence_sources(evidence: Sequence[Mapping[str, Any]]) -> list[str]:
    """The evidence base's source names, each once, in order: what an argument may cite."""
    return list(dict.fromkeys(str(item["source"]) for item in evidence))


def stakeholder_names(stakeholders: Sequence[Mapping[str, Any]]) -> list[str]:
    """The stakeholders an opening addresses, each once, in order."""
    return list(dict.fromkeys(str(item["name"]) for item in stakeholders))


@lru_cache(maxsize=64)
def opening_schema(
    criteria: tuple[str, ...], stakeholders: tuple[str, ...], sources: tuple[str, ...]
) -> type[BaseModel]:
    """An advocate's opening: one argument per criterion (keyed by its name), three risks of the other option, one
    response per stakeholder, a closing. Built from what both advocates share, so they share one schema."""
    argument_fields: dict[str, Any] = {
        "claim": (str, stated(minLength=1, maxLength=400, description="The headline claim (quotable).")),
        "why_ours_scores_well": (str, stated(minLength=1, maxLength=1500)),
        "why_theirs_falls_short": (str, stated(minLength=1, maxLength=1500)),
    }
    if sources:
        argument_fields["evidence"] = (
            list[choice(sources)],  # type: ignore[misc]
            stated(
                maxItems=MAX_SOURCES_CITED,
                description="The sources of the evidence base this argument cites, by name (none: []).",
            ),
        )
    argument = create_model("Argument", __config__=STRICT, **argument_fields)
    fields: dict[str, Any] = {
        "arguments": (
            one_per("Arguments", criteria, argument, description="The argument on this criterion."),
            ...,
        ),
        "risks_of_other": (Risks, ...),
    }
    if stakeholders:
        fields["stakeholders"] = (
            one_per(
                "StakeholderResponses",
                stakeholders,
                str,
                description="To this stakeholder: acknowledge their preference; if they prefer the other option, "
                "why they should reconsider.",
            ),
            ...,
        )
    fields["closing"] = (str, stated(minLength=1, maxLength=1200, description="Exactly 3 sentences."))
    return create_model("Opening", __config__=STRICT, **fields)


# --- round 2: the rebuttal --------------------------------------------------------------------------------------


def rebuttal_keys(claims: int) -> tuple[str, ...]:
    """The attacks a rebuttal makes: three, or all the opponent's claims when it has fewer."""
    return tuple(f"rebuttal_{number}" for number in range(1, min(MAX_REBUTTALS, claims) + 1))


@lru_cache(maxsize=64)
def rebuttals_schema(claim_ids: tuple[str, ...]) -> type[BaseModel]:
    """An advocate's rebuttal: min(3, claims) attacks, each naming the opponent's claim by id (the platform quotes
    its words), and the claims conceded as strong. Both advocates' claims are numbered c1.. in criteria order, so
    both rebuttals share one schema."""
    claim = choice(claim_ids)
    attack = create_model(
        "Rebuttal",
        __config__=STRICT,
        claim_id=(
            claim,
            Field(description="The opponent's claim attacked, by id; attack a different one each time."),
        ),
        failure=(Failure, Field(description="Why the claim fails.")),
        why_it_fails=(str, stated(minLength=1, maxLength=1500)),
        counter_evidence=(
            str,
            stated(
                minLength=1, maxLength=1500, description="Counter-evidence or a stronger framing, specific."
            ),
        ),
    )
    return create_model(
        "Rebuttals",
        __config__=STRICT,
        rebuttals=(one_per("Attacks", rebuttal_keys(len(claim_ids)), attack), ...),
        acknowledged_strong=(
            list[claim],  # type: ignore[valid-type]
            stated(
                maxItems=MAX_ACKNOWLEDGED,
                description="The opponent's claims conceded as genuinely strong, by id (none: []).",
            ),
        ),
    )


# --- round 3: the judge -----------------------------------------------------------------------------------------


class Finding(_Strict):
    advocate: Option
    instance: str = stated(minLength=1, maxLength=600)


class Audit(_Strict):
    strawman: list[Finding] = stated(maxItems=MAX_FINDINGS)
    unsupported: list[Finding] = stated(maxItems=MAX_FINDINGS)
    new_unsupported_in_rebuttals: list[Finding] = stated(maxItems=MAX_FINDINGS)
    pulled_punches: list[Finding] = stated(maxItems=MAX_FINDINGS)


class RebuttalScore(_Strict):
    effectiveness: Score = Field(
        description="1 irrelevant or strawman; 2 weak evidence; 3 reasonable, not decisive; 4 strong; "
        "5 devastating, the claim cannot stand."
    )
    verdict: Verdict = Field(description="What becomes of the targeted claim.")


class WeightedRow(_Strict):
    weight: Weight = Field(description="The criterion's weight: High=3, Medium=2, Low=1.")
    weighted_a: int = stated(minimum=0, maximum=15, description="A's score × the weight.")
    weighted_b: int = stated(minimum=0, maximum=15, description="B's score × the weight.")


class DecisionConditions(_Strict):
    choose_a_if: list[str] = stated(
        minItems=CONDITIONS[0],
        maxItems=CONDITIONS[1],
        description='Each condition as the words after "Choose A if" (the platform writes that lead-in).',
    )
    choose_b_if: list[str] = stated(
        minItems=CONDITIONS[0],
        maxItems=CONDITIONS[1],
        description='Each condition as the words after "Choose B if" (the platform writes that lead-in).',
    )


class KeyRisk(_Strict):
    risk: str = stated(minLength=1, maxLength=600)
    likelihood: Likelihood
    mitigation: str = stated(minLength=1, maxLength=600)


def convincing_values(missing: Sequence[str]) -> tuple[str, ...]:
    """Which advocate argued a criterion better: A, B or even when both argued; n/a only when neither did; any of
    them when one option had no advocate."""
    if not missing:
        return ("A", "B", "even")
    if set(missing) >= {"A", "B"}:
        return ("n/a",)
    return ("A", "B", "even", "n/a")


@lru_cache(maxsize=64)
def judgement_schema(
    criteria: tuple[str, ...], rebuttal_ids: tuple[str, ...], convincing: tuple[str, ...]
) -> type[BaseModel]:
    """The judge's assessment: one score per criterion (keyed by its name), one verdict per rebuttal id (team mode),
    the audit, the judge's own weighted scorecard (recomputed by code), the recommendation and the rest."""
    score = create_model(
        "CriterionScore",
        __config__=STRICT,
        score_a=(Score, ...),
        score_b=(Score, ...),
        justification_a=(str, stated(minLength=1, maxLength=600, description="One sentence.")),
        justification_b=(str, stated(minLength=1, maxLength=600, description="One sentence.")),
        more_convincing=(
            choice(convincing),
            Field(description="Which advocate argued this criterion better."),
        ),
    )
    recommendation_fields: dict[str, Any] = {
        "option": (Option, ...),
        "its_close": (
            bool,
            Field(description="True only if the weighted totals are within 5 % of each other."),
        ),
        "rationale": (str, stated(minLength=1, maxLength=1200, description="2-3 sentences, no hedging.")),
    }
    if rebuttal_ids:
        recommendation_fields["decisive_rebuttal"] = (
            choice(rebuttal_ids),
            Field(description="The most decisive rebuttal, by id."),
        )
    scorecard = create_model(
        "Scorecard",
        __config__=STRICT,
        rows=(one_per("ScorecardRows", criteria, WeightedRow, description="This criterion's row."), ...),
        total_a=(int, stated(minimum=0)),
        total_b=(int, stated(minimum=0)),
    )
    fields: dict[str, Any] = {
        "executive_summary": (str, stated(minLength=1, maxLength=1500, description="3-5 sentences.")),
        "criterion_scores": (
            one_per("CriterionScores", criteria, score, description="Both options' scores."),
            ...,
        ),
    }
    if rebuttal_ids:
        fields["rebuttal_analysis"] = (
            one_per(
                "RebuttalAnalysis",
                rebuttal_ids,
                RebuttalScore,
                description="This rebuttal's effectiveness and verdict (A1-A3 by advocate A, B1-B3 by B).",
            ),
            ...,
        )
    fields |= {
        "audit": (Audit, ...),
        "scorecard": (scorecard, ...),
        "recommendation": (create_model("Recommendation", __config__=STRICT, **recommendation_fields), ...),
        "decision_conditions": (DecisionConditions, ...),
        "open_questions": (list[str], stated(minItems=OPEN_QUESTIONS[0], maxItems=OPEN_QUESTIONS[1])),
        "key_risks": (list[KeyRisk], stated(minItems=KEY_RISKS[0], maxItems=KEY_RISKS[1])),
        "agreement_zones": (list[str], stated(maxItems=MAX_ZONES)),
        "contested_zones": (list[str], stated(maxItems=MAX_ZONES)),
    }
    return create_model("Judgement", __config__=STRICT, **fields)


# --- the evidence-review gate (a human step) -----------------------------------------------------------------------


class EvidenceItem(_Strict):
    option: Literal["A", "B", "both"]
    source: str = Field(min_length=1, max_length=200)
    type: str = Field(
        default="Doc", max_length=40, description="Slack / Email / Doc / Web / Interview / KB …"
    )
    summary: str = Field(min_length=1, max_length=2000)


class CriterionSpec(_Strict):
    name: str = Field(min_length=1, max_length=120)
    weight: Literal["High", "Medium", "Low"]


class EvidenceReview(_Strict):
    choice: Literal["proceed", "add_evidence", "adjust_criteria"]
    added_evidence: list[EvidenceItem] = Field(default_factory=list, max_length=30)
    added_gaps: list[str] = Field(default_factory=list, max_length=20)
    criteria: list[CriterionSpec] = Field(
        default_factory=list, max_length=12, description="adjust_criteria: the whole new list."
    )
    note: str = Field(default="", max_length=1000)
