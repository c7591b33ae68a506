"""The comparative debate (seed 003): setup (two options, default criteria per decision type, weights 3/2/1,
the line formats), the scorecard arithmetic and the 5 % rule, hedging detection, and every step of the fallback
chain team → subagent → single → raw, planned over hand-built histories. What each turn is asked and what code
fills in and flags: test_answers.py."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from debates.contract import Done, RunView, SeatView, Steps, TurnView
from debates.engine import registry
from debates.protocols.comparative.protocol import (
    KEY_JUDGEMENT,
    ComparativeConfig,
    criteria_parse,
    default_criteria,
    evidence_parse,
    hedges_find,
    key_opening,
    key_rebuttal,
    key_review,
    options_triage,
    scorecard_compute,
    sentences_count,
    stakeholders_parse,
)

PROTOCOL = registry.get("comparative")
CRITERIA = [
    {"name": "Cost", "weight": "High"},
    {"name": "Speed", "weight": "Medium"},
    {"name": "Support", "weight": "Low"},
]


def config(**overrides: Any) -> ComparativeConfig:
    data = {"option_a": "Postgres", "option_b": "Mongo", "criteria": CRITERIA, **overrides}
    return ComparativeConfig.model_validate(PROTOCOL.prepare(data, None))


def view(turns: dict[str, dict[str, Any] | None], **config_overrides: Any) -> RunView:
    cfg = config(**config_overrides)
    seats = {s.handle: SeatView(s.handle, s.name, s.role, s.lens, s.human) for s in PROTOCOL.seats(cfg)}
    turn_views = {
        key: TurnView(
            key=key,
            seat="decider" if key.startswith("r0/") else key.rsplit("/", 1)[1],
            stage=key.split("/")[1],
            task=key.split("/")[1],
            status="committed" if payload is not None else "failed",
            payload=payload,
            error="" if payload is not None else "Simulated mid-stream failure",
        )
        for key, payload in turns.items()
    }
    return RunView(1, "Which database?", "material", 7, cfg, seats, turn_views)


def opening(option: str) -> dict[str, Any]:
    return {
        "arguments": [
            {
                "id": f"c{n}",
                "criterion": c["name"],
                "claim": f"{option} wins on {c['name'].lower()} by a wide margin.",
                "why_ours_scores_well": "Because the evidence says so.",
                "why_theirs_falls_short": "Because theirs does not.",
                "evidence": ["Benchmark"],
            }
            for n, c in enumerate(CRITERIA, start=1)
        ],
        "risks_of_other": [{"risk": f"Risk {n}", "evidence": "Audit"} for n in range(3)],
        "stakeholders": [],
        "closing": "We are cheaper. We are faster. We are supported.",
    }


def rebuttals(opponent: str) -> dict[str, Any]:
    return {
        "rebuttals": [
            {
                "claim_id": f"c{n}",
                "quoted_claim": f"{opponent} wins on {c['name'].lower()}",
                "failure": "missing evidence",
                "why_it_fails": "No figure is given.",
                "counter_evidence": "The benchmark shows 2x.",
            }
            for n, c in enumerate(CRITERIA, start=1)
        ],
        "acknowledged_strong": [],
    }


def judgement(
    scores: dict[str, tuple[int, int]], *, rebuttal_ids: tuple[str, ...] = (), **overrides: Any
) -> dict[str, Any]:
    points = {"High": 3, "Medium": 2, "Low": 1}
    weights = {c["name"]: points[c["weight"]] for c in CRITERIA}
    rows = [
        {"criterion": n, "weight": weights[n], "weighted_a": a * weights[n], "weighted_b": b * weights[n]}
        for n, (a, b) in scores.items()
    ]
    data = {
        "executive_summary": "A summary. Two sentences. Three.",
        "criterion_scores": [
            {
                "criterion": n,
                "score_a": a,
                "score_b": b,
                "justification_a": "j",
                "justification_b": "j",
                "more_convincing": "A",
            }
            for n, (a, b) in scores.items()
        ],
        "rebuttal_analysis": [
            {
                "rebuttal_id": i,
                "targeted_claim": "t",
                "rebuttal": "r",
                "effectiveness": 4 if i == "A1" else 2,
                "verdict": "COLLAPSE" if i == "A1" else "SURVIVE",
            }
            for i in rebuttal_ids
        ],
        "audit": {
            "strawman": [],
            "unsupported": [],
            "new_unsupported_in_rebuttals": [],
            "pulled_punches": [],
        },
        "scorecard": {
            "rows": rows,
            "total_a": sum(r["weighted_a"] for r in rows),
            "total_b": sum(r["weighted_b"] for r in rows),
        },
        "recommendation": {
            "option": "A",
            "its_close": False,
            "rationale": "A wins.",
            "decisive_rebuttal": "",
        },
        "decision_conditions": {"choose_a_if": ["x", "y"], "choose_b_if": ["x", "y"]},
        "open_questions": ["q1", "q2"],
        "key_risks": [{"risk": "r", "likelihood": "M", "mitigation": "m"}] * 2,
        "agreement_zones": [],
        "contested_zones": [],
    }
    data.update(overrides)
    return data


SCORES = {"Cost": (4, 3), "Speed": (3, 4), "Support": (5, 2)}
TEAM_HISTORY: dict[str, dict[str, Any] | None] = {
    key_opening("A"): opening("A"),
    key_opening("B"): opening("B"),
    key_rebuttal("A"): rebuttals("B"),
    key_rebuttal("B"): rebuttals("A"),
}


# --- setup ------------------------------------------------------------------------------------------------------


def test_each_decision_type_prefills_its_seed_criteria() -> None:
    assert [c["name"] for c in default_criteria("strategy")] == [
        "Strategic alignment",
        "Risk",
        "Effort",
        "Reversibility",
        "Stakeholder buy-in",
        "Time to value",
    ]
    assert len(default_criteria("vendor")) == 7 and default_criteria("vendor")[0] == {
        "name": "Cost",
        "weight": "High",
    }
    cfg = ComparativeConfig.model_validate(
        PROTOCOL.prepare({"option_a": "X", "option_b": "Y", "decision_type": "tool"}, None)
    )
    assert [c.name for c in cfg.criteria][:2] == ["Developer experience", "Feature completeness"]


def test_more_than_two_options_are_refused_with_a_request_to_triage() -> None:
    with pytest.raises(ValueError, match=r"exactly two options; 3 were given \(A, B, C\)\. Triage"):
        PROTOCOL.prepare({"options": ["A", "B", "C"]}, None)
    assert PROTOCOL.prepare({"options": "Postgres, Mongo"}, None)["option_b"] == "Mongo"
    assert options_triage("A, B, C, A") == ["A", "B", "C"]
    assert options_triage("Acme, Inc.\nGlobex\nAcme, Inc.") == ["Acme, Inc.", "Globex"]


def test_missing_options_name_what_to_give() -> None:
    with pytest.raises(ValueError, match="name the two options"):
        PROTOCOL.prepare({}, None)


def test_identical_options_and_repeated_criteria_are_refused() -> None:
    with pytest.raises(ValueError, match="^option_b: the two options must differ$"):
        config(option_b=" postgres ")
    with pytest.raises(ValueError, match="^criteria: Cost listed twice$"):
        config(criteria=[{"name": "Cost", "weight": "High"}, {"name": "cost", "weight": "Low"}])


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        (
            {"criteria": [{"name": "Cost", "weight": "Critical"}]},
            "criteria: criterion 1 ('Cost') has weight 'Critical'; use High, Medium or Low (or H/M/L, or 3/2/1)",
        ),
        ({"criteria": [{"name": "", "weight": "High"}]}, "criteria: criterion 1 name: must not be empty"),
        (
            {"criteria": [{"name": f"C{n}", "weight": "Low"} for n in range(13)]},
            "criteria: at most 12 allowed, 13 given",
        ),
        (
            {"decision_type": "vendr"},
            "decision_type: 'vendr' is not one of 'vendor', 'architecture', 'tool' or 'strategy'",
        ),
        (
            {"stakeholders": [{"name": "CFO", "confidence": "sure"}]},
            "stakeholders: stakeholder 1 ('CFO') confidence: 'sure' is not one of 'stated' or 'inferred'",
        ),
        (
            {"colour": "red"},
            "colour: no such setting (the settings are options, option_a, option_b, decision_type",
        ),
        ({"options": 3}, 'options: give the two options as a list, e.g. ["PostgreSQL", "MongoDB"], not 3'),
    ],
)
def test_a_bad_setting_is_refused_in_one_line_naming_it_and_its_value(
    overrides: dict[str, Any], error: str
) -> None:
    data = {"option_a": "Postgres", "option_b": "Mongo", **overrides}
    with pytest.raises(ValueError, match=f"^{re.escape(error)}") as refused:
        PROTOCOL.prepare(data, None)
    assert "\n" not in str(refused.value)
    assert not isinstance(refused.value, ValidationError)  # worded for a person, not pydantic's report


def test_weights_may_be_words_letters_or_points() -> None:
    given = [
        {"name": "Cost", "weight": "h"},
        {"name": "Risk", "weight": 2},
        {"name": "Fit", "weight": "LOW"},
        "Speed",
    ]
    assert [c.weight for c in config(criteria=given).criteria] == ["High", "Medium", "Low", "Medium"]


def test_criteria_lines_take_full_letter_or_point_weights_and_name_a_bad_line_and_value() -> None:
    assert criteria_parse("Cost | H\nRisk | medium\n\nFit\nSpeed | 1") == [
        {"name": "Cost", "weight": "High"},
        {"name": "Risk", "weight": "Medium"},
        {"name": "Fit", "weight": "Medium"},
        {"name": "Speed", "weight": "Low"},
    ]
    with pytest.raises(
        ValueError,
        match=r"^Criteria, line 2: 'Risk' has weight 'Urgent'; use High, Medium or Low \(or H/M/L, or 3/2/1\)$",
    ):
        criteria_parse("Cost | High\nRisk | Urgent")
    with pytest.raises(ValueError, match=r"Criteria, line 1: write 'Criterion \| High'"):
        criteria_parse("Cost | High | Low")
    with pytest.raises(ValueError, match="line 2: 'cost' is listed twice"):
        criteria_parse("Cost | High\ncost | Low")


def test_evidence_and_stakeholder_lines() -> None:
    assert evidence_parse("Quote | Email | 2,400 a month\nRunbook | two clusters", "A", "Evidence for A") == [
        {"option": "A", "source": "Quote", "type": "Email", "summary": "2,400 a month"},
        {"option": "A", "source": "Runbook", "type": "Doc", "summary": "two clusters"},
    ]
    with pytest.raises(ValueError, match="Evidence for A, line 1"):
        evidence_parse("just a sentence", "A", "Evidence for A")
    assert stakeholders_parse("CTO | prefers A | stated") == [
        {"name": "CTO", "position": "prefers A", "confidence": "stated", "notes": ""}
    ]
    with pytest.raises(ValueError, match="Stakeholders, line 1: .*stated or inferred"):
        stakeholders_parse("CTO | prefers A | certain")


def test_a_human_review_seat_exists_only_when_the_gate_is_human() -> None:
    assert [s.handle for s in PROTOCOL.seats(config())] == ["advocate-a", "advocate-b", "judge"]
    seats = PROTOCOL.seats(config(evidence_review="human"))
    assert seats[0].handle == "decider" and seats[0].human
    assert {s.lens for s in seats if s.role == "advocate"} == {
        "long-term strategic fit",
        "pragmatic near-term execution",
    }


# --- the scorecard arithmetic and the 5 % rule --------------------------------------------------------------------


def test_scorecard_multiplies_each_score_by_its_weight_and_sums() -> None:
    card = scorecard_compute(CRITERIA, judgement(SCORES))
    assert [(r["weighted_a"], r["weighted_b"]) for r in card["rows"]] == [(12, 9), (6, 8), (5, 2)]
    assert (card["total_a"], card["total_b"], card["max_total"]) == (23, 19, 30)
    assert card["mismatches"] == [] and card["leader"] == "A"
    assert card["gap_percent"] == 17.39 and not card["close"]


def test_a_wrong_judge_cell_and_total_are_shown_not_corrected() -> None:
    data = judgement(SCORES)
    data["scorecard"]["rows"][0]["weighted_a"] = 10
    data["scorecard"]["total_a"] = 21
    card = scorecard_compute(CRITERIA, data)
    assert card["total_a"] == 23  # recomputed
    assert card["judge_total_a"] == 21  # the judge's kept beside it
    assert card["rows"][0]["judge_weighted_a"] == 10 and card["rows"][0]["mismatch"] == ["weighted_a"]
    assert card["mismatches"] == [
        "Cost: the judge wrote A weighted = 10, but 4 × 3 = 12",
        "Total A: the judge wrote 21, the recomputed total is 23",
    ]
    assert data["scorecard"]["total_a"] == 21  # the judge's payload is untouched


def test_a_wrong_weight_is_a_mismatch() -> None:
    data = judgement(SCORES)
    data["scorecard"]["rows"][2]["weight"] = 2
    card = scorecard_compute(CRITERIA, data)
    assert "Support: the judge used weight 2, the run's weight is 1" in card["mismatches"]


@pytest.mark.parametrize(
    ("scores", "close"),
    [
        ({"Cost": (5, 5), "Speed": (5, 5), "Support": (5, 4)}, True),  # 30 vs 29: 3.3 %
        ({"Cost": (4, 4), "Speed": (5, 4), "Support": (5, 5)}, False),  # 27 vs 25: 7.4 %
        ({"Cost": (3, 3), "Speed": (3, 3), "Support": (3, 3)}, True),  # a tie
    ],
)
def test_its_close_only_within_five_percent(scores: dict[str, tuple[int, int]], close: bool) -> None:
    card = scorecard_compute(
        CRITERIA,
        judgement(
            scores,
            recommendation={"option": "A", "its_close": True, "rationale": "r", "decisive_rebuttal": ""},
        ),
    )
    assert card["close"] is close
    flagged = any("calls it close" in f for f in card["flags"])
    assert flagged is (not close)


def test_exactly_five_percent_is_close() -> None:
    criteria = [{"name": "Only", "weight": "Low"}]
    data = judgement(
        {},
        scorecard={
            "rows": [{"criterion": "Only", "weight": 1, "weighted_a": 0, "weighted_b": 0}],
            "total_a": 0,
            "total_b": 0,
        },
    )
    data["criterion_scores"] = [
        {
            "criterion": "Only",
            "score_a": 5,
            "score_b": 5,
            "justification_a": "j",
            "justification_b": "j",
            "more_convincing": "even",
        }
    ]
    assert scorecard_compute(criteria, data)["close"]  # 5 vs 5 (and the judge's zeros are mismatches)
    twenty = [{"name": f"C{n}", "weight": "Low"} for n in range(4)]
    data = judgement(
        {},
        scorecard={
            "rows": [
                {"criterion": f"C{n}", "weight": 1, "weighted_a": 5, "weighted_b": 5 if n else 4}
                for n in range(4)
            ],
            "total_a": 20,
            "total_b": 19,
        },
    )
    data["criterion_scores"] = [
        {
            "criterion": f"C{n}",
            "score_a": 5,
            "score_b": 5 if n else 4,
            "justification_a": "j",
            "justification_b": "j",
            "more_convincing": "A",
        }
        for n in range(4)
    ]
    card = scorecard_compute(twenty, data)
    assert (card["total_a"], card["total_b"], card["gap_percent"], card["close"]) == (20, 19, 5.0, True)


def test_recommending_the_lower_total_is_flagged() -> None:
    data = judgement(
        SCORES, recommendation={"option": "B", "its_close": False, "rationale": "r", "decisive_rebuttal": ""}
    )
    assert any("recommends B, but A has the higher" in f for f in scorecard_compute(CRITERIA, data)["flags"])


# --- hedging and sentences ---------------------------------------------------------------------------------------


def test_banned_hedges_are_found_once_each_with_where() -> None:
    found = hedges_find(
        {
            "c1 (Cost)": "It depends on your priorities.",
            "closing": "We hold a slight edge. Either could work.",
        }
    )
    assert [(f["phrase"], f["where"]) for f in found] == [
        ("it depends on your priorities", "c1 (Cost)"),
        ("either could work", "closing"),
        ("slight edge", "closing"),
    ]
    assert hedges_find({"x": "Independent audits confirm it."}) == []


def test_sentences_are_counted_as_a_reader_would() -> None:
    assert sentences_count("We are cheaper. We are faster! Are they? ") == 3
    assert sentences_count("One sentence with 2.5 percent growth.") == 1
    assert sentences_count("“Quoted.” Then two. And three.") == 3


def test_abbreviations_and_initials_do_not_end_a_sentence() -> None:
    assert (
        sentences_count("Postgres beats Mongo vs. the rest, e.g. on cost. Acme Inc. agrees. J. Smith too.")
        == 3
    )
    assert sentences_count("It costs approx. 40 percent less, i.e. a saving. Ship it. Now.") == 3
    assert sentences_count("Done. done again. Third!") == 2  # a lower-case word continues the sentence


def _steps(v: RunView) -> tuple[Any, ...]:
    plan = PROTOCOL.plan(v)
    assert isinstance(plan, Steps)
    return plan.steps


# --- the plan and the fallback chain -----------------------------------------------------------------------------


def test_team_mode_runs_openings_then_rebuttals_in_parallel_then_the_judge() -> None:
    assert [s.key for s in _steps(view({}))] == [key_opening("A"), key_opening("B")]
    history = {key_opening("A"): opening("A"), key_opening("B"): opening("B")}
    assert [s.key for s in _steps(view(history))] == [key_rebuttal("A"), key_rebuttal("B")]
    assert [s.key for s in _steps(view(TEAM_HISTORY))] == [KEY_JUDGEMENT]
    plan = PROTOCOL.plan(
        view(
            {
                **TEAM_HISTORY,
                KEY_JUDGEMENT: judgement(SCORES, rebuttal_ids=("A1", "A2", "A3", "B1", "B2", "B3")),
            }
        )
    )
    assert isinstance(plan, Done) and not plan.failed
    outcome = plan.outcome
    assert outcome["mode"] == "team" and outcome["degradations"] == []
    assert outcome["judge_pick"] == "A" and outcome["pick_options"] == [["A", "Postgres"], ["B", "Mongo"]]
    assert outcome["rebuttal_summary"] == {"total": 6, "effective": 1, "collapsed": 1}
    assert outcome["collapsed_claims"] == ["B:c1"]
    assert (
        "mode=team-debate, rounds=3, rebuttals_effective=1/6, claims_collapsed=1" in outcome["result_event"]
    )


def test_an_opening_failure_steps_down_to_subagent_and_the_judge_scores_that_option_alone() -> None:
    history = {key_opening("A"): opening("A"), key_opening("B"): None}
    step = _steps(view(history))[0]
    assert step.key == KEY_JUDGEMENT
    assert (
        step.context["mode"] == "subagent"
        and step.context["missing"] == ["B"]
        and step.context["rebuttals"] == []
    )
    plan = PROTOCOL.plan(view({**history, KEY_JUDGEMENT: judgement(SCORES)}))
    assert isinstance(plan, Done)
    [down] = plan.outcome["degradations"]
    assert (down["from"], down["to"]) == ("team", "subagent")
    assert "advocate B's opening failed (Simulated mid-stream failure)" in down["reason"]
    assert plan.outcome["notes"] == [
        "Only advocate A argued: the judge scores option B from the evidence alone (single-agent scoring of that option)."
    ]


def test_a_rebuttal_failure_steps_down_to_the_openings_only() -> None:
    history = {**TEAM_HISTORY, key_rebuttal("B"): None}
    step = _steps(view(history))[0]
    assert step.context["mode"] == "subagent" and step.context["rebuttals"] == []
    plan = PROTOCOL.plan(view({**history, KEY_JUDGEMENT: judgement(SCORES)}))
    assert isinstance(plan, Done)
    assert [(d["from"], d["to"]) for d in plan.outcome["degradations"]] == [("team", "subagent")]
    assert "advocate B's rebuttal failed" in plan.outcome["degradations"][0]["reason"]
    assert plan.outcome["rebuttals"] == []


def test_after_a_rebuttal_failure_the_judge_does_not_read_the_surviving_rebuttal() -> None:
    from debates.agents.prompts import prompt_render

    v = view({**TEAM_HISTORY, key_rebuttal("B"): None})
    (step,) = _steps(v)
    keys = [
        block.split('"')[1] for block in prompt_render(protocol="comparative", step=step, view=v).transcript
    ]
    assert keys == [key_opening("A"), key_opening("B")]


def test_both_openings_failing_step_down_twice_to_a_single_scorecard() -> None:
    history = {key_opening("A"): None, key_opening("B"): None}
    step = _steps(view(history))[0]
    assert step.context["mode"] == "single" and step.context["missing"] == ["A", "B"]
    plan = PROTOCOL.plan(view({**history, KEY_JUDGEMENT: judgement(SCORES)}))
    assert isinstance(plan, Done)
    assert [(d["from"], d["to"]) for d in plan.outcome["degradations"]] == [
        ("team", "subagent"),
        ("subagent", "single"),
    ]


def test_a_judge_failure_leaves_the_raw_outputs_for_the_human() -> None:
    plan = PROTOCOL.plan(view({**TEAM_HISTORY, KEY_JUDGEMENT: None}))
    assert isinstance(plan, Done) and not plan.failed
    assert (
        plan.outcome["mode"] == "raw"
        and plan.outcome["judge_pick"] == ""
        and plan.outcome["scorecard"] is None
    )
    assert plan.outcome["degradations"][-1]["to"] == "raw"
    assert plan.outcome["openings"]["A"] == opening("A")


def test_nothing_left_to_adjudicate_fails_the_run() -> None:
    plan = PROTOCOL.plan(view({KEY_JUDGEMENT: None}, mode="single"))
    assert isinstance(plan, Done) and plan.failed and "nothing to adjudicate" in plan.reason


def test_single_mode_asks_only_the_judge() -> None:
    [step] = _steps(view({}, mode="single"))
    assert (
        step.key == KEY_JUDGEMENT
        and step.context["mode"] == "single"
        and step.context["openings"] == {"A": None, "B": None}
    )


# --- the evidence-review gate -------------------------------------------------------------------------------------


def test_the_gate_repeats_until_the_human_proceeds_and_applies_what_was_added() -> None:
    [step] = _steps(view({}, evidence_review="human"))
    assert (step.key, step.seat, step.task) == (key_review(1), "decider", "evidence_review")
    payload = PROTOCOL.human_payload(
        step,
        {
            "choice": "add_evidence",
            "evidence_a": "Load test | Web | 3x the load",
            "criteria": "Cost | High\nRisk | Low",
            "gaps": "No SLA",
        },
    )
    assert payload["added_evidence"] == [
        {"option": "A", "source": "Load test", "type": "Web", "summary": "3x the load"}
    ]
    [again] = _steps(view({key_review(1): payload}, evidence_review="human"))
    assert again.key == key_review(2)
    assert [c["name"] for c in again.context["criteria"]] == ["Cost", "Risk"]
    assert again.context["evidence"][-1]["source"] == "Load test" and again.context["evidence_gaps"] == [
        "No SLA"
    ]
    proceed = PROTOCOL.human_payload(again, {"choice": "proceed", "criteria": "Cost | High\nRisk | Low"})
    steps = _steps(view({key_review(1): payload, key_review(2): proceed}, evidence_review="human"))
    assert [s.key for s in steps] == [key_opening("A"), key_opening("B")]
    assert [c["name"] for c in steps[0].context["criteria"]] == ["Cost", "Risk"]


def test_the_gate_form_names_the_bad_line() -> None:
    [step] = _steps(view({}, evidence_review="human"))
    with pytest.raises(ValueError, match="Evidence for Mongo, line 1"):
        PROTOCOL.human_payload(step, {"choice": "add_evidence", "evidence_b": "no pipes here"})
    with pytest.raises(ValueError, match="Add evidence: write at least one line"):
        PROTOCOL.human_payload(step, {"choice": "add_evidence", "criteria": "Cost | High"})
    with pytest.raises(ValueError, match="Choose: proceed with the debate, add more evidence, or adjust"):
        PROTOCOL.human_payload(step, {"evidence_a": "Bench | benchmark | fast"})


def test_the_five_percent_rule_is_exact_not_rounded() -> None:
    criteria = [{"name": f"C{n}", "weight": "High"} for n in range(11)] + [{"name": "C11", "weight": "Low"}]
    scores_a = [5] + [4] * 10 + [4]  # 3 × 45 + 4 = 139
    scores_b = [4] * 10 + [3] + [3]  # 3 × 43 + 3 = 132: 5.036 % below, which rounds to 5.0
    data = judgement({})
    data["criterion_scores"] = [
        {
            "criterion": f"C{n}",
            "score_a": a,
            "score_b": b,
            "justification_a": "j",
            "justification_b": "j",
            "more_convincing": "A",
        }
        for n, (a, b) in enumerate(zip(scores_a, scores_b, strict=True))
    ]
    data["scorecard"] = {"rows": [], "total_a": 139, "total_b": 132}
    card = scorecard_compute(criteria, data)
    # Shown with two decimals, so the page never says "5.0 %" beside "not within 5 %".
    assert (card["total_a"], card["total_b"], card["gap_percent"]) == (139, 132, 5.04)
    assert not card["close"]


def test_an_opening_never_reads_the_other_advocates_even_when_it_committed_first() -> None:
    from debates.agents.prompts import prompt_render

    v = view({key_opening("A"): opening("A")})
    (step,) = _steps(v)
    assert step.key == key_opening("B")
    prompt = prompt_render(protocol="comparative", step=step, view=v)
    assert prompt.transcript == ()
    assert "A wins on cost" not in prompt.task


def test_a_rebuttal_reads_both_openings_but_not_the_other_rebuttal() -> None:
    from debates.agents.prompts import prompt_render

    v = view(
        {**{key_opening(o): opening(o) for o in "AB"}, key_rebuttal("A"): TEAM_HISTORY[key_rebuttal("A")]}
    )
    (step,) = _steps(v)
    assert step.key == key_rebuttal("B")
    prompt = prompt_render(protocol="comparative", step=step, view=v)
    assert [block.split('"')[1] for block in prompt.transcript] == [key_opening("A"), key_opening("B")]
