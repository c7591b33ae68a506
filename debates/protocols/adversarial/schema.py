"""Structured turn outputs of the adversarial review (seed 003 family): an advocate's case for the artifact, a
challenger's five concerns ranked by severity, and a judge's binary verdict (or, when both sides failed, the
judge's single-agent review).

These are the schemas a model is sent (issue 22): what a schema can carry it carries by construction (one concern
per rank 1–5, one verdict per advocate strength id and one assessment per concern rank, each keyed by what exists;
the score as an enum), and what code knows is not asked (strength ids, ranks as numbers, whether a concern is
genuine, which follows from its score). `Adversarial.accept` maps an answer to the stored shape (strengths with
ids s1, s2, ...; concerns and assessments as lists with their `rank`) and flags what no schema can check: a quote
that is not the artifact's words, a ranking that is not by severity, an empty text, too few or too many items.
Lengths and counts are stated for the models that honour them, never enforced (debates.protocols.schemas)."""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from debates.protocols.schemas import STRICT, one_per

SCHEMA_VERSION = "1.0"

Severity = Literal["critical", "high", "medium", "low"]
Verdict = Literal["approve", "reject"]
# Most severe first: rank 1 should be at least as severe as rank 2, and so on (flagged when it is not).
SEVERITY_ORDER: dict[str, int] = {"critical": 4, "high": 3, "medium": 2, "low": 1}
CONCERN_COUNT = 5
RANKS = tuple(str(rank) for rank in range(1, CONCERN_COUNT + 1))
Score = Literal[1, 2, 3, 4, 5]  # an enum: both decoders enforce it
GENUINE_FROM = 3  # a concern scored 3-5 is genuine, 1-2 a stretch

# What the schema states and accept tolerates (kept, flagged): counts of items.
STRENGTHS_MIN, STRENGTHS_MAX = 2, 6
LIST_MAX = 6  # trade-offs, blockers, agreement and contested zones
ACKNOWLEDGED_MAX = 5
NARRATIVES_MIN, NARRATIVES_MAX = 2, 3
REVIEW_STRENGTHS_MAX = 6


def described(description: str, **constraints: Any) -> Any:
    """A field's description and the constraints the schema states without validation enforcing them."""
    return Field(description=description, json_schema_extra=constraints or None)


class _Strict(BaseModel):
    model_config = STRICT


class Strength(_Strict):
    point: str = described("Why the artifact is ready, in one claim.", minLength=1, maxLength=1000)
    quote: str = described(
        "The artifact's exact words that support the point, copied verbatim.", minLength=1, maxLength=1000
    )
    why_it_matters: str = described("The consequence for the decision.", minLength=1, maxLength=1000)


class Blocker(_Strict):
    blocker: str = described("A genuine blocker, stated plainly.", minLength=1, maxLength=1000)
    how_addressed: str = described(
        "The concrete change that makes it addressable.", minLength=1, maxLength=1000
    )


class AdvocateCase(_Strict):
    summary: str = described("The strongest case that the artifact is ready.", minLength=1, maxLength=2000)
    # At least one strength, which both decoders enforce; two to six are asked for.
    strengths: list[Strength] = Field(
        min_length=1,
        description="2-6 strengths, strongest first; they are numbered s1, s2, ... in this order.",
        json_schema_extra={"maxItems": STRENGTHS_MAX},
    )
    tradeoffs_acknowledged: list[str] = described(
        "Real costs of approving, acknowledged honestly.", maxItems=LIST_MAX
    )
    addressable_blockers: list[Blocker] = described(
        "Genuine blockers, each with how it can be addressed.", maxItems=LIST_MAX
    )


class Concern(_Strict):
    severity: Severity = Field(description="critical > high > medium > low; never rising down the ranking.")
    title: str = described("The concern in a few words.", minLength=1, maxLength=200)
    quote: str = described(
        "The artifact's exact words the concern is about, copied verbatim.", minLength=1, maxLength=1000
    )
    risk: str = described("The concrete production risk if unchanged.", minLength=1, maxLength=1500)
    fix: str = described("A specific fix.", minLength=1, maxLength=1500)


ConcernsByRank = one_per(
    "ConcernsByRank", RANKS, Concern, description="The concern of this rank (1 = the most severe)."
)

ChallengerConcerns: type[BaseModel] = create_model(
    "ChallengerConcerns",
    __config__=STRICT,
    acknowledged_strengths=(
        list[str],
        Field(
            min_length=1,
            description="What works, acknowledged before arguing it is outweighed (1-5 points).",
            json_schema_extra={"maxItems": ACKNOWLEDGED_MAX},
        ),
    ),
    concerns=(ConcernsByRank, Field(description="Exactly one concern per rank, 1 the most severe.")),
)


class StrengthVerdict(_Strict):
    survived: bool = Field(description="Did this advocate strength survive the challenge?")
    why: str = described("Why it survived, or what undid it.", minLength=1, maxLength=1000)


_SCORE_DESCRIPTION = "1 = pure stretch ... 5 = genuine and serious: 1-2 is a stretch, 3-5 a genuine concern."


class ConcernAssessment(_Strict):
    addressed_by_advocate: bool = Field(description="Did the advocate's case answer this concern?")
    score: Score = Field(description=_SCORE_DESCRIPTION)
    note: str = described("A short note on the assessment.", maxLength=1000)


class UnansweredConcernAssessment(_Strict):
    """A concern's assessment when the advocate failed: nothing was addressed, so it is not asked."""

    score: Score = Field(description=_SCORE_DESCRIPTION)
    note: str = described("A short note on the assessment.", maxLength=1000)


class PulledPunches(_Strict):
    verdict: Literal["genuine", "performative"] = Field(
        description="genuine: the challenger pressed real issues; performative: it pulled its punches."
    )
    explanation: str = described("The signs either way.", minLength=1, maxLength=1000)


@functools.cache
def judgement_schema(
    strength_ids: tuple[str, ...], ranks: tuple[str, ...], advocate: bool
) -> type[BaseModel]:
    """The judge's schema for the sides that are there: one verdict per advocate strength id (none when the
    advocate failed), one assessment per concern rank and the pulled-punches check (none when the challenger
    failed), whether a concern was addressed only when there is an advocate to have addressed it."""
    fields: dict[str, Any] = {}
    if strength_ids:
        per_strength = one_per(
            "StrengthVerdicts",
            strength_ids,
            StrengthVerdict,
            description="The advocate's strength of this id.",
        )
        fields["advocate_strengths"] = (
            per_strength,
            Field(description="One verdict per advocate strength, by its id: did it survive, and why."),
        )
    if ranks:
        item = ConcernAssessment if advocate else UnansweredConcernAssessment
        per_rank = one_per(
            "ConcernAssessments", ranks, item, description="The challenger's concern of this rank."
        )
        fields["concern_assessments"] = (
            per_rank,
            Field(description="One assessment per challenger concern, by its rank."),
        )
        fields["pulled_punches"] = (PulledPunches, Field(description="Did the challenger pull its punches?"))
    fields |= {
        "agreement_zones": (
            list[str],
            described("Where both sides agree: high confidence.", maxItems=LIST_MAX),
        ),
        "contested_zones": (
            list[str],
            described("Where they disagree: flag for the human's attention.", maxItems=LIST_MAX),
        ),
        "key_narratives": (
            list[str],
            Field(
                min_length=1,
                description="2-3 narratives that survived, to emphasise downstream.",
                json_schema_extra={"maxItems": NARRATIVES_MAX},
            ),
        ),
        "verdict": (Verdict, Field(description="approve or reject the artifact.")),
        "rationale": (
            str,
            described("Names the decisive concerns or arguments.", minLength=1, maxLength=2000),
        ),
    }
    return create_model("AdversarialJudgement", __config__=STRICT, **fields)


class ReviewStrength(_Strict):
    point: str = described("What works, in one claim.", minLength=1, maxLength=1000)
    quote: str = described("The artifact's exact words, copied verbatim.", minLength=1, maxLength=1000)


SingleReview: type[BaseModel] = create_model(
    "SingleReview",
    __config__=STRICT,
    __doc__="The single-agent review, when both advocate and challenger failed.",
    summary=(str, described("The artifact's state in a few sentences.", minLength=1, maxLength=2000)),
    strengths=(
        list[ReviewStrength],
        Field(
            min_length=1,
            description="What genuinely works (1-6 points).",
            json_schema_extra={"maxItems": REVIEW_STRENGTHS_MAX},
        ),
    ),
    concerns=(ConcernsByRank, Field(description="Exactly one concern per rank, 1 the most severe.")),
    key_narratives=(
        list[str],
        Field(
            min_length=1,
            description="2-3 key narratives.",
            json_schema_extra={"maxItems": NARRATIVES_MAX},
        ),
    ),
    verdict=(Verdict, Field(description="approve or reject the artifact.")),
    rationale=(str, described("Why this verdict.", minLength=1, maxLength=2000)),
)
