"""The adversarial review (seed 003 family): plan() over hand-built histories, every degradation step of the
seed's ladder, the rules the schema cannot express, softener flags, and whole simulated runs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from debates.agents.prompts import prompt_render
from debates.contract import Done, RunView, SeatView, Steps, TurnView
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
        for step in plan.steps:
            assert step.context["artifact_type"] == "RFC"
            assert step.context["framework"] == ["Operability"]
        assert plan.steps[1].context["concern_count"] == 5

    def test_only_the_unfinished_side_is_planned(self):
        plan = PROTOCOL.plan(view({KEY_CASE: case()}))
        assert [s.key for s in plan.steps] == [KEY_CONCERNS]

    def test_the_judge_runs_after_both_and_sees_both_outputs_and_the_flags(self):
        step = step_for(both_sides(), KEY_JUDGEMENT)
        assert (step.seat, step.task, step.schema) == ("judge", "judgement", schema.AdversarialJudgement)
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


class ValidationTests:
    def _validate(self, key: str, payload: dict[str, Any], history=None, **kwargs: Any) -> list[str]:
        history = {} if history is None else history
        step = step_for(history, key, **kwargs)
        return PROTOCOL.validate(step, step.schema.model_validate(payload), view(history, **kwargs))

    def test_valid_positions_pass(self):
        assert self._validate(KEY_CASE, case()) == []
        assert self._validate(KEY_CONCERNS, concerns()) == []

    def test_the_schema_demands_exactly_five_concerns(self):
        four = concerns()
        four["concerns"] = four["concerns"][:4]
        with pytest.raises(ValidationError, match="at least 5"):
            schema.ChallengerConcerns.model_validate(four)

    def test_ranks_are_one_to_five_each_used_once(self):
        payload = concerns()
        payload["concerns"][4]["rank"] = 4
        assert self._validate(KEY_CONCERNS, payload) == [
            "concern rank 4 is used twice",
            "no concern has rank 5",
        ]

    def test_severity_may_not_rise_down_the_ranking(self):
        payload = concerns(("high", "critical", "high", "medium", "low"))
        assert self._validate(KEY_CONCERNS, payload) == [
            "concern rank 2 (critical) is more severe than rank 1 (high): rank the concerns by severity, "
            "most severe first"
        ]

    def test_equal_severities_may_share_adjacent_ranks(self):
        assert self._validate(KEY_CONCERNS, concerns(("high",) * 5)) == []

    def test_a_concern_must_quote_the_artifact(self):
        payload = concerns()
        payload["concerns"][2]["quote"] = "Sessions will never be lost."
        assert self._validate(KEY_CONCERNS, payload) == [
            "concern rank 3: the quote is not the words of the RFC: “Sessions will never be lost.”"
        ]

    def test_an_advocate_strength_must_quote_the_artifact(self):
        payload = case()
        payload["strengths"][0]["quote"] = "Redis is always faster."
        assert self._validate(KEY_CASE, payload) == [
            "strength s1: the quote is not the words of the RFC: “Redis is always faster.”"
        ]

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

    def test_strength_ids_are_unique(self):
        payload = case()
        payload["strengths"][1]["id"] = "s1"
        assert self._validate(KEY_CASE, payload) == ["strength id s1 is used twice"]

    def test_the_judge_assesses_every_concern_exactly_once(self):
        payload = judgement()
        payload["concern_assessments"][4]["rank"] = 4
        assert self._validate(KEY_JUDGEMENT, payload, both_sides()) == [
            "concern rank 5 is not assessed",
            "concern rank 4 is assessed twice",
        ]

    def test_surviving_arguments_name_real_strengths(self):
        payload = judgement()
        payload["surviving_arguments"].append({"strength_id": "s9", "why": "made up"})
        assert self._validate(KEY_JUDGEMENT, payload, both_sides()) == [
            "surviving argument s9: the advocate has no strength s9"
        ]

    def test_genuine_scores_three_to_five_and_a_stretch_one_to_two(self):
        payload = judgement()
        payload["concern_assessments"][0]["score"] = 2
        payload["concern_assessments"][3]["score"] = 4
        assert self._validate(KEY_JUDGEMENT, payload, both_sides()) == [
            "concern rank 1: a genuine concern scores 3–5, not 2",
            "concern rank 4: a stretch scores 1–2, not 4",
        ]

    def test_the_pulled_punches_check_is_required_when_there_are_concerns(self):
        payload = {**judgement(), "pulled_punches": None}
        assert self._validate(KEY_JUDGEMENT, payload, both_sides()) == [
            "pulled_punches: say whether the challenger's concerns were genuine or performative"
        ]

    def test_without_an_advocate_nothing_was_addressed_and_nothing_survives(self):
        payload = judgement()
        assert self._validate(KEY_JUDGEMENT, payload, both_sides(**{KEY_CASE: None})) == [
            "concern rank 3: the advocate failed, so it cannot have addressed it",
            "concern rank 5: the advocate failed, so it cannot have addressed it",
            "surviving argument s2: the advocate has no strength s2",
        ]

    def test_without_a_challenger_there_is_nothing_to_assess(self):
        history = both_sides(**{KEY_CONCERNS: None})
        assert self._validate(KEY_JUDGEMENT, judgement(), history) == [
            "the challenger failed: there are no concerns to assess"
        ]
        assert (
            self._validate(
                KEY_JUDGEMENT, {**judgement(), "concern_assessments": [], "pulled_punches": None}, history
            )
            == []
        )

    def test_the_single_review_obeys_the_same_ranking_and_quote_rules(self):
        history = {KEY_CASE: None, KEY_CONCERNS: None}
        assert self._validate(KEY_REVIEW, review(), history) == []
        bad = review()
        bad["concerns"][0]["severity"] = "low"
        bad["strengths"][0]["quote"] = "Not in the RFC."
        assert self._validate(KEY_REVIEW, bad, history) == [
            "concern rank 2 (high) is more severe than rank 1 (low): rank the concerns by severity, "
            "most severe first",
            "strength 1: the quote is not the words of the RFC: “Not in the RFC.”",
        ]

    def test_the_verdict_is_binary(self):
        with pytest.raises(ValidationError):
            schema.AdversarialJudgement.model_validate({**judgement(), "verdict": "it's close"})


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
        return PROTOCOL.validate(step, schema.ChallengerConcerns.model_validate(payload), view({}))


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
