"""Structured turn outputs of the adversarial review (seed 003 family): an advocate's case for the artifact, a
challenger's exactly-five ranked concerns, and a judge's binary verdict. Rules that depend on the artifact or on
other turns (quotes, rank order, one assessment per concern) are checked by the protocol module, since a JSON
schema cannot express them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.0"

Severity = Literal["critical", "high", "medium", "low"]
Verdict = Literal["approve", "reject"]
# Most severe first: rank 1 must be at least as severe as rank 2, and so on.
SEVERITY_ORDER: dict[str, int] = {"critical": 4, "high": 3, "medium": 2, "low": 1}
CONCERN_COUNT = 5


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Strength(_Strict):
    id: str = Field(pattern=r"^s[0-9]{1,2}$", description="s1, s2, ... unique within the case.")
    point: str = Field(min_length=1, max_length=1000, description="Why the artifact is ready, in one claim.")
    quote: str = Field(
        min_length=1, max_length=1000, description="Exact words of the artifact that support the point."
    )
    why_it_matters: str = Field(
        min_length=1, max_length=1000, description="The consequence for the decision."
    )


class Blocker(_Strict):
    blocker: str = Field(min_length=1, max_length=1000, description="A genuine blocker, stated plainly.")
    how_addressed: str = Field(
        min_length=1, max_length=1000, description="The concrete change that makes it addressable."
    )


class AdvocateCase(_Strict):
    summary: str = Field(
        min_length=1, max_length=2000, description="The strongest case that the artifact is ready."
    )
    strengths: list[Strength] = Field(min_length=2, max_length=6)
    tradeoffs_acknowledged: list[str] = Field(
        default_factory=list, max_length=6, description="Real costs of approving, acknowledged honestly."
    )
    addressable_blockers: list[Blocker] = Field(
        default_factory=list, max_length=6, description="Genuine blockers, each with how it can be addressed."
    )


class Concern(_Strict):
    rank: int = Field(ge=1, le=CONCERN_COUNT, description="1 = most severe. Each rank 1-5 used once.")
    severity: Severity = Field(description="critical > high > medium > low; non-increasing with rank.")
    title: str = Field(min_length=1, max_length=200)
    quote: str = Field(min_length=1, max_length=1000, description="Exact words of the artifact concerned.")
    risk: str = Field(min_length=1, max_length=1500, description="The concrete production risk if unchanged.")
    fix: str = Field(min_length=1, max_length=1500, description="A specific fix.")


class ChallengerConcerns(_Strict):
    acknowledged_strengths: list[str] = Field(
        min_length=1, max_length=5, description="What works, acknowledged before arguing it is outweighed."
    )
    concerns: list[Concern] = Field(min_length=CONCERN_COUNT, max_length=CONCERN_COUNT)


class SurvivingArgument(_Strict):
    strength_id: str = Field(description="The id (s1, s2, ...) of an advocate strength that survived.")
    why: str = Field(min_length=1, max_length=1000)


class ConcernAssessment(_Strict):
    rank: int = Field(ge=1, le=CONCERN_COUNT, description="The rank of the challenger's concern assessed.")
    addressed_by_advocate: bool = Field(description="Did the advocate's case answer this concern?")
    genuine: Literal["genuine", "stretch"]
    score: int = Field(
        ge=1, le=5, description="1 = pure stretch ... 5 = genuine and serious; genuine needs 3+, stretch 1-2."
    )
    note: str = Field(default="", max_length=1000)


class PulledPunches(_Strict):
    verdict: Literal["genuine", "performative"] = Field(
        description="genuine: the challenger pressed real issues; performative: it pulled its punches."
    )
    explanation: str = Field(min_length=1, max_length=1000)


class AdversarialJudgement(_Strict):
    surviving_arguments: list[SurvivingArgument] = Field(default_factory=list, max_length=6)
    concern_assessments: list[ConcernAssessment] = Field(
        default_factory=list,
        max_length=CONCERN_COUNT,
        description="Exactly one per challenger concern (none when the challenger failed).",
    )
    pulled_punches: PulledPunches | None = Field(
        default=None, description="Required when there are concerns to judge."
    )
    agreement_zones: list[str] = Field(
        default_factory=list, max_length=6, description="Where both sides agree: high confidence."
    )
    contested_zones: list[str] = Field(
        default_factory=list, max_length=6, description="Where they disagree: flag for attention."
    )
    key_narratives: list[str] = Field(
        min_length=2, max_length=3, description="2-3 narratives that survived, to emphasise downstream."
    )
    verdict: Verdict
    rationale: str = Field(min_length=1, max_length=2000)


class ReviewStrength(_Strict):
    point: str = Field(min_length=1, max_length=1000)
    quote: str = Field(min_length=1, max_length=1000, description="Exact words of the artifact.")


class SingleReview(_Strict):
    """The single-agent review, when both advocate and challenger failed."""

    summary: str = Field(min_length=1, max_length=2000)
    strengths: list[ReviewStrength] = Field(min_length=1, max_length=6)
    concerns: list[Concern] = Field(min_length=CONCERN_COUNT, max_length=CONCERN_COUNT)
    key_narratives: list[str] = Field(min_length=2, max_length=3)
    verdict: Verdict
    rationale: str = Field(min_length=1, max_length=2000)
