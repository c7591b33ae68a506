"""The consultation (seed 001): the 9-state machine (every allowed transition, every refused one), plan() over
hand-built histories (independent R1, R3 that sees only its own position and the filtered synthesis, the cost
abort at 150 % of the estimate), the early-termination rule and its rubber-stamp block, invalid tensions dropped
with a warning, the rules the schema cannot express (flagged, never refused), and whole simulated runs through
the cost gate with the state history they record."""

from __future__ import annotations

import io
from dataclasses import replace
from decimal import Decimal
from itertools import product
from typing import Any

import pytest
from django.core.management import call_command

from debates.agents.prompts import prompt_render
from debates.contract import Done, Flag, RunView, SeatView, Step, Steps, TurnView
from debates.engine import registry
from debates.models import Run, RunStatus
from debates.protocols.consultation import schema
from debates.protocols.consultation.protocol import (
    KEY_CROSS_EXAM,
    KEY_SYNTHESIS,
    KEY_VERDICT,
    ConsultationConfig,
    early_termination,
    key_independent,
    key_reply,
    synthesis_clean,
    text_overlap,
)
from debates.protocols.consultation.states import (
    ALLOWED,
    STATES,
    IllegalTransition,
    transition,
    transitions_to,
)
from debates.services import runs as services
from tests.conftest import MATERIAL, run_to_stop

PROTOCOL = registry.get("consultation")
TOPIC = "Should the city charge cars entering the centre?"
AGENTS = [
    {"name": "Ada", "lens": "economics"},
    {"name": "Bo", "lens": "equity"},
    {"name": "Cy", "lens": "evidence"},
]
HANDLES = ["agent-ada", "agent-bo", "agent-cy"]

# The seed's table (ConsultStateMachine at HEAD), written out independently of the module under test.
SEED_TRANSITIONS = {
    ("idle", "estimating"),
    ("idle", "aborted"),
    ("estimating", "awaiting_consent"),
    ("estimating", "aborted"),
    ("awaiting_consent", "independent"),
    ("awaiting_consent", "aborted"),
    ("independent", "synthesis"),
    ("independent", "complete"),
    ("independent", "aborted"),
    ("synthesis", "cross_exam"),
    ("synthesis", "complete"),
    ("synthesis", "aborted"),
    ("cross_exam", "verdict"),
    ("cross_exam", "complete"),
    ("cross_exam", "aborted"),
    ("verdict", "complete"),
    ("verdict", "aborted"),
}


# --- the state machine ----------------------------------------------------------------------------------------


def test_the_machine_has_the_seeds_nine_states() -> None:
    assert STATES == (
        "idle",
        "estimating",
        "awaiting_consent",
        "independent",
        "synthesis",
        "cross_exam",
        "verdict",
        "complete",
        "aborted",
    )
    assert set(ALLOWED) == set(STATES)


@pytest.mark.parametrize(("src", "dst"), sorted(SEED_TRANSITIONS))
def test_every_transition_of_the_seed_is_allowed(src: str, dst: str) -> None:
    change = transition(src, dst, "because")
    assert (change.src, change.dst, change.reason) == (src, dst, "because")


@pytest.mark.parametrize(
    ("src", "dst"), sorted(pair for pair in product(STATES, STATES) if pair not in SEED_TRANSITIONS)
)
def test_every_other_transition_is_refused_with_what_is_allowed(src: str, dst: str) -> None:
    with pytest.raises(IllegalTransition) as refused:
        transition(src, dst)
    assert f"from {src} to {dst}" in str(refused.value)


def test_a_terminal_state_says_it_is_terminal() -> None:
    with pytest.raises(IllegalTransition, match="nothing: it is terminal"):
        transition("complete", "verdict")
    with pytest.raises(IllegalTransition, match="Unknown state"):
        transition("thinking", "idle")


def test_paths_walk_the_happy_path_and_jump_where_the_machine_allows() -> None:
    reasons = {"independent": "approved", "complete": "early stop"}
    walked = transitions_to("idle", "independent", reasons)
    assert [(t.src, t.dst) for t in walked] == [
        ("idle", "estimating"),
        ("estimating", "awaiting_consent"),
        ("awaiting_consent", "independent"),
    ]
    assert walked[-1].reason == "approved"
    early = transitions_to("synthesis", "complete", reasons)
    assert [(t.src, t.dst, t.reason) for t in early] == [("synthesis", "complete", "early stop")]
    assert [(t.src, t.dst) for t in transitions_to("verdict", "aborted", {})] == [("verdict", "aborted")]
    assert transitions_to("synthesis", "synthesis", {}) == []
    assert transitions_to("complete", "aborted", {}) == []  # terminal: nothing more is recorded
    with pytest.raises(IllegalTransition, match="back from verdict to synthesis"):
        transitions_to("verdict", "synthesis", {})


# --- hand-built histories ---------------------------------------------------------------------------------------


def position(confidence: float = 0.7, text: str = "Charge cars: it cuts traffic.") -> dict[str, Any]:
    return {
        "position": text,
        "key_points": ["Traffic across the cordon fell by about 20 percent."],
        "rationale": "Stockholm measured it.",
        "confidence": confidence,
        "prose_excerpt": text,
    }


def synthesis(
    consensus: tuple[float, ...] = (0.7, 0.72), tensions: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "consensus_points": [
            {"point": f"Point {n}", "supporting_agents": ["Ada", "Bo"], "confidence": c}
            for n, c in enumerate(consensus, start=1)
        ],
        "tensions": tensions
        if tensions is not None
        else [
            {
                "topic": "Fairness",
                "viewpoints": [
                    {"agent": "Ada", "viewpoint": "Revenue can compensate."},
                    {"agent": "Cy", "viewpoint": "It is regressive."},
                ],
            }
        ],
        "priority_order": ["Fairness"],
    }


def reply(challenges: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "critique": "The consensus skips fairness.",
        "challenges": challenges or [],
        "defense": "My position holds.",
        "revised_position": "",
    }


def view(
    turns: dict[str, dict[str, Any] | None] | None = None,
    *,
    estimate: str | None = None,
    cost: str = "0",
    **config: Any,
) -> RunView:
    parsed = ConsultationConfig.model_validate({"agents": AGENTS, **config})
    seats = {
        spec.handle: SeatView(spec.handle, spec.name, spec.role, spec.lens, spec.human)
        for spec in PROTOCOL.seats(parsed)
    }
    turn_views = {}
    for key, payload in (turns or {}).items():
        seat = key.rsplit("/", 1)[1]
        turn_views[key] = TurnView(
            key=key,
            seat=seat,
            stage=key.split("/")[1],
            task=key.split("/")[1],
            status="committed" if payload is not None else "failed",
            payload=payload,
            error="" if payload is not None else "Simulated failure.",
        )
    return RunView(
        run_id=1,
        topic=TOPIC,
        material=MATERIAL,
        seed=1,
        config=parsed,
        seats=seats,
        turns=turn_views,
        cost_usd=Decimal(cost),
        estimate_usd=Decimal(estimate) if estimate is not None else None,
    )


def r1(confidences: tuple[float, ...] = (0.7, 0.75, 0.6)) -> dict[str, dict[str, Any] | None]:
    texts = (
        "Charge cars: it cuts traffic.",
        "Charge, with rebates for the poor.",
        "Not yet: it is regressive.",
    )
    return {key_independent(h): position(c, t) for h, c, t in zip(HANDLES, confidences, texts, strict=True)}


def test_round_1_runs_every_agent_in_parallel_and_none_sees_another() -> None:
    plan = PROTOCOL.plan(view())
    assert isinstance(plan, Steps)
    assert [s.key for s in plan.steps] == [key_independent(h) for h in HANDLES]
    assert all(s.sees == () for s in plan.steps)
    # Even with Ada's answer already committed, Bo's prompt does not contain it.
    partial = view({key_independent("agent-ada"): position(text="ADA-ONLY-ANSWER")})
    bo = next(s for s in PROTOCOL.plan(partial).steps if s.seat == "agent-bo")  # type: ignore[union-attr]
    assert "ADA-ONLY-ANSWER" not in prompt_render(protocol="consultation", step=bo, view=partial).text


def test_round_2_synthesis_follows_and_sees_the_positions() -> None:
    plan = PROTOCOL.plan(view(r1()))
    assert isinstance(plan, Steps)
    (step,) = plan.steps
    assert (step.key, step.seat, step.task) == (KEY_SYNTHESIS, "judge", "synthesis")
    assert [p["agent"] for p in step.context["positions"]] == ["Ada", "Bo", "Cy"]


def test_all_agents_failing_round_1_aborts() -> None:
    plan = PROTOCOL.plan(view(dict.fromkeys((key_independent(h) for h in HANDLES), None)))
    assert isinstance(plan, Done) and plan.failed
    assert plan.reason == "All agents failed in Round 1."
    assert plan.outcome["status"] == "aborted"


def test_one_agent_failing_round_1_is_left_out_of_the_later_rounds() -> None:
    turns = {**r1(), key_independent("agent-cy"): None, KEY_SYNTHESIS: synthesis()}
    plan = PROTOCOL.plan(view(turns))
    assert isinstance(plan, Steps)
    assert [s.seat for s in plan.steps] == ["agent-ada", "agent-bo"]


def test_round_3_sees_its_own_position_and_only_the_top_consensus_and_tensions() -> None:
    five = synthesis(
        consensus=(0.5, 0.9, 0.6, 0.8, 0.7),
        tensions=[
            {
                "topic": f"T{n}",
                "viewpoints": [{"agent": "Ada", "viewpoint": "x"}, {"agent": "Bo", "viewpoint": "y"}],
            }
            for n in range(1, 4)
        ]
        + [{"topic": "Lone", "viewpoints": [{"agent": "Cy", "viewpoint": "z"}]}],
    )
    current = view({**r1(), KEY_SYNTHESIS: five})
    plan = PROTOCOL.plan(current)
    assert isinstance(plan, Steps)
    ada = plan.steps[0]
    assert ada.key == key_reply("agent-ada")
    assert ada.sees == (key_independent("agent-ada"),)
    assert ada.context["own_position"]["position"] == "Charge cars: it cuts traffic."
    assert [p["confidence"] for p in ada.context["consensus_points"]] == [0.9, 0.8, 0.7]  # top 3
    assert [t["topic"] for t in ada.context["tensions"]] == ["T1", "T2"]  # top 2 valid ones
    text = prompt_render(protocol="consultation", step=ada, view=current).text
    assert "Charge cars: it cuts traffic." in text
    assert "Not yet: it is regressive." not in text  # Cy's position is not shown to Ada


def test_the_verdict_sees_at_most_five_challenges_and_every_unresolved_item() -> None:
    challenges = [
        {"challenger": "Cy", "target_agent": "Consensus", "challenge": f"C{n}", "evidence": []}
        for n in range(7)
    ]
    cross = {
        "challenges": challenges,
        "rebuttals": [{"agent": "Ada", "rebuttal": f"R{n}"} for n in range(6)],
        "unresolved": [f"U{n}" for n in range(8)],
    }
    turns = {
        **r1(),
        KEY_SYNTHESIS: synthesis(),
        **{key_reply(h): reply() for h in HANDLES},
        KEY_CROSS_EXAM: cross,
    }
    plan = PROTOCOL.plan(view(turns))
    assert isinstance(plan, Steps)
    (step,) = plan.steps
    assert step.key == KEY_VERDICT and step.schema is schema.verdict_converge_schema(("Ada", "Bo", "Cy"))
    assert len(step.context["challenges"]) == 5 and len(step.context["rebuttals"]) == 5
    assert len(step.context["unresolved"]) == 8
    explore = PROTOCOL.plan(view(turns, mode="explore"))
    assert explore.steps[0].schema is schema.verdict_explore_schema(("Ada", "Bo", "Cy"))  # type: ignore[union-attr]


def test_the_judges_failure_aborts_with_its_cause() -> None:
    plan = PROTOCOL.plan(view({**r1(), KEY_SYNTHESIS: None}))
    assert isinstance(plan, Done) and plan.failed
    assert plan.reason.startswith("The judge's synthesis failed (Simulated failure.")


@pytest.mark.parametrize(
    ("rounds", "done_after"),
    [(1, "r1"), (2, "r2"), (3, "r3")],
)
def test_fewer_rounds_complete_early_as_the_machine_allows(rounds: int, done_after: str) -> None:
    turns: dict[str, dict[str, Any] | None] = dict(r1())
    if done_after in {"r2", "r3"}:
        turns[KEY_SYNTHESIS] = synthesis()
    if done_after == "r3":
        turns.update({key_reply(h): reply() for h in HANDLES})
        turns[KEY_CROSS_EXAM] = {"challenges": [], "rebuttals": [], "unresolved": []}
    plan = PROTOCOL.plan(view(turns, max_rounds=rounds))
    assert isinstance(plan, Done) and not plan.failed
    current = {"r1": "independent", "r2": "synthesis", "r3": "cross_exam"}[done_after]
    states = PROTOCOL.states(_with_state(view(turns, max_rounds=rounds), current), plan)
    assert [(t.src, t.dst) for t in states] == [(current, "complete")]


def _with_state(current: RunView, state: str, consent: str = "auto") -> RunView:
    return replace(current, state=state, consent=consent)


# --- the cost abort -------------------------------------------------------------------------------------------


def test_the_run_aborts_when_the_cost_passes_150_percent_of_the_estimate() -> None:
    at_limit = view(r1(), estimate="0.20", cost="0.30")
    assert isinstance(PROTOCOL.plan(at_limit), Steps)  # exactly 150 %: still allowed
    over = view(r1(), estimate="0.20", cost="0.3001")
    plan = PROTOCOL.plan(over)
    assert isinstance(plan, Done) and plan.failed
    assert plan.reason.startswith(
        "Cost exceeded estimate by >50%: $0.3001 spent against an estimate of $0.2000"
    )
    assert plan.outcome["status"] == "aborted"
    assert len(plan.outcome["positions"]) == 3  # what was done is kept
    changes = PROTOCOL.states(_with_state(over, "synthesis"), plan)
    assert [(t.src, t.dst, t.reason) for t in changes] == [("synthesis", "aborted", plan.reason)]


def test_without_an_estimate_there_is_no_cost_abort() -> None:
    assert isinstance(PROTOCOL.plan(view(r1(), estimate=None, cost="99")), Steps)


# --- tensions, early termination, rubber stamp ------------------------------------------------------------------


def test_a_tension_with_fewer_than_two_viewpoints_is_dropped_with_a_warning() -> None:
    payload = synthesis(
        tensions=[
            {"topic": "Lone", "viewpoints": [{"agent": "Cy", "viewpoint": "Only me."}]},
            {"topic": "Empty", "viewpoints": []},
            synthesis()["tensions"][0],
        ]
    )
    clean, warnings = synthesis_clean(payload)
    assert [t["topic"] for t in clean["tensions"]] == ["Fairness"]
    assert warnings == [
        "Tension “Lone” dropped: it has 1 viewpoint (only Cy); a tension needs at least 2.",
        "Tension “Empty” dropped: it has 0 viewpoints; a tension needs at least 2.",
    ]


def test_early_termination_when_the_mean_confidence_reaches_the_threshold() -> None:
    positions = [position(0.8, "Charge cars."), position(0.9, "Charge cars with rebates.")]
    strong = synthesis_clean(synthesis(consensus=(0.9, 0.92)))[0]
    check = early_termination(mode="converge", threshold=0.9, positions=positions, synthesis=strong)
    assert (check.meets, check.rubber_stamp, check.terminate) == (True, False, True)
    assert check.confidence == pytest.approx(0.91)
    below = synthesis_clean(synthesis(consensus=(0.9, 0.89)))[0]
    check = early_termination(mode="converge", threshold=0.9, positions=positions, synthesis=below)
    assert (check.meets, check.terminate) == (False, False)
    assert check.reason == "Mean consensus confidence 0.90 is below the threshold 0.90."  # 0.895 rounds up
    explore = early_termination(mode="explore", threshold=0.5, positions=positions, synthesis=strong)
    assert (explore.checked, explore.terminate) == (False, False)


def test_rubber_stamp_detection_blocks_the_early_stop() -> None:
    strong_no_tensions = synthesis_clean(synthesis(consensus=(0.95, 0.95), tensions=[]))[0]
    sure = [position(0.9, "Charge cars now."), position(0.88, "Charge cars now, a toll.")]
    check = early_termination(mode="converge", threshold=0.9, positions=sure, synthesis=strong_no_tensions)
    assert (check.meets, check.rubber_stamp, check.terminate) == (True, True, False)
    assert "rubber-stamped" in check.reason and "no tensions" in check.reason
    # With tensions, identical texts still make it a rubber stamp ("thin verdict": overlap ≥ 0.6)...
    with_tension = synthesis_clean(synthesis(consensus=(0.95, 0.95)))[0]
    same = [position(0.9, "Charge cars now."), position(0.91, "Charge cars now.")]
    check = early_termination(mode="converge", threshold=0.9, positions=same, synthesis=with_tension)
    assert check.rubber_stamp and check.overlap == pytest.approx(1.0)
    # ... but different texts with a tension do not, and neither does one agent at or under 0.85.
    differ = [
        position(0.9, "Charge cars now."),
        {**position(0.91, "Wait for a referendum on fairness."), "key_points": ["Poorer drivers pay most."]},
    ]
    assert early_termination(
        mode="converge", threshold=0.9, positions=differ, synthesis=with_tension
    ).terminate
    unsure = [position(0.85, "Charge cars now."), position(0.95, "Charge cars now.")]
    check = early_termination(mode="converge", threshold=0.9, positions=unsure, synthesis=strong_no_tensions)
    assert (check.rubber_stamp, check.terminate) == (False, True)


def test_text_overlap_is_the_mean_pairwise_jaccard_of_content_words() -> None:
    assert text_overlap(["congestion charge works", "congestion charge works"]) == 1.0
    assert text_overlap(["congestion charge works", "bicycles everywhere instead"]) == 0.0
    assert text_overlap(["congestion charge", "congestion pricing"]) == pytest.approx(1 / 3)


def test_the_plan_stops_after_round_2_on_a_strong_consensus_only_in_converge_mode() -> None:
    diverse = {
        key_independent("agent-ada"): position(0.8, "Charge cars now."),
        key_independent("agent-bo"): {
            **position(0.9, "Wait: fairness first."),
            "key_points": ["Poor pay most."],
        },
        key_independent("agent-cy"): {**position(0.88, "Toll the bridges."), "key_points": ["Bridges jam."]},
    }
    turns = {**diverse, KEY_SYNTHESIS: synthesis(consensus=(0.95, 0.92))}
    plan = PROTOCOL.plan(view(turns))
    assert isinstance(plan, Done) and not plan.failed
    assert plan.outcome["early_termination"]["terminate"] is True
    assert plan.outcome["reason"].startswith("Early termination: mean consensus confidence 0.94")
    assert [(t.src, t.dst) for t in PROTOCOL.states(_with_state(view(turns), "synthesis"), plan)] == [
        ("synthesis", "complete")
    ]
    assert isinstance(PROTOCOL.plan(view(turns, mode="explore")), Steps)
    assert isinstance(PROTOCOL.plan(view(turns, consensus_threshold=0.95)), Steps)


# --- rules beyond the schema ------------------------------------------------------------------------------------


def _step(key: str, current: RunView) -> Step:
    plan = PROTOCOL.plan(current)
    assert isinstance(plan, Steps)
    return next(step for step in plan.steps if step.key == key)


def _accepted(key: str, current: RunView, answer: dict[str, Any]) -> tuple[dict[str, Any], list[Flag]]:
    step = _step(key, current)
    model = step.schema.model_validate(answer)
    assert PROTOCOL.validate(step, model, current) == []  # nothing here makes a turn fail
    accepted = PROTOCOL.accept(step, model, current)
    return accepted.payload, list(accepted.flags)


def test_agents_can_only_be_named_as_in_the_panel() -> None:
    current = view(r1())
    step = _step(KEY_SYNTHESIS, current)
    with pytest.raises(ValueError, match="supporting_agents"):
        step.schema.model_validate(
            synthesis()
            | {"consensus_points": [{"point": "p", "supporting_agents": ["Zed"], "confidence": 0.5}]}
        )
    with pytest.raises(ValueError, match="agent"):
        step.schema.model_validate(
            synthesis(tensions=[{"topic": "T", "viewpoints": [{"agent": "ada", "viewpoint": "x"}]}])
        )


def test_a_reply_that_challenges_itself_or_neither_challenges_nor_defends_is_kept_and_flagged() -> None:
    current = view({**r1(), KEY_SYNTHESIS: synthesis()})
    key = key_reply("agent-ada")
    answer = {
        "critique": "x",
        "challenges": [
            {"target_agent": "Ada", "challenge_point": "me", "evidence": []},
            {"target_agent": "Consensus", "challenge_point": "all", "evidence": []},
        ],
        "defense": "",
        "revised_position": "",
    }
    payload, flags = _accepted(key, current, answer)
    assert [c["target_agent"] for c in payload["challenges"]] == ["Ada", "Consensus"]
    assert [(f.kind, f.where) for f in flags] == [("self_challenge", "challenges.0.target_agent")]
    silent = {**answer, "challenges": []}
    payload, flags = _accepted(key, current, silent)
    assert payload["challenges"] == [] and payload["defense"] == ""
    assert [(f.kind, f.where) for f in flags] == [("missing_defense", "defense")]
    assert _accepted(key, current, {**silent, "defense": "My position holds."})[1] == []


def test_a_low_confidence_verdict_without_dissent_is_kept_and_flagged() -> None:
    turns = {
        **r1(),
        KEY_SYNTHESIS: synthesis(),
        **{key_reply(h): reply() for h in HANDLES},
        KEY_CROSS_EXAM: {"challenges": [], "rebuttals": [], "unresolved": []},
    }
    current = view(turns)
    verdict = {
        "analysis": "",
        "recommendation": "Charge in stages.",
        "confidence": 0.65,
        "evidence": ["Traffic fell 20 %."],
        "dissent": [],
        "per_agent_contributions": [],
    }
    payload, flags = _accepted(KEY_VERDICT, current, verdict)
    assert payload["recommendation"] == "Charge in stages." and payload["confidence"] == 0.65
    assert [(f.kind, f.where) for f in flags] == [("missing_dissent", "dissent")]
    assert flags[0].detail.startswith("A confidence of 0.65 (below 0.70) means major dissent")
    with_dissent = {**verdict, "dissent": [{"agent": "Cy", "concern": "Regressive.", "severity": "high"}]}
    assert _accepted(KEY_VERDICT, current, with_dissent)[1] == []


def test_the_config_takes_two_to_five_distinctly_named_agents() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        ConsultationConfig.model_validate({"agents": AGENTS[:1]})
    with pytest.raises(ValueError, match="at most 5"):
        ConsultationConfig.model_validate({"agents": [{"name": f"A{n}"} for n in range(6)]})
    with pytest.raises(ValueError, match="Ada and ada have the same name"):
        ConsultationConfig.model_validate({"agents": [{"name": "Ada"}, {"name": "ada"}]})
    with pytest.raises(ValueError, match="reserved"):
        ConsultationConfig.model_validate({"agents": [{"name": "Ada"}, {"name": "Consensus"}]})


# --- whole simulated runs through the engine --------------------------------------------------------------------


def consult(**overrides: Any) -> Any:
    options = {"cps": 0, **overrides.pop("backend_options", {})}
    config = {"agents": AGENTS, **overrides.pop("config", {})}
    return services.run_create(
        protocol="consultation",
        topic=TOPIC,
        material=MATERIAL,
        config=config,
        seed=5,
        backend_options=options,
        enqueue=False,
        **overrides,
    )


def states_of(run: Any) -> list[tuple[str, str]]:
    return [(e.payload["from"], e.payload["to"]) for e in run.events.filter(kind="state").order_by("seq")]


FULL_PATH = [
    ("idle", "estimating"),
    ("estimating", "awaiting_consent"),
    ("awaiting_consent", "independent"),
    ("independent", "synthesis"),
    ("synthesis", "cross_exam"),
    ("cross_exam", "verdict"),
    ("verdict", "complete"),
]


@pytest.mark.django_db(transaction=True)
def test_a_mixed_consultation_runs_all_four_rounds_with_dissent_and_a_dropped_tension() -> None:
    run = consult()
    assert (run.consent, run.status) == ("auto", RunStatus.QUEUED)  # nominal estimate under $0.50
    assert run.estimate is not None and "nominal" in run.estimate["assumes"]
    assert run_to_stop(run) == "done"
    assert run.status == RunStatus.COMPLETED
    assert states_of(run) == FULL_PATH
    reasons = [e.payload["reason"] for e in run.events.filter(kind="state").order_by("seq")]
    assert reasons[2].startswith("Approved automatically: the estimate $")
    assert reasons[4].startswith("Mean consensus confidence 0.73 is below the threshold 0.90")
    outcome = run.outcome
    assert outcome["completed_rounds"] == [1, 2, 3, 4]
    assert outcome["warnings"] == [
        "Tension “A concern only Cy raised” dropped: it has 1 viewpoint (only Cy); a tension needs at least 2."
    ]
    assert all(len(t["viewpoints"]) >= 2 for t in outcome["synthesis"]["tensions"])
    verdict = outcome["verdict"]
    assert verdict["confidence"] < 0.70
    assert {"agent": "Cy", "severity": "high"}.items() <= verdict["dissent"][0].items()
    assert any(c["target_agent"] == "Consensus" for c in outcome["cross_exam"]["challenges"])
    assert outcome["cross_exam"]["unresolved"]
    assert "pick_options" not in outcome  # converge mode: one recommendation, no menu
    assert [t.key for t in run.turns.all() if t.flags] == []  # agents that obey the prompt are never flagged
    artifacts = [e.payload for e in run.events.filter(kind="round_artifact").order_by("seq")]
    assert [(a["round_number"], a["artifact_type"]) for a in artifacts] == [
        (1, "independent"),
        (1, "independent"),
        (1, "independent"),
        (2, "synthesis"),
        (3, "cross_exam"),
        (4, "verdict"),
    ]
    assert all(a["artifact"]["schema_version"] == "1.0" and "errors" not in a for a in artifacts)
    assert artifacts[3]["warnings"] == outcome["warnings"]
    assert [t["topic"] for t in artifacts[3]["artifact"]["tensions"]] == [
        t["topic"] for t in outcome["synthesis"]["tensions"]
    ]


@pytest.mark.django_db(transaction=True)
def test_a_strong_consensus_stops_after_round_2() -> None:
    run = consult(backend_options={"consensus": "strong"})
    assert run_to_stop(run) == "done"
    assert run.status == RunStatus.COMPLETED
    assert states_of(run) == FULL_PATH[:4] + [("synthesis", "complete")]
    assert run.outcome["early_termination"]["terminate"] is True
    assert run.outcome["verdict"] is None and run.outcome["completed_rounds"] == [1, 2]
    assert not run.turns.filter(key__startswith="r3/").exists()


@pytest.mark.django_db(transaction=True)
def test_a_rubber_stamped_consensus_does_not_stop_early_and_the_cross_exam_tests_it() -> None:
    run = consult(backend_options={"consensus": "rubber_stamp"})
    assert run_to_stop(run) == "done"
    assert states_of(run) == FULL_PATH
    early = run.outcome["early_termination"]
    assert (early["meets"], early["rubber_stamp"], early["terminate"]) == (True, True, False)
    assert all(c > 0.85 for c in early["r1_confidences"]) and early["tensions"] == 0
    blocked = run.events.get(kind="state", payload__to="cross_exam").payload["reason"]
    assert "rubber-stamped" in blocked
    assert run.outcome["cross_exam"]["challenges"][0]["target_agent"] == "Consensus"
    assert run.outcome["verdict"]["dissent"][0]["severity"] == "low"


@pytest.mark.django_db(transaction=True)
def test_explore_mode_never_stops_early_and_offers_a_menu_to_pick_from() -> None:
    run = consult(config={"mode": "explore"}, backend_options={"consensus": "strong"})
    assert run_to_stop(run) == "done"
    assert states_of(run) == FULL_PATH
    options = run.outcome["verdict"]["recommendations"]
    assert len(options) >= 2 and all(o["pros"] and o["cons"] and o["best_when"] for o in options)
    assert run.outcome["pick_options"] == [[f"o{n}", o["option"]] for n, o in enumerate(options, start=1)]
    assert run.judge_pick == "o1"


@pytest.mark.django_db(transaction=True)
def test_the_consent_gate_holds_the_run_until_a_moderator_approves(moderator: Any) -> None:
    run = consult(config={"auto_approve_under_usd": "0"})
    assert (run.consent, run.status, run.awaiting) == ("required", RunStatus.AWAITING_HUMAN, ["consent"])
    assert states_of(run) == FULL_PATH[:2]
    assert run_to_stop(run) == "waiting"  # the runner calls nothing before consent
    assert not run.turns.exists()
    services.run_consent(run_id=run.pk, approve=True, user=moderator)
    run.refresh_from_db()
    assert states_of(run) == FULL_PATH[:3]
    assert (
        run.events.filter(kind="state")
        .last()
        .payload["reason"]
        .startswith(  # type: ignore[union-attr]
            "A moderator approved the estimated $"
        )
    )
    assert run_to_stop(run) == "done"
    assert states_of(run) == FULL_PATH


@pytest.mark.django_db(transaction=True)
def test_declining_the_estimate_aborts_without_a_call(moderator: Any) -> None:
    run = consult(config={"auto_approve_under_usd": "0"})
    services.run_consent(run_id=run.pk, approve=False, user=moderator)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert states_of(run) == FULL_PATH[:2] + [("awaiting_consent", "aborted")]
    assert not run.turns.exists()


@pytest.mark.django_db(transaction=True)
def test_cancelling_while_waiting_for_consent_aborts(moderator: Any) -> None:
    run = consult(config={"auto_approve_under_usd": "0"})
    services.run_control(run_id=run.pk, action="cancel", user=moderator)
    assert states_of(run)[-1] == ("awaiting_consent", "aborted")
    assert run.events.filter(kind="state").last().payload["reason"] == "Cancelled by a moderator."  # type: ignore[union-attr]


@pytest.mark.django_db(transaction=True)
def test_spending_past_150_percent_of_the_estimate_aborts_the_run(moderator: Any) -> None:
    run = consult(config={"auto_approve_under_usd": "0"})
    services.run_consent(run_id=run.pk, approve=True, user=moderator)
    run.refresh_from_db()
    assert run.estimate_usd is not None
    type(run).objects.filter(pk=run.pk).update(cost_usd=run.estimate_usd * Decimal("1.51"))
    assert run_to_stop(run) == "done"
    assert run.status == RunStatus.FAILED
    assert run.status_reason.startswith("Cost exceeded estimate by >50%")
    assert states_of(run)[-1] == ("independent", "aborted")
    assert not run.turns.exists()  # aborted before Round 1 was scheduled


@pytest.mark.django_db(transaction=True)
def test_a_failing_agent_is_left_out_and_the_consultation_goes_on() -> None:
    run = consult(backend_options={"fail": [key_independent("agent-bo")]})
    assert run_to_stop(run) == "done"
    assert run.status == RunStatus.COMPLETED
    assert run.outcome["failed_agents"] == ["Bo"]
    assert [p["agent"] for p in run.outcome["positions"]] == ["Ada", "Cy"]
    assert not run.turns.filter(key=key_reply("agent-bo")).exists()


@pytest.mark.django_db(transaction=True)
def test_run_debate_runs_a_consultation_headless_with_its_nominal_estimate_approved() -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "run_debate",
        "--protocol",
        "consultation",
        "--topic",
        TOPIC,
        "--config",
        '{"auto_approve_under_usd": "0"}',  # above the gate: headless, a simulated run's $0 call is approved
        "--seed",
        "3",
        stdout=out,
        stderr=err,
    )
    run = Run.objects.get()
    assert out.getvalue().strip().splitlines()[-1] == str(run.pk)
    assert (run.status, run.consent) == (RunStatus.COMPLETED, "approved")
    assert [p["agent"] for p in run.outcome["positions"]] == ["Security Expert", "Architect", "Pragmatist"]
    assert states_of(run)[-1][1] == "complete"
    started = run.events.get(kind="state", payload__to="independent").payload["reason"]
    assert started.startswith("Approved when the run was started, without a moderator: the estimate $")
    assert "above the threshold $0.00" in started


def state_reasons(run: Any) -> dict[str, str]:
    return {e.payload["to"]: e.payload["reason"] for e in run.events.filter(kind="state").order_by("seq")}


@pytest.mark.django_db(transaction=True)
def test_a_headless_run_under_the_threshold_is_approved_automatically_not_by_a_moderator() -> None:
    # run_debate consents in advance (a simulated run, or --yes); under the threshold that consent is not needed.
    call_command(
        "run_debate", "--protocol", "consultation", "--topic", TOPIC, "--seed", "3", "--no-progress",
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    run = Run.objects.get()
    assert run.estimate_usd is not None and run.estimate_usd < Decimal("0.50")
    assert (run.status, run.consent) == (RunStatus.COMPLETED, "auto")
    estimate = f"${run.estimate_usd:.4f}"
    reasons = state_reasons(run)
    assert reasons["awaiting_consent"] == (
        f"Estimated {estimate}, under the $0.50 threshold: approved automatically, no consent asked."
    )
    assert reasons["independent"] == (
        f"Approved automatically: the estimate {estimate} is under the threshold $0.50."
    )
    assert not any("moderator" in reason for reason in reasons.values())
    gate = run.events.get(kind="cost_estimated").payload
    assert (gate["consent"], gate["threshold"]) == ("auto", "0.50")


@pytest.mark.django_db(transaction=True)
def test_every_round_artifact_event_carries_the_consultation_id() -> None:
    run = consult()
    assert run_to_stop(run) == "done"
    artifacts = [e.payload for e in run.events.filter(kind="round_artifact").order_by("seq")]
    assert len(artifacts) == 6
    # The seed's consultation:round_artifact {consultation_id, round_number, artifact_type, artifact}; the id is
    # the one the exported snapshot (consultation.json) gives.
    assert {a["consultation_id"] for a in artifacts} == {str(run.pk)}
    assert all({"round_number", "artifact_type", "artifact"} <= set(a) for a in artifacts)
