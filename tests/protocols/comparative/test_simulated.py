"""Full simulated runs of the comparative debate (seed 003): the simulated advocates and judge play every branch
of the protocol (team, subagent, single, raw, failed), the evidence-review gate, and the code's recomputation of
the judge's scorecard."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest
from django.core.management import call_command

from debates import demo
from debates.agents.base import AgentRequest
from debates.agents.simulated import FALLBACK_MATERIAL, material_sentences, simulated_payload
from debates.contract import Done, RunView, SeatView, Steps, TurnView
from debates.engine import registry
from debates.engine.view import run_view_load
from debates.models import Run
from debates.protocols.comparative import protocol as proto
from debates.protocols.comparative import simulated as sim
from debates.protocols.comparative.exports import run_export_brief
from debates.selectors.runs import run_awaited_steps
from debates.services import runs as services
from debates.services.turns import human_turn_submit
from tests.conftest import run_to_stop

PROTOCOL = registry.get("comparative")
TOPIC = "Which message broker should the platform team standardise on?"
MATERIAL = (
    "The platform team runs 14 services that exchange events through a self-hosted broker. "
    "Kestrel Streams held p99 latency under 40 ms in the March load test at four times today's traffic. "
    "Harbor MQ is already used by the payments team, who moved two services onto it in nine days. "
    "Finance wants the monthly broker cost under $4,000 within a year. "
    "The current broker caused 6 incidents last year, each paging the on-call engineer at night."
)
CONFIG: dict[str, Any] = {
    "option_a": "Kestrel Streams",
    "option_b": "Harbor MQ",
    "decision_type": "architecture",
    "criteria": [
        {"name": "Cost", "weight": "High"},
        {"name": "Performance", "weight": "Medium"},
        {"name": "Migration effort", "weight": "Medium"},
        {"name": "Operational burden", "weight": "High"},
        {"name": "Team familiarity", "weight": "Low"},
    ],
    "evidence": [
        {
            "option": "A",
            "source": "Vendor pricing sheet 2025",
            "type": "Doc",
            "summary": "Kestrel Streams costs $4,200 a month at our volume, $3,100 with a three-year commitment.",
        },
        {
            "option": "A",
            "source": "Load test March",
            "type": "Data",
            "summary": "Kestrel Streams sustained 180,000 messages per second with p99 latency of 40 ms.",
        },
        {
            "option": "A",
            "source": "Platform roadmap",
            "type": "Doc",
            "summary": "Tiered storage removes the manual retention jobs, cutting on-call toil.",
        },
        {
            "option": "B",
            "source": "Harbor quote",
            "type": "Email",
            "summary": "Harbor MQ costs $2,900 a month on the standard plan, with no commitment.",
        },
        {
            "option": "B",
            "source": "Migration spike",
            "type": "Slack",
            "summary": "Two services moved to Harbor MQ in 9 days; migrating all 14 is estimated at 8 weeks.",
        },
        {
            "option": "B",
            "source": "Team survey",
            "type": "Interview",
            "summary": "11 of 14 engineers have run Harbor MQ before; familiarity is high.",
        },
        {
            "option": "both",
            "source": "Incident review 2025",
            "type": "Doc",
            "summary": "Whichever broker is chosen needs on-call coverage; the current one caused 6 incidents.",
        },
    ],
    "stakeholders": [
        {"name": "Priya (CTO)", "position": "prefers Kestrel Streams", "confidence": "stated"},
        {
            "name": "Marco (team lead)",
            "position": "prefers Harbor MQ",
            "confidence": "stated",
            "notes": "worried about Q3 delivery",
        },
        {"name": "Finance", "position": "", "confidence": "inferred"},
    ],
    "evidence_gaps": [
        "No production data on Harbor MQ above 50,000 messages per second",
        "Support contract terms for Kestrel Streams",
    ],
}
ALL_KEYS = {
    "r1/opening/advocate-a",
    "r1/opening/advocate-b",
    "r2/rebuttal/advocate-a",
    "r2/rebuttal/advocate-b",
    "r3/judgement/judge",
}


@pytest.fixture(autouse=True)
def _no_backoff(settings: Any) -> None:
    settings.DISPUTA = {**settings.DISPUTA, "RETRY_BACKOFF_SECONDS": 0.0}


def create(*, config: dict[str, Any] | None = None, seed: int = 3, **options: Any) -> Run:
    return services.run_create(
        protocol="comparative",
        topic=TOPIC,
        material=MATERIAL,
        config={**CONFIG, **(config or {})},
        seed=seed,
        backend_options={"cps": 0, **options},
        enqueue=False,
    )


def debate(*, config: dict[str, Any] | None = None, seed: int = 3, **options: Any) -> Run:
    run = create(config=config, seed=seed, **options)
    assert run_to_stop(run) == "done"
    return run


def judge_context(run: Run) -> dict[str, Any]:
    """The context the judge was given, re-planned from the run's history without the judgement."""
    view = run_view_load(run)
    turns = {k: t for k, t in view.turns.items() if k != proto.KEY_JUDGEMENT}
    plan = PROTOCOL.plan(dataclasses.replace(view, turns=turns))
    assert isinstance(plan, Steps)
    (step,) = plan.steps
    assert step.key == proto.KEY_JUDGEMENT
    return dict(step.context)


def payloads(run: Run) -> dict[str, dict[str, Any]]:
    return {t.key: t.payload for t in run.turns.all() if t.payload is not None}


def weights() -> dict[str, int]:
    return {c["name"]: proto.WEIGHTS[c["weight"]] for c in CONFIG["criteria"]}


def scores_of_outcome(outcome: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {s["criterion"]: (s["score_a"], s["score_b"]) for s in outcome["judgement"]["criterion_scores"]}


def scores_of(run: Run) -> dict[str, tuple[int, int]]:
    return scores_of_outcome(run.outcome)


# --- the default team run --------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
class TeamRunTests:
    def test_it_completes_in_five_turns_each_valid_at_the_first_attempt(self):
        run = debate()
        assert run.status == "completed", run.status_reason
        turns = list(run.turns.all())
        assert {t.key for t in turns} == ALL_KEYS
        assert [(t.key, t.flags) for t in turns if t.flags] == []  # the simulated seats play by the rules
        assert [
            (t.key, t.status, t.attempt) for t in turns if t.status != "committed" or t.attempt != 1
        ] == []
        assert run.outcome["mode"] == run.outcome["mode_requested"] == "team"
        assert run.outcome["degradations"] == [] and run.outcome["notes"] == []

    def test_the_judges_arithmetic_is_the_codes(self):
        card = debate().outcome["scorecard"]
        assert card["mismatches"] == [] and card["flags"] == []
        assert (card["judge_total_a"], card["judge_total_b"]) == (card["total_a"], card["total_b"])
        assert all(r["weighted_a"] == r["score_a"] * r["weight"] for r in card["rows"])

    def test_the_pick_is_the_higher_total_and_the_close_call_follows_the_5_percent_rule(self):
        outcome = debate().outcome
        card, recommendation = outcome["scorecard"], outcome["recommendation"]
        assert card["total_a"] != card["total_b"]
        assert outcome["judge_pick"] == recommendation["option"] == card["leader"]
        close = abs(card["total_a"] - card["total_b"]) <= 0.05 * max(card["total_a"], card["total_b"])
        assert recommendation["its_close"] is close

    def test_the_scorecard_is_not_a_landslide(self):
        card = debate().outcome["scorecard"]
        low, high = sorted((card["total_a"], card["total_b"]))
        assert low >= 0.75 * high, card
        assert {r["score_a"] > r["score_b"] for r in card["rows"] if r["score_a"] != r["score_b"]} == {
            True,
            False,
        }

    def test_rebuttals_collapse_claims_and_the_collapse_costs_that_side_a_point(self):
        team = debate()
        baseline = scores_of(debate(config={"mode": "subagent"}))  # the same evidence, no rebuttals
        items = team.outcome["rebuttals"]
        assert len(items) == 6 and all(i["effectiveness"] is not None for i in items)
        collapsed = {(i["target"], i["criterion"]) for i in items if i["verdict"] == "COLLAPSE"}
        assert collapsed, "a normal team run collapses at least one claim"
        assert team.outcome["rebuttal_summary"]["collapsed"] == len(collapsed)
        for criterion, (score_a, score_b) in scores_of(team).items():
            for side, score in (("A", score_a), ("B", score_b)):
                expected = baseline[criterion]["AB".index(side)] - ((side, criterion) in collapsed)
                assert score == expected, (side, criterion)

    def test_verdicts_follow_effectiveness_and_the_decisive_rebuttal_is_the_most_effective(self):
        outcome = debate().outcome
        analysis = outcome["judgement"]["rebuttal_analysis"]
        assert [a["rebuttal_id"] for a in analysis] == ["A1", "A2", "A3", "B1", "B2", "B3"]
        assert all((a["verdict"] == "COLLAPSE") == (a["effectiveness"] >= 4) for a in analysis)
        top = max(a["effectiveness"] for a in analysis)
        decisive = outcome["recommendation"]["decisive_rebuttal"]
        assert next(a for a in analysis if a["rebuttal_id"] == decisive)["effectiveness"] == top
        assert outcome["judgement"]["recommendation"]["decisive_rebuttal"] == decisive

    def test_openings_argue_every_criterion_through_their_lens_with_thin_spots(self):
        run = debate()
        names = [c["name"] for c in CONFIG["criteria"]]
        sources = {e["source"]: e["option"] for e in CONFIG["evidence"]}
        for option, horizon in (("A", "2-3 years"), ("B", "6-12 months")):
            opening = run.outcome["openings"][option]
            arguments = opening["arguments"]
            assert [(a["id"], a["criterion"]) for a in arguments] == [
                (f"c{n}", c) for n, c in enumerate(names, 1)
            ]
            cited = [s for a in arguments for s in a["evidence"]]
            assert cited and all(sources[s] in (option, "both") for s in cited)
            assert any(not a["evidence"] for a in arguments), "some arguments are deliberately thin"
            assert all(horizon in a["why_ours_scores_well"] for a in arguments)
            assert len(opening["risks_of_other"]) == 3
            assert proto.sentences_count(opening["closing"]) == 3
        assert run.outcome["hedging"] == {"A": [], "B": []}

    def test_advocates_acknowledge_stakeholders_who_prefer_the_other_option(self):
        openings = debate().outcome["openings"]
        responses = {o: {s["stakeholder"]: s["response"] for s in openings[o]["stakeholders"]} for o in "AB"}
        assert set(responses["A"]) == set(responses["B"]) == {s["name"] for s in CONFIG["stakeholders"]}
        assert "Your preference for Harbor MQ" in responses["A"]["Marco (team lead)"]
        assert "reconsider" in responses["A"]["Marco (team lead)"]
        assert "Your preference for Kestrel Streams" in responses["B"]["Priya (CTO)"]
        assert "reconsider" not in responses["A"]["Priya (CTO)"]
        # Addressed, not named again: the brief and the page show each response behind the stakeholder's name.
        assert not any(r.startswith(who) for o in "AB" for who, r in responses[o].items())

    def test_each_advocate_attacks_the_three_weakest_claims_quoting_them(self):
        run = debate()
        points = weights()
        by_turn = payloads(run)
        for option, other in (("A", "B"), ("B", "A")):
            arguments = run.outcome["openings"][other]["arguments"]
            weakest = sorted(arguments, key=lambda a: (len(a["evidence"]), points[a["criterion"]], a["id"]))
            rebuttals = by_turn[f"r2/rebuttal/advocate-{option.lower()}"]
            claims = {a["id"]: a for a in arguments}
            assert [r["claim_id"] for r in rebuttals["rebuttals"]] == [a["id"] for a in weakest[:3]]
            for rebuttal in rebuttals["rebuttals"]:
                claim = claims[rebuttal["claim_id"]]
                assert rebuttal["quoted_claim"] == claim["claim"]
                assert (rebuttal["failure"] == "missing evidence") == (not claim["evidence"])
            assert rebuttals["acknowledged_strong"]
            assert not set(rebuttals["acknowledged_strong"]) & {r["claim_id"] for r in rebuttals["rebuttals"]}

    def test_the_audit_flags_every_thin_argument_and_unsourced_rebuttal(self):
        outcome = debate().outcome
        audit = outcome["judgement"]["audit"]
        thin = {(o, a["id"]) for o in "AB" for a in outcome["openings"][o]["arguments"] if not a["evidence"]}
        assert {(f["advocate"], f["instance"].split(" ")[0]) for f in audit["unsupported"]} == thin
        sources = [e["source"] for e in CONFIG["evidence"]]
        unsourced = {
            i["id"] for i in outcome["rebuttals"] if not any(s in i["counter_evidence"] for s in sources)
        }
        flagged = {f["instance"].split(" ")[1] for f in audit["new_unsupported_in_rebuttals"]}
        assert flagged == unsourced
        assert audit["pulled_punches"] == []

    def test_the_audit_calls_a_risk_spun_from_the_other_sides_own_source_a_strawman(self):
        outcome = debate().outcome
        scores = scores_of_outcome(outcome)
        owner = {e["source"]: e["option"] for e in CONFIG["evidence"]}
        expected = set()
        for option in "AB":
            other = "B" if option == "A" else "A"
            for number, risk in enumerate(outcome["openings"][option]["risks_of_other"], start=1):
                criterion = next(c for c in weights() if re.search(rf"\b{c}\b", risk["risk"]))
                cites_theirs = any(owner[s] == other for s in owner if s in risk["evidence"])
                theirs, mine = scores[criterion]["AB".index(other)], scores[criterion]["AB".index(option)]
                if cites_theirs and theirs >= mine:
                    expected.add((option, number))
        found = {
            (f["advocate"], int(f["instance"].split(" ")[1]))
            for f in outcome["judgement"]["audit"]["strawman"]
        }
        assert expected and found == expected

    def test_the_rest_of_the_judgement_has_the_seeds_shape(self):
        judgement = debate().outcome["judgement"]
        assert 3 <= proto.sentences_count(judgement["executive_summary"]) <= 5
        conditions = judgement["decision_conditions"]  # the words after "Choose <option> if"
        assert conditions["choose_a_if"][-1] == (
            "the next 2-3 years matters more to the organisation than the next 6-12 months."
        )
        assert not any(c.lower().startswith(("choose", "if ")) for side in conditions.values() for c in side)
        assert [q for q in judgement["open_questions"] if any(g in q for g in CONFIG["evidence_gaps"])] == (
            judgement["open_questions"][:2]
        )
        assert 2 <= len(judgement["key_risks"]) <= 3
        assert all(r["mitigation"] and r["likelihood"] in "HML" for r in judgement["key_risks"])
        assert all(
            proto.sentences_count(s[f"justification_{o}"]) == 1
            for s in judgement["criterion_scores"]
            for o in "ab"
        )
        assert {s["more_convincing"] for s in judgement["criterion_scores"]} <= {"A", "B", "even"}


# --- backend options -----------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
class BackendOptionTests:
    def test_a_judge_slip_is_shown_as_a_mismatch_and_not_corrected(self):
        run = debate(judge_slip=True)
        assert run.status == "completed"
        assert run.turns.get(key=proto.KEY_JUDGEMENT).attempt == 1  # arithmetic is the code's to check
        card = run.outcome["scorecard"]
        wrong = [r for r in card["rows"] if r["mismatch"]]
        assert len(wrong) == 1 and wrong[0]["mismatch"] == ["weighted_a"]
        slip = wrong[0]["judge_weighted_a"] - wrong[0]["weighted_a"]
        assert slip != 0 and card["judge_total_a"] - card["total_a"] == slip
        assert card["total_mismatch"] and len(card["mismatches"]) == 2
        written = run.outcome["judgement"]["scorecard"]  # the judge's numbers, as written
        assert written["total_a"] == card["judge_total_a"] != card["total_a"]
        assert run.outcome["judge_pick"] == card["leader"]

    def test_a_hedging_advocate_b_is_flagged(self):
        outcome = debate(hedge=True).outcome
        assert outcome["hedging"]["A"] == []
        assert [h["phrase"] for h in outcome["hedging"]["B"]] == ["slight edge"]
        assert [f["advocate"] for f in outcome["judgement"]["audit"]["pulled_punches"]] == ["B"]

    def test_the_same_seed_gives_the_same_debate(self):
        first, second = debate(seed=11), debate(seed=11)
        assert first.outcome == second.outcome
        assert payloads(first) == payloads(second)

    def test_the_seed_varies_the_wording_never_the_scores(self):
        first, second = debate(seed=11), debate(seed=12)
        assert first.outcome["scorecard"]["rows"] == second.outcome["scorecard"]["rows"]
        assert payloads(first) != payloads(second)


# --- the fallback chain ----------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
class DegradationTests:
    def test_a_failed_rebuttal_drops_to_subagent_and_the_judge_sees_no_rebuttals(self):
        run = debate(fail=["r2/rebuttal/advocate-b"])
        assert run.status == "completed"
        outcome = run.outcome
        assert outcome["mode"] == "subagent"
        ((step,),) = [outcome["degradations"]]
        assert (step["from"], step["to"]) == ("team", "subagent")
        assert "advocate B's rebuttal failed" in step["reason"]
        context = judge_context(run)
        assert context["mode"] == "subagent" and context["rebuttals"] == []
        assert run.turns.get(key="r2/rebuttal/advocate-a").status == "committed"
        assert outcome["rebuttals"] == [] and outcome["judgement"]["rebuttal_analysis"] == []
        assert outcome["recommendation"]["decisive_rebuttal"] == ""

    def test_a_failed_opening_drops_to_subagent_and_the_judge_scores_that_option_from_the_evidence(self):
        run = debate(fail=["r1/opening/advocate-a"])
        assert run.status == "completed"
        outcome = run.outcome
        assert [(d["from"], d["to"]) for d in outcome["degradations"]] == [("team", "subagent")]
        assert "advocate A's opening failed" in outcome["degradations"][0]["reason"]
        assert any("scores option A from the evidence alone" in n for n in outcome["notes"])
        assert not run.turns.filter(task="rebuttal").exists()
        context = judge_context(run)
        assert context["missing"] == ["A"] and context["openings"]["A"] is None
        scores = outcome["judgement"]["criterion_scores"]
        assert all("from the evidence alone" in s["justification_a"] for s in scores)
        assert all("from the evidence alone" not in s["justification_b"] for s in scores)
        assert outcome["judge_pick"] in ("A", "B")

    def test_both_openings_failing_drop_to_a_single_scorecard(self):
        run = debate(fail=["r1/opening/*"])
        assert run.status == "completed"
        outcome = run.outcome
        assert [(d["from"], d["to"]) for d in outcome["degradations"]] == [
            ("team", "subagent"),
            ("subagent", "single"),
        ]
        assert outcome["mode"] == "single"
        assert {s["more_convincing"] for s in outcome["judgement"]["criterion_scores"]} == {"n/a"}
        assert (
            outcome["scorecard"]["mismatches"] == []
            and outcome["judge_pick"] == outcome["scorecard"]["leader"]
        )

    def test_a_failed_judge_leaves_the_outputs_for_the_human(self):
        run = debate(fail=[proto.KEY_JUDGEMENT])
        assert run.status == "completed"
        outcome = run.outcome
        assert outcome["mode"] == "raw" and outcome["judge_pick"] == "" and outcome["scorecard"] is None
        assert (
            outcome["degradations"][-1]["to"] == "raw"
            and "judge failed" in outcome["degradations"][-1]["reason"]
        )
        assert outcome["openings"]["A"] and outcome["openings"]["B"] and len(outcome["rebuttals"]) == 6

    def test_every_agent_failing_fails_the_run_with_a_reason(self):
        run = debate(fail=["r1/opening/*", proto.KEY_JUDGEMENT])
        assert run.status == "failed"
        assert "Every agent failed" in run.status_reason
        assert run.outcome["mode"] == "raw"


# --- requested modes and the evidence-review gate -------------------------------------------------------------------


# --- staying on topic ---------------------------------------------------------------------------------------------

# What the bundled demos (and the generic fallback material) say: none of it may reach a run on another topic.
DEMO_FACTS = [
    *material_sentences(demo.DEMO_MATERIAL),
    *material_sentences(demo.DEMO_COMPARISON_MATERIAL),
    *material_sentences(demo.DEMO_REVIEW_MATERIAL),
    *material_sentences(FALLBACK_MATERIAL),
    *(e["summary"] for e in demo.DEMO_COMPARISON["evidence"]),
    *(e["source"] for e in demo.DEMO_COMPARISON["evidence"]),
    *(g.rstrip(".") for g in demo.DEMO_COMPARISON["evidence_gaps"]),
]
DEMO_WORDS = re.compile(
    r"\b(MongoDB|PostgreSQL|Postgres|order-tracking|carrier|Atlas|jsonb|Stockholm|London|Singapore|congestion|"
    r"Redis|RFC 42|Head of platform|Integrations lead)\b",
    re.IGNORECASE,
)


@pytest.mark.django_db(transaction=True)
class OnTopicTests:
    @pytest.mark.parametrize("mode", ["team", "subagent", "single"])
    def test_without_material_the_agents_argue_the_runs_own_options_and_say_they_have_nothing_else(
        self, mode
    ):
        topic = "Which CI service should the mobile team adopt?"
        run = services.run_create(
            protocol="comparative",
            topic=topic,
            material="",
            config={
                "option_a": "GitHub Actions",
                "option_b": "Jenkins",
                "decision_type": "tool",
                "mode": mode,
            },
            seed=3,
            backend_options={"cps": 0},
            enqueue=False,
        )
        assert run_to_stop(run) == "done" and run.status == "completed", run.status_reason
        written = "\n".join(
            [
                *(json.dumps(t.payload, ensure_ascii=False) for t in run.turns.all()),
                *(t.raw_text for t in run.turns.all()),
                json.dumps(run.outcome, ensure_ascii=False),
                run_export_brief(run),
            ]
        )
        assert DEMO_WORDS.findall(written) == []
        assert [fact for fact in DEMO_FACTS if fact.lower() in written.lower()] == []
        criteria = [name for name, _ in proto.DEFAULT_CRITERIA["tool"]]
        for option, name in (("A", "GitHub Actions"), ("B", "Jenkins")):
            opening = run.outcome["openings"][option]
            if mode == "single":
                assert opening is None
                continue
            for argument, criterion in zip(opening["arguments"], criteria, strict=True):
                assert name in argument["claim"] and criterion in argument["claim"]  # the run's own terms
                assert sim.NO_GROUNDS in argument["why_ours_scores_well"]  # said plainly
                assert argument["evidence"] == []
            assert "With no material and no evidence given" in opening["closing"]
        summary = run.outcome["judgement"]["executive_summary"]
        assert "No material and no sources were given for this decision" in summary
        assert 3 <= proto.sentences_count(summary) <= 5

    def test_run_debate_on_another_topic_without_material_brings_in_no_demo_facts(self, capsys):
        call_command(
            "run_debate",
            "--protocol",
            "comparative",
            "--topic",
            "Which CI service should the mobile team adopt?",
            "--no-progress",
            "--config",
            json.dumps({"options": ["GitHub Actions", "Jenkins"], "decision_type": "tool"}),
        )
        run = Run.objects.get(pk=int(capsys.readouterr().out.strip().splitlines()[-1]))
        assert run.status == "completed" and run.material == ""
        written = json.dumps(run.outcome, ensure_ascii=False) + run_export_brief(run)
        assert DEMO_WORDS.findall(written) == []
        assert [fact for fact in DEMO_FACTS if fact.lower() in written.lower()] == []


@pytest.mark.django_db(transaction=True)
class ModeTests:
    def test_subagent_mode_has_openings_and_a_judge_only(self):
        run = debate(config={"mode": "subagent"})
        assert run.status == "completed"
        assert set(run.turns.values_list("key", flat=True)) == ALL_KEYS - {
            "r2/rebuttal/advocate-a",
            "r2/rebuttal/advocate-b",
        }
        assert run.outcome["mode"] == "subagent" and run.outcome["degradations"] == []
        assert run.outcome["judgement"]["rebuttal_analysis"] == []
        assert {s["more_convincing"] for s in run.outcome["judgement"]["criterion_scores"]} <= {
            "A",
            "B",
            "even",
        }

    def test_single_mode_is_one_judge_turn_scoring_from_the_evidence(self):
        run = debate(config={"mode": "single"})
        assert run.status == "completed"
        assert list(run.turns.values_list("key", flat=True)) == [proto.KEY_JUDGEMENT]
        judgement = run.outcome["judgement"]
        assert run.outcome["mode"] == "single" and run.outcome["scorecard"]["mismatches"] == []
        assert all("from the evidence alone" in s["justification_a"] for s in judgement["criterion_scores"])
        assert scores_of(run) == scores_of(debate(config={"mode": "subagent"}))  # no debate: evidence only

    @pytest.mark.parametrize("decision_type", proto.DECISION_TYPES)
    def test_a_bare_run_on_default_criteria_is_valid_at_every_first_attempt(self, decision_type):
        run = services.run_create(
            protocol="comparative",
            topic="Which option?",
            config={"option_a": "Option One", "option_b": "Option Two", "decision_type": decision_type},
            seed=5,
            backend_options={"cps": 0},
            enqueue=False,
        )
        assert run_to_stop(run) == "done"
        assert run.status == "completed" and run.outcome["mode"] == "team"
        assert set(run.turns.values_list("attempt", flat=True)) == {1}
        assert [s["criterion"] for s in run.outcome["judgement"]["criterion_scores"]] == [
            name for name, _ in proto.DEFAULT_CRITERIA[decision_type]
        ]

    def test_the_evidence_review_gate_adjusts_the_debate(self, moderator):
        run = create(config={"evidence_review": "human", "mode": "subagent"})
        assert run_to_stop(run) == "waiting"
        assert run.status == "awaiting_human" and run.awaiting == ["r0/review/1"]
        human_turn_submit(
            run_id=run.pk,
            step_key="r0/review/1",
            data={
                "choice": "add_evidence",
                "evidence_a": "Benchmark 2026 | Web | A handles 3x the load",
                "criteria": "Cost | High\nSpeed | Low",
            },
            user=moderator,
        )
        assert run_to_stop(run) == "waiting"
        assert run.awaiting == ["r0/review/2"]
        (step,) = run_awaited_steps(run)
        added = {"option": "A", "source": "Benchmark 2026", "type": "Web", "summary": "A handles 3x the load"}
        assert added in step.context["evidence"]
        assert step.context["criteria"] == [
            {"name": "Cost", "weight": "High", "points": 3},
            {"name": "Speed", "weight": "Low", "points": 1},
        ]
        human_turn_submit(run_id=run.pk, step_key="r0/review/2", data={"choice": "proceed"}, user=moderator)
        assert run_to_stop(run) == "done"
        assert run.status == "completed", run.status_reason
        outcome = run.outcome
        assert [s["criterion"] for s in outcome["judgement"]["criterion_scores"]] == ["Cost", "Speed"]
        assert [r["criterion"] for r in outcome["scorecard"]["rows"]] == ["Cost", "Speed"]
        speed = next(a for a in outcome["openings"]["A"]["arguments"] if a["criterion"] == "Speed")
        assert "Benchmark 2026" in speed["evidence"]
        assert outcome["mode"] == "subagent" and outcome["degradations"] == []
        assert set(run.turns.values_list("status", "attempt")) == {("committed", 1)}
        assert [r["choice"] for r in outcome["reviews"]] == ["add_evidence", "proceed"]

    def test_team_mode_with_two_criteria_holds_its_rebuttal_round(self):
        run = debate(
            config={"criteria": [{"name": "Cost", "weight": "High"}, {"name": "Speed", "weight": "Low"}]}
        )
        assert run.outcome["mode"] == "team"  # each side rebuts both of the other's claims (all it has)
        assert set(run.turns.values_list("status", "attempt")) == {("committed", 1)}
        assert [r["id"] for r in run.outcome["rebuttals"]] == ["A1", "A2", "B1", "B2"]


# --- awkward inputs, played in memory: every output valid at the first attempt ---------------------------------


def play(
    config: dict[str, Any], *, material: str = MATERIAL, seed: int = 3, **options: Any
) -> dict[str, Any]:
    """Plan → simulated agent → schema + protocol checks → accept → commit, until the plan is done; returns the
    outcome."""
    parsed = PROTOCOL.config_model.model_validate(PROTOCOL.prepare(dict(config), None))
    seats = {s.handle: SeatView(s.handle, s.name, s.role, s.lens, s.human) for s in PROTOCOL.seats(parsed)}
    turns: dict[str, TurnView] = {}
    while True:
        view = RunView(1, TOPIC, material, seed, parsed, seats, dict(turns))
        plan = PROTOCOL.plan(view)
        if isinstance(plan, Done):
            assert not plan.failed, plan.reason
            return plan.outcome
        assert isinstance(plan, Steps)
        for step in plan.steps:
            request = AgentRequest(step=step, view=view, protocol="comparative", options=options, attempt=1)
            payload = step.schema.model_validate(simulated_payload(request))
            assert PROTOCOL.validate(step, payload, view) == [], step.key
            accepted = PROTOCOL.accept(step, payload, view)
            assert accepted.flags == (), (step.key, accepted.flags)  # the simulated seats play by the rules
            turns[step.key] = TurnView(
                step.key, step.seat, step.stage, step.task, "committed", accepted.payload
            )


AWKWARD = {
    "dotted names and hedging sources": {
        **CONFIG,
        "option_a": "Acme Inc. v2.0",
        "option_b": "Globex Corp.",
        "evidence": [
            {
                "option": "A",
                "source": "Memo",
                "type": "Doc",
                "summary": "Cost: it depends on volume. Dr. Lee agrees.",
            },
            {
                "option": "B",
                "source": "Call",
                "type": "Email",
                "summary": "Either could work, but B costs $9 less.",
            },
        ],
        "stakeholders": [{"name": "Ops", "position": "prefers A, it depends", "confidence": "stated"}],
    },
    "three criteria and no evidence": {
        **CONFIG,
        "criteria": CONFIG["criteria"][:3],
        "evidence": [],
        "stakeholders": [],
        "evidence_gaps": [],
    },
    "one criterion, subagent": {
        **CONFIG,
        "criteria": [{"name": "Cost", "weight": "Low"}],
        "mode": "subagent",
    },
    "twelve criteria": {
        **CONFIG,
        "criteria": [
            {"name": f"Criterion {n} cost", "weight": ("High", "Medium", "Low")[n % 3]} for n in range(12)
        ],
    },
}


class AwkwardInputTests:
    @pytest.mark.parametrize("name", AWKWARD)
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_every_turn_is_valid_at_the_first_attempt(self, name, seed):
        outcome = play(AWKWARD[name], seed=seed, hedge=False)
        assert outcome["judge_pick"] in ("A", "B")
        assert outcome["scorecard"]["mismatches"] == [] and outcome["scorecard"]["flags"] == []
        assert outcome["hedging"] == {"A": [], "B": []}

    def test_without_material_the_run_still_plays(self):
        outcome = play(CONFIG, material="")
        assert outcome["mode"] == "team" and outcome["scorecard"]["mismatches"] == []
