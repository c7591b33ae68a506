"""Structured turn outputs of the market panel (seed 004): openings, paired cross-examination, closings and the
judge's per-argument scores. Both schema variants of the seed are accepted for an argument's evidence: a string
citing KB data points (the article's main text), or a list of {data_point, source} items with `assumptions`
instead of counterpoints (the article's FAQ). Rules that depend on other turns (argument ids, targets, every
argument scored) are checked by the protocol module."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.0"

ChallengeType = Literal["refute", "question_evidence", "concede", "partial"]
Verdict = Literal["UPHELD", "WEAKENED", "REFUTED"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataPoint(_Strict):
    """One cited data point: the value as quoted and the dotted KB path it comes from."""

    data_point: str = Field(
        min_length=1,
        max_length=300,
        description="The value as quoted from the knowledge base, e.g. '58.4' or '27.4 (P/E)' or 'bearish'.",
    )
    source: str = Field(
        min_length=1,
        max_length=200,
        description="The dotted path of the value in the knowledge base, e.g. 'technicals.SPX.rsi_14'.",
    )
    inferred: bool = Field(
        default=False, description="True when the point is derived or not in the knowledge base (not a fact)."
    )


Evidence = str | list[DataPoint]


# --- round 1: opening ----------------------------------------------------------------------------------------


class Argument(_Strict):
    id: str = Field(
        default="",
        max_length=60,
        description="Optional: <seat>_arg_<n>, zero-based in order (code numbers the arguments by position).",
    )
    claim: str = Field(
        min_length=1, max_length=99, description="A single falsifiable proposition, under 100 characters."
    )
    evidence: Evidence = Field(
        description="KB data points supporting the claim: a list of {data_point, source} items (preferred), or "
        "one string naming each path with its value, e.g. 'technicals.SPX.rsi_14 = 58.4'. No vague quantifiers."
    )
    confidence: float = Field(ge=0.0, le=1.0, description="Calibrated to the quality of the evidence.")
    counterpoints: list[str] = Field(
        default_factory=list, max_length=6, description="Weaknesses of this argument you recognise."
    )
    assumptions: list[str] = Field(
        default_factory=list,
        max_length=6,
        description="Premises that would invalidate the argument if false.",
    )


class Opening(_Strict):
    agent: str = Field(default="", max_length=40, description="Optional: your seat id (the seed's wrapper).")
    round: Literal["opening", ""] = ""
    arguments: list[Argument] = Field(min_length=1, max_length=4)


# --- round 2: cross-examination ----------------------------------------------------------------------------------


class Challenge(_Strict):
    target_id: str = Field(
        min_length=1, max_length=60, description="The opponent's argument attacked, e.g. tech_bull_arg_0."
    )
    challenge_type: ChallengeType = Field(
        description="refute: a logical or factual error; question_evidence: the evidence is insufficient or its "
        "conditions are not met; concede: the argument holds; partial: the core holds, degree or scope disputed."
    )
    reasoning: str = Field(min_length=1, max_length=2000)
    new_evidence: Evidence = Field(
        default="", description="New evidence from the knowledge base only (same forms as an argument's)."
    )


class CrossExamination(_Strict):
    challenges: list[Challenge] = Field(min_length=1, max_length=8)


# --- round 3: closing ----------------------------------------------------------------------------------------------


class RefinedClaim(_Strict):
    argument_id: str = Field(
        default="", max_length=60, description="Your argument refined, e.g. tech_bull_arg_0."
    )
    original: str = Field(min_length=1, max_length=300)
    refinement: str = Field(min_length=1, max_length=1200)
    confidence_adjusted: float = Field(ge=0.0, le=1.0)


class Closing(_Strict):
    refined_claims: list[RefinedClaim] = Field(default_factory=list, max_length=4)
    abandoned: list[str] = Field(
        default_factory=list, max_length=4, description="Ids of your own arguments you abandon."
    )
    concessions: list[str] = Field(default_factory=list, max_length=8)
    final_stance: str = Field(min_length=1, max_length=1000, description="50-100 words.")
    conviction_change: Literal["strengthened", "weakened", "unchanged"]


# --- the judge -------------------------------------------------------------------------------------------------------


class ArgumentScore(_Strict):
    argument_id: str = Field(min_length=1, max_length=60)
    logic: int = Field(ge=1, le=10)
    evidence: int = Field(ge=1, le=10)
    clarity: int = Field(ge=1, le=10)
    persuasiveness: int = Field(ge=1, le=10)
    weighted: float | None = Field(
        default=None, ge=0, le=10, description="Your weighted score (code recomputes it from the weights)."
    )
    status: Verdict
    note: str = Field(default="", max_length=600, description="One sentence: why this status.")


class Synthesis(_Strict):
    bull_case_summary: str = Field(min_length=1, max_length=1500)
    bear_case_summary: str = Field(min_length=1, max_length=1500)
    key_insight: str = Field(min_length=1, max_length=1000)


class Judgement(_Strict):
    scores: list[ArgumentScore] = Field(min_length=1, max_length=64)
    synthesis: Synthesis
    stronger_case: Literal["bull", "bear"] = Field(
        description="Which side argued better overall (debate quality, not a market forecast)."
    )
    evidence_issues: list[str] = Field(
        default_factory=list, max_length=20, description="Cited figures that do not match the knowledge base."
    )
