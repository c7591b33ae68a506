"""What each step of the comparative debate asks the model (its schema, built from the run's state), what `accept`
fills in and what it flags instead of refusing (issue 22): "argue every criterion", "exactly 3 risks", "address
every stakeholder", "attack 3 claims by id", "score every criterion and every rebuttal" hold by construction; the
ids, criteria and quotes are code's; what no schema can check is kept and flagged."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.template.loader import render_to_string
from pydantic import BaseModel, ValidationError

from debates.contract import Flag, RunView, Step
from debates.protocols.comparative import schema
from debates.protocols.comparative.panels import as_stored, flags_at, key_label
from debates.protocols.comparative.protocol import (
    DECISION_TYPES,
    KEY_JUDGEMENT,
    default_criteria,
    key_opening,
    key_rebuttal,
)
from debates.protocols.schemas import property_names
from debates.web.frames import turn_live_frame
from tests.protocols.comparative.test_protocol import (
    CRITERIA,
    PROTOCOL,
    SCORES,
    TEAM_HISTORY,
    judgement,
    opening,
    view,
)

NAMES = [c["name"] for c in CRITERIA]
EVIDENCE = [
    {"option": "A", "source": "Benchmark", "type": "Data", "summary": "A is 2x faster."},
    {"option": "B", "source": "Quote", "type": "Email", "summary": "B costs less."},
    {"option": "both", "source": "Benchmark", "type": "Data", "summary": "Listed twice, cited once."},
]
STAKEHOLDERS = [{"name": "CTO", "position": "prefers Mongo"}, {"name": "Finance"}]
SETUP = {"evidence": EVIDENCE, "stakeholders": STAKEHOLDERS}
OPENED = {key_opening("A"): opening("A"), key_opening("B"): opening("B")}


def steps(v: RunView) -> dict[str, Step]:
    plan = PROTOCOL.plan(v)
    return {s.key: s for s in getattr(plan, "steps", ())}


def wire(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True)


def properties(model: type[BaseModel], *path: str) -> list[str]:
    """The property names of the object at `path` in the model's JSON schema (following $refs)."""
    full = wire(model)
    node = full
    for name in path:
        node = node["properties"][name]
        if "$ref" in node:
            node = full["$defs"][node["$ref"].rsplit("/", 1)[1]]
    assert sorted(node["required"]) == sorted(node["properties"]), "every property is required"
    return list(node["properties"])


def enum_of(node: dict[str, Any]) -> list[Any]:
    return node["enum"] if "enum" in node else [node["const"]]


def accept(step: Step, answer: dict[str, Any], v: RunView) -> tuple[dict[str, Any], list[Flag]]:
    model = step.schema.model_validate(answer)
    assert PROTOCOL.validate(step, model, v) == []
    accepted = PROTOCOL.accept(step, model, v)
    return accepted.payload, list(accepted.flags)


def kinds(flags: list[Flag]) -> list[tuple[str, str]]:
    return [(f.kind, f.where) for f in flags]


# --- the opening ------------------------------------------------------------------------------------------------


def opening_answer(**overrides: Any) -> dict[str, Any]:
    answer = {
        "arguments": {
            name: {
                "claim": f"We win on {name.lower()}.",
                "why_ours_scores_well": "The benchmark says so.",
                "why_theirs_falls_short": "Theirs has no figure.",
                "evidence": ["Benchmark"],
            }
            for name in NAMES
        },
        "risks_of_other": {f"risk_{n}": {"risk": f"Risk {n}.", "evidence": "Quote."} for n in (1, 2, 3)},
        "stakeholders": {"CTO": "Reconsider: we are cheaper.", "Finance": "We cost less."},
        "closing": "We are cheaper. We are faster. We are supported.",
    }
    return answer | overrides


def opening_step(**config: Any) -> tuple[Step, RunView]:
    v = view({}, **config)
    return steps(v)[key_opening("A")], v


def test_an_opening_asks_one_argument_per_criterion_three_risks_and_one_response_per_stakeholder() -> None:
    step, _ = opening_step(**SETUP)
    assert properties(step.schema) == ["arguments", "risks_of_other", "stakeholders", "closing"]
    assert properties(step.schema, "arguments") == NAMES
    assert properties(step.schema, "risks_of_other") == ["risk_1", "risk_2", "risk_3"]
    assert properties(step.schema, "stakeholders") == ["CTO", "Finance"]
    argument = wire(step.schema)["$defs"]["Argument"]
    assert argument["properties"]["evidence"]["items"]["enum"] == ["Benchmark", "Quote"]
    assert "id" not in argument["properties"] and "criterion" not in argument["properties"]


def test_both_advocates_share_one_opening_schema_and_both_rebuttals_one_rebuttal_schema() -> None:
    openings = steps(view({}, **SETUP))
    assert openings[key_opening("A")].schema is openings[key_opening("B")].schema
    rebuttals = steps(view(OPENED, **SETUP))
    assert rebuttals[key_rebuttal("A")].schema is rebuttals[key_rebuttal("B")].schema


def test_an_opening_that_skips_a_criterion_or_a_stakeholder_does_not_match_its_schema() -> None:
    step, _ = opening_step(**SETUP)
    skipped = opening_answer()
    del skipped["arguments"]["Support"]
    with pytest.raises(ValidationError, match="Support"):
        step.schema.model_validate(skipped)
    with pytest.raises(ValidationError, match="Finance"):
        step.schema.model_validate(opening_answer(stakeholders={"CTO": "Reconsider."}))
    with pytest.raises(ValidationError, match="risk_3"):
        step.schema.model_validate(
            opening_answer(risks_of_other={f"risk_{n}": {"risk": "r", "evidence": "e"} for n in (1, 2)})
        )
    with pytest.raises(ValidationError, match="evidence"):  # only the evidence base's sources
        step.schema.model_validate(
            opening_answer(
                arguments={n: {**a, "evidence": ["Blog"]} for n, a in opening_answer()["arguments"].items()}
            )
        )


def test_accept_numbers_the_claims_in_criteria_order_and_stores_the_seeds_shape() -> None:
    step, v = opening_step(**SETUP)
    payload, flags = accept(step, opening_answer(), v)
    assert flags == []
    assert [(a["id"], a["criterion"], a["claim"]) for a in payload["arguments"]] == [
        ("c1", "Cost", "We win on cost."),
        ("c2", "Speed", "We win on speed."),
        ("c3", "Support", "We win on support."),
    ]
    assert payload["risks_of_other"] == [{"risk": f"Risk {n}.", "evidence": "Quote."} for n in (1, 2, 3)]
    assert payload["stakeholders"] == [
        {"stakeholder": "CTO", "response": "Reconsider: we are cheaper."},
        {"stakeholder": "Finance", "response": "We cost less."},
    ]


def test_a_closing_not_of_three_sentences_and_an_empty_claim_are_kept_and_flagged() -> None:
    step, v = opening_step(**SETUP)
    answer = opening_answer(closing="We win. Clearly.")
    answer["arguments"]["Speed"]["claim"] = "  "
    payload, flags = accept(step, answer, v)
    assert kinds(flags) == [("empty", "arguments.1.claim"), ("sentence_count", "closing")]
    assert flags[1].detail == "The closing has 2 sentences, not 3."
    assert payload["closing"] == "We win. Clearly." and payload["arguments"][1]["claim"] == ""


def test_sources_cited_twice_count_once_and_more_than_five_are_cut_and_flagged() -> None:
    sources = [{"option": "A", "source": f"S{n}", "type": "Doc", "summary": "s"} for n in range(7)]
    step, v = opening_step(evidence=sources)
    answer = opening_answer(stakeholders=None)
    del answer["stakeholders"]
    answer["arguments"]["Cost"]["evidence"] = ["S0", "S0", "S1"]
    answer["arguments"]["Speed"]["evidence"] = [f"S{n}" for n in range(7)]
    answer["arguments"]["Support"]["evidence"] = []
    payload, flags = accept(step, answer, v)
    assert [a["evidence"] for a in payload["arguments"]] == [["S0", "S1"], [f"S{n}" for n in range(5)], []]
    assert kinds(flags) == [("too_many", "arguments.1.evidence")]


def test_without_an_evidence_base_or_stakeholders_the_opening_asks_for_neither() -> None:
    step, v = opening_step()
    assert properties(step.schema) == ["arguments", "risks_of_other", "closing"]
    assert "evidence" not in wire(step.schema)["$defs"]["Argument"]["properties"]
    answer = opening_answer()
    del answer["stakeholders"]
    for argument in answer["arguments"].values():
        del argument["evidence"]
    payload, flags = accept(step, answer, v)
    assert flags == [] and payload["stakeholders"] == []
    assert all(a["evidence"] == [] for a in payload["arguments"])


# --- the rebuttal -----------------------------------------------------------------------------------------------


def attack(claim_id: str, **overrides: Any) -> dict[str, Any]:
    return {
        "claim_id": claim_id,
        "failure": "missing evidence",
        "why_it_fails": "No figure is given.",
        "counter_evidence": "The benchmark shows 2x.",
    } | overrides


def test_a_rebuttal_asks_three_attacks_naming_claims_by_id_and_quotes_them_itself() -> None:
    v = view(OPENED)
    step = steps(v)[key_rebuttal("A")]
    assert properties(step.schema, "rebuttals") == ["rebuttal_1", "rebuttal_2", "rebuttal_3"]
    attack_schema = wire(step.schema)["$defs"]["Rebuttal"]["properties"]
    assert enum_of(attack_schema["claim_id"]) == ["c1", "c2", "c3"]
    assert "quoted_claim" not in attack_schema
    answer = {
        "rebuttals": {"rebuttal_1": attack("c2"), "rebuttal_2": attack("c3"), "rebuttal_3": attack("c1")},
        "acknowledged_strong": [],
    }
    payload, flags = accept(step, answer, v)
    assert flags == []
    assert [(r["claim_id"], r["quoted_claim"]) for r in payload["rebuttals"]] == [
        ("c2", "B wins on speed by a wide margin."),
        ("c3", "B wins on support by a wide margin."),
        ("c1", "B wins on cost by a wide margin."),
    ]
    with pytest.raises(ValidationError, match="claim_id"):
        step.schema.model_validate(
            {**answer, "rebuttals": {**answer["rebuttals"], "rebuttal_1": attack("c9")}}
        )


def test_a_claim_attacked_twice_or_both_attacked_and_conceded_is_kept_and_flagged() -> None:
    v = view(OPENED)
    step = steps(v)[key_rebuttal("B")]
    answer = {
        "rebuttals": {"rebuttal_1": attack("c1"), "rebuttal_2": attack("c1"), "rebuttal_3": attack("c2")},
        "acknowledged_strong": ["c3", "c2", "c3"],
    }
    payload, flags = accept(step, answer, v)
    assert kinds(flags) == [
        ("attacked_twice", "rebuttals.1.claim_id"),
        ("acknowledged_and_attacked", "acknowledged_strong.1"),
    ]
    assert [r["claim_id"] for r in payload["rebuttals"]] == ["c1", "c1", "c2"]
    assert payload["acknowledged_strong"] == ["c3", "c2"]  # each once


def test_with_two_claims_a_rebuttal_attacks_both() -> None:
    two = [{"name": "Cost", "weight": "High"}, {"name": "Speed", "weight": "Low"}]
    short = opening("A") | {"arguments": opening("A")["arguments"][:2]}
    v = view({key_opening("A"): short, key_opening("B"): short}, criteria=two)
    step = steps(v)[key_rebuttal("B")]
    assert properties(step.schema, "rebuttals") == ["rebuttal_1", "rebuttal_2"]
    assert enum_of(wire(step.schema)["$defs"]["Rebuttal"]["properties"]["claim_id"]) == ["c1", "c2"]


# --- the judge --------------------------------------------------------------------------------------------------


def judgement_answer(
    criteria: list[str], rebuttal_ids: tuple[str, ...] = (), **overrides: Any
) -> dict[str, Any]:
    """The stored `judgement` of test_protocol, in the shape the judge's schema asks for."""
    stored = judgement({n: SCORES.get(n, (3, 3)) for n in criteria})
    recommendation = {k: v for k, v in stored["recommendation"].items() if k != "decisive_rebuttal"}
    answer: dict[str, Any] = {
        "executive_summary": stored["executive_summary"],
        "criterion_scores": {
            s["criterion"]: {k: v for k, v in s.items() if k != "criterion"}
            for s in stored["criterion_scores"]
        },
    }
    if rebuttal_ids:
        answer["rebuttal_analysis"] = {i: {"effectiveness": 4, "verdict": "COLLAPSE"} for i in rebuttal_ids}
        recommendation["decisive_rebuttal"] = rebuttal_ids[0]
    rows = {
        r["criterion"]: {k: v for k, v in r.items() if k != "criterion"} for r in stored["scorecard"]["rows"]
    }
    answer |= {
        "audit": stored["audit"],
        "scorecard": {**stored["scorecard"], "rows": rows},
        "recommendation": recommendation,
        **{
            k: stored[k]
            for k in (
                "decision_conditions",
                "open_questions",
                "key_risks",
                "agreement_zones",
                "contested_zones",
            )
        },
    }
    return answer | overrides


SIX = ("A1", "A2", "A3", "B1", "B2", "B3")


def test_the_team_judge_scores_every_criterion_and_every_rebuttal_by_construction() -> None:
    v = view(TEAM_HISTORY)
    step = steps(v)[KEY_JUDGEMENT]
    assert properties(step.schema, "criterion_scores") == NAMES
    assert properties(step.schema, "rebuttal_analysis") == list(SIX)
    assert properties(step.schema, "scorecard", "rows") == NAMES
    defs = wire(step.schema)["$defs"]
    assert defs["CriterionScore"]["properties"]["score_a"]["enum"] == [1, 2, 3, 4, 5]
    assert defs["CriterionScore"]["properties"]["more_convincing"]["enum"] == ["A", "B", "even"]
    assert defs["RebuttalScore"]["properties"]["effectiveness"]["enum"] == [1, 2, 3, 4, 5]
    assert defs["Recommendation"]["properties"]["decisive_rebuttal"]["enum"] == list(SIX)
    assert "rebuttal_id" not in defs["RebuttalScore"]["properties"]
    incomplete = judgement_answer(NAMES, SIX)
    del incomplete["criterion_scores"]["Support"]
    with pytest.raises(ValidationError, match="Support"):
        step.schema.model_validate(incomplete)
    with pytest.raises(ValidationError, match="score_a"):
        step.schema.model_validate(
            judgement_answer(NAMES, SIX)
            | {
                "criterion_scores": {
                    n: {**s, "score_a": 7} for n, s in judgement_answer(NAMES)["criterion_scores"].items()
                }
            }
        )


def test_accept_names_each_score_and_quotes_each_scored_rebuttal() -> None:
    v = view(TEAM_HISTORY)
    step = steps(v)[KEY_JUDGEMENT]
    payload, flags = accept(step, judgement_answer(NAMES, SIX), v)
    assert flags == []
    assert [(s["criterion"], s["score_a"], s["score_b"]) for s in payload["criterion_scores"]] == [
        ("Cost", 4, 3),
        ("Speed", 3, 4),
        ("Support", 5, 2),
    ]
    first = payload["rebuttal_analysis"][0]
    assert [a["rebuttal_id"] for a in payload["rebuttal_analysis"]] == list(SIX)
    assert first == {
        "rebuttal_id": "A1",
        "targeted_claim": "B wins on cost",  # the words the rebuttal quoted (test_protocol's stored rebuttal)
        "rebuttal": "missing evidence: No figure is given.",
        "effectiveness": 4,
        "verdict": "COLLAPSE",
    }
    assert [r["criterion"] for r in payload["scorecard"]["rows"]] == NAMES
    assert payload["recommendation"]["decisive_rebuttal"] == "A1"


@pytest.mark.parametrize(
    ("history", "mode", "convincing"),
    [
        (OPENED, "subagent", ["A", "B", "even"]),
        ({key_opening("A"): opening("A"), key_opening("B"): None}, "team", ["A", "B", "even", "n/a"]),
        ({}, "single", ["n/a"]),
    ],
)
def test_without_rebuttals_the_judge_is_asked_no_analysis_and_n_a_only_where_an_advocate_is_missing(
    history: dict[str, Any], mode: str, convincing: list[str]
) -> None:
    v = view(history, mode=mode)
    step = steps(v)[KEY_JUDGEMENT]
    assert "rebuttal_analysis" not in properties(step.schema)
    defs = wire(step.schema)["$defs"]
    assert "decisive_rebuttal" not in defs["Recommendation"]["properties"]
    assert enum_of(defs["CriterionScore"]["properties"]["more_convincing"]) == convincing
    answer = judgement_answer(NAMES)
    for score in answer["criterion_scores"].values():
        score["more_convincing"] = convincing[-1]
    payload, flags = accept(step, answer, v)
    assert flags == []
    assert payload["rebuttal_analysis"] == [] and payload["recommendation"]["decisive_rebuttal"] == ""
    with pytest.raises(ValidationError, match="rebuttal_analysis"):
        step.schema.model_validate(answer | {"rebuttal_analysis": {}})


def test_too_few_or_too_many_items_and_empty_texts_of_the_judge_are_kept_and_flagged() -> None:
    v = view(TEAM_HISTORY)
    step = steps(v)[KEY_JUDGEMENT]
    answer = judgement_answer(NAMES, SIX)
    answer["open_questions"] = ["Only one?"]
    answer["decision_conditions"]["choose_b_if"] = ["a", "b", "c", "d"]
    answer["key_risks"] = [{"risk": "", "likelihood": "H", "mitigation": "m"}] * 4
    answer["contested_zones"] = [f"z{n}" for n in range(8)]
    answer["audit"]["strawman"] = [{"advocate": "A", "instance": "x"}] * 11
    answer["executive_summary"] = " "
    payload, flags = accept(step, answer, v)
    assert kinds(flags) == [
        ("too_many", "audit.strawman"),
        ("too_many", "decision_conditions.choose_b_if"),
        ("too_few", "open_questions"),
        ("too_many", "key_risks"),
        ("empty", "key_risks.0.risk"),
        ("empty", "key_risks.1.risk"),
        ("empty", "key_risks.2.risk"),
        ("too_many", "contested_zones"),
        ("empty", "executive_summary"),
    ]
    assert payload["open_questions"] == ["Only one?"] and len(payload["key_risks"]) == 3
    assert len(payload["decision_conditions"]["choose_b_if"]) == 3 and len(payload["contested_zones"]) == 6
    assert len(payload["audit"]["strawman"]) == 10


def test_the_judges_arithmetic_is_committed_as_written_and_its_mismatches_shown_in_the_outcome() -> None:
    v = view(TEAM_HISTORY)
    step = steps(v)[KEY_JUDGEMENT]
    answer = judgement_answer(NAMES, SIX)
    answer["scorecard"]["rows"]["Cost"] = {"weight": 2, "weighted_a": -4, "weighted_b": 99}
    answer["scorecard"]["total_a"] = 1000
    payload, flags = accept(step, answer, v)
    assert flags == []  # the arithmetic is the code's to recompute, not a flag
    assert payload["scorecard"]["rows"][0] == {
        "criterion": "Cost",
        "weight": 2,
        "weighted_a": -4,
        "weighted_b": 99,
    }
    outcome = PROTOCOL.plan(view({**TEAM_HISTORY, KEY_JUDGEMENT: payload})).outcome  # type: ignore[union-attr]
    assert outcome["scorecard"]["total_a"] == 23
    assert "Cost: the judge used weight 2, the run's weight is 3" in outcome["scorecard"]["mismatches"]
    assert "Total A: the judge wrote 1000, the recomputed total is 23" in outcome["scorecard"]["mismatches"]


# --- the human's evidence review ----------------------------------------------------------------------------------


def test_a_review_that_adjusts_to_no_criteria_or_repeats_one_is_unusable() -> None:
    v = view({}, evidence_review="human")
    step = steps(v)["r0/review/1"]
    empty = schema.EvidenceReview(choice="adjust_criteria")
    assert PROTOCOL.validate(step, empty, v) == [
        "criteria: adjusting the criteria needs at least one criterion"
    ]
    twice = schema.EvidenceReview(
        choice="adjust_criteria",
        criteria=[
            schema.CriterionSpec(name="Cost", weight="High"),
            schema.CriterionSpec(name="cost", weight="Low"),
        ],
    )
    assert PROTOCOL.validate(step, twice, v) == ["criteria: 'cost' is listed twice"]


# --- the turn bodies --------------------------------------------------------------------------------------------


def test_a_streaming_answer_is_shown_in_the_stored_shape() -> None:
    partial = {
        "arguments": {"Cost": {"claim": "We win on cost."}, "Speed": None},
        "stakeholders": {"CTO": "Reconsider"},
    }
    shaped = as_stored(partial, "opening")
    assert shaped["arguments"] == [{"id": "c1", "criterion": "Cost", "claim": "We win on cost."}]
    assert shaped["stakeholders"] == [{"stakeholder": "CTO", "response": "Reconsider"}]
    assert as_stored({"rebuttals": {"rebuttal_1": {"claim_id": "c2"}}}, "rebuttal")["rebuttals"] == [
        {"claim_id": "c2"}
    ]
    assert as_stored(opening("A"), "opening")["arguments"] == opening("A")["arguments"]  # stored: as it is
    html = render_to_string("debates/protocols/comparative.html#opening", {"data": partial, "live": True})
    assert "We win on cost." in html and "Reconsider" in html


@pytest.mark.parametrize("decision_type", DECISION_TYPES)
def test_a_streaming_answer_names_the_default_criteria_as_the_run_does(decision_type: str) -> None:
    names = [c["name"] for c in default_criteria(decision_type)]
    keys = property_names(names)  # what the schema calls them: "Team familiarity" is "Team_familiarity"
    assert any(keys[n] != n for n in names)
    partial = {"arguments": {keys[n]: {"claim": f"We win on {n}."} for n in names}}
    assert [a["criterion"] for a in as_stored(partial, "opening")["arguments"]] == names
    scores = {"criterion_scores": {keys[n]: {"score_a": 3} for n in names}}
    assert [s["criterion"] for s in as_stored(scores, "judgement")["criterion_scores"]] == names
    # The live frame, rendered from the streamed text alone (cut mid-answer), shows the names.
    html = turn_live_frame(
        key=key_opening("A"), task="opening", protocol="comparative", text=json.dumps(partial)[:-12], names={}
    )
    shown = [n for n in names if f"<strong>{n}</strong>" in html]
    assert shown and not [k for k in keys.values() if f"<strong>{k}</strong>" in html and k not in names]


def test_a_streaming_name_the_defaults_do_not_know_is_shown_in_its_words() -> None:
    # The live frame has no run config (debates.engine.stream renders it from the text alone), so a criterion or
    # stakeholder of the run's own is read back from its property name: the words, not the underscores.
    (key,) = property_names(["Cost per seat (3-yr)"]).values()
    assert key == "Cost_per_seat_3-yr" and key_label(key) == "Cost per seat 3-yr"
    (long,) = property_names(
        ["A criterion named at such length that its property name is cut and hashed"]
    ).values()
    assert len(long) == 64 and key_label(long).endswith("…") and "_" not in key_label(long)
    assert key_label("Cost") == "Cost" and key_label("A1") == "A1"
    shaped = as_stored({"stakeholders": {"Head_of_platform": "Reconsider."}}, "opening")
    assert shaped["stakeholders"] == [{"stakeholder": "Head of platform", "response": "Reconsider."}]


def test_a_flagged_item_is_marked_in_the_turn_body() -> None:
    flags = [
        {"kind": "sentence_count", "where": "closing", "detail": "The closing has 2 sentences, not 3."},
        {"kind": "empty", "where": "arguments.1.claim", "detail": "The claim is empty."},
    ]
    assert flags_at(flags, "arguments.1") == [flags[1]] and flags_at(flags, "arguments.10") == []
    html = render_to_string(
        "debates/protocols/comparative.html#opening", {"data": opening("A"), "flags": flags}
    )
    assert html.count('class="flag-mark"') == 2
    assert 'data-flag-kind="sentence_count" title="The closing has 2 sentences, not 3."' in html
