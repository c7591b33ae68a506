"""Step-schema building blocks (debates/protocols/schemas.py): what a model held to a schema can and cannot get
wrong, and what code tolerates and flags."""

from __future__ import annotations

import anthropic
import pytest
from pydantic import BaseModel, ValidationError

from debates.contract import Flag
from debates.protocols.schemas import (
    at_most,
    by_property,
    choice,
    clamped,
    one_per,
    per_key,
    property_key,
    said,
    stated,
)

CRITERIA = ["Complexity", "Team familiarity", "Team_familiarity", "Cost (5-year, €)", "x" * 80]


def test_a_choice_is_an_enum_of_the_values_that_exist():
    class Pick(BaseModel):
        seat: choice(["ada", "bo", "ada"])  # type: ignore[valid-type]

    assert Pick.model_json_schema()["properties"]["seat"]["enum"] == ["ada", "bo"]
    assert anthropic.transform_schema(Pick)["properties"]["seat"]["enum"] == ["ada", "bo"]
    with pytest.raises(ValidationError):
        Pick.model_validate({"seat": "cy"})
    with pytest.raises(ValueError, match="at least one value"):
        choice([])


def test_one_per_asks_one_required_property_per_key_with_names_anthropic_accepts():
    model = one_per("PerCriterion", CRITERIA, int)
    schema = anthropic.transform_schema(model)
    names = list(schema["properties"])
    assert len(names) == len(CRITERIA) and schema["required"] == names
    assert all(property_key(name, set()) == name for name in names)  # each already a valid property name
    assert [schema["properties"][n]["title"] for n in names] == CRITERIA  # the model reads the real criterion
    assert len(set(names)) == len(names)  # "Team familiarity" and "Team_familiarity" stay apart


def test_per_key_and_by_property_give_the_original_keys_back_and_forth():
    model = one_per("PerCriterion", CRITERIA, int)
    answer = model.model_validate(by_property(model, {key: n for n, key in enumerate(CRITERIA)}))
    assert per_key(answer) == {key: n for n, key in enumerate(CRITERIA)}
    with pytest.raises(ValidationError):  # one property per key: none may be left out
        model.model_validate(by_property(model, {CRITERIA[0]: 1}))


def test_a_stated_constraint_is_in_the_schema_but_not_enforced():
    class Claim(BaseModel):
        confidence: float = stated(minimum=0, maximum=1)

    assert Claim.model_json_schema()["properties"]["confidence"]["maximum"] == 1
    assert Claim.model_validate({"confidence": 7}).confidence == 7  # accept clamps and flags it


def test_clamped_said_and_at_most_keep_the_answer_and_flag_what_they_changed():
    flags: list[Flag] = []
    assert clamped(0.5, 0, 1, "claims.0.confidence", flags) == 0.5
    assert clamped(1.7, 0, 1, "claims.1.confidence", flags) == 1
    assert said("  fine ", "summary", flags) == "fine"
    assert said("  ", "claims.2.text", flags, "claim") == ""
    assert at_most([1, 2, 3, 4], 3, "mutations", flags, "changes") == [1, 2, 3]
    assert [(f.kind, f.where) for f in flags] == [
        ("out_of_range", "claims.1.confidence"),
        ("empty", "claims.2.text"),
        ("too_many", "mutations"),
    ]
    assert flags[0].detail == "1.7 is outside 0–1; read as 1."
