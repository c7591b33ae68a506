"""The market panel's step schemas and what its `accept` does with an answer (issue 22): references are enums of
what exists (the KB's paths, the stage's argument ids), the argument count, "one challenge per opponent argument"
and "every argument scored" are required properties, the seat's name, the round, its argument ids, a challenge's
target and a refined argument's original claim are filled by code, and what no schema can check (a figure that is
not the KB's, a path outside the seat's slice, a challenge of an argument the opponent did not make, a stance of
the wrong length, a number out of range) is flagged, never refused. The half rule of the cross-examination is in
test_cross_rule.py."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from pydantic import ValidationError

from debates.contract import Done, Flag, RunView, Step, Steps
from debates.protocols.market_panel import schema
from debates.protocols.market_panel.protocol import KEY_JUDGEMENT, PATHS_ENUM_MAX, kb_paths, key_opening
from kb.formats.seed004 import leaf_paths
from tests.protocols.market_panel.test_protocol import (
    DATA,
    PROTOCOL,
    SEATS,
    closing,
    closings,
    crosses,
    opening,
    openings,
    view,
)

STANCE = " ".join(["word"] * 60)


def steps(history: dict[str, dict[str, Any] | None], **overrides: Any) -> dict[str, Step]:
    plan = PROTOCOL.plan(view(history, **overrides))
    assert isinstance(plan, Steps)
    return {s.seat: s for s in plan.steps}


def accept(
    step: Step, answer: dict[str, Any], history: dict[str, dict[str, Any] | None]
) -> tuple[Any, list[Flag]]:
    """An answer as the runner handles it: valid against the step's schema, then accepted."""
    the_view: RunView = view(history)
    model = step.schema.model_validate(answer)
    assert PROTOCOL.validate(step, model, the_view) == []
    accepted = PROTOCOL.accept(step, model, the_view)
    json.dumps(accepted.payload)
    return accepted.payload, list(accepted.flags)


def kinds(flags: list[Flag]) -> list[tuple[str, str]]:
    return [(f.kind, f.where) for f in flags]


def argument(
    claim: str = "RSI is firm", evidence: Any = None, confidence: float = 0.7, **more: Any
) -> dict[str, Any]:
    cited = [{"data_point": "58.4", "source": "technicals.SPX.rsi_14"}] if evidence is None else evidence
    return {"claim": claim, "evidence": cited, "confidence": confidence, **more}


def score(**overrides: Any) -> dict[str, Any]:
    return {
        "logic": 8,
        "evidence": 7,
        "clarity": 8,
        "persuasiveness": 7,
        "weighted": 7.5,
        "status": "UPHELD",
    } | overrides


SYNTHESIS = {"bull_case_summary": "Bull.", "bear_case_summary": "Bear.", "key_insight": "Horizon."}


# --- the schemas -----------------------------------------------------------------------------------------------------


def test_an_opening_asks_one_property_per_argument_the_configured_minimum_required() -> None:
    opening = steps({})["tech_bull"].schema.model_json_schema()
    assert list(opening["properties"]) == ["argument_0", "argument_1", "argument_2", "argument_3"]
    assert opening["required"] == ["argument_0", "argument_1"]
    argument_schema = opening["$defs"]["Argument"]
    assert set(argument_schema["properties"]) == {
        "claim",
        "evidence",
        "confidence",
        "counterpoints",
        "assumptions",
    }
    exact = steps({}, arguments_min=3, arguments_max=3)["tech_bull"].schema.model_json_schema()
    assert exact["required"] == ["argument_0", "argument_1", "argument_2"] and len(exact["properties"]) == 3


def test_the_seat_its_round_and_its_argument_ids_are_not_asked() -> None:
    step = steps({})["tech_bull"]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        step.schema.model_validate({"agent": "tech_bull", "argument_0": argument(), "argument_1": argument()})
    with pytest.raises(ValidationError, match="argument_1"):
        step.schema.model_validate({"argument_0": argument()})  # the minimum is required
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        step.schema.model_validate({"argument_0": argument(id="tech_bull_arg_0"), "argument_1": argument()})


def test_a_data_point_cites_one_of_the_kbs_paths() -> None:
    opening = steps({})["tech_bull"].schema.model_json_schema()
    assert opening["$defs"]["DataPoint"]["properties"]["source"]["enum"] == leaf_paths(DATA)
    with pytest.raises(ValidationError, match="source"):
        steps({})["tech_bull"].schema.model_validate(
            {
                "argument_0": argument(evidence=[{"data_point": "1", "source": "technicals.EXI.rsi_14"}]),
                "argument_1": argument(),
            }
        )


def test_the_seats_of_a_parallel_stage_share_one_schema() -> None:
    """The schema is part of the prompt cache's key: the openings name every path of the KB, the
    cross-examinations the opponent's arguments by number (whoever the opponent), the closings every argument of
    the stage, whoever the seat."""
    assert len({s.schema for s in steps({}).values()}) == 1
    cross = steps(openings())
    assert len({s.schema for s in cross.values()}) == 1
    cross_schema = next(iter(cross.values())).schema.model_json_schema()
    assert list(cross_schema["properties"]) == ["on_arg_0", "on_arg_1"]
    assert "target_id" not in cross_schema["$defs"]["Challenge"]["properties"]
    closing_steps = steps({**openings(), **crosses()})
    assert len({s.schema for s in closing_steps.values()}) == 1
    closing_schema = next(iter(closing_steps.values())).schema.model_json_schema()
    assert closing_schema["properties"]["abandoned"]["items"]["enum"] == [
        f"{s}_arg_{n}" for s in SEATS for n in range(2)
    ]
    assert "original" not in closing_schema["$defs"]["RefinedClaim"]["properties"]


def test_the_judge_scores_one_property_per_argument() -> None:
    (judge,) = steps({**openings(), **crosses(), **closings()}).values()
    ids = [f"{s}_arg_{n}" for s in SEATS for n in range(2)]
    scores = judge.schema.model_json_schema()["$defs"]["Scores"]
    assert list(scores["properties"]) == ids and scores["required"] == ids
    answer = {"scores": {i: score() for i in ids[1:]}, "synthesis": SYNTHESIS, "stronger_case": "bull"}
    with pytest.raises(ValidationError, match="tech_bull_arg_0"):
        judge.schema.model_validate(answer)
    with pytest.raises(ValidationError, match="Extra inputs"):
        judge.schema.model_validate(
            {**answer, "scores": {**answer["scores"], ids[0]: score(), "x_arg_0": score()}}
        )


def test_lengths_ranges_and_counts_are_stated_in_the_schema_but_not_enforced() -> None:
    """Anthropic's decoder does not enforce them (the SDK moves them into descriptions): an answer breaking them is
    valid and flagged by accept, below."""
    step = steps({})["tech_bull"]
    sent = anthropic.transform_schema(step.schema)["$defs"]["Argument"]["properties"]
    assert (
        "maxLength: 99" in sent["claim"]["description"] and "maximum: 1" in sent["confidence"]["description"]
    )
    step.schema.model_validate(
        {
            "argument_0": argument("x" * 150, confidence=1.7, counterpoints=["c"] * 9),
            "argument_1": argument(""),
        }
    )


def test_a_kb_with_more_paths_than_an_enum_carries_is_cited_by_free_text() -> None:
    big = {"prices": {f"T{n}": {"price": n} for n in range(PATHS_ENUM_MAX + 1)}}
    assert kb_paths(big, {"technical": ["prices"]}) is None
    assert kb_paths(DATA, {}) == tuple(leaf_paths(DATA))
    free = schema.opening_schema(None, 2, 4)
    assert free.model_json_schema()["$defs"]["DataPoint"]["properties"]["source"] == {"title": "Source", "type": "string", "description": "The dotted path of the value in the knowledge base."}  # fmt: skip


# --- openings: what code fills, what it flags --------------------------------------------------------------------------


def test_accept_fills_the_seat_the_round_and_the_argument_ids_by_position() -> None:
    step = steps({})["tech_bull"]
    answer = {
        "argument_0": argument("A"),
        "argument_1": argument("B"),
        "argument_2": None,
        "argument_3": argument("C"),
    }
    payload, flags = accept(step, answer, {})
    assert payload["agent"] == "tech_bull" and payload["round"] == "opening"
    assert [(a["id"], a["claim"]) for a in payload["arguments"]] == [
        ("tech_bull_arg_0", "A"),
        ("tech_bull_arg_1", "B"),
        ("tech_bull_arg_2", "C"),
    ]
    assert payload["arguments"][0]["evidence"] == [
        {"data_point": "58.4", "source": "technicals.SPX.rsi_14", "inferred": False}
    ]
    assert flags == []


def test_a_figure_that_is_not_the_kbs_is_flagged_not_refused() -> None:
    step = steps({})["tech_bull"]
    wrong = [{"data_point": "58.4", "source": "technicals.SPX.rsi_14"}, {"data_point": "62", "source": "technicals.SPX.rsi_14"}]  # fmt: skip
    payload, flags = accept(step, {"argument_0": argument(), "argument_1": argument(evidence=wrong)}, {})
    assert payload["arguments"][1]["evidence"][1]["data_point"] == "62"  # kept as written
    assert flags == [
        Flag(
            "number_mismatch",
            "arguments.1.evidence.1",
            "technicals.SPX.rsi_14: quoted 62, the knowledge base has 58.4.",
        )
    ]


def test_a_path_outside_the_seats_slice_is_flagged() -> None:
    step = steps({})["tech_bull"]
    foreign = [{"data_point": "17.6", "source": "sentiment.vix_level"}]
    _, flags = accept(step, {"argument_0": argument(), "argument_1": argument(evidence=foreign)}, {})
    assert kinds(flags) == [("outside_slice", "arguments.1.evidence.0")]


def test_string_evidence_is_verified_and_an_unknown_path_or_no_path_is_flagged() -> None:
    step = steps({})["tech_bull"]
    answer = {
        "argument_0": argument(evidence="RSI technicals.SPX.rsi_14 = 61 and technicals.SPX.put_call 0.9"),
        "argument_1": argument(evidence="Momentum is strong."),
    }
    payload, flags = accept(step, answer, {})
    assert payload["arguments"][1]["evidence"] == "Momentum is strong."
    assert kinds(flags) == [
        ("number_mismatch", "arguments.0.evidence"),
        ("unknown_path", "arguments.0.evidence"),
        ("no_citation", "arguments.1.evidence"),
    ]


def test_what_breaks_a_stated_limit_is_kept_clamped_or_cut_and_flagged() -> None:
    step = steps({})["tech_bull"]
    answer = {
        "argument_0": argument("x" * 120, confidence=1.7, counterpoints=[f"c{n}" for n in range(8)]),
        "argument_1": argument(
            "  ",
            confidence=-0.2,
            evidence=[{"data_point": " ", "source": "technicals.SPX.rsi_14"}],
            assumptions=["", "a"],
        ),  # fmt: skip
    }
    payload, flags = accept(step, answer, {})
    first, second = payload["arguments"]
    assert (
        len(first["claim"]) == 120
        and first["confidence"] == 1.0
        and first["counterpoints"] == [f"c{n}" for n in range(6)]
    )
    assert second["claim"] == "" and second["confidence"] == 0.0 and second["assumptions"] == ["a"]
    assert kinds(flags) == [
        ("claim_too_long", "arguments.0.claim"),
        ("out_of_range", "arguments.0.confidence"),
        ("too_many", "arguments.0.counterpoints"),
        ("empty", "arguments.1.claim"),
        ("empty", "arguments.1.evidence.0"),
        ("out_of_range", "arguments.1.confidence"),
        ("empty", "arguments.1.assumptions"),
    ]


# --- cross-examination ---------------------------------------------------------------------------------------------------


def challenge(kind: str = "refute", **more: Any) -> dict[str, Any]:
    return {"challenge_type": kind, "reasoning": "Because.", **more}


def test_a_challenge_names_no_target_code_fills_it_from_the_opponent_argument_number() -> None:
    history = openings()
    step = steps(history)["tech_bull"]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        step.schema.model_validate(
            {"on_arg_0": challenge(target_id="tech_bear_arg_0"), "on_arg_1": challenge()}
        )
    answer = {
        "on_arg_0": challenge("question_evidence"),
        "on_arg_1": challenge(
            "partial", new_evidence=[{"data_point": "41.3", "source": "technicals.RUT.rsi_14"}]
        ),
    }
    payload, flags = accept(step, answer, history)
    assert payload == {
        "challenges": [
            {"target_id": "tech_bear_arg_0", "challenge_type": "question_evidence", "reasoning": "Because.",
             "new_evidence": ""},
            {"target_id": "tech_bear_arg_1", "challenge_type": "partial", "reasoning": "Because.",
             "new_evidence": [{"data_point": "41.3", "source": "technicals.RUT.rsi_14", "inferred": False}]},
        ]
    }  # fmt: skip
    assert flags == []


def test_a_challenge_of_an_argument_the_opponent_did_not_make_is_dropped_and_flagged() -> None:
    """The stage's schema offers as many properties as the most prolific opponent made arguments: a seat whose
    opponent made fewer may still fill the extra ones, which answer nothing."""
    history = {**openings(), key_opening("fund_bear"): opening("fund_bear", 3)}
    step = steps(history)["tech_bull"]
    answer = {"on_arg_0": challenge(), "on_arg_1": challenge("partial"), "on_arg_2": challenge()}
    payload, flags = accept(step, answer, history)
    assert [c["target_id"] for c in payload["challenges"]] == ["tech_bear_arg_0", "tech_bear_arg_1"]
    assert flags == [
        Flag(
            "not_opponent_argument",
            "on_arg_2",
            "tech_bear made no argument 2 (its arguments: tech_bear_arg_0, tech_bear_arg_1): dropped.",
        )
    ]


def test_new_evidence_is_verified_like_an_arguments() -> None:
    history = openings()
    step = steps(history)["tech_bull"]
    answer = {
        "on_arg_0": challenge(new_evidence=[{"data_point": "99", "source": "technicals.SPX.rsi_14"}]),
        "on_arg_1": challenge(),
    }
    _, flags = accept(step, answer, history)
    assert kinds(flags) == [("number_mismatch", "challenges.0.new_evidence.0")]


# --- closings ------------------------------------------------------------------------------------------------------------


def refined(argument_id: str, confidence: float = 0.6) -> dict[str, Any]:
    return {"argument_id": argument_id, "refinement": "Narrowed.", "confidence_adjusted": confidence}


def test_a_closing_gets_the_original_claim_filled_in_by_code() -> None:
    history = {**openings(), **crosses()}
    step = steps(history)["macro_bear"]
    answer = {
        **closing("macro_bear"),
        "refined_claims": [refined("macro_bear_arg_0")],
        "abandoned": ["macro_bear_arg_1"],
    }
    payload, flags = accept(step, answer, history)
    assert payload["refined_claims"] == [
        {
            "argument_id": "macro_bear_arg_0",
            "original": "macro_bear claim 0",
            "refinement": "Narrowed.",
            "confidence_adjusted": 0.6,
        }  # fmt: skip
    ]
    assert payload["abandoned"] == ["macro_bear_arg_1"] and flags == []


def test_a_closing_keeps_only_its_own_arguments_each_once_and_flags_the_rest() -> None:
    history = {**openings(), **crosses()}
    step = steps(history)["macro_bear"]
    answer = {
        **closing("macro_bear"),
        "refined_claims": [
            refined("macro_bull_arg_0"),
            refined("macro_bear_arg_1"),
            refined("macro_bear_arg_0", confidence=1.4),
            refined("macro_bear_arg_0"),
        ],
        "abandoned": ["tech_bull_arg_0", "macro_bear_arg_1"],
        "final_stance": "Too short.",
    }
    payload, flags = accept(step, answer, history)
    assert [r["argument_id"] for r in payload["refined_claims"]] == ["macro_bear_arg_0"]
    assert payload["refined_claims"][0]["confidence_adjusted"] == 1.0
    assert payload["abandoned"] == ["macro_bear_arg_1"] and payload["final_stance"] == "Too short."
    assert kinds(flags) == [
        ("not_own_argument", "abandoned"),
        ("not_own_argument", "refined_claims"),
        ("refined_and_abandoned", "refined_claims"),
        ("out_of_range", "refined_claims.0.confidence_adjusted"),
        ("duplicate", "refined_claims"),
        ("stance_length", "final_stance"),
    ]
    assert flags[-1].detail == "2 words; the final stance asks 50–100."


# --- the judge -------------------------------------------------------------------------------------------------------


def test_the_judges_scores_are_stored_as_a_list_in_argument_order_out_of_range_ones_clamped() -> None:
    history = {**openings(), **crosses(), **closings()}
    (judge,) = steps(history).values()
    ids = [f"{s}_arg_{n}" for s in SEATS for n in range(2)]
    scores = {i: score() for i in ids} | {"tech_bear_arg_0": score(logic=0, persuasiveness=14, weighted=42.0)}
    answer = {"scores": scores, "synthesis": {**SYNTHESIS, "key_insight": " "}, "stronger_case": "bear"}
    payload, flags = accept(judge, answer, history)
    assert [s["argument_id"] for s in payload["scores"]] == ids
    assert payload["scores"][2] == {
        "argument_id": "tech_bear_arg_0", "logic": 1, "evidence": 7, "clarity": 8, "persuasiveness": 10,
        "weighted": 42.0, "status": "UPHELD", "note": "",
    }  # fmt: skip
    assert kinds(flags) == [
        ("out_of_range", "scores.2.logic"),
        ("out_of_range", "scores.2.persuasiveness"),
        ("empty", "synthesis.key_insight"),
    ]


def test_an_accepted_judgement_is_what_the_outcome_reads() -> None:
    history = {**openings(), **crosses(), **closings()}
    (judge,) = steps(history).values()
    ids = [f"{s}_arg_{n}" for s in SEATS for n in range(2)]
    payload, _ = accept(
        judge, {"scores": {i: score() for i in ids}, "synthesis": SYNTHESIS, "stronger_case": "bear"}, history
    )
    plan = PROTOCOL.plan(view({**history, KEY_JUDGEMENT: payload}))
    assert isinstance(plan, Done) and not plan.failed
    assert plan.outcome["verdicts"]["UPHELD"] == 16 and plan.outcome["score_mismatches"] == []
