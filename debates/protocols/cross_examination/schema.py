"""Structured turn outputs of the cross-examination protocol (seed 000). Counts that depend on other turns are
checked by the protocol module, since a JSON schema cannot express them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.0"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Strict):
    quote: str = Field(
        min_length=1, max_length=2000, description="Exact words from the material, or a datum."
    )
    source: str = Field(default="material", max_length=200, description="Where the quote comes from.")


class Claim(_Strict):
    id: str = Field(pattern=r"^c[0-9]{1,2}$", description="c1, c2, ... unique within the analysis.")
    text: str = Field(min_length=1, max_length=1000)
    evidence: list[Evidence] = Field(min_length=1, max_length=5)
    confidence: float = Field(ge=0, le=1)


class Analysis(_Strict):
    summary: str = Field(min_length=1, max_length=2000)
    claims: list[Claim] = Field(min_length=1, max_length=8)


class Question(_Strict):
    id: str = Field(pattern=r"^q[0-9]{1,3}$")
    analyst: str = Field(description="Handle of the analyst questioned.")
    claim_id: str
    quoted_claim: str = Field(min_length=1, max_length=1000, description="The claim's words, quoted exactly.")
    gap: str = Field(
        min_length=1, max_length=1000, description="The evidentiary gap, contradiction or assumption."
    )
    question: str = Field(min_length=1, max_length=1000, description="Answerable with evidence, not opinion.")


class Questions(_Strict):
    questions: list[Question] = Field(max_length=30)


class Answer(_Strict):
    question_id: str
    choice: Literal["DEFEND", "CONCEDE"]
    response: str = Field(min_length=1, max_length=2000)
    evidence: list[Evidence] = Field(default_factory=list, max_length=5)
    revised_position: str = Field(default="", max_length=1000)


class Answers(_Strict):
    answers: list[Answer] = Field(min_length=1, max_length=3)


class Classification(_Strict):
    question_id: str
    classification: Literal["DEFENDED", "CONCEDED", "DEFLECTED"]
    rationale: str = Field(default="", max_length=1000)


class Assessment(_Strict):
    classifications: list[Classification] = Field(max_length=30)
