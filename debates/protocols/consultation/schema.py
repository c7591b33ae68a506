"""Structured outputs of the consultation (seed 001, LLM_Conclave's 4-round engine) and the round artifacts built
from them.

The turn outputs are what the seats write, in the seed's snake_case JSON: R1 an independent position per agent,
R2 the judge's synthesis (consensus points, tensions, priority order), R3 each agent's challenge-or-defend reply
and the judge's cross-examination synthesis, R4 the verdict (converge: one recommendation with dissent; explore:
a menu of options).

The schemas a model is sent are built for the step from the run (issue 22): every reference to an agent is an
enum of the agents who gave a Round 1 position (plus "Consensus" as a challenge's target), so a model that honours
the schema and nothing else cannot name anyone else. Lengths, ranges and most counts are stated, not enforced
(Anthropic's decoder does not enforce them): `Consultation.accept` clamps a confidence into 0-1, keeps the first
items of a list that is too long and flags an empty text, a self-challenge, a reply that neither challenges nor
defends and a low-confidence verdict without dissent. A tension needs at least two viewpoints, but the schema
accepts fewer: such a tension is dropped from the artifact with a warning, as the seed does.

The stored payloads keep the seed's shape; the item models below (`ConsensusPoint`, `Tension`, ...) are that
shape, used by the artifacts.

The artifacts are the seed's exported form: `artifact_type`, `schema_version` "1.0", `round_number`, `created_at`
(ISO-8601 with a `T`) around the round's fields; they are validated when a round commits and exported by
`export_run --format artifacts`. Every verdict, explore ones included, carries `dissent` (empty when there is
none): the seed's importer reads it on every verdict."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from debates.protocols.schemas import STRICT, choice

SCHEMA_VERSION: Literal["1.0"] = "1.0"
CONSENSUS_AGENT = "Consensus"  # a challenge's target when it is the consensus, not one agent
SCHEMAS_CACHED = 256  # built schemas kept per builder: one per panel of agents (a round's seats share one)

Severity = Literal["high", "medium", "low"]

# What a list or a text may hold at most, stated in the schema and enforced by `accept` (lists: the first kept).
MAX_KEY_POINTS = 8
MAX_CONSENSUS_POINTS = MAX_TENSIONS = 8
MAX_VIEWPOINTS = MAX_SUPPORTERS = 5
MAX_PRIORITIES = 10
MAX_CHALLENGES = MAX_EVIDENCE = 5
MAX_JUDGE_CHALLENGES = MAX_REBUTTALS = 15
MAX_UNRESOLVED = 10
MAX_VERDICT_EVIDENCE = 8
MAX_DISSENT = MAX_CONTRIBUTIONS = 5
MAX_OPTIONS = 6
MAX_PROS = MAX_CONS = MAX_SYNERGIES = 6


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _text(description: str, max_length: int) -> Any:
    """A text the model writes: one character at least and `max_length` at most, stated for the models that
    honour it; validation does not depend on it (an empty text is flagged by `accept`)."""
    return Field(description=description, json_schema_extra={"minLength": 1, "maxLength": max_length})


def _unit(description: str) -> Any:
    """A number in 0-1, stated; `accept` clamps one outside and flags it."""
    return Field(description=description, json_schema_extra={"minimum": 0, "maximum": 1})


def _items(description: str, max_items: int, *, at_least_one: bool = False) -> Any:
    """A list of at most `max_items` (stated; `accept` keeps the first and flags the rest). At least one is
    enforced: both decoders honour minItems 1."""
    return Field(
        min_length=1 if at_least_one else None,
        description=description,
        json_schema_extra={"maxItems": max_items},
    )


Said = Annotated[str, Field(json_schema_extra={"minLength": 1})]  # a list's text item: stated non-empty


# --- the stored shape of the items (the seed's; the artifacts validate it) ----------------------------------


class ConsensusPoint(_Strict):
    point: str = Field(min_length=1)
    supporting_agents: list[str] = Field(min_length=1, max_length=MAX_SUPPORTERS)
    confidence: float = Field(ge=0.0, le=1.0)


class Viewpoint(_Strict):
    agent: str = Field(min_length=1)
    viewpoint: str = Field(min_length=1)


class Tension(_Strict):
    topic: str = Field(min_length=1)
    # At least 2 are needed; fewer is accepted here and the tension is dropped from the artifact with a warning.
    viewpoints: list[Viewpoint] = Field(default_factory=list, max_length=MAX_VIEWPOINTS)


class Challenge(_Strict):
    challenger: str = Field(min_length=1)
    target_agent: str = Field(min_length=1)
    challenge: str = Field(min_length=1)
    evidence: list[str] = Field(default_factory=list, max_length=MAX_EVIDENCE)


class Rebuttal(_Strict):
    agent: str = Field(min_length=1)
    rebuttal: str = Field(min_length=1)


class Dissent(_Strict):
    agent: str = Field(min_length=1)
    concern: str = Field(min_length=1)
    severity: Severity


class Contribution(_Strict):
    agent: str = Field(min_length=1)
    key_insight: str = Field(min_length=1)
    adopted: bool


class ExploreOption(_Strict):
    option: str = Field(min_length=1)
    description: str = Field(min_length=1)
    pros: list[str] = Field(default_factory=list, max_length=MAX_PROS)
    cons: list[str] = Field(default_factory=list, max_length=MAX_CONS)
    best_when: str = ""
    championed_by: list[str] = Field(default_factory=list, max_length=MAX_SUPPORTERS)


# --- what the model is sent ---------------------------------------------------------------------------------
# R1 refers to nothing: one schema for every agent. The others are built from the agents who gave a Round 1
# position (cached: the seats of a stage share one schema, and plan() runs often).


class IndependentPosition(_Strict):
    """Round 1: an agent's own answer."""

    position: str = _text("Your answer in 1-2 sentences, committing to a side.", 600)
    key_points: list[Said] = _items(
        "The 2-5 points your answer rests on, one sentence each.", MAX_KEY_POINTS, at_least_one=True
    )
    rationale: str = _text("2-3 paragraphs of reasoning, with the evidence from the material.", 4000)
    confidence: float = _unit("How sure you are, 0-1 (above 0.85 only if the material leaves little doubt).")
    prose_excerpt: str = _text("A quotable one-paragraph summary of your view.", 600)


def _agent(agents: Sequence[str], description: str) -> Any:
    return (choice(agents), Field(description=description))


def _agent_list(
    agents: Sequence[str], description: str, max_items: int, *, at_least_one: bool = False
) -> Any:
    return (list[choice(agents)], _items(description, max_items, at_least_one=at_least_one))  # type: ignore[misc]


@lru_cache(maxsize=SCHEMAS_CACHED)
def synthesis_schema(agents: tuple[str, ...]) -> type[BaseModel]:
    """Round 2, the judge: consensus points and tensions name agents from `agents` only."""
    point = create_model(
        "ConsensusPointAnswer",
        __config__=STRICT,
        point=(str, _text("What the agents agree on.", 1000)),
        supporting_agents=_agent_list(agents, "The agents who hold it.", MAX_SUPPORTERS, at_least_one=True),
        confidence=(float, _unit("0-1: how surely the point is truly shared and sound.")),
    )
    viewpoint = create_model(
        "ViewpointAnswer",
        __config__=STRICT,
        agent=_agent(agents, "The agent who holds this view."),
        viewpoint=(str, _text("That agent's view.", 1500)),
    )
    tension = create_model(
        "TensionAnswer",
        __config__=STRICT,
        topic=(str, _text("What the agents disagree on.", 300)),
        viewpoints=(
            list[viewpoint],  # type: ignore[valid-type]
            _items("The differing viewpoints of at least two agents.", MAX_VIEWPOINTS),
        ),
    )
    return create_model(
        "Synthesis",
        __config__=STRICT,
        consensus_points=(list[point], _items("What the agents agree on.", MAX_CONSENSUS_POINTS)),  # type: ignore[valid-type]
        tensions=(list[tension], _items("Where they disagree.", MAX_TENSIONS)),  # type: ignore[valid-type]
        priority_order=(list[Said], _items("What to settle first, most important first.", MAX_PRIORITIES)),
    )


@lru_cache(maxsize=SCHEMAS_CACHED)
def cross_exam_reply_schema(agents: tuple[str, ...]) -> type[BaseModel]:
    """Round 3, each agent (one schema for all of them): challenges target an agent of `agents` or the
    consensus; the defense is always asked for (it may be brief when the agent challenges)."""
    challenge = create_model(
        "AgentChallenge",
        __config__=STRICT,
        target_agent=_agent(
            (*agents, CONSENSUS_AGENT), f'Another agent, or "{CONSENSUS_AGENT}" to challenge the consensus.'
        ),
        challenge_point=(str, _text("What the target gets wrong or ignores.", 1500)),
        evidence=(list[Said], _items("Quotes from the material.", MAX_EVIDENCE)),
    )
    return create_model(
        "CrossExamReply",
        __config__=STRICT,
        critique=(str, _text("Your assessment of the synthesis from your lens.", 2000)),
        challenges=(list[challenge], _items("Empty if you have nothing new to raise.", MAX_CHALLENGES)),  # type: ignore[valid-type]
        defense=(
            str,
            _text(
                "Why your position holds against the consensus or the tensions (needed without a challenge).",
                2000,
            ),
        ),
        revised_position=(
            str,
            Field(
                description="Your position if it changed; empty when unchanged.",
                json_schema_extra={"maxLength": 1000},
            ),
        ),
    )


@lru_cache(maxsize=SCHEMAS_CACHED)
def cross_exam_synthesis_schema(repliers: tuple[str, ...], agents: tuple[str, ...]) -> type[BaseModel]:
    """Round 3, the judge: challenges come from the agents who replied (`repliers`) and target an agent of
    `agents` or the consensus; rebuttals come from the agents who replied."""
    challenge = create_model(
        "Challenge",
        __config__=STRICT,
        challenger=_agent(repliers, "The agent who raised it."),
        target_agent=_agent((*agents, CONSENSUS_AGENT), f'The agent challenged, or "{CONSENSUS_AGENT}".'),
        challenge=(str, _text("The challenge.", 1500)),
        evidence=(list[Said], _items("Its evidence.", MAX_EVIDENCE)),
    )
    rebuttal = create_model(
        "Rebuttal",
        __config__=STRICT,
        agent=_agent(repliers, "The agent who defended or answered."),
        rebuttal=(str, _text("The defense or answer.", 1500)),
    )
    return create_model(
        "CrossExamSynthesis",
        __config__=STRICT,
        challenges=(list[challenge], _items("Every substantive challenge.", MAX_JUDGE_CHALLENGES)),  # type: ignore[valid-type]
        rebuttals=(list[rebuttal], _items("Every defense or answer.", MAX_REBUTTALS)),  # type: ignore[valid-type]
        unresolved=(
            list[Said],
            _items("Tensions still open; empty when nothing new was raised.", MAX_UNRESOLVED),
        ),
    )


@lru_cache(maxsize=SCHEMAS_CACHED)
def verdict_converge_schema(agents: tuple[str, ...]) -> type[BaseModel]:
    """Round 4, converge mode: one recommendation; dissent and contributions name agents of `agents`."""
    dissent = create_model(
        "Dissent",
        __config__=STRICT,
        agent=_agent(agents, "The dissenting agent."),
        concern=(str, _text("Its concern that stands.", 1500)),
        severity=(Severity, Field(description="high, medium or low.")),
    )
    contribution = create_model(
        "Contribution",
        __config__=STRICT,
        agent=_agent(agents, "The agent."),
        key_insight=(str, _text("Its key insight.", 1000)),
        adopted=(bool, Field(description="Whether the recommendation adopts it.")),
    )
    return create_model(
        "VerdictConverge",
        __config__=STRICT,
        analysis=(
            str,
            Field(description="Your reasoning, written first.", json_schema_extra={"maxLength": 4000}),
        ),
        recommendation=(str, _text("The one thing to do.", 2000)),
        confidence=(
            float,
            _unit(
                ">0.9 strong consensus; 0.7-0.9 minor dissent; <0.7 major tensions (then name the dissent)."
            ),
        ),
        evidence=(
            list[Said],
            _items("The facts the recommendation rests on.", MAX_VERDICT_EVIDENCE, at_least_one=True),
        ),
        dissent=(list[dissent], _items("Every agent whose concern stands.", MAX_DISSENT)),  # type: ignore[valid-type]
        per_agent_contributions=(
            list[contribution],  # type: ignore[valid-type]
            _items("One per agent: its key insight and whether it was adopted.", MAX_CONTRIBUTIONS),
        ),
    )


@lru_cache(maxsize=SCHEMAS_CACHED)
def verdict_explore_schema(agents: tuple[str, ...]) -> type[BaseModel]:
    """Round 4, explore mode: a menu of options, each championed by agents of `agents`."""
    option = create_model(
        "ExploreOption",
        __config__=STRICT,
        option=(str, _text("A short name for the option.", 120)),
        description=(str, _text("What the option is.", 1500)),
        pros=(list[Said], _items("Its advantages.", MAX_PROS)),
        cons=(list[Said], _items("Its drawbacks.", MAX_CONS)),
        best_when=(str, _text("When it is the best choice.", 600)),
        championed_by=_agent_list(agents, "The agents who argued for it.", MAX_SUPPORTERS),
    )
    return create_model(
        "VerdictExplore",
        __config__=STRICT,
        analysis=(
            str,
            Field(description="Your reasoning, written first.", json_schema_extra={"maxLength": 4000}),
        ),
        recommendations=(
            list[option],  # type: ignore[valid-type]
            _items("The distinct options, most promising first.", MAX_OPTIONS, at_least_one=True),
        ),
        synergies=(list[Said], _items("How the options combine.", MAX_SYNERGIES)),
        confidence=(float, _unit("0-1.")),
        summary=(str, _text("The menu in a few sentences.", 2000)),
    )


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
    # The explore judge names no dissent (a menu has no minority), but the seed's importer reads `dissent` on every
    # verdict (ArtifactTransformer.verdictFromJSON maps it unconditionally): always written, empty when none.
    dissent: list[Dissent] = Field(default_factory=list)
    analysis: str | None = Field(default=None, alias="_analysis")
