"""Structured turn outputs of the comparative debate (seed 003, `/evaluate`). Counts that depend on the run's
criteria, the opponent's opening or the mode are checked by the protocol module; a JSON schema cannot express them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.0"

Option = Literal["A", "B"]
Likelihood = Literal["H", "M", "L"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- round 1: opening arguments ------------------------------------------------------------------------------


class CriterionArgument(_Strict):
    id: str = Field(pattern=r"^c[0-9]{1,2}$", description="c1, c2, ... one per criterion, in criteria order.")
    criterion: str = Field(min_length=1, max_length=120, description="The criterion's name, as given.")
    claim: str = Field(
        min_length=1, max_length=400, description="The headline claim for this criterion (quotable)."
    )
    why_ours_scores_well: str = Field(min_length=1, max_length=1500)
    why_theirs_falls_short: str = Field(min_length=1, max_length=1500)
    evidence: list[str] = Field(
        default_factory=list, max_length=5, description="Sources of the evidence base cited, by name."
    )


class Risk(_Strict):
    risk: str = Field(
        min_length=1, max_length=600, description="A concrete, specific risk of the other option."
    )
    evidence: str = Field(min_length=1, max_length=600)


class StakeholderResponse(_Strict):
    stakeholder: str = Field(min_length=1, max_length=120)
    response: str = Field(
        min_length=1, max_length=800, description="Acknowledge their preference; why they should reconsider."
    )


class Opening(_Strict):
    arguments: list[CriterionArgument] = Field(min_length=1, max_length=12)
    risks_of_other: list[Risk] = Field(min_length=3, max_length=3, description="Exactly 3 risks.")
    stakeholders: list[StakeholderResponse] = Field(default_factory=list, max_length=12)
    closing: str = Field(min_length=1, max_length=1200, description="Exactly 3 sentences.")


# --- round 2: rebuttals -----------------------------------------------------------------------------------------


class Rebuttal(_Strict):
    claim_id: str = Field(pattern=r"^c[0-9]{1,2}$", description="Id of the opponent's claim attacked.")
    quoted_claim: str = Field(min_length=1, max_length=400, description="The claim's words, quoted exactly.")
    failure: Literal["logic gap", "missing evidence", "cherry-picked data", "ignores a trade-off"]
    why_it_fails: str = Field(min_length=1, max_length=1500)
    counter_evidence: str = Field(
        min_length=1, max_length=1500, description="Counter-evidence or stronger framing."
    )


class Rebuttals(_Strict):
    rebuttals: list[Rebuttal] = Field(
        min_length=1,
        max_length=3,
        description="Exactly 3 of the weakest claims (all of them if there are fewer).",
    )
    acknowledged_strong: list[str] = Field(
        default_factory=list, max_length=6, description="Ids of opponent claims conceded as genuinely strong."
    )


# --- round 3: the judge -------------------------------------------------------------------------------------------


class CriterionScore(_Strict):
    criterion: str = Field(min_length=1, max_length=120)
    score_a: int = Field(ge=1, le=5)
    score_b: int = Field(ge=1, le=5)
    justification_a: str = Field(min_length=1, max_length=600, description="One sentence.")
    justification_b: str = Field(min_length=1, max_length=600, description="One sentence.")
    more_convincing: Literal["A", "B", "even", "n/a"] = Field(
        description="Which advocate argued this criterion better; n/a when there were no advocates."
    )


class RebuttalScore(_Strict):
    rebuttal_id: str = Field(
        pattern=r"^[AB][1-3]$", description="A1-A3: by advocate A; B1-B3: by advocate B."
    )
    targeted_claim: str = Field(min_length=1, max_length=400, description="Quote of the claim attacked.")
    rebuttal: str = Field(min_length=1, max_length=600, description="Quote of the rebuttal.")
    effectiveness: int = Field(
        ge=1,
        le=5,
        description="1 irrelevant or strawman; 2 weak evidence; 3 reasonable, not decisive; 4 strong; "
        "5 devastating, the claim cannot stand.",
    )
    verdict: Literal["SURVIVE", "COLLAPSE"] = Field(description="What becomes of the targeted claim.")


class Finding(_Strict):
    advocate: Option
    instance: str = Field(min_length=1, max_length=600)


class Audit(_Strict):
    strawman: list[Finding] = Field(default_factory=list, max_length=10)
    unsupported: list[Finding] = Field(default_factory=list, max_length=10)
    new_unsupported_in_rebuttals: list[Finding] = Field(default_factory=list, max_length=10)
    pulled_punches: list[Finding] = Field(default_factory=list, max_length=10)


class WeightedRow(_Strict):
    criterion: str = Field(min_length=1, max_length=120)
    weight: int = Field(ge=1, le=3, description="High=3, Medium=2, Low=1.")
    weighted_a: int = Field(ge=0, le=15)
    weighted_b: int = Field(ge=0, le=15)


class Scorecard(_Strict):
    rows: list[WeightedRow] = Field(min_length=1, max_length=12)
    total_a: int = Field(ge=0)
    total_b: int = Field(ge=0)


class Recommendation(_Strict):
    option: Option
    its_close: bool = Field(description="True only if the weighted totals are within 5 % of each other.")
    rationale: str = Field(min_length=1, max_length=1200, description="2-3 sentences, no hedging.")
    decisive_rebuttal: str = Field(
        default="", max_length=4, description="Id of the most decisive rebuttal (team mode), else empty."
    )


class DecisionConditions(_Strict):
    choose_a_if: list[str] = Field(min_length=2, max_length=3)
    choose_b_if: list[str] = Field(min_length=2, max_length=3)


class KeyRisk(_Strict):
    risk: str = Field(min_length=1, max_length=600)
    likelihood: Likelihood
    mitigation: str = Field(min_length=1, max_length=600)


class Judgement(_Strict):
    executive_summary: str = Field(min_length=1, max_length=1500, description="3-5 sentences.")
    criterion_scores: list[CriterionScore] = Field(min_length=1, max_length=12)
    rebuttal_analysis: list[RebuttalScore] = Field(
        default_factory=list, max_length=6, description="Team mode: all 6 rebuttals; otherwise empty."
    )
    audit: Audit
    scorecard: Scorecard
    recommendation: Recommendation
    decision_conditions: DecisionConditions
    open_questions: list[str] = Field(min_length=2, max_length=4)
    key_risks: list[KeyRisk] = Field(min_length=2, max_length=3)
    agreement_zones: list[str] = Field(default_factory=list, max_length=6)
    contested_zones: list[str] = Field(default_factory=list, max_length=6)


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
