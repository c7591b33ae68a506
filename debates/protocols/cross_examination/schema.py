"""What the seats of a cross-examination (seed 000) are asked to write: the step schemas, built from the run's state
(issue 22). A seat never writes what code knows: claim ids, question ids, the analyst a question is put to, the
quoted words of a claim picked by id, the question an answer answers. The protocol fills those in `accept` and
commits the stored shape (below), which the plan, the outcome, the templates and the exports read.

Stored shapes (unchanged by the model-facing schemas):
- analysis: {summary, claims: [{id, text, evidence: [{quote, source}], confidence}]}
- questions: {questions: [{id, analyst, claim_id, quoted_claim, gap, question}]}
- answers: {answers: [{question_id, choice, response, evidence, revised_position}]}
- assessment: {classifications: [{question_id, classification, rationale}]}

Lengths, ranges and counts are stated for the models that honour them, never enforced (see
debates.protocols.schemas): `accept` flags what breaks them."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from debates.protocols.schemas import STRICT, choice, one_per, property_names

SCHEMA_VERSION = "1.0"  # of the stored shapes

MAX_CLAIMS = 8
MAX_EVIDENCE = 5
# An analyst's questions, and the answers to them, are properties named by their place.
PLACES = ("first", "second", "third")
MIN_QUESTIONS, MAX_QUESTIONS = 2, len(PLACES)


def _text(description: str, **constraints: Any) -> Any:
    """A text field whose constraints are stated, not enforced (`schemas.stated`, with a description)."""
    return Field(description=description, json_schema_extra=constraints or None)


class _Strict(BaseModel):
    model_config = STRICT


class Evidence(_Strict):
    quote: str = _text("Exact words from the material, or a datum.", minLength=1, maxLength=2000)
    source: str = Field(
        default="material", description="Where the quote comes from.", json_schema_extra={"maxLength": 200}
    )


class Claim(_Strict):
    text: str = _text("The claim, in one or two sentences.", minLength=1, maxLength=1000)
    evidence: list[Evidence] = Field(min_length=1, json_schema_extra={"maxItems": MAX_EVIDENCE})
    confidence: float = Field(
        allow_inf_nan=False,
        description="Calibrated confidence that the claim holds, from 0 to 1.",
        json_schema_extra={"minimum": 0, "maximum": 1},
    )


class Analysis(_Strict):
    """An analyst's analysis. The claims are numbered c1, c2, ... by the platform, in the order given."""

    summary: str = _text("The analysis in a few sentences.", minLength=1, maxLength=2000)
    claims: list[Claim] = Field(min_length=1, json_schema_extra={"maxItems": MAX_CLAIMS})


# --- the examiner's questions: one property per analyst, each holding that analyst's questions by place --------


@lru_cache(maxsize=64)
def _question_model(claim_ids: tuple[str, ...], name: str) -> type[BaseModel]:
    return create_model(
        name,
        __config__=STRICT,
        claim_id=(
            choice(claim_ids),
            Field(description="The id of the analyst's claim the question targets."),
        ),
        gap=(str, _text("The evidentiary gap, contradiction or unexamined assumption.", minLength=1)),
        question=(str, _text("The question, answerable with evidence, not opinion.", minLength=1)),
    )


def _questions_to_model(question: type[BaseModel], asked: int, at_least: int, name: str) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for number, place in enumerate(PLACES[:asked], start=1):
        fields[place] = (question, ...) if number <= at_least else (question | None, None)
    return create_model(name, __config__=STRICT, **fields)


@lru_cache(maxsize=64)
def questions_schema(
    claims: tuple[tuple[str, tuple[str, ...]], ...], asked: int, at_least: int
) -> type[BaseModel]:
    """The examiner's questions: one property per analyst (named by the analyst's handle, in `claims`' order), each
    holding `asked` questions by place (first, second, third), the first `at_least` of them required; a question
    names its claim from an enum of that analyst's claim ids. Analysts with the same claim ids share one model."""
    questions_to: dict[tuple[str, ...], type[BaseModel]] = {}
    for _, claim_ids in claims:
        if claim_ids not in questions_to:
            number = len(questions_to) + 1
            question = _question_model(claim_ids, f"QuestionOnClaims{number}")
            questions_to[claim_ids] = _questions_to_model(
                question, asked, at_least, f"QuestionsOnClaims{number}"
            )
    names = property_names([handle for handle, _ in claims])  # a handle may be longer than 64 characters
    fields: dict[str, Any] = {
        f"k{index}": (questions_to[claim_ids], Field(alias=names[handle], title=handle))
        for index, (handle, claim_ids) in enumerate(claims)
    }
    return create_model("Questions", __config__=STRICT, **fields)


# --- an analyst's answers: one property per place of their questions ---------------------------------------------


class Answer(_Strict):
    choice: Literal["DEFEND", "CONCEDE"] = Field(
        description="DEFEND with new evidence that closes the gap, or CONCEDE with a revised position."
    )
    response: str = _text("The answer.", minLength=1, maxLength=2000)
    evidence: list[Evidence] = Field(
        default_factory=list,
        description="New evidence (DEFEND); none for a concession.",
        json_schema_extra={"maxItems": MAX_EVIDENCE},
    )
    revised_position: str = Field(
        default="",
        description="The position that still holds (CONCEDE); empty for a defence.",
        json_schema_extra={"maxLength": 1000},
    )


@lru_cache(maxsize=16)
def answers_schema(asked: int, at_least: int) -> type[BaseModel]:
    """An analyst's answers, one property per place of the questions (first, second, third): the same schema for
    every analyst of the stage (the prompt cache's key), so it offers the most questions any analyst was asked and
    requires the fewest."""
    asked = max(1, min(asked, MAX_QUESTIONS))
    at_least = max(1, min(at_least, asked))
    return _questions_to_model(Answer, asked, at_least, "Answers")


# --- the examiner's assessment: one property per answered question -----------------------------------------------


class Classification(_Strict):
    classification: Literal["DEFENDED", "CONCEDED", "DEFLECTED"] = Field(
        description="DEFENDED: new evidence addresses the gap; CONCEDED: acknowledged and revised; DEFLECTED: "
        "restated without new evidence."
    )
    rationale: str = Field(default="", description="Why, briefly.", json_schema_extra={"maxLength": 1000})


@lru_cache(maxsize=64)
def assessment_schema(question_ids: tuple[str, ...]) -> type[BaseModel]:
    """The examiner's classification: one property per answered question, named by its id."""
    return one_per("Assessment", question_ids, Classification)
