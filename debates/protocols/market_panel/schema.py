"""Structured turn outputs of the market panel (seed 004): what the model is asked for, built for each step from
the run's state, and what is stored once the protocol has accepted it.

Asked (the step schemas, see debates.protocols.schemas):
- an opening is one property per argument, `argument_0` … `argument_<max-1>`: the configured minimum are required,
  the rest optional (null or absent), so the count holds by construction; a cited data point's `source` is an enum
  of the data KB's paths (the whole KB's, so the parallel openings share one schema);
- a cross-examination is one property per argument of the opponent, by its number (`on_arg_<n>` challenges
  `<opponent>_arg_<n>`, code fills the `target_id`): each argument is answered once at most and only the
  opponent's can be, by construction; the stage's fewest opponent arguments are required, the rest optional, the
  same for every seat of the stage. "Challenge at least half" (a concession does not count) is no schema's: an
  answer short of it is asked to repair once (`MarketPanel.repair_asks`), then kept and flagged;
- a closing's refined `argument_id` and `abandoned` ids are enums of every argument id of the stage (the same for
  all seats of the stage); an id that is not the seat's own is dropped and flagged by the protocol;
- the judge's `scores` has one required property per argument id.
Never asked: the seat's name, the round, its argument ids, a challenge's target, the original claim of a refined
argument (code fills them in `MarketPanel.accept`). Lengths, ranges and counts are stated for the models that honour them and flagged, not
enforced.

Stored (unchanged, what the pages, the trace and the exports read): an opening `{agent, round, arguments: [{id,
claim, evidence, confidence, counterpoints, assumptions}]}`; a cross-examination `{challenges: [{target_id,
challenge_type, reasoning, new_evidence}]}`; a closing `{refined_claims: [{argument_id, original, refinement,
confidence_adjusted}], abandoned, concessions, final_stance, conviction_change}`; a judgement `{scores:
[{argument_id, logic, evidence, clarity, persuasiveness, weighted, status, note}], synthesis, stronger_case,
evidence_issues}`. Both evidence variants of the seed are accepted: a string citing KB data points (the article's
main text), or a list of {data_point, source, inferred} items (the article's FAQ)."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

from debates.protocols.schemas import STRICT, choice, one_per, stated

# The judge's four criteria, in the order they are shown and weighted.
DIMENSIONS = ("logic", "evidence", "clarity", "persuasiveness")

SCHEMA_VERSION = "1.0"

ChallengeType = Literal["refute", "question_evidence", "concede", "partial"]
Verdict = Literal["UPHELD", "WEAKENED", "REFUTED"]
Conviction = Literal["strengthened", "weakened", "unchanged"]

CLAIM_MAX = 99  # the seed: a claim under 100 characters
NOTES_MAX = 6  # counterpoints, assumptions
CONCESSIONS_MAX = 8
ISSUES_MAX = 20
STANCE_WORDS = (50, 100)
SCORE_MIN, SCORE_MAX = 1, 10


def _model(name: str, doc: str = "", **fields: Any) -> type[BaseModel]:
    """A strict model built at run time (its fields' types hold the run's enums)."""
    return create_model(name, __config__=STRICT, __doc__=doc or None, **fields)


def _list_of(item: Any) -> Any:
    """`list[item]` for an item type built at run time."""
    return list[item]  # type: ignore[valid-type]


def argument_field(number: int) -> str:
    """The opening's property for argument `number` (zero-based, as its id `<seat>_arg_<n>`)."""
    return f"argument_{number}"


@cache
def _evidence_type(paths: tuple[str, ...] | None) -> Any:
    """A list of data points (preferred) or a string. `paths`: the KB's paths as an enum; None (a KB with too many
    paths for a provider's enum limits): any text, an unknown path flagged by the protocol."""
    source: Any = str if paths is None else choice(paths)
    data_point = _model(
        "DataPoint",
        "One cited data point: the value as quoted and the path of the knowledge base it comes from.",
        data_point=(
            Annotated[str, stated(minLength=1, maxLength=300)],
            Field(
                description="The value as the knowledge base has it, e.g. '58.4', '27.4 (P/E)' or 'bearish'."
            ),
        ),
        source=(source, Field(description="The dotted path of the value in the knowledge base.")),
        inferred=(
            bool,
            Field(
                False, description="True when the point is derived or not in the knowledge base (not a fact)."
            ),
        ),
    )
    return _list_of(data_point) | str


@cache
def opening_schema(paths: tuple[str, ...] | None, minimum: int, maximum: int) -> type[BaseModel]:
    """An opening: `minimum` required arguments and up to `maximum` in all, citing the KB's `paths`."""
    argument = _model(
        "Argument",
        claim=(
            Annotated[str, stated(minLength=1, maxLength=CLAIM_MAX)],
            Field(description="A single falsifiable proposition, under 100 characters."),
        ),
        evidence=(
            _evidence_type(paths),
            Field(
                description="The knowledge base's data points supporting the claim: a list of {data_point, source} "
                "items (preferred), or one string naming each path with its value, e.g. "
                "'technicals.SPX.rsi_14 = 58.4'. No vague quantifiers."
            ),
        ),
        confidence=(
            Annotated[float, stated(minimum=0, maximum=1)],
            Field(description="0.0-1.0, calibrated to the quality of the evidence."),
        ),
        counterpoints=(
            Annotated[list[str], stated(maxItems=NOTES_MAX)],
            Field(default_factory=list, description="Weaknesses of this argument you recognise."),
        ),
        assumptions=(
            Annotated[list[str], stated(maxItems=NOTES_MAX)],
            Field(default_factory=list, description="Premises that would invalidate the argument if false."),
        ),
    )
    fields: dict[str, Any] = {}
    for number in range(maximum):
        if number < minimum:
            fields[argument_field(number)] = (argument, Field(description=f"Your argument {number}."))
        else:
            fields[argument_field(number)] = (
                argument | None,
                Field(None, description=f"Your argument {number}, if you make one (optional)."),
            )
    return _model(
        "Opening",
        f"{minimum}-{maximum} arguments, in order; code names them <seat>_arg_<n>.",
        **fields,
    )


CHALLENGE_PREFIX = "on_arg_"


def challenge_field(number: int) -> str:
    """The cross-examination's property for the opponent's argument `number` (its id `<opponent>_arg_<n>`)."""
    return f"{CHALLENGE_PREFIX}{number}"


def challenge_number(field: str) -> int | None:
    """The opponent's argument number a cross-examination property answers; None: not such a property."""
    number = field.removeprefix(CHALLENGE_PREFIX)
    return int(number) if number != field and number.isdigit() else None


@cache
def cross_schema(paths: tuple[str, ...] | None, required: int, maximum: int) -> type[BaseModel]:
    """A cross-examination: one property per argument of the opponent, by its number (`on_arg_<n>` answers
    `<opponent>_arg_<n>`), so each argument is answered at most once and only the opponent's can be, by
    construction. Numbered, not named by id, so the stage's seats share one schema whoever their opponent:
    `required` is the fewest arguments any opponent of the stage made (every seat must answer at least that many:
    half of them or more in a panel of 2-4 arguments), `maximum` the most; the rest may be null."""
    challenge = _model(
        "Challenge",
        challenge_type=(
            ChallengeType,
            Field(
                description="refute: a logical or factual error; question_evidence: the evidence is insufficient "
                "or its conditions are not met; partial: the core holds, degree or scope disputed; concede: the "
                "argument holds (a concession does not count toward the half you must challenge)."
            ),
        ),
        reasoning=(
            Annotated[str, stated(minLength=1, maxLength=2000)],
            Field(description="The chain of the challenge."),
        ),
        new_evidence=(
            _evidence_type(paths),
            Field("", description="New evidence from the knowledge base only (same forms as an argument's)."),
        ),
    )
    fields: dict[str, Any] = {}
    for number in range(maximum):
        about = f"Your challenge of your opponent's argument {number} (the one whose id ends _arg_{number})"
        if number < required:
            fields[challenge_field(number)] = (challenge, Field(description=f"{about}."))
        else:
            fields[challenge_field(number)] = (
                challenge | None,
                Field(None, description=f"{about}; null when your opponent made no argument {number}."),
            )
    return _model(
        "CrossExamination",
        "One challenge per argument of your opponent, by its number; challenge (refute, question_evidence or "
        "partial) at least half of them.",
        **fields,
    )


@cache
def closing_schema(argument_ids: tuple[str, ...]) -> type[BaseModel]:
    """A closing: own arguments refined or abandoned, named by id (every argument of the stage, so the seats share
    one schema; the protocol keeps the seat's own)."""
    refined = _model(
        "RefinedClaim",
        argument_id=(choice(argument_ids), Field(description="Your argument refined.")),
        refinement=(
            Annotated[str, stated(minLength=1, maxLength=1200)],
            Field(description="How the claim is improved or narrowed after cross-examination."),
        ),
        confidence_adjusted=(Annotated[float, stated(minimum=0, maximum=1)], Field(description="0.0-1.0.")),
    )
    return _model(
        "Closing",
        refined_claims=(
            Annotated[_list_of(refined), stated(maxItems=4)],
            Field(default_factory=list, description="Your arguments that survive, refined."),
        ),
        abandoned=(
            Annotated[_list_of(choice(argument_ids)), stated(maxItems=4)],
            Field(default_factory=list, description="Your arguments that did not survive."),
        ),
        concessions=(
            Annotated[list[str], stated(maxItems=CONCESSIONS_MAX)],
            Field(default_factory=list, description="The opponent's points you accept, one sentence each."),
        ),
        final_stance=(
            Annotated[str, stated(minLength=1, maxLength=1000)],
            Field(description="Your final position, 50-100 words."),
        ),
        conviction_change=(Conviction, Field(description="How your conviction changed.")),
    )


class ArgumentScore(BaseModel):
    model_config = STRICT

    logic: Annotated[int, stated(minimum=SCORE_MIN, maximum=SCORE_MAX)]
    evidence: Annotated[int, stated(minimum=SCORE_MIN, maximum=SCORE_MAX)]
    clarity: Annotated[int, stated(minimum=SCORE_MIN, maximum=SCORE_MAX)]
    persuasiveness: Annotated[int, stated(minimum=SCORE_MIN, maximum=SCORE_MAX)]
    weighted: Annotated[float | None, stated(minimum=0, maximum=10)] = Field(
        None, description="Your weighted score (code recomputes it from the weights)."
    )
    status: Verdict
    note: Annotated[str, stated(maxLength=600)] = Field("", description="One sentence: why this status.")


class Synthesis(BaseModel):
    model_config = STRICT

    bull_case_summary: Annotated[str, stated(minLength=1, maxLength=1500)]
    bear_case_summary: Annotated[str, stated(minLength=1, maxLength=1500)]
    key_insight: Annotated[str, stated(minLength=1, maxLength=1000)]


@cache
def judgement_schema(argument_ids: tuple[str, ...]) -> type[BaseModel]:
    """The judgement: one score per argument id, by construction."""
    return _model(
        "Judgement",
        scores=(
            one_per("Scores", argument_ids, ArgumentScore, description="The scores of this argument."),
            Field(description="One entry per argument, by id."),
        ),
        synthesis=(Synthesis, ...),
        stronger_case=(
            Literal["bull", "bear"],
            Field(description="Which side argued better overall (debate quality, not a market forecast)."),
        ),
        evidence_issues=(
            Annotated[list[str], stated(maxItems=ISSUES_MAX)],
            Field(default_factory=list, description="Cited figures that do not match the knowledge base."),
        ),
    )
