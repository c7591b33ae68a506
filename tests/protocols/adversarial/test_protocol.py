"""The adversarial review (seed 003 family): plan() over hand-built histories, every degradation step of the
seed's ladder, the rules the schema cannot express, softener flags, and whole simulated runs."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from pydantic import ValidationError

from debates.agents.prompts import prompt_render
from debates.contract import Done, RunView, SeatView, Steps, TurnView
from debates.devtools.fake_llm import schema_instance
from debates.engine import registry
from debates.models import RunStatus
from debates.protocols.adversarial import schema
from debates.protocols.adversarial.protocol import AdversarialConfig, quote_in, softeners_find
from debates.services import runs as services
from tests.conftest import run_to_stop

PROTOCOL = registry.get("adversarial")
TOPIC = "Approve the RFC: move sessions to Redis?"
RFC = """RFC 42: Move user sessions from PostgreSQL to Redis.
Sessions are read on every request and cost about 30 percent of database load.
We will run a three-node Redis cluster with Sentinel for failover.
Session data will be written to both stores for two weeks before the switch.
Redis persistence will use AOF with fsync every second.
The platform team will own the cluster and its alerts.
Rollback is a configuration flag that points reads back to PostgreSQL.
Expected cost is 400 dollars a month on managed instances.
"""
KEY_CASE, KEY_CONCERNS = "r1/case/advocate", "r1/concerns/challenger"
KEY_JUDGEMENT, KEY_REVIEW = "r2/judgement/judge", "r2/review/judge"


def case() -> dict[str, Any]:
    return {
        "summary": "The RFC is ready: it names its load problem, its failover and its rollback.",
        "strengths": [
            {
                "id": "s1",
                "point": "The motivation is measured.",
                "quote": "Sessions are read on every request and cost about 30 percent of database load.",
                "why_it_matters": "The benefit is real.",
            },
            {
                "id": "s2",
                "point": "Rollback is cheap.",
                "quote": "Rollback is a configuration flag that points reads back to PostgreSQL.",
                "why_it_matters": "The decision is reversible.",
            },
        ],
        "tradeoffs_acknowledged": ["AOF with fsync every second can lose one second of sessions."],
        "addressable_blockers": [{"blocker": "No load test yet.", "how_addressed": "Run one at 2x peak."}],
    }


CONCERN_QUOTES = [
    "Redis persistence will use AOF with fsync every second.",
    "We will run a three-node Redis cluster with Sentinel for failover.",
    "Session data will be written to both stores for two weeks before the switch.",
    "The platform team will own the cluster and its alerts.",
    "Expected cost is 400 dollars a month on managed instances.",
]


def concerns(severities: tuple[str, ...] = ("critical", "high", "high", "medium", "low")) -> dict[str, Any]:
    return {
        "acknowledged_strengths": ["The rollback flag is a real safety net."],
        "concerns": [
            {
                "rank": rank,
                "severity": severity,
                "title": f"Concern {rank}",
                "quote": quote,
                "risk": f"Risk {rank} in production.",
                "fix": f"Fix {rank}.",
            }
            for rank, (quote, severity) in enumerate(zip(CONCERN_QUOTES, severities, strict=True), start=1)
        ],
    }


def judgement(verdict: str = "reject") -> dict[str, Any]:
    scored = [
        (False, "genuine", 5),
        (False, "genuine", 4),
        (True, "genuine", 3),
        (False, "stretch", 2),
        (True, "stretch", 1),
    ]
    return {
        "surviving_arguments": [{"strength_id": "s2", "why": "Nobody attacked the rollback."}],
        "concern_assessments": [
            {"rank": rank, "addressed_by_advocate": addressed, "genuine": genuine, "score": score, "note": ""}
            for rank, (addressed, genuine, score) in enumerate(scored, start=1)
        ],
        "pulled_punches": {"verdict": "genuine", "explanation": "Concrete risks, honestly ranked."},
        "agreement_zones": ["Rollback is cheap."],
        "contested_zones": ["Durability of AOF."],
        "key_narratives": ["Rollback is cheap.", "Durability is unproven."],
        "verdict": verdict,
        "rationale": "Two serious concerns are unanswered.",
    }


def review() -> dict[str, Any]:
    return {
        "summary": "Alone, the judge reviews the RFC.",
        "strengths": [{"point": "Reversible.", "quote": CASE_ROLLBACK}],
        "concerns": concerns()["concerns"],
        "key_narratives": ["Durability first.", "Reversible."],
        "verdict": "reject",
        "rationale": "One critical concern.",
    }


CASE_ROLLBACK = "Rollback is a configuration flag that points reads back to PostgreSQL."


def view(
    turns: dict[str, dict[str, Any] | None],
    *,
    material: str = RFC,
    config: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
) -> RunView:
    parsed = AdversarialConfig.model_validate(config or {"artifact_type": "RFC"})
    seats = {
        spec.handle: SeatView(spec.handle, spec.name, spec.role, spec.lens, spec.human)
        for spec in PROTOCOL.seats(parsed)
    }
    turn_views = {
        key: TurnView(
            key=key,
            seat=key.rsplit("/", 1)[1],
            stage=key.split("/")[1],
            task=key.split("/")[1],
            status="committed" if payload is not None else "failed",
            payload=payload,
            error=(errors or {}).get(key, "" if payload is not None else "model overloaded"),
        )
        for key, payload in turns.items()
    }
    return RunView(1, TOPIC, material, 7, parsed, seats, turn_views)


def both_sides(**overrides: dict[str, Any] | None) -> dict[str, dict[str, Any] | None]:
    history: dict[str, dict[str, Any] | None] = {KEY_CASE: case(), KEY_CONCERNS: concerns()}
    history.update(overrides)
    return history


def step_for(history: dict[str, dict[str, Any] | None], key: str, **kwargs: Any):
    plan = PROTOCOL.plan(view(history, **kwargs))
    assert isinstance(plan, Steps)
    return next(s for s in plan.steps if s.key == key)


class SeatTests:
    def test_advocate_challenger_and_judge_sit_with_the_seeds_identities(self):
        seats = PROTOCOL.seats(AdversarialConfig(artifact_type="RFC"))
        assert [(s.handle, s.role) for s in seats] == [
            ("advocate", "advocate"),
            ("challenger", "challenger"),
            ("judge", "judge"),
        ]
        assert seats[1].lens == "senior staff engineer who has seen 50+ RFCs fail"
        assert "approval" in seats[0].lens

    def test_the_config_defaults_to_a_proposal_without_framework_and_refuses_unknown_keys(self):
        config = AdversarialConfig()
        assert (config.artifact_type, config.framework) == ("proposal", [])
        with pytest.raises(ValidationError):
            AdversarialConfig.model_validate({"verdicts": ["GREEN", "RED"]})

    def test_a_run_expects_three_turns_whichever_way_it_goes(self):
        assert PROTOCOL.expected_turns(view({})) == 3
        assert PROTOCOL.expected_turns(view({KEY_CASE: None, KEY_CONCERNS: None})) == 3


class PlanTests:
    def test_it_starts_with_advocate_and_challenger_in_parallel_on_the_same_context(self):
        plan = PROTOCOL.plan(view({}, config={"artifact_type": "RFC", "framework": ["Operability"]}))
        assert isinstance(plan, Steps)
        assert [(s.key, s.seat, s.schema) for s in plan.steps] == [
            (KEY_CASE, "advocate", schema.AdvocateCase),
            (KEY_CONCERNS, "challenger", schema.ChallengerConcerns),
        ]
        # Neither side sees the other: no enum depends on the run's state, so both schemas are fixed.
        for step in plan.steps:
            assert step.context["artifact_type"] == "RFC"
            assert step.context["framework"] == ["Operability"]
        assert plan.steps[1].context["concern_count"] == 5

    def test_only_the_unfinished_side_is_planned(self):
        plan = PROTOCOL.plan(view({KEY_CASE: case()}))
        assert [s.key for s in plan.steps] == [KEY_CONCERNS]

    def test_the_judge_runs_after_both_and_sees_both_outputs_and_the_flags(self):
        step = step_for(both_sides(), KEY_JUDGEMENT)
        assert (step.seat, step.task) == ("judge", "judgement")
        assert step.schema is schema.judgement_schema(("s1", "s2"), ("1", "2", "3", "4", "5"), True)
        assert step.context["mode"] == "full" and step.context["missing"] == []
        assert step.context["case"] == case()
        assert step.context["concerns"] == concerns()
        assert step.context["softeners"] == {"advocate": [], "challenger": []}

    def test_a_full_run_ends_with_the_verdict_the_table_and_the_pick_convention(self):
        plan = PROTOCOL.plan(view(both_sides(**{KEY_JUDGEMENT: judgement("reject")})))
        assert isinstance(plan, Done) and not plan.failed
        outcome = plan.outcome
        assert (outcome["protocol"], outcome["mode"], outcome["degradations"]) == ("adversarial", "full", [])
        assert outcome["judge_pick"] == "reject"
        assert outcome["pick_options"] == [["approve", "Approve the RFC"], ["reject", "Reject the RFC"]]
        assert [
            (r["rank"], r["severity"], r["addressed"], r["genuine"], r["score"])
            for r in outcome["concern_table"]
        ] == [
            (1, "critical", False, "genuine", 5),
            (2, "high", False, "genuine", 4),
            (3, "high", True, "genuine", 3),
            (4, "medium", False, "stretch", 2),
            (5, "low", True, "stretch", 1),
        ]
        assert outcome["concern_counts"] == {
            "total": 5,
            "assessed": 5,
            "genuine": 3,
            "stretch": 2,
            "unaddressed": 3,
            "genuine_unaddressed": 2,
            "serious_unaddressed": 2,
        }
        assert outcome["surviving_arguments"] == [
            {
                "strength_id": "s2",
                "point": "Rollback is cheap.",
                "quote": CASE_ROLLBACK,
                "why": "Nobody attacked the rollback.",
            }
        ]
        assert outcome["key_narratives"] == ["Rollback is cheap.", "Durability is unproven."]
        assert (outcome["agreement_zones"], outcome["contested_zones"]) == (
            ["Rollback is cheap."],
            ["Durability of AOF."],
        )
        assert outcome["sided_with"] == "challenger"
        assert outcome["verdict_checks"] == []

    def test_an_approval_despite_two_serious_unanswered_concerns_is_flagged_for_the_human(self):
        outcome = PROTOCOL.plan(view(both_sides(**{KEY_JUDGEMENT: judgement("approve")}))).outcome
        assert outcome["judge_pick"] == "approve"
        assert outcome["verdict_checks"] == [
            "The judge approves although 2 genuine concerns scored 4+ went unaddressed by the advocate."
        ]

    def test_the_outcome_lists_concerns_by_rank_whatever_order_they_came_in(self):
        shuffled = concerns()
        shuffled["concerns"].reverse()
        outcome = PROTOCOL.plan(
            view(both_sides(**{KEY_CONCERNS: shuffled, KEY_JUDGEMENT: judgement()}))
        ).outcome
        assert [c["rank"] for c in outcome["concerns"]["concerns"]] == [1, 2, 3, 4, 5]


class DegradationTests:
    def test_a_failed_challenger_leaves_the_judge_to_judge_the_advocate_alone(self):
        history = both_sides(**{KEY_CONCERNS: None})
        step = step_for(history, KEY_JUDGEMENT)
        assert step.context["mode"] == "one-sided"
        assert step.context["missing"] == ["challenger"]
        assert step.context["concerns"] is None

        one_sided = {**judgement("approve"), "concern_assessments": [], "pulled_punches": None}
        plan = PROTOCOL.plan(view({**history, KEY_JUDGEMENT: one_sided}))
        assert isinstance(plan, Done) and not plan.failed
        assert plan.outcome["mode"] == "one-sided"
        assert plan.outcome["degradations"] == [
            {
                "from": "full",
                "to": "one-sided",
                "reason": "The challenger failed (model overloaded): the judge judges the advocate's output alone.",
            }
        ]
        assert plan.outcome["judge_pick"] == "approve"
        assert plan.outcome["concerns"] is None and plan.outcome["concern_table"] == []

    def test_a_failed_advocate_leaves_the_judge_to_judge_the_challenger_alone(self):
        step = step_for(both_sides(**{KEY_CASE: None}), KEY_JUDGEMENT)
        assert (step.context["mode"], step.context["missing"], step.context["case"]) == (
            "one-sided",
            ["advocate"],
            None,
        )

    def test_both_sides_failing_means_a_single_agent_review_by_the_judge(self):
        history = {KEY_CASE: None, KEY_CONCERNS: None}
        step = step_for(history, KEY_REVIEW)
        assert (step.seat, step.task, step.schema) == ("judge", "review", schema.SingleReview)
        assert step.context["mode"] == "single"

        plan = PROTOCOL.plan(view({**history, KEY_REVIEW: review()}))
        assert isinstance(plan, Done) and not plan.failed
        assert plan.outcome["mode"] == "single"
        assert [(d["from"], d["to"]) for d in plan.outcome["degradations"]] == [("full", "single")]
        assert "Both sides failed" in plan.outcome["degradations"][0]["reason"]
        assert plan.outcome["judge_pick"] == "reject"
        assert plan.outcome["verdict_by"] == "single-review"
        assert [r["rank"] for r in plan.outcome["concern_table"]] == [1, 2, 3, 4, 5]
        assert all(r["genuine"] == "" and r["score"] is None for r in plan.outcome["concern_table"])

    def test_everything_failing_fails_the_run_honestly(self):
        plan = PROTOCOL.plan(view({KEY_CASE: None, KEY_CONCERNS: None, KEY_REVIEW: None}))
        assert isinstance(plan, Done) and plan.failed
        assert plan.reason == "The advocate, the challenger and the single-agent review all failed."
        assert plan.outcome["judge_pick"] == ""

    def test_a_failed_judge_shows_both_outputs_raw_for_the_human_to_adjudicate(self):
        plan = PROTOCOL.plan(view(both_sides(**{KEY_JUDGEMENT: None}), errors={KEY_JUDGEMENT: "timeout"}))
        assert isinstance(plan, Done) and not plan.failed
        outcome = plan.outcome
        assert outcome["mode"] == "raw"
        assert outcome["degradations"] == [
            {
                "from": "full",
                "to": "raw",
                "reason": "The judge failed (timeout): both outputs are shown side by side for you to adjudicate.",
            }
        ]
        assert (outcome["judge_pick"], outcome["verdict"], outcome["judgement"]) == ("", "", None)
        assert outcome["case"] == case() and len(outcome["concerns"]["concerns"]) == 5
        assert outcome["pick_options"] == [["approve", "Approve the RFC"], ["reject", "Reject the RFC"]]

    def test_a_judge_failing_after_one_side_failed_records_both_steps_down(self):
        plan = PROTOCOL.plan(view(both_sides(**{KEY_CASE: None, KEY_JUDGEMENT: None})))
        assert [(d["from"], d["to"]) for d in plan.outcome["degradations"]] == [
            ("full", "one-sided"),
            ("one-sided", "raw"),
        ]
        assert plan.outcome["mode"] == "raw"


def case_answer() -> dict[str, Any]:
    """The advocate's answer as the model writes it: no strength ids (code numbers them)."""
    stored = case()
    return {**stored, "strengths": [{k: v for k, v in s.items() if k != "id"} for s in stored["strengths"]]}


def concerns_answer(stored: dict[str, Any] | None = None) -> dict[str, Any]:
    """The challenger's answer as the model writes it: one concern per rank, keyed by the rank."""
    stored = concerns() if stored is None else stored
    return {
        "acknowledged_strengths": stored["acknowledged_strengths"],
        "concerns": {str(c["rank"]): {k: v for k, v in c.items() if k != "rank"} for c in stored["concerns"]},
    }


def judgement_answer(verdict: str = "reject") -> dict[str, Any]:
    """The judge's answer to `judgement()`: one verdict per strength id, one assessment per rank, no `genuine`."""
    stored = judgement(verdict)
    return {
        "advocate_strengths": {
            "s1": {"survived": False, "why": "The durability concern undoes it."},
            "s2": {"survived": True, "why": "Nobody attacked the rollback."},
        },
        "concern_assessments": {
            str(a["rank"]): {
                "addressed_by_advocate": a["addressed_by_advocate"],
                "score": a["score"],
                "note": "",
            }
            for a in stored["concern_assessments"]
        },
        **{k: v for k, v in stored.items() if k not in {"surviving_arguments", "concern_assessments"}},
    }


def review_answer() -> dict[str, Any]:
    stored = review()
    return {**stored, "concerns": concerns_answer({**concerns(), "concerns": stored["concerns"]})["concerns"]}


def accepted(key: str, answer: dict[str, Any], history=None, **kwargs: Any):
    """The answer through the step's schema, the protocol's rules and `accept`, as the runner does."""
    history = {} if history is None else history
    step = step_for(history, key, **kwargs)
    model = step.schema.model_validate(answer)
    assert PROTOCOL.validate(step, model, view(history, **kwargs)) == []
    return PROTOCOL.accept(step, model, view(history, **kwargs))


def kinds(flags) -> list[tuple[str, str]]:
    return [(f.kind, f.where) for f in flags]


class SchemaTests:
    """What a model is sent: the contract carried by construction, and nothing code knows."""

    def test_the_advocate_writes_no_strength_ids(self):
        strength = schema.AdvocateCase.model_json_schema()["$defs"]["Strength"]
        assert sorted(strength["properties"]) == ["point", "quote", "why_it_matters"]

    def test_the_challenger_answers_exactly_one_concern_per_rank_one_to_five(self):
        concerns_schema = schema.ChallengerConcerns.model_json_schema()["$defs"]["ConcernsByRank"]
        assert list(concerns_schema["properties"]) == ["1", "2", "3", "4", "5"]
        assert concerns_schema["required"] == ["1", "2", "3", "4", "5"]
        assert concerns_schema["additionalProperties"] is False
        four = concerns_answer()
        del four["concerns"]["5"]
        with pytest.raises(ValidationError, match="5"):
            schema.ChallengerConcerns.model_validate(four)

    def test_the_judge_refers_only_to_the_strengths_and_concerns_that_exist(self):
        judge = schema.judgement_schema(("s1", "s2"), ("1", "2", "3", "4", "5"), True).model_json_schema()
        defs = judge["$defs"]
        assert defs["StrengthVerdicts"]["required"] == ["s1", "s2"]
        assert defs["ConcernAssessments"]["required"] == ["1", "2", "3", "4", "5"]
        assessment = defs["ConcernAssessment"]["properties"]
        assert sorted(assessment) == [
            "addressed_by_advocate",
            "note",
            "score",
        ]  # genuine follows from the score
        assert assessment["score"]["enum"] == [1, 2, 3, 4, 5]
        assert set(judge["required"]) >= {"advocate_strengths", "concern_assessments", "pulled_punches"}
        with pytest.raises(ValidationError):
            step_for(both_sides(), KEY_JUDGEMENT).schema.model_validate(
                {**judgement_answer(), "advocate_strengths": {"s9": {"survived": True, "why": "made up"}}}
            )

    def test_without_an_advocate_the_judge_is_asked_neither_strengths_nor_what_was_addressed(self):
        step = step_for(both_sides(**{KEY_CASE: None}), KEY_JUDGEMENT)
        judge = step.schema.model_json_schema()
        assert "advocate_strengths" not in judge["properties"]
        assert sorted(judge["$defs"]["UnansweredConcernAssessment"]["properties"]) == ["note", "score"]

    def test_without_a_challenger_the_judge_is_asked_no_assessment_and_no_pulled_punches(self):
        step = step_for(both_sides(**{KEY_CONCERNS: None}), KEY_JUDGEMENT)
        properties = step.schema.model_json_schema()["properties"]
        assert "concern_assessments" not in properties and "pulled_punches" not in properties
        assert "advocate_strengths" in properties

    def test_one_state_of_the_run_gives_one_judge_schema(self):
        # The schema is part of the prompt cache's key: planning twice must not make a new one.
        assert step_for(both_sides(), KEY_JUDGEMENT).schema is step_for(both_sides(), KEY_JUDGEMENT).schema

    def test_counts_and_lengths_are_stated_for_the_model_but_not_enforced(self):
        strengths = schema.AdvocateCase.model_json_schema()["properties"]["strengths"]
        assert (strengths["minItems"], strengths["maxItems"]) == (1, 6)
        answer = case_answer()
        answer["strengths"] = answer["strengths"] * 4
        answer["summary"] = ""
        schema.AdvocateCase.model_validate(answer)  # eight strengths and an empty summary: kept, then flagged

    def test_the_verdict_is_binary(self):
        judge = step_for(both_sides(), KEY_JUDGEMENT).schema
        with pytest.raises(ValidationError):
            judge.model_validate({**judgement_answer(), "verdict": "it's close"})


class AcceptTests:
    """What code fills in and what it flags: the turn is kept, the doubtful item is marked."""

    def test_well_formed_answers_are_stored_in_the_shape_the_pages_read_without_a_flag(self):
        for key, answer, stored in (
            (KEY_CASE, case_answer(), case()),
            (KEY_CONCERNS, concerns_answer(), concerns()),
        ):
            result = accepted(key, answer)
            assert (result.payload, result.flags) == (stored, ())
        result = accepted(KEY_JUDGEMENT, judgement_answer(), both_sides())
        assert result.flags == ()
        assert result.payload == {
            **judgement(),
            "fallen_arguments": [{"strength_id": "s1", "why": "The durability concern undoes it."}],
        }
        result = accepted(KEY_REVIEW, review_answer(), {KEY_CASE: None, KEY_CONCERNS: None})
        assert (result.payload, result.flags) == (review(), ())

    def test_code_numbers_the_strengths_in_the_advocates_order(self):
        answer = case_answer()
        answer["strengths"].reverse()
        payload = accepted(KEY_CASE, answer).payload
        assert [(s["id"], s["point"]) for s in payload["strengths"]] == [
            ("s1", "Rollback is cheap."),
            ("s2", "The motivation is measured."),
        ]

    def test_an_advocate_quote_that_is_not_the_artifacts_words_is_kept_and_flagged(self):
        answer = case_answer()
        answer["strengths"][0]["quote"] = "Redis is always faster."
        result = accepted(KEY_CASE, answer)
        assert result.payload["strengths"][0]["quote"] == "Redis is always faster."
        assert [f.as_json() for f in result.flags] == [
            {
                "kind": "unverified_quote",
                "where": "strengths.0.quote",
                "detail": "Strength s1: not the words of the RFC: “Redis is always faster.”.",
            }
        ]

    def test_a_concern_quote_that_is_not_the_artifacts_words_is_kept_and_flagged(self):
        answer = concerns_answer()
        answer["concerns"]["3"]["quote"] = "Sessions will never be lost."
        result = accepted(KEY_CONCERNS, answer)
        assert result.payload["concerns"][2]["quote"] == "Sessions will never be lost."
        assert kinds(result.flags) == [("unverified_quote", "concerns.2.quote")]
        assert result.flags[0].detail.startswith("Concern #3: not the words of the RFC")

    def test_an_empty_or_too_short_quote_is_flagged_as_unverified(self):
        answer = concerns_answer()
        answer["concerns"]["1"]["quote"] = "  "
        answer["concerns"]["2"]["quote"] = "Redis"
        result = accepted(KEY_CONCERNS, answer)
        assert kinds(result.flags) == [
            ("unverified_quote", "concerns.0.quote"),
            ("unverified_quote", "concerns.1.quote"),
        ]
        assert "an empty quote" in result.flags[0].detail

    def test_a_ranking_that_is_not_by_severity_is_kept_as_given_and_flagged(self):
        answer = concerns_answer(concerns(("high", "critical", "high", "medium", "low")))
        result = accepted(KEY_CONCERNS, answer)
        assert [c["severity"] for c in result.payload["concerns"]] == [
            "high",
            "critical",
            "high",
            "medium",
            "low",
        ]
        assert [f.as_json() for f in result.flags] == [
            {
                "kind": "severity_order",
                "where": "concerns.1.severity",
                "detail": "Concern #2 (critical) is more severe than #1 (high): the ranking is not by severity.",
            }
        ]

    def test_equal_severities_may_share_adjacent_ranks(self):
        assert accepted(KEY_CONCERNS, concerns_answer(concerns(("high",) * 5))).flags == ()

    def test_concerns_are_stored_by_rank_whatever_order_the_properties_came_in(self):
        answer = concerns_answer()
        answer["concerns"] = dict(reversed(answer["concerns"].items()))
        assert [c["rank"] for c in accepted(KEY_CONCERNS, answer).payload["concerns"]] == [1, 2, 3, 4, 5]

    def test_too_many_items_are_cut_to_the_limit_and_too_few_are_kept_both_flagged(self):
        answer = case_answer()
        answer["strengths"] = answer["strengths"] * 4
        answer["tradeoffs_acknowledged"] = [f"Cost {n}." for n in range(8)]
        result = accepted(KEY_CASE, answer)
        assert [s["id"] for s in result.payload["strengths"]] == ["s1", "s2", "s3", "s4", "s5", "s6"]
        assert len(result.payload["tradeoffs_acknowledged"]) == 6
        assert kinds(result.flags) == [("too_many", "strengths"), ("too_many", "tradeoffs_acknowledged")]
        one = case_answer()
        one["strengths"] = one["strengths"][:1]
        result = accepted(KEY_CASE, one)
        assert len(result.payload["strengths"]) == 1
        assert [f.as_json() for f in result.flags] == [
            {"kind": "too_few", "where": "strengths", "detail": "1 strengths given, 2 asked for."}
        ]

    def test_empty_texts_are_flagged_and_empty_list_items_dropped(self):
        answer = concerns_answer()
        answer["acknowledged_strengths"] = ["", "The rollback flag is a real safety net."]
        answer["concerns"]["4"]["risk"] = " "
        result = accepted(KEY_CONCERNS, answer)
        assert result.payload["acknowledged_strengths"] == ["The rollback flag is a real safety net."]
        assert result.payload["concerns"][3]["risk"] == ""
        assert kinds(result.flags) == [("empty", "acknowledged_strengths.0"), ("empty", "concerns.3.risk")]

    def test_whether_a_concern_is_genuine_follows_from_its_score(self):
        answer = judgement_answer()
        answer["concern_assessments"]["1"]["score"] = 2
        answer["concern_assessments"]["4"]["score"] = 3
        payload = accepted(KEY_JUDGEMENT, answer, both_sides()).payload
        assert [(a["rank"], a["genuine"], a["score"]) for a in payload["concern_assessments"]] == [
            (1, "stretch", 2),
            (2, "genuine", 4),
            (3, "genuine", 3),
            (4, "genuine", 3),
            (5, "stretch", 1),
        ]

    def test_without_an_advocate_nothing_was_addressed_and_nothing_survives(self):
        answer = judgement_answer()
        del answer["advocate_strengths"]
        answer["concern_assessments"] = {
            rank: {"score": a["score"], "note": a["note"]}
            for rank, a in answer["concern_assessments"].items()
        }
        payload = accepted(KEY_JUDGEMENT, answer, both_sides(**{KEY_CASE: None})).payload
        assert payload["surviving_arguments"] == [] and payload["fallen_arguments"] == []
        assert [a["addressed_by_advocate"] for a in payload["concern_assessments"]] == [False] * 5

    def test_without_a_challenger_there_is_nothing_to_assess(self):
        answer = judgement_answer("approve")
        del answer["concern_assessments"], answer["pulled_punches"]
        payload = accepted(KEY_JUDGEMENT, answer, both_sides(**{KEY_CONCERNS: None})).payload
        assert (payload["concern_assessments"], payload["pulled_punches"]) == ([], None)
        assert [s["strength_id"] for s in payload["surviving_arguments"]] == ["s2"]

    def test_the_judges_narratives_are_kept_to_three_and_one_is_flagged_as_too_few(self):
        answer = judgement_answer()
        answer["key_narratives"] = ["One.", "Two.", "Three.", "Four."]
        result = accepted(KEY_JUDGEMENT, answer, both_sides())
        assert result.payload["key_narratives"] == ["One.", "Two.", "Three."]
        assert kinds(result.flags) == [("too_many", "key_narratives")]
        answer["key_narratives"] = ["One."]
        assert kinds(accepted(KEY_JUDGEMENT, answer, both_sides()).flags) == [("too_few", "key_narratives")]

    def test_the_single_review_is_held_to_the_same_quotes_and_ranking_flagged(self):
        answer = review_answer()
        answer["concerns"]["1"]["severity"] = "low"
        answer["strengths"][0]["quote"] = "Not in the RFC."
        result = accepted(KEY_REVIEW, answer, {KEY_CASE: None, KEY_CONCERNS: None})
        assert kinds(result.flags) == [
            ("unverified_quote", "strengths.0.quote"),
            ("severity_order", "concerns.1.severity"),
        ]
        assert result.payload["concerns"][0]["severity"] == "low"


class QuoteTests:
    def test_quotes_match_across_case_whitespace_curly_quotes_and_a_trailing_ellipsis(self):
        material = "He said “go” — then   waited.\nThe cluster has three nodes."
        assert quote_in('he said "go" — then waited.', material)
        assert quote_in("“The cluster has three nodes…”", material)
        assert not quote_in("The cluster has four nodes.", material)

    def test_a_quote_of_one_or_two_words_pins_nothing_down(self):
        material = "The cluster has three nodes and the cache is warm."
        assert not quote_in("the", material)
        assert not quote_in("three nodes", material)
        assert quote_in("has three nodes", material)
        assert quote_in("Yes.", "Yes.")  # an artifact shorter than three words is quoted whole

    def test_without_material_the_run_is_refused_before_any_turn(self):
        plan = PROTOCOL.plan(view({}, material="  "))
        assert isinstance(plan, Done) and plan.failed
        assert plan.reason == "There is no RFC to review: the run's material is empty."


class SoftenerTests:
    @pytest.mark.parametrize(
        ("text", "phrase"),
        [
            ("Minor nitpick: the TTL is unset.", "minor nitpick"),
            ("It is probably fine, but the TTL is unset.", "probably fine but"),
            ("Just a thought — pin the version.", "just a thought"),
            ("Whether to shard, it depends.", "it depends"),
            ("Either could work here.", "either could work"),
        ],
    )
    def test_each_banned_phrase_is_found(self, text, phrase):
        assert [f["phrase"] for f in softeners_find({"concern 1": text})] == [phrase]

    def test_plain_language_is_not_flagged(self):
        assert (
            softeners_find({"concern 1": "The TTL is unset: sessions never expire and memory fills up."})
            == []
        )

    def test_a_softened_challenger_is_flagged_not_refused_and_the_judge_is_told(self):
        softened = concerns()
        softened["concerns"][4]["risk"] = "Minor nitpick, but the cost may grow."
        history = both_sides(**{KEY_CONCERNS: softened})
        assert self._validate_concerns(softened) == []
        step = step_for(history, KEY_JUDGEMENT)
        assert [(f["phrase"], f["where"]) for f in step.context["softeners"]["challenger"]] == [
            ("minor nitpick", "concern 5")
        ]
        outcome = PROTOCOL.plan(view({**history, KEY_JUDGEMENT: judgement()})).outcome
        assert [(f["phrase"], f["where"]) for f in outcome["softeners"]["challenger"]] == [
            ("minor nitpick", "concern 5")
        ]
        assert outcome["concerns"]["concerns"][4]["softeners"] == ["minor nitpick"]
        assert [r["softened"] for r in outcome["concern_table"]] == [False, False, False, False, True]
        # The judge called the punches genuine despite the softener: the human is told.
        assert outcome["notes"] == [
            "The judge found the challenge genuine although the challenger softened it (“minor nitpick”)."
        ]

    def test_quotes_of_the_artifact_are_not_the_sides_own_words(self):
        material = RFC + "It depends on the load balancer for sticky routing.\n"
        hedged = concerns()
        hedged["concerns"][0]["quote"] = "It depends on the load balancer for sticky routing."
        step = step_for(both_sides(**{KEY_CONCERNS: hedged}), KEY_JUDGEMENT, material=material)
        assert step.context["softeners"]["challenger"] == []

    def test_the_advocate_is_flagged_for_hedging(self):
        hedged = case()
        hedged["summary"] = "Either could work, but Redis is better."
        step = step_for(both_sides(**{KEY_CASE: hedged}), KEY_JUDGEMENT)
        assert [(f["phrase"], f["where"]) for f in step.context["softeners"]["advocate"]] == [
            ("either could work", "summary")
        ]

    def _validate_concerns(self, payload: dict[str, Any]) -> list[str]:
        step = step_for({}, KEY_CONCERNS)
        return PROTOCOL.validate(
            step, schema.ChallengerConcerns.model_validate(concerns_answer(payload)), view({})
        )


def _run(**backend_options: Any):
    run = services.run_create(
        protocol="adversarial",
        topic=TOPIC,
        material=RFC,
        config={"artifact_type": "RFC", "framework": ["Operability", "Reversibility"]},
        seed=7,
        backend_options={"cps": 0, **backend_options},
        enqueue=False,
    )
    run_to_stop(run)
    return run


def _turns(run) -> dict[str, str]:
    return dict(run.turns.values_list("key", "status"))


@pytest.mark.django_db(transaction=True)
class SimulatedRunTests:
    def test_a_full_run_commits_three_turns_and_ends_with_a_verdict_the_human_can_confirm(self):
        run = _run()
        assert run.status == RunStatus.COMPLETED
        assert _turns(run) == {KEY_CASE: "committed", KEY_CONCERNS: "committed", KEY_JUDGEMENT: "committed"}
        outcome = run.outcome
        assert outcome["mode"] == "full" and outcome["degradations"] == []
        assert outcome["judge_pick"] in {"approve", "reject"}
        assert run.judge_pick == outcome["judge_pick"]
        assert len(outcome["concern_table"]) == 5 and outcome["concern_counts"]["assessed"] == 5
        assert 2 <= len(outcome["key_narratives"]) <= 3

    def test_simulated_sides_quote_the_artifact_and_rank_honestly(self):
        run = _run()
        payloads = {t.key: t.payload for t in run.turns.all()}
        for strength in payloads[KEY_CASE]["strengths"]:
            assert strength["quote"] in RFC
        ranked = payloads[KEY_CONCERNS]["concerns"]
        assert [c["rank"] for c in ranked] == [1, 2, 3, 4, 5]
        assert all(c["quote"] in RFC for c in ranked)
        assert payloads[KEY_CASE]["strengths"][0]["point"].startswith("On Operability:")
        # A model that obeys everything leaves nothing for code to flag.
        assert {t.key: t.flags for t in run.turns.all()} == {
            KEY_CASE: [],
            KEY_CONCERNS: [],
            KEY_JUDGEMENT: [],
        }

    def test_the_simulated_judge_follows_its_rule_for_the_verdict(self):
        for options in ({}, {"concerns": "severe"}, {"concerns": "mild"}):
            outcome = _run(**options).outcome
            expected = "reject" if outcome["concern_counts"]["serious_unaddressed"] >= 2 else "approve"
            assert outcome["verdict"] == expected, options

    def test_severe_concerns_get_the_artifact_rejected_and_mild_ones_approved(self):
        severe = _run(concerns="severe").outcome
        assert [r["severity"] for r in severe["concern_table"]] == ["critical"] * 4 + ["high"]
        assert severe["judge_pick"] == "reject"
        mild = _run(concerns="mild").outcome
        assert {r["severity"] for r in mild["concern_table"]} <= {"medium", "low"}
        assert mild["judge_pick"] == "approve"
        assert mild["pulled_punches"]["verdict"] == "performative"

    def test_the_softeners_option_makes_the_challenger_soften_once_and_it_is_flagged(self):
        outcome = _run(softeners=True).outcome
        assert [f["phrase"] for f in outcome["softeners"]["challenger"]] == ["minor nitpick"]
        assert outcome["softeners"]["advocate"] == []
        assert outcome["pulled_punches"]["verdict"] == "performative"
        both = _run(softeners="both").outcome
        assert [f["phrase"] for f in both["softeners"]["advocate"]] == ["it depends"]

    def test_a_failing_challenger_degrades_to_a_one_sided_judgement(self):
        run = _run(fail=[KEY_CONCERNS])
        assert run.status == RunStatus.COMPLETED
        assert _turns(run) == {KEY_CASE: "committed", KEY_CONCERNS: "failed", KEY_JUDGEMENT: "committed"}
        assert run.outcome["mode"] == "one-sided"
        assert run.outcome["judge_pick"] in {"approve", "reject"}

    def test_both_sides_failing_degrades_to_the_judges_single_review(self):
        run = _run(fail=["r1/*"])
        assert run.status == RunStatus.COMPLETED
        assert _turns(run)[KEY_REVIEW] == "committed"
        assert run.outcome["mode"] == "single"
        assert run.outcome["judge_pick"] == run.outcome["review"]["verdict"]

    def test_a_failing_judge_leaves_the_raw_outputs_and_no_judge_pick(self):
        run = _run(fail=[KEY_JUDGEMENT])
        assert run.status == RunStatus.COMPLETED
        assert run.outcome["mode"] == "raw"
        assert run.outcome["judge_pick"] == "" and run.judge_pick == ""
        assert run.outcome["case"] and run.outcome["concerns"]

    def test_when_every_seat_fails_the_run_fails_with_the_reason(self):
        run = _run(fail=["r1/*", "r2/*"])
        assert run.status == RunStatus.FAILED
        assert run.status_reason == "The advocate, the challenger and the single-agent review all failed."

    def test_a_run_is_deterministic_for_its_seed(self):
        first, second = _run().outcome, _run().outcome
        assert first["concern_table"] == second["concern_table"]
        assert first["case"] == second["case"]


class PromptTests:
    def test_every_step_has_its_prompt_and_the_challenger_is_primed_and_forced(self):
        v = view({})
        advocate, challenger = PROTOCOL.plan(v).steps
        prompt = prompt_render(protocol="adversarial", step=challenger, view=v)
        assert "senior staff engineer who has seen 50+ RFCs fail" in prompt.persona
        assert "EXACTLY 5 concerns" in prompt.persona
        assert "An artifact with zero real issues doesn't exist." in prompt.persona
        assert '"minor nitpick", "probably fine but", "just a thought"' in prompt.persona
        assert (
            "strongest case" in prompt_render(protocol="adversarial", step=advocate, view=v).persona.lower()
        )
        # Both sides share one prefix (rules, topic, artifact): it is cached once for the parallel stage.
        assert prompt.prefix == prompt_render(protocol="adversarial", step=advocate, view=v).prefix

    def test_the_judge_reads_both_sides_from_the_transcript_not_twice(self):
        history = both_sides()
        v = view(history)
        (step,) = PROTOCOL.plan(v).steps
        prompt = prompt_render(protocol="adversarial", step=step, view=v)
        assert "pulled_punches" in prompt.persona and "key_narratives" in prompt.persona
        assert f'"case": {{"see_turn": "{KEY_CASE}"}}' in prompt.task
        assert f'"concerns": {{"see_turn": "{KEY_CONCERNS}"}}' in prompt.task

    def test_a_side_never_reads_the_other_sides_turn_even_when_it_committed_first(self):
        # The case committed before the challenger's turn was (re)started: step mode, a budget stop, a crash.
        v = view({KEY_CASE: case()})
        (challenger,) = PROTOCOL.plan(v).steps
        prompt = prompt_render(protocol="adversarial", step=challenger, view=v)
        assert prompt.transcript == ()
        assert KEY_CASE not in prompt.task

    def test_the_single_review_has_its_prompt(self):
        v = view({KEY_CASE: None, KEY_CONCERNS: None})
        (step,) = PROTOCOL.plan(v).steps
        assert "single-agent reviewer" in prompt_render(protocol="adversarial", step=step, view=v).persona


@pytest.mark.parametrize(
    ("key", "history"),
    [
        pytest.param(KEY_REVIEW, {KEY_CASE: None, KEY_CONCERNS: None}, id="single-review"),
        pytest.param(KEY_JUDGEMENT, {KEY_CASE: None, KEY_CONCERNS: concerns()}, id="advocate-failed"),
        pytest.param(KEY_JUDGEMENT, {KEY_CASE: case(), KEY_CONCERNS: None}, id="challenger-failed"),
    ],
)
def test_any_schema_valid_answer_of_a_degraded_step_is_accepted_or_flagged_never_refused(key, history):
    """The shared property (tests/protocols/test_schema_only.py) over the steps a demo run never reaches: an
    arbitrary instance of the schema as either decoder sees it passes the rules and commits."""
    step, v = step_for(history, key), view(history)
    for wire_schema in (anthropic.transform_schema(step.schema), step.schema.model_json_schema()):
        for draw in range(6):
            answer = schema_instance(wire_schema, seed=draw)
            model = step.schema.model_validate(answer)
            assert PROTOCOL.validate(step, model, v) == []
            json.dumps(PROTOCOL.accept(step, model, v).payload)
