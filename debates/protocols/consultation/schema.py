"""Structured outputs of the consultation (seed 001, LLM_Conclave's 4-round engine) and the round artifacts built
from them.

The turn outputs are what the seats write, in the seed's snake_case JSON: R1 an independent position per agent,
R2 the judge's synthesis (consensus points, tensions, priority order), R3 each agent's challenge-or-defend reply
and the judge's cross-examination synthesis, R4 the verdict (converge: one recommendation with dissent; explore:
a menu of options). A tension needs at least two viewpoints, but the schema accepts fewer: such a tension is
dropped from the artifact with a warning, as the seed does, rather than failing the judge's turn.

The artifacts are the seed's exported form: `artifact_type`, `schema_version` "1.0", `round_number`, `created_at`
(ISO-8601 with a `T`) around the round's fields; they are validated when a round commits and exported by
`export_run --format artifacts`."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SCHEMA_VERSION: Literal["1.0"] = "1.0"

Severity = Literal["high", "medium", "low"]
Confidence = Field(ge=0.0, le=1.0, description="0-1.")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


Text = Field(min_length=1, max_length=3000)
Short = Field(min_length=1, max_length=600)


# --- R1: independent positions ------------------------------------------------------------------------------


class IndependentPosition(_Strict):
    position: str = Field(min_length=1, max_length=600, description="Your answer in 1-2 sentences.")
    key_points: list[str] = Field(min_length=1, max_length=8, description="The points your answer rests on.")
    rationale: str = Field(min_length=1, max_length=4000, description="2-3 paragraphs of reasoning.")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are, 0-1.")
    prose_excerpt: str = Field(min_length=1, max_length=600, description="A quotable one-paragraph summary.")

    @field_validator("key_points")
    @classmethod
    def _no_blank_points(cls, points: list[str]) -> list[str]:
        if any(not p.strip() for p in points):
            raise ValueError("every key point must say something")
        return points


# --- R2: the judge's synthesis ------------------------------------------------------------------------------


class ConsensusPoint(_Strict):
    point: str = Field(min_length=1, max_length=1000)
    supporting_agents: list[str] = Field(min_length=1, max_length=5, description="Agent names, as given.")
    confidence: float = Field(ge=0.0, le=1.0)


class Viewpoint(_Strict):
    agent: str = Field(min_length=1, max_length=100)
    viewpoint: str = Field(min_length=1, max_length=1500)


class Tension(_Strict):
    topic: str = Field(min_length=1, max_length=300)
    # At least 2 are needed; fewer is accepted here and the tension is dropped from the artifact with a warning.
    viewpoints: list[Viewpoint] = Field(default_factory=list, max_length=5)


class Synthesis(_Strict):
    consensus_points: list[ConsensusPoint] = Field(default_factory=list, max_length=8)
    tensions: list[Tension] = Field(default_factory=list, max_length=8)
    priority_order: list[str] = Field(
        default_factory=list, max_length=10, description="What to settle first, most important first."
    )


# --- R3: cross-examination ----------------------------------------------------------------------------------


class AgentChallenge(_Strict):
    target_agent: str = Field(min_length=1, max_length=100, description='An agent\'s name, or "Consensus".')
    challenge_point: str = Field(min_length=1, max_length=1500)
    evidence: list[str] = Field(default_factory=list, max_length=5)


class CrossExamReply(_Strict):
    """One agent's Round 3 reply: challenge the consensus or defend its position."""

    critique: str = Field(min_length=1, max_length=2000)
    challenges: list[AgentChallenge] = Field(default_factory=list, max_length=5)
    defense: str = Field(default="", max_length=2000)
    revised_position: str = Field(default="", max_length=1000, description="Empty when unchanged.")


class Challenge(_Strict):
    challenger: str = Field(min_length=1, max_length=100)
    target_agent: str = Field(min_length=1, max_length=100)
    challenge: str = Field(min_length=1, max_length=1500)
    evidence: list[str] = Field(default_factory=list, max_length=5)


class Rebuttal(_Strict):
    agent: str = Field(min_length=1, max_length=100)
    rebuttal: str = Field(min_length=1, max_length=1500)


class CrossExamSynthesis(_Strict):
    challenges: list[Challenge] = Field(default_factory=list, max_length=15)
    rebuttals: list[Rebuttal] = Field(default_factory=list, max_length=15)
    unresolved: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="Tensions still open; empty when nothing new was raised.",
    )


# --- R4: the verdict ----------------------------------------------------------------------------------------


class Dissent(_Strict):
    agent: str = Field(min_length=1, max_length=100)
    concern: str = Field(min_length=1, max_length=1500)
    severity: Severity


class Contribution(_Strict):
    agent: str = Field(min_length=1, max_length=100)
    key_insight: str = Field(min_length=1, max_length=1000)
    adopted: bool


class VerdictConverge(_Strict):
    analysis: str = Field(default="", max_length=4000, description="Your reasoning, written first.")
    recommendation: str = Field(min_length=1, max_length=2000)
    confidence: float = Field(
        ge=0.0, le=1.0, description=">0.9 strong consensus; 0.7-0.9 minor dissent; <0.7 major tensions."
    )
    evidence: list[str] = Field(min_length=1, max_length=8)
    dissent: list[Dissent] = Field(default_factory=list, max_length=5)
    per_agent_contributions: list[Contribution] = Field(default_factory=list, max_length=5)


class ExploreOption(_Strict):
    option: str = Field(min_length=1, max_length=120)
    description: str = Field(min_length=1, max_length=1500)
    pros: list[str] = Field(default_factory=list, max_length=6)
    cons: list[str] = Field(default_factory=list, max_length=6)
    best_when: str = Field(default="", max_length=600)
    championed_by: list[str] = Field(default_factory=list, max_length=5)


class VerdictExplore(_Strict):
    analysis: str = Field(default="", max_length=4000, description="Your reasoning, written first.")
    recommendations: list[ExploreOption] = Field(min_length=1, max_length=6)
    synergies: list[str] = Field(default_factory=list, max_length=6)
    confidence: float = Field(ge=0.0, le=1.0)
    summary: str = Field(min_length=1, max_length=2000)


# --- round artifacts (the seed's exported form) -------------------------------------------------------------


class _Artifact(_Strict):
    schema_version: Literal["1.0"] = SCHEMA_VERSION
    created_at: str

    @field_validator("created_at")
    @classmethod
    def _iso(cls, value: str) -> str:
        if "T" not in value:
            raise ValueError("created_at must be an ISO-8601 timestamp with a T")
        datetime.fromisoformat(value.replace("Z", "+00:00"))
        return value


class IndependentArtifact(_Artifact):
    artifact_type: Literal["independent"] = "independent"
    agent_id: str = Field(min_length=1)
    round_number: Literal[1] = 1
    position: str = Field(min_length=1)
    key_points: list[str] = Field(min_length=1)
    rationale: str = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0)
    prose_excerpt: str


class SynthesisArtifact(_Artifact):
    artifact_type: Literal["synthesis"] = "synthesis"
    round_number: Literal[2] = 2
    consensus_points: list[ConsensusPoint]
    tensions: list[Tension]
    priority_order: list[str]

    @field_validator("tensions")
    @classmethod
    def _two_viewpoints(cls, tensions: list[Tension]) -> list[Tension]:
        if any(len(t.viewpoints) < 2 for t in tensions):
            raise ValueError("a tension needs at least 2 viewpoints")
        return tensions


class CrossExamArtifact(_Artifact):
    artifact_type: Literal["cross_exam"] = "cross_exam"
    round_number: Literal[3] = 3
    challenges: list[Challenge]
    rebuttals: list[Rebuttal]
    unresolved: list[str]


class VerdictConvergeArtifact(_Artifact):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    artifact_type: Literal["verdict"] = "verdict"
    round_number: Literal[4] = 4
    recommendation: str = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[str] = Field(min_length=1)
    dissent: list[Dissent]
    analysis: str | None = Field(default=None, alias="_analysis")
    per_agent_contributions: list[Contribution] = Field(default_factory=list)


class VerdictExploreArtifact(_Artifact):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    artifact_type: Literal["verdict"] = "verdict"
    round_number: Literal[4] = 4
    recommendations: list[ExploreOption] = Field(min_length=1)
    synergies: list[str]
    confidence: float = Field(ge=0.0, le=1.0)
    summary: str
    analysis: str | None = Field(default=None, alias="_analysis")
