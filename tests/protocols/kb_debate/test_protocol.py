"""The KB debate (seed 002): pre-flight, the orchestrator's plan over hand-built histories, the moderator's rules
(closure, one objection, re-raised claims, deflections), the verdict's consistency with the ledger and the
engagement edges, and full simulated debates over the demo KB and a second KB on another question."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from debates.contract import (
    Accepted,
    Done,
    KbArgument,
    KbMutation,
    KbView,
    RunView,
    SeatView,
    Steps,
    TurnView,
)
from debates.engine import registry
from debates.engine.view import run_view_load
from debates.models import Run, Turn
from debates.protocols.kb_debate.exports import run_export_run_dir
from debates.protocols.kb_debate.ledger import (
    LIVE,
    KbDebateConfig,
    dismantled,
    ledger_build,
    non_engagement,
    turn_cap,
    verdict_errors,
    was_answered,
)
from debates.services import runs as services
from debates.services.turns import human_turn_submit
from kb.demo import demo_kbs_load
from kb.formats import seed002
from kb.models import Argument, KnowledgeBase, ProposedMutation, Revision
from kb.services import kb_import_path
from tests.conftest import run_to_stop

PROTOCOL = registry.get("kb-debate")
SECOND_KB = Path(__file__).resolve().parents[2] / "kb" / "corpus" / "valid" / "remote-work"
CON, PRO = "debater-con-x", "debater-pro-x"

# --- a small KB as the plan sees it ------------------------------------------------------------------------------
#   CQ1 (empirical) is addressed by arg-001 (pro, robust) and arg-003 (con, contested);
#   CQ2 (ethical) by arg-002 (pro, contested) and arg-006 (con, strong).
#   arg-004 (con) is baseless and refuted by arg-001; arg-005 (con, weak, cultural) layer-shifts from arg-001;
#   arg-007 (pro, strong) contradicts and addresses arg-003; arg-008 (neutral) supports arg-001.
ARGS = {
    "arg-001": ("pro-x", "empirical", "robust"),
    "arg-002": ("pro-x", "ethical/metaphysical", "contested"),
    "arg-003": ("con-x", "empirical", "contested"),
    "arg-004": ("con-x", "empirical", "baseless"),
    "arg-005": ("con-x", "cultural/religious", "weak"),
    "arg-006": ("con-x", "ethical/metaphysical", "strong"),
    "arg-007": ("pro-x", "empirical", "strong"),
    "arg-008": ("neutral", "methodological", "strong"),
}
EDGES = (
    ("arg-001", "derived-from-source", "kb/sources/a.md"),
    ("arg-003", "derived-from-source", "kb/sources/b.md"),
    ("arg-006", "derived-from-source", "kb/sources/c.md"),
    ("arg-001", "refutes", "arg-004"),
    ("arg-005", "layer-shift-from", "arg-001"),
    ("arg-007", "contradicts", "arg-003"),
    ("arg-007", "addresses", "arg-003"),
    ("arg-008", "supports", "arg-001"),
)
QUESTIONS = (
    (0, "CQ1: does it work?", ("arg-001", "arg-003")),
    (1, "CQ2: is it fair?", ("arg-002", "arg-006")),
)


def kb_view(statuses: dict[str, str] | None = None, mutations: tuple[KbMutation, ...] = ()) -> KbView:
    live = {**{a: s for a, (_, _, s) in ARGS.items()}, **(statuses or {})}
    return KbView(
        slug="x",
        arguments={
            a: KbArgument(a, f"Title of {a}", position, layer, "scope", live[a], status)
            for a, (position, layer, status) in ARGS.items()
        },
        edges=EDGES,
        central_questions=QUESTIONS,
        sources=frozenset({"kb/sources/a.md", "kb/sources/b.md", "kb/sources/c.md"}),
        positions=("con-x", "pro-x"),
        mutations=mutations,
    )


def view(
    turns: dict[str, dict[str, Any] | None],
    *,
    streaming: tuple[str, ...] = (),
    human: bool = False,
    statuses: dict[str, str] | None = None,
    mutations: tuple[KbMutation, ...] = (),
    **config: Any,
) -> RunView:
    seats = {
        CON: SeatView(CON, "con-x", "debater", "con-x", False),
        PRO: SeatView(PRO, "pro-x", "debater", "pro-x", False),
        "moderator": SeatView("moderator", "Moderator", "moderator", "", human),
        "orchestrator": SeatView("orchestrator", "Orchestrator", "orchestrator", "", False),
    }
    turn_views = {
        key: TurnView(
            key=key,
            seat=key.rsplit("/", 1)[1],
            stage="debate",
            task=key.split("/")[1],
            status="streaming" if key in streaming else "committed" if payload is not None else "failed",
            payload=payload,
        )
        for key, payload in turns.items()
    }
    settings = KbDebateConfig(positions=["con-x", "pro-x"], moderator="human" if human else "agent", **config)
    return RunView(1, "Topic?", "", 7, settings, seats, turn_views, frozenset(), kb_view(statuses, mutations))


def claim(args: list[str], presented: str, text: str = "A claim", sources: tuple[str, ...] = ()) -> dict:
    return {"text": text, "args": args, "sources": list(sources), "presented_as": presented}


def opening(*claims: dict) -> dict:
    return {"summary": "Opening.", "claims": list(claims), "mutations": []}


def answer(entry: str, turn: int, move: str, *claims: dict, objection: dict | None = None) -> dict:
    return {
        "responds_to": {"entry": entry, "turn": turn},
        "move": move,
        "text": f"{move} {entry}",
        "claims": list(claims),
        "objection": objection,
        "mutations": [],
    }


def moderation(**fields: Any) -> dict:
    base: dict[str, Any] = {
        "text": "Moderator.",
        "presses": [],
        "callouts": [],
        "deflections": [],
        "rulings": [],
        "objection_decisions": [],
        "mutations": [],
    }
    return {**base, **fields}


def ruling(entry: str, arg: str, closed_as: str = "baseless", turns: tuple[int, ...] = (1,)) -> dict:
    return {
        "entry": entry,
        "arg_id": arg,
        "closed_as": closed_as,
        "justification": "Traceback.",
        "turns": list(turns),
    }


def downgrade(arg: str, to: str) -> dict:
    return {"kind": "status-downgrade", "arg_id": arg, "to": to, "justification": "Debate turn 4."}


# The honest openings: con-x states L-001 (arg-003), L-002 (arg-006), L-003 (arg-005, which orbits CQ1);
# pro-x states L-004 (arg-001), L-005 (arg-002, contested), L-006 (arg-007).
HONEST = {
    f"t01/opening/{CON}": opening(
        claim(["arg-003"], "contested"), claim(["arg-006"], "strong"), claim(["arg-005"], "weak")
    ),
    f"t02/opening/{PRO}": opening(
        claim(["arg-001"], "robust"), claim(["arg-002"], "contested"), claim(["arg-007"], "strong")
    ),
}
# con-x also leans on the baseless arg-004 as "strong" (L-004): the contract flag fires; pro-x's entries are
# L-005 (arg-001), L-006 (arg-002), L-007 (arg-007).
LEANING = {
    f"t01/opening/{CON}": opening(
        claim(["arg-003"], "contested"),
        claim(["arg-006"], "strong"),
        claim(["arg-005"], "weak"),
        claim(["arg-004"], "strong", "The poor pay most"),
    ),
    f"t02/opening/{PRO}": HONEST[f"t02/opening/{PRO}"],
}
# ... and the moderator closes L-004 as baseless at turn 3.
CLOSED = {
    **LEANING,
    "t03/moderator/moderator": moderation(
        callouts=[{"type": "baseless-as-robust", "position": "con-x", "turn": 1, "text": "Rated baseless."}],
        rulings=[ruling("L-004", "arg-004")],
    ),
}
OBJECTION = {"entry": "L-004", "text": "New evidence.", "new_args": ["arg-006"], "new_sources": []}


def only_step(plan: Any) -> Any:
    assert isinstance(plan, Steps), plan
    (step,) = plan.steps
    return step


def reply(move: str, *claims: dict, objection: dict | None = None) -> dict:
    """A debater's answer as it is asked for: the entry and turn it answers are the step's (code records them)."""
    answer: dict[str, Any] = {"move": move, "text": f"{move}.", "claims": list(claims)}
    return answer | ({"objection": objection} if objection is not None else {})


def moderating(**fields: Any) -> dict:
    """A moderator's answer as it is asked for."""
    return {"text": "Moderator.", **fields}


def errors(turns: dict[str, dict[str, Any] | None], payload: dict[str, Any], **kwargs: Any) -> list[str]:
    """What the protocol refuses in `payload` as the answer to the step it plans next."""
    before = view(turns, **kwargs)
    step = only_step(PROTOCOL.plan(before))
    return PROTOCOL.validate(step, step.schema.model_validate(payload), before)


def refused(turns: dict[str, dict[str, Any] | None], payload: dict[str, Any], **kwargs: Any) -> list[str]:
    """What the next step's schema refuses in `payload` (the model cannot send it: enums, required fields)."""
    step = only_step(PROTOCOL.plan(view(turns, **kwargs)))
    try:
        step.schema.model_validate(payload)
    except ValidationError as error:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()]
    return []


def accepted(turns: dict[str, dict[str, Any] | None], payload: dict[str, Any], **kwargs: Any) -> Accepted:
    """`payload` answering the step planned next, as committed: never refused, filled in and flagged."""
    before = view(turns, **kwargs)
    step = only_step(PROTOCOL.plan(before))
    answer = step.schema.model_validate(payload)
    assert PROTOCOL.validate(step, answer, before) == []
    return PROTOCOL.accept(step, answer, before)


def flagged(result: Accepted) -> list[tuple[str, str]]:
    return [(flag.kind, flag.where) for flag in result.flags]


# --- pre-flight ---------------------------------------------------------------------------------------------------


def _graph_kb(
    slug: str, *, stable: bool = True, positions: tuple[str, ...] = ("pro-x", "con-x")
) -> KnowledgeBase:
    kb = KnowledgeBase.objects.create(
        slug=slug, title=slug.title(), kind=KnowledgeBase.GRAPH, stable_detected=stable, quality_summary="-"
    )
    for number, position in enumerate(positions, start=1):
        Argument.objects.create(
            kb=kb,
            arg_id=f"arg-{number:03d}",
            slug=f"a{number}",
            position=position,
            layer="empirical",
            scope="s",
            basis_type="empirical",
            status="strong",
            asserter="a",
            summary="s",
            title="t",
            statement="t.",
        )
    return kb


def _create(kb: Any, **config: Any) -> Run:
    return services.run_create(
        protocol="kb-debate",
        topic="Topic?",
        kb=kb,
        config=config,
        seed=7,
        backend_options={"cps": 0},
        enqueue=False,
    )


@pytest.mark.django_db
class PreflightTests:
    def test_a_debate_without_a_knowledge_base_is_refused(self):
        with pytest.raises(ValueError, match="needs a knowledge base"):
            _create(None)

    def test_a_data_kb_is_refused(self):
        kb = KnowledgeBase.objects.create(slug="data", title="Data", kind=KnowledgeBase.DATA, data={})
        with pytest.raises(ValueError, match="data KB; a KB debate needs an argument graph"):
            _create(kb)

    def test_a_kb_that_does_not_state_a_stable_graph_is_refused(self):
        with pytest.raises(ValueError, match="does not state a stable graph"):
            _create(_graph_kb("churning", stable=False))

    def test_a_kb_with_fewer_than_two_positions_is_refused(self):
        with pytest.raises(ValueError, match="fewer than two positions"):
            _create(_graph_kb("one-sided", positions=("pro-x", "neutral")))

    def test_a_position_the_kb_does_not_hold_is_refused(self):
        with pytest.raises(ValueError, match="pro-y is not a position of"):
            _create(_graph_kb("xy"), positions=["pro-y", "con-x"])

    def test_positions_come_from_the_kb_with_one_debater_each_a_moderator_and_the_orchestrator(self):
        run = _create(_graph_kb("two"), moderator="human")
        assert run.config["positions"] == ["con-x", "pro-x"]
        seats = {s.handle: (s.role, s.human) for s in run.seats.all()}
        assert seats == {
            "debater-con-x": ("debater", False),
            "debater-pro-x": ("debater", False),
            "moderator": ("moderator", True),
            "orchestrator": ("orchestrator", False),
        }


# --- the orchestrator's plan ------------------------------------------------------------------------------------------


class PlanTests:
    def test_it_opens_with_every_position_in_parallel(self):
        plan = PROTOCOL.plan(view({}))
        assert isinstance(plan, Steps)
        assert [s.key for s in plan.steps] == [f"t01/opening/{CON}", f"t02/opening/{PRO}"]
        context = plan.steps[0].context
        assert [a["arg"] for a in context["own_arguments"]] == ["arg-003", "arg-004", "arg-005", "arg-006"]
        assert context["central_questions"][0]["addressed_by"] == ["arg-001", "arg-003"]

    def test_every_opening_claim_becomes_an_open_ledger_entry(self):
        ledger = ledger_build(view(HONEST))
        assert [(e.id, e.position, e.turn, e.args, e.status) for e in ledger.entries.values()][:2] == [
            ("L-001", "con-x", 1, ["arg-003"], "open"),
            ("L-002", "con-x", 1, ["arg-006"], "open"),
        ]
        assert len(ledger.entries) == 6

    def test_a_debater_answers_one_entry_from_one_turn_preferring_claims_on_contested_or_weak_arguments(self):
        step = only_step(PROTOCOL.plan(view(HONEST)))
        assert step.key == f"t03/turn/{CON}"  # pro-x spoke last
        assert step.context["entry"]["id"] == "L-005"  # arg-002 is contested; arg-001 and arg-007 are not
        assert step.context["answer_turn"] == 2
        assert step.context["role"] == "rebut it"

    def test_the_asserter_defends_right_after_a_rebuttal(self):
        history = {**HONEST, f"t03/turn/{CON}": answer("L-005", 2, "rebut", claim(["arg-006"], "strong"))}
        step = only_step(PROTOCOL.plan(view(history)))
        assert step.key == f"t04/turn/{PRO}"
        assert (step.context["entry"]["id"], step.context["answer_turn"]) == ("L-005", 3)
        assert step.context["role"] == "defend or concede your own claim"

    def test_speakers_alternate_and_the_rebutter_answers_the_defence(self):
        history = {
            **HONEST,
            f"t03/turn/{CON}": answer("L-005", 2, "rebut"),
            f"t04/turn/{PRO}": answer("L-005", 3, "defend"),
        }
        step = only_step(PROTOCOL.plan(view(history)))
        assert step.key == f"t05/turn/{CON}"
        assert (step.context["entry"]["id"], step.context["answer_turn"]) == ("L-005", 4)

    def test_settled_threads_are_left_and_live_ones_taken_up(self):
        history = {
            **HONEST,
            f"t03/turn/{CON}": answer("L-005", 2, "rebut"),
            f"t04/turn/{PRO}": answer("L-005", 3, "concede"),
        }
        assert ledger_build(view(history)).entries["L-005"].status == "conceded"
        step = only_step(PROTOCOL.plan(view(history)))
        assert step.seat == CON
        assert step.context["entry"]["id"] == "L-006"  # pro-x's live claims: L-004 (robust), L-006 (strong)

    def test_a_claim_the_moderator_just_pressed_is_answered_by_its_asserter_first(self):
        history = {
            **HONEST,
            f"t03/turn/{CON}": answer("L-005", 2, "rebut"),
            "t04/moderator/moderator": moderation(presses=[{"entry": "L-001", "text": "Which source?"}]),
        }
        step = only_step(PROTOCOL.plan(view(history)))
        assert step.key == f"t05/turn/{CON}"  # even though con-x spoke last
        assert (step.context["entry"]["id"], step.context["answer_turn"]) == ("L-001", 4)

    def test_the_moderator_speaks_after_a_contract_flag(self):
        step = only_step(PROTOCOL.plan(view(LEANING)))
        assert step.key == "t03/moderator/moderator"
        assert [(f["kind"], f["position"], f["turn"]) for f in step.context["flags"]] == [
            ("baseless-as-robust", "con-x", 1)
        ]

    def test_the_moderator_speaks_after_an_objection(self):
        history = {**CLOSED, f"t04/turn/{CON}": answer("L-005", 2, "rebut", objection=OBJECTION)}
        step = only_step(PROTOCOL.plan(view(history)))
        assert step.key == "t05/moderator/moderator"
        assert step.context["pending_objection"]["id"] == "L-004"

    def test_the_moderator_speaks_every_few_debater_turns(self):
        history = {
            **HONEST,
            f"t03/turn/{CON}": answer("L-005", 2, "rebut"),
            f"t04/turn/{PRO}": answer("L-005", 3, "defend"),
        }
        assert only_step(PROTOCOL.plan(view(history, moderator_every=2))).key == "t05/moderator/moderator"
        assert only_step(PROTOCOL.plan(view(history, moderator_every=3))).key == f"t05/turn/{CON}"

    def test_the_synthesis_comes_at_max_turns(self):
        history = {
            **HONEST,
            f"t03/turn/{CON}": answer("L-005", 2, "rebut"),
            f"t04/turn/{PRO}": answer("L-005", 3, "defend"),
        }
        step = only_step(PROTOCOL.plan(view(history, max_turns=4, min_turns=2)))
        assert step.key == "t05/synthesis/orchestrator"
        assert step.context["positions"] == ["con-x", "pro-x"]
        assert [row["engaged_by"] for row in step.context["engagement"]] == [["con-x", "pro-x"]] * 2

    def test_the_synthesis_comes_early_once_nothing_is_live_after_min_turns(self):
        history = {
            f"t01/opening/{CON}": opening(claim(["arg-003"], "contested")),
            f"t02/opening/{PRO}": opening(claim(["arg-002"], "contested")),
            f"t03/turn/{CON}": answer("L-002", 2, "rebut"),
            f"t04/turn/{PRO}": answer("L-002", 3, "concede"),
        }
        assert only_step(PROTOCOL.plan(view(history, min_turns=4, moderator_every=10))).seat == PRO
        history[f"t05/turn/{PRO}"] = answer("L-001", 1, "rebut")
        history[f"t06/turn/{CON}"] = answer("L-001", 5, "concede")
        step = only_step(PROTOCOL.plan(view(history, min_turns=6, moderator_every=10)))
        assert step.key == "t07/synthesis/orchestrator"
        assert only_step(PROTOCOL.plan(view(history, min_turns=8, moderator_every=10))).task == "synthesis"

    def test_a_human_moderator_reviews_the_verdict_and_an_agent_moderator_does_not(self):
        synthesis = {
            "text": "# Synthesis",
            "verdict": {"label": "genuinely-contested", "position": "", "evidence": "e", "engagement": "g"},
        }
        history = {**HONEST, "t03/synthesis/orchestrator": synthesis}
        assert isinstance(PROTOCOL.plan(view(history)), Done)
        review = only_step(PROTOCOL.plan(view(history, human=True)))
        assert (review.key, review.seat, review.task) == (
            "t04/verdict-review/moderator",
            "moderator",
            "verdict-review",
        )
        assert review.context["verdict"]["label"] == "genuinely-contested"
        history["t04/verdict-review/moderator"] = {"decision": "dissent", "text": "Misreads CQ2."}
        done = PROTOCOL.plan(view(history, human=True))
        assert isinstance(done, Done) and not done.failed
        assert done.outcome["review"] == {"decision": "dissent", "text": "Misreads CQ2."}
        assert done.outcome["verdict"]["label"] == "genuinely-contested"

    def test_every_opening_failing_fails_the_run(self):
        plan = PROTOCOL.plan(view({f"t01/opening/{CON}": None, f"t02/opening/{PRO}": None}))
        assert isinstance(plan, Done) and plan.failed

    def test_an_interrupted_turn_is_planned_again_with_the_same_key_and_context(self):
        history = {**HONEST, f"t03/turn/{CON}": answer("L-005", 2, "rebut")}
        first = only_step(PROTOCOL.plan(view(history)))
        interrupted = {**history, first.key: None}
        again = only_step(PROTOCOL.plan(view(interrupted, streaming=(first.key,))))
        assert again.key == first.key
        assert again.context == first.context

    def test_interrupted_openings_are_planned_again_with_their_own_keys(self):
        keys = [f"t01/opening/{CON}", f"t02/opening/{PRO}"]
        plan = PROTOCOL.plan(view(dict.fromkeys(keys), streaming=tuple(keys)))
        assert [s.key for s in plan.steps] == keys


class TurnCapTests:
    """How long a debate runs: as long as its ledger needs unless the user set a cap; before the cap, every opening
    claim gets an answer."""

    def test_by_default_the_cap_follows_the_number_of_opening_claims(self):
        # 6 opening claims: each answered once and half of them answered back (9 debater turns), a moderator
        # turn every 3 of those (3), and the 2 openings.
        assert turn_cap(view(HONEST), ledger_build(view(HONEST))) == 2 + 9 + 3
        # 8 opening claims: 12 debater turns, 4 moderator turns, 2 openings.
        leaning = {**HONEST, f"t01/opening/{CON}": LEANING[f"t01/opening/{CON}"]}
        leaning[f"t02/opening/{PRO}"] = opening(
            *HONEST[f"t02/opening/{PRO}"]["claims"], claim(["arg-008"], "strong")
        )
        assert turn_cap(view(leaning), ledger_build(view(leaning))) == 2 + 12 + 4
        # Never fewer than min_turns, never more than 60.
        one_each = {
            f"t01/opening/{CON}": opening(claim(["arg-003"], "contested")),
            f"t02/opening/{PRO}": opening(claim(["arg-002"], "contested")),
        }
        assert turn_cap(view(one_each), ledger_build(view(one_each))) == 12

    def test_before_the_openings_it_is_estimated_from_what_each_position_can_claim(self):
        # con-x holds 4 arguments, pro-x 3: at most 7 opening claims (an opening makes 5 at most).
        assert turn_cap(view({})) == 2 + (7 + 4) + 4
        assert PROTOCOL.expected_turns(view({})) == turn_cap(view({})) + 1  # and the synthesis

    def test_the_users_cap_is_kept(self):
        assert turn_cap(view(HONEST, max_turns=8), ledger_build(view(HONEST, max_turns=8))) == 8
        history = {**HONEST, f"t03/turn/{CON}": answer("L-005", 2, "rebut")}
        for _ in range(4, 9):
            step = only_step(PROTOCOL.plan(view(history, max_turns=8, min_turns=2)))
            history[step.key] = (
                moderation() if step.task == "moderator" else answer(step.context["entry"]["id"], 1, "rebut")
            )
        assert (
            only_step(PROTOCOL.plan(view(history, max_turns=8, min_turns=2))).key
            == "t09/synthesis/orchestrator"
        )

    def test_when_the_turns_left_are_as_few_as_the_unanswered_claims_only_those_are_taken_up(self):
        history = {**HONEST, f"t03/turn/{CON}": answer("L-005", 2, "rebut")}
        # Room enough: the exchange goes on, the asserter defends L-005.
        assert only_step(PROTOCOL.plan(view(history))).context["entry"]["id"] == "L-005"
        # Five turns left (four of them a debater's) for five unanswered opening claims: pro-x answers one of
        # con-x's (the weakest, L-003 on the weak arg-005) instead.
        step = only_step(PROTOCOL.plan(view(history, max_turns=8, min_turns=2)))
        assert (step.seat, step.context["entry"]["id"]) == (PRO, "L-003")

    def test_with_the_users_small_cap_every_opening_claim_still_gets_an_answer_when_the_turns_allow(self):
        history = dict(HONEST)
        while not isinstance(plan := PROTOCOL.plan(view(history, max_turns=10, min_turns=2)), Done):
            step = only_step(plan)
            if step.task == "synthesis":
                break
            if step.task == "moderator":
                history[step.key] = moderation()
            else:
                move = "rebut" if step.context["role"] == "rebut it" else "defend"
                history[step.key] = answer(step.context["entry"]["id"], step.context["answer_turn"], move)
        ledger = ledger_build(view(history, max_turns=10, min_turns=2))
        # 8 turns for 6 claims (two of them the moderator's): every opening claim was answered.
        assert all(was_answered(ledger, e) for e in ledger.entries.values() if e.turn <= 2)


# --- the moderator's rules ------------------------------------------------------------------------------------------


# After the honest openings and one rebuttal, moderator_every=1 hands the moderator turn 4.
REBUTTED = {**HONEST, f"t03/turn/{CON}": answer("L-005", 2, "rebut")}


class ClosureTests:
    def test_closing_a_claim_needs_a_dead_rating(self):
        payload = moderating(rulings=[ruling("L-001", "arg-003", "refuted")])
        # A human moderator is told why, with the downgrade to propose (the console offers it in one click) ...
        problems = errors(REBUTTED, payload, moderator_every=1, human=True)
        assert problems == [
            "rulings[0]: closing needs arg-003 rated refuted or baseless — it is contested; propose arg-003 → "
            "refuted in this turn"
        ]
        # ... an agent's turn is kept without the ruling, which is flagged.
        result = accepted(REBUTTED, payload, moderator_every=1)
        assert result.payload["rulings"] == []
        assert flagged(result) == [("unbacked_ruling", "rulings")]
        assert "arg-003 rated refuted or baseless — it is contested" in result.flags[0].detail

    def test_or_the_matching_downgrade_proposed_in_the_same_turn(self):
        payload = moderating(
            rulings=[ruling("L-001", "arg-003", "refuted")], mutations=[downgrade("arg-003", "refuted")]
        )
        assert errors(REBUTTED, payload, moderator_every=1, human=True) == []
        result = accepted(REBUTTED, payload, moderator_every=1)
        assert [r["entry"] for r in result.payload["rulings"]] == ["L-001"] and result.flags == ()
        payload["mutations"] = [
            downgrade("arg-003", "weak")
        ]  # a downgrade that does not kill it is not enough
        assert errors(REBUTTED, payload, moderator_every=1, human=True)
        assert accepted(REBUTTED, payload, moderator_every=1).payload["rulings"] == []

    def test_a_claim_on_an_argument_already_rated_dead_may_be_closed_outright(self):
        payload = moderating(rulings=[ruling("L-001", "arg-003", "refuted")])
        assert errors(REBUTTED, payload, moderator_every=1, human=True, statuses={"arg-003": "refuted"}) == []
        result = accepted(REBUTTED, payload, moderator_every=1, statuses={"arg-003": "refuted"})
        assert len(result.payload["rulings"]) == 1 and result.flags == ()

    def test_the_ruling_names_an_argument_the_claim_cites_and_turns_that_happened(self):
        # The argument is one a ledger claim cites (an enum); that it is this claim's, code checks.
        outside = moderating(rulings=[ruling("L-001", "arg-004")])
        assert [e.split(":")[0] for e in refused(REBUTTED, outside, moderator_every=1)] == [
            "rulings.0.arg_id"
        ]
        payload = moderating(rulings=[ruling("L-001", "arg-006")])
        assert errors(REBUTTED, payload, moderator_every=1, human=True) == [
            "rulings[0].arg_id: L-001 does not cite arg-006"
        ]
        result = accepted(REBUTTED, payload, moderator_every=1)
        assert result.payload["rulings"] == [] and flagged(result) == [("ruling_refused", "rulings")]
        # Turns are an enum of the turns that happened: turn 9 cannot be named at turn 4.
        late = refused(
            REBUTTED, moderating(rulings=[ruling("L-001", "arg-003", turns=(1, 9))]), moderator_every=1
        )
        assert [e.split(":")[0] for e in late] == ["rulings.0.turns.1"]

    def test_a_closed_claim_is_closed_with_the_ruling_recorded(self):
        entry = ledger_build(view(CLOSED)).entries["L-004"]
        assert entry.status == "closed"
        assert entry.closure["ruling"] == 'Ruling: claim "The poor pay most" (arg-004) is CLOSED as baseless.'
        assert ledger_build(view(CLOSED)).unhandled_flags() == []


class ObjectionTests:
    def test_the_asserter_may_object_once_with_new_evidence(self):
        step = only_step(PROTOCOL.plan(view(CLOSED)))
        assert step.seat == CON and step.context["may_object_to"] == ["L-004"]
        result = accepted(CLOSED, reply("rebut", objection=OBJECTION))
        assert result.payload["objection"] == OBJECTION and result.flags == ()

    def test_an_objection_needs_evidence_not_cited_before(self):
        result = accepted(CLOSED, reply("rebut", objection={**OBJECTION, "new_args": ["arg-004"]}))
        assert result.payload["objection"] is None  # left out: the ruling stands
        assert flagged(result) == [("objection_without_new_evidence", "objection")]

    def test_only_the_asserter_objects(self):
        history = {**CLOSED, f"t04/turn/{CON}": answer("L-006", 2, "rebut")}
        step = only_step(PROTOCOL.plan(view(history)))
        assert step.seat == PRO and "objection" not in step.schema.model_fields
        assert refused(history, reply("defend", objection=OBJECTION)) == [
            "objection: Extra inputs are not permitted"
        ]

    def test_the_moderator_must_rule_on_a_pending_objection(self):
        history = {**CLOSED, f"t04/turn/{CON}": answer("L-006", 2, "rebut", objection=OBJECTION)}
        assert refused(history, moderating()) == ["objection_decision: Field required"]
        # The decision is asked, the entry it is about is recorded by code.
        result = accepted(history, moderating(objection_decision={"decision": "reaffirm", "text": "Stands."}))
        assert result.payload["objection_decisions"] == [
            {"entry": "L-004", "decision": "reaffirm", "text": "Stands."}
        ]

    def test_reaffirming_keeps_the_claim_closed_and_a_second_objection_is_refused(self):
        history = {
            **CLOSED,
            f"t04/turn/{CON}": answer("L-006", 2, "rebut", objection=OBJECTION),
            "t05/moderator/moderator": moderation(
                objection_decisions=[{"entry": "L-004", "decision": "reaffirm", "text": "Stands."}]
            ),
            f"t06/turn/{PRO}": answer("L-006", 4, "defend"),
        }
        entry = ledger_build(view(history)).entries["L-004"]
        assert entry.closed and entry.objection["decision"] == "reaffirm"
        step = only_step(PROTOCOL.plan(view(history)))
        assert step.seat == CON and step.context["may_object_to"] == []
        assert "objection" not in step.schema.model_fields  # objected to once already: the ruling stands

    def test_reversing_reopens_the_claim_for_its_asserter_to_answer(self):
        history = {
            **CLOSED,
            f"t04/turn/{CON}": answer("L-006", 2, "rebut", objection=OBJECTION),
            "t05/moderator/moderator": moderation(
                objection_decisions=[{"entry": "L-004", "decision": "reverse", "text": "New evidence holds."}]
            ),
        }
        entry = ledger_build(view(history)).entries["L-004"]
        assert entry.status == "partially-rebutted" and entry.closure["reversed_at"] == 5
        step = only_step(PROTOCOL.plan(view(history)))
        assert (step.seat, step.context["entry"]["id"], step.context["answer_turn"]) == (CON, "L-004", 5)

    def test_no_objection_is_taken_in_the_last_debate_turn(self):
        step = only_step(PROTOCOL.plan(view(CLOSED, max_turns=4)))
        assert step.context["may_object_to"] == [] and "objection" not in step.schema.model_fields


class ReraisedClaimTests:
    RERAISED = {
        **CLOSED,
        f"t04/turn/{CON}": answer(
            "L-005", 2, "rebut", claim(["arg-004"], "contested", "Still, the poor pay most")
        ),
    }

    def test_citing_ones_own_closed_claim_again_is_flagged_and_is_no_new_claim(self):
        ledger = ledger_build(view(self.RERAISED))
        assert [(f.kind, f.position, f.turn) for f in ledger.unhandled_flags()] == [
            ("reraised-closed", "con-x", 4)
        ]
        assert ledger.entries["L-008"].status == "unclaimable"

    def test_the_moderator_must_call_it_out(self):
        """Code adds the callout the moderator owes (the flag says all it needs) and flags the omission."""
        result = accepted(self.RERAISED, moderating())
        assert [(c["type"], c["position"], c["turn"]) for c in result.payload["callouts"]] == [
            ("reraised-closed", "con-x", 4)
        ]
        assert flagged(result) == [("missing_callout", "callouts")]
        callout = {"type": "reraised-closed", "position": "con-x", "turn": 4, "text": "L-004 is closed."}
        result = accepted(self.RERAISED, moderating(callouts=[callout]))
        assert result.payload["callouts"] == [callout] and result.flags == ()

    def test_the_other_side_citing_the_dead_argument_is_no_breach(self):
        history = {
            **CLOSED,
            f"t04/turn/{CON}": answer("L-006", 2, "rebut"),
            f"t05/turn/{PRO}": answer(
                "L-005", 4, "defend", claim(["arg-001", "arg-004"], "baseless", "arg-001 refutes arg-004")
            ),
        }
        assert ledger_build(view(history)).unhandled_flags() == []


class FlagTests:
    def test_a_dead_or_weak_argument_presented_as_strong_is_flagged(self):
        flags = ledger_build(view(LEANING)).flags
        assert [(f.kind, f.detail) for f in flags] == [
            ("baseless-as-robust", "presents arg-004 (baseless) as strong")
        ]

    def test_a_claim_is_judged_by_the_rating_it_was_made_under(self):
        # arg-007 was strong at the openings; con-x's turn 3 got it downgraded to weak.
        applied = KbMutation(
            1,
            f"t03/turn/{CON}",
            CON,
            "status-downgrade",
            {"arg_id": "arg-007", "to": "weak"},
            "applied",
            "R-001",
        )
        history = {**HONEST, f"t03/turn/{CON}": answer("L-006", 2, "rebut")}
        later = view(history, statuses={"arg-007": "weak"}, mutations=(applied,))
        assert ledger_build(later).flags == []
        history[f"t04/turn/{PRO}"] = answer("L-006", 3, "defend", claim(["arg-007"], "strong"))
        later = view(history, statuses={"arg-007": "weak"}, mutations=(applied,))
        assert [(f.kind, f.turn) for f in ledger_build(later).flags] == [("baseless-as-robust", 4)]

    def test_an_untraced_claim_is_flagged_and_unclaimable(self):
        history = {**HONEST, f"t03/turn/{CON}": answer("L-005", 2, "rebut", claim([], "contested"))}
        ledger = ledger_build(view(history))
        assert [f.kind for f in ledger.flags] == ["untraced"]
        assert ledger.entries["L-007"].status == "unclaimable"


class DebaterRuleTests:
    def test_a_turn_answers_exactly_the_entry_and_turn_it_was_handed(self):
        """Code records what the turn answers: the model is not asked, so it cannot answer another entry."""
        answering = {**reply("rebut"), "responds_to": {"entry": "L-004", "turn": 2}}
        assert refused(HONEST, answering) == ["responds_to: Extra inputs are not permitted"]
        assert accepted(HONEST, reply("rebut")).payload["responds_to"] == {"entry": "L-005", "turn": 2}

    def test_the_other_sides_claim_is_rebutted_and_ones_own_is_defended_or_conceded(self):
        assert refused(HONEST, reply("defend")) == ["move: Input should be 'rebut' or 'partial-rebut'"]
        history = {**HONEST, f"t03/turn/{CON}": answer("L-005", 2, "rebut")}
        assert refused(history, reply("rebut")) == ["move: Input should be 'defend' or 'concede'"]

    def test_cited_arguments_and_sources_must_exist(self):
        payload = reply("rebut", claim(["arg-099"], "weak", sources=("kb/sources/none.md",)))
        assert [e.split(":")[0] for e in refused(HONEST, payload)] == [
            "claims.0.args.0",
            "claims.0.sources.0",
        ]


class DeflectionTests:
    def deflection(self, position: str, cited: list[str], turns: list[int], target: str) -> dict:
        return moderating(
            deflections=[
                {
                    "position": position,
                    "cited_args": cited,
                    "turns": turns,
                    "target_arg": target,
                    "text": "D.",
                }
            ]
        )

    def test_a_deflection_callout_lists_turns_in_which_the_position_cited_the_argument(self):
        payload = self.deflection("con-x", ["arg-005"], [1], "arg-001")
        assert errors(REBUTTED, payload, moderator_every=1, human=True) == []
        result = accepted(REBUTTED, payload, moderator_every=1)
        assert result.payload["deflections"] == payload["deflections"] and result.flags == ()

    def test_a_turn_in_which_it_was_not_cited_is_refused_to_a_human_and_left_out_of_an_agents_turn(self):
        payload = self.deflection("con-x", ["arg-005"], [1, 3], "arg-001")
        problems = errors(REBUTTED, payload, moderator_every=1, human=True)
        assert problems == ["deflections[0]: con-x did not cite arg-005 in turn 3"]
        result = accepted(REBUTTED, payload, moderator_every=1)
        assert [d["turns"] for d in result.payload["deflections"]] == [[1]]
        assert flagged(result) == [("not_cited", "deflections")]
        payload = self.deflection("pro-x", ["arg-005"], [2], "arg-001")
        problems = errors(REBUTTED, payload, moderator_every=1, human=True)
        assert problems == ["deflections[0]: pro-x did not cite arg-005 in turn 2"]
        result = accepted(REBUTTED, payload, moderator_every=1)
        assert result.payload["deflections"] == [] and flagged(result) == [("not_cited", "deflections")]

    def test_an_argument_that_addresses_the_target_is_no_deflection(self):
        payload = self.deflection("pro-x", ["arg-007"], [2], "arg-003")
        problems = errors(REBUTTED, payload, moderator_every=1, human=True)
        assert problems == [
            "deflections[0]: arg-007 addresses arg-003; citing it engages the argument, it is no deflection"
        ]
        result = accepted(REBUTTED, payload, moderator_every=1)
        assert result.payload["deflections"] == [] and flagged(result) == [
            ("not_a_deflection", "deflections")
        ]

    def test_callouts_repeated_without_engaging_become_persistent_non_engagement(self):
        callout = {
            "position": "con-x",
            "cited_args": ["arg-005"],
            "turns": [1],
            "target_arg": "arg-001",
            "text": "D.",
        }
        history = {
            **REBUTTED,
            "t04/moderator/moderator": moderation(deflections=[callout]),
            f"t05/turn/{CON}": answer("L-005", 3, "rebut", claim(["arg-005"], "weak")),
            "t06/moderator/moderator": moderation(deflections=[{**callout, "turns": [1, 5]}]),
        }
        assert non_engagement(view(history), ledger_build(view(history))) == [
            {"position": "con-x", "callout_turns": [4, 6], "targets": ["arg-001"]}
        ]
        # Citing an argument that addresses the central question arg-001 belongs to is engaging it.
        history[f"t05/turn/{CON}"] = answer("L-005", 3, "rebut", claim(["arg-003"], "contested"))
        assert non_engagement(view(history), ledger_build(view(history))) == []


# --- the verdict ------------------------------------------------------------------------------------------------


def verdict(label: str, position: str = "") -> dict:
    return {"label": label, "position": position, "evidence": "e", "engagement": "g"}


def verdict_problems(history: dict, label: str, position: str = "") -> list[str]:
    """With every ruling's downgrade applied (a closure counts only once the KB rates the argument dead)."""
    applied = {
        r["arg_id"]: "baseless" if r["closed_as"] == "baseless" else "refuted"
        for payload in history.values()
        if payload
        for r in payload.get("rulings", [])
    }
    v = view(history, statuses=applied)
    return verdict_errors(v, ledger_build(v), verdict(label, position))


# con-x's central claims are L-001 (arg-003, CQ1) and L-002 (arg-006, CQ2); closing L-001 dismantles it.
DISMANTLED = {
    **REBUTTED,
    "t04/moderator/moderator": moderation(rulings=[ruling("L-001", "arg-003", "refuted")]),
}


class VerdictTests:
    def test_no_balanced_verdict_when_one_sides_central_claims_are_closed(self):
        for label in ("genuinely-contested", "unresolved-by-corpus"):
            assert verdict_problems(DISMANTLED, label) == [
                "verdict: no balanced verdict — con-x's central claims are closed (L-001)"
            ]
        assert verdict_problems(DISMANTLED, "better-grounded", "pro-x") == []

    def test_a_balanced_verdict_fits_when_both_sides_engaged_and_stand(self):
        assert verdict_problems(REBUTTED, "genuinely-contested") == []

    def test_better_grounded_needs_the_other_side_closed_or_not_engaging(self):
        assert verdict_problems(REBUTTED, "better-grounded", "pro-x") == [
            "verdict: better-grounded:pro-x needs con-x's central claims closed or con-x not engaging the central "
            "questions; neither holds"
        ]
        assert "verdict: con-x's own central claims are closed (L-001)" in verdict_problems(
            DISMANTLED, "better-grounded", "con-x"
        )

    def test_better_grounded_needs_engagement_whatever_the_source_quality(self):
        history = {
            f"t01/opening/{CON}": opening(claim(["arg-003"], "contested")),
            f"t02/opening/{PRO}": opening(claim(["arg-007"], "strong"), claim(["arg-008"], "strong")),
        }
        assert verdict_problems(history, "better-grounded", "pro-x") == [
            "verdict: pro-x engaged no central question via addresses edges"
        ]

    def test_engagement_asymmetry_needs_a_question_the_other_side_only_orbited(self):
        assert verdict_problems(REBUTTED, "engagement-asymmetry", "pro-x") == [
            "verdict: engagement-asymmetry:pro-x needs a central question pro-x engaged and the other side only "
            "orbited"
        ]
        orbiting = {
            f"t01/opening/{CON}": opening(claim(["arg-005"], "weak"), claim(["arg-006"], "strong")),
            f"t02/opening/{PRO}": HONEST[f"t02/opening/{PRO}"],
        }
        assert verdict_problems(orbiting, "engagement-asymmetry", "pro-x") == []

    def test_when_every_side_is_dismantled_the_corpus_leaves_it_unresolved(self):
        history = {
            **DISMANTLED,
            "t04/moderator/moderator": moderation(
                rulings=[ruling("L-001", "arg-003", "refuted"), ruling("L-004", "arg-001", "refuted")]
            ),
        }
        assert verdict_problems(history, "unresolved-by-corpus") == []
        assert verdict_problems(history, "genuinely-contested")

    def test_the_synthesis_step_offers_only_the_verdicts_the_ledger_allows(self):
        history = {**DISMANTLED, f"t05/turn/{PRO}": answer("L-002", 1, "rebut")}
        settings = {"max_turns": 5, "min_turns": 2, "statuses": {"arg-003": "refuted"}}
        step = only_step(PROTOCOL.plan(view(history, **settings)))
        label = step.schema.model_json_schema()["$defs"]["KbVerdict"]["properties"]["label"]
        assert label.get("enum", [label.get("const")]) == ["better-grounded:pro-x"]
        answer_ = {
            "text": "# Synthesis",
            "verdict": {"label": "genuinely-contested", "evidence": "e", "engagement": "g"},
        }
        assert [e.split(":")[0] for e in refused(history, answer_, **settings)] == ["verdict.label"]
        answer_["verdict"]["label"] = "better-grounded:pro-x"
        result = accepted(history, answer_, **settings)
        assert result.payload["verdict"] == verdict("better-grounded", "pro-x") and result.flags == ()


# --- full simulated debates ---------------------------------------------------------------------------------------


def _debate(kb: KnowledgeBase, **options: Any) -> Run:
    config = {"auto_approve": options.pop("auto_approve", False)}
    run = services.run_create(
        protocol="kb-debate",
        topic=options.pop("topic", "Should the question be settled by the knowledge base?"),
        kb=kb,
        config=config,
        seed=7,
        backend_options={"cps": 0, **options},
        enqueue=False,
    )
    assert run_to_stop(run) == "done"
    return run


def _second_kb() -> KnowledgeBase:
    return kb_import_path(SECOND_KB, slug="remote-work")


def _debate_turns(run: Run) -> list[Turn]:
    return list(run.turns.filter(task__in=["opening", "turn", "moderator"]).order_by("first_seq", "id"))


def _assert_the_debate_played_out(run: Run) -> None:
    """The seed's shape: ≥ 12 debate turns, a closed claim whose one objection was reaffirmed, a deflection
    callout, at least two downgrades proposed; the synthesis covers engagement, closures and pointers."""
    assert run.status == "completed", run.status_reason
    assert all(t.status == "committed" for t in run.turns.all())
    assert len(_debate_turns(run)) >= 12
    ledger = run.outcome["ledger"]
    assert any(
        e["status"] == "closed" and (e["objection"] or {}).get("decision") == "reaffirm" for e in ledger
    )
    assert run.outcome["non_engagement"] is not None
    moderator = [t.payload for t in run.turns.filter(task="moderator")]
    assert any(p["deflections"] for p in moderator)
    assert any('Ruling: claim "' in p["text"] and "is CLOSED as" in p["text"] for p in moderator)
    # The moderator names a position as the page does ("For pricing"), not by its id ("pro-pricing").
    assert any(
        re.match(r"Deflection: (For|Against) ", d["text"]) for p in moderator for d in p["deflections"]
    )
    downgrades = ProposedMutation.objects.filter(run=run, kind="status-downgrade")
    assert downgrades.count() >= 2
    # Every opening claim was answered; every claim still live is listed as left open, with why, in the
    # outcome and in the synthesis file.
    view_ = run_view_load(run)
    ledger_ = ledger_build(view_)
    openings = {t.number for t in ledger_.turns if t.task == "opening"}
    assert all(was_answered(ledger_, e) for e in ledger_.entries.values() if e.turn in openings)
    live = [e.id for e in ledger_.entries.values() if e.status in LIVE]
    assert [c["entry"] for c in run.outcome["left_open"]] == live
    assert all(c["reason"] for c in run.outcome["left_open"])
    listed = (
        run_export_run_dir(run)["output/synthesis.md"].split("## Claims left open\n", 1)[1].split("\n## ")[0]
    )
    assert [line.split(" ", 2)[1] for line in listed.strip().splitlines() if line.startswith("- L-")] == live
    synthesis = run.turns.get(task="synthesis").payload
    for section in (
        "## Central questions and engagement",
        "## Closed claims",
        "## Claims found baseless",
        "kb-snapshot-construction/",
        "kb/revisions.md",
    ):
        assert section in synthesis["text"]
    # No title and no verdict section of its own: the synthesis file has its title and writes the verdict field.
    assert not synthesis["text"].startswith("# ") and "## Verdict" not in synthesis["text"]
    assert synthesis["verdict"] == run.outcome["verdict"]


@pytest.mark.django_db(transaction=True)
class SimulatedDebateTests:
    def test_on_the_demo_kb_with_auto_approve_downgrades_become_revisions_citing_the_turn(self):
        kb = demo_kbs_load()[0]
        run = _debate(kb, auto_approve=True)
        _assert_the_debate_played_out(run)
        applied = ProposedMutation.objects.filter(run=run, kind="status-downgrade", status="applied")
        assert applied.count() >= 2
        for mutation in applied:
            revision = mutation.revision
            assert (
                revision is not None
                and revision.r_id.startswith("R-")
                and revision.turn_id == mutation.turn_id
            )
            number = [t.pk for t in run.turns.order_by("first_seq", "id")].index(mutation.turn_id) + 1
            assert f"debate turn {number}" in revision.heading
            assert (
                Argument.objects.get(kb=kb, arg_id=mutation.payload["arg_id"]).status
                == mutation.payload["to"]
            )
        # The baseless claim presented as strong was called out and closed, and the objection to it reaffirmed.
        closed = {e["references"][0]["arg"]: e for e in run.outcome["ledger"] if e["status"] == "closed"}
        assert closed["arg-010"]["closure"]["as"] == "baseless"
        assert closed["arg-010"]["objection"]["decision"] == "reaffirm"

    def test_on_the_demo_kb_without_auto_approve_proposals_wait_in_the_inbox(self):
        kb = demo_kbs_load()[0]
        before = dict(kb.arguments.values_list("arg_id", "status"))
        run = _debate(kb, auto_approve=False)
        _assert_the_debate_played_out(run)
        assert set(ProposedMutation.objects.filter(run=run).values_list("status", flat=True)) == {"pending"}
        assert not Revision.objects.filter(run=run).exists()
        assert dict(kb.arguments.values_list("arg_id", "status")) == before

    def test_on_the_second_kb_the_side_that_only_orbits_a_question_loses_on_engagement(self):
        run = _debate(_second_kb(), auto_approve=True, topic="Does remote work reduce productivity?")
        _assert_the_debate_played_out(run)
        assert run.outcome["verdict"]["label"] == "engagement-asymmetry"
        assert run.outcome["verdict"]["position"] == "pro-remote"
        row = next(r for r in run.outcome["engagement"] if "careers" in r["text"])
        assert (row["engaged_by"], row["orbited_by"]) == (["pro-remote"], ["con-remote"])
        assert Revision.objects.filter(run=run).count() >= 2

    def test_a_debater_who_re_raises_a_closed_claim_is_called_out(self):
        run = _debate(_second_kb(), reraise=True)
        assert run.status == "completed"
        callouts = [
            c
            for p in run.turns.filter(task="moderator").values_list("payload", flat=True)
            for c in p["callouts"]
        ]
        assert any(c["type"] == "reraised-closed" and c["position"] == "pro-remote" for c in callouts)
        assert any("re-raises closed" in " ".join(e["notes"]) for e in run.outcome["ledger"])

    def test_with_the_users_small_cap_the_claims_left_unanswered_are_listed_with_why(self):
        kb = demo_kbs_load()[0]
        run = services.run_create(
            protocol="kb-debate",
            topic="Congestion pricing?",
            kb=kb,
            config={"max_turns": 6, "min_turns": 2},
            seed=7,
            backend_options={"cps": 0},
            enqueue=False,
        )
        assert run_to_stop(run) == "done"
        run.refresh_from_db()
        assert run.outcome["turns"] == 6 and run.outcome["turn_cap"] == 6
        unanswered = [c for c in run.outcome["left_open"] if not c["answered"]]
        assert unanswered and all(
            c["reason"]
            == "never answered: no debater took it up before the debate reached its cap of 6 turns"
            for c in unanswered
        )
        listed = run_export_run_dir(run)["output/synthesis.md"].split("## Claims left open\n", 1)[1]
        for c in unanswered:
            assert f"- {c['entry']} ({c['position']}): “{c['claim']}” — open; never answered" in listed

    def test_the_simulated_debate_is_deterministic_for_its_seed(self):
        first = _debate(_second_kb())
        KnowledgeBase.objects.filter(slug="remote-work").update(slug="remote-work-1")
        second = _debate(_second_kb())
        assert [(t.key, t.payload) for t in first.turns.order_by("first_seq", "id")] == [
            (t.key, t.payload) for t in second.turns.order_by("first_seq", "id")
        ]

    def test_a_human_moderator_rules_through_the_form(self, moderator):
        kb = demo_kbs_load()[0]
        run = services.run_create(
            protocol="kb-debate",
            topic="Congestion pricing?",
            kb=kb,
            config={"moderator": "human"},
            seed=7,
            backend_options={"cps": 0},
            enqueue=False,
        )
        assert run_to_stop(run) == "waiting"
        assert run.awaiting == ["t03/moderator/moderator"]
        entry = next(e for e in ledger_build(_run_view(run)).entries.values() if "arg-010" in e.args)
        human_turn_submit(
            run_id=run.pk,
            step_key="t03/moderator/moderator",
            data={
                "text": "The baseless claim is closed.",
                "callout_type": "baseless-as-robust",
                "callout_position": "con-pricing",
                "callout_turn": "1",
                "ruling_entry": entry.id,
                "ruling_arg": "arg-010",
                "ruling_as": "baseless",
                "ruling_justification": "No primary source; arg-009 refutes it.",
                "ruling_turns": "1",
            },
            user=moderator,
        )
        assert run_to_stop(run) == "waiting"
        assert ledger_build(_run_view(run)).entries[entry.id].closed


def _run_view(run: Run) -> RunView:
    return run_view_load(run)


@pytest.mark.django_db
def test_the_second_kb_is_a_valid_seed_002_kb_on_another_question():
    parsed = seed002.parse_directory(SECOND_KB)
    assert parsed.problems == []
    assert parsed.stable_statement.startswith("Graph state: stable")
    assert 8 <= len(parsed.arguments) <= 12
    positions = {a.frontmatter["position"] for a in parsed.arguments}
    assert {"pro-remote", "con-remote"} <= positions
    assert any(a.frontmatter["status"] == "baseless" for a in parsed.arguments)
    assert len(parsed.central_questions) == 3 and all(ids for _, ids in parsed.central_questions)
    kinds = {e.type for e in parsed.edges}
    assert {
        "addresses",
        "tangential-to",
        "scope-mismatch-with",
        "layer-shift-from",
        "derived-from-source",
    } <= kinds
    kb = _second_kb()
    assert kb.is_stable and kb.sources.count() == len(parsed.sources)


class ClosureBackingTests:
    """A closure stands on the KB: the matching downgrade applied (counts), pending (shown, not counted), or
    rejected (the ruling is void)."""

    def _downgrade(self, status: str) -> tuple[KbMutation, ...]:
        return (
            KbMutation(
                id=1,
                turn_key="t04/moderator/moderator",
                proposed_by="moderator",
                kind="status-downgrade",
                payload={"arg_id": "arg-003", "to": "refuted"},
                status=status,
            ),
        )

    def test_a_pending_downgrade_closes_but_does_not_dismantle(self):
        v = view(DISMANTLED, mutations=self._downgrade("pending"))
        ledger = ledger_build(v)
        entry = ledger.entries["L-001"]
        assert entry.closed and entry.closure and entry.closure["pending_downgrade"]
        assert dismantled(v, ledger, "con-x") == []

    def test_a_rejected_downgrade_voids_the_ruling(self):
        v = view(DISMANTLED, mutations=self._downgrade("rejected"))
        entry = ledger_build(v).entries["L-001"]
        assert not entry.closed and any("void" in note for note in entry.notes)

    def test_an_applied_downgrade_dismantles(self):
        v = view(DISMANTLED, statuses={"arg-003": "refuted"}, mutations=self._downgrade("applied"))
        ledger = ledger_build(v)
        assert dismantled(v, ledger, "con-x") == ["L-001"]


def test_a_stepped_run_gets_every_opening_one_by_one():
    """A paused run stepped one turn claims only the first opening; the next plan still asks for the others."""
    one = {f"t01/opening/{CON}": HONEST[f"t01/opening/{CON}"]}
    plan = PROTOCOL.plan(view(one))
    assert only_step(plan).key == f"t02/opening/{PRO}"


@pytest.mark.django_db(transaction=True)
def test_a_change_already_waiting_in_the_inbox_is_not_proposed_twice():
    kb = demo_kbs_load()[0]
    run = _debate(kb)
    pending = ProposedMutation.objects.filter(run=run, status="pending")
    changes = [(m.kind, repr(sorted(m.payload.items()))) for m in pending]
    assert len(changes) == len(set(changes)), changes
