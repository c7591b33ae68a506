"""What a kb-debate seat is asked and how its answer is committed (issue 22): step schemas built from the run's
state (the KB's argument ids and sources, the ledger's entries, the turns that happened, the moves open to the seat,
the verdicts the ledger allows), what code fills in, and each flag a kept answer can carry."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anthropic
from django.template.loader import render_to_string

from debates.contract import Accepted, Step
from debates.engine import registry
from debates.protocols.kb_debate import schema
from debates.protocols.kb_debate.console import moderator_payload
from debates.protocols.kb_debate.ledger import mutation_payload, verdicts_possible
from tests.protocols.kb_debate.test_protocol import (
    CLOSED,
    CON,
    DISMANTLED,
    HONEST,
    OBJECTION,
    PRO,
    REBUTTED,
    answer,
    claim,
    only_step,
    ruling,
    view,
)

PROTOCOL = registry.get("kb-debate")
ARGS = [f"arg-{n:03d}" for n in range(1, 9)]
SOURCES = ["kb/sources/a.md", "kb/sources/b.md", "kb/sources/c.md"]


def step_and_view(turns: dict[str, Any], **kwargs: Any) -> tuple[Step, Any]:
    before = view(turns, **kwargs)
    return only_step(PROTOCOL.plan(before)), before


def accept(turns: dict[str, Any], payload: dict[str, Any], **kwargs: Any) -> Accepted:
    step, before = step_and_view(turns, **kwargs)
    answer_ = step.schema.model_validate(payload)
    assert PROTOCOL.validate(step, answer_, before) == []
    return PROTOCOL.accept(step, answer_, before)


def kinds(result: Accepted) -> list[tuple[str, str]]:
    return [(flag.kind, flag.where) for flag in result.flags]


def opening_answer(*claims: dict, **fields: Any) -> dict:
    return {"summary": "Opening.", "claims": list(claims), **fields}


def claim_schema(step: Step) -> dict[str, Any]:
    return step.schema.model_json_schema()["$defs"]["Claim"]["properties"]


# --- the schemas ----------------------------------------------------------------------------------------------------


class SchemaTests:
    def test_the_openings_share_one_schema_that_cites_only_what_the_kb_holds(self):
        plan = PROTOCOL.plan(view({}))
        first, second = plan.steps  # type: ignore[union-attr]
        assert first.schema is second.schema  # one schema per parallel stage: one cached prompt prefix
        properties = claim_schema(first)
        assert properties["args"]["items"]["enum"] == ARGS
        assert properties["sources"]["items"]["enum"] == SOURCES

    def test_a_kb_without_sources_is_asked_for_none_and_its_claims_are_stored_with_none(self):
        bare = view({})
        assert bare.kb is not None
        bare = dataclasses.replace(bare, kb=dataclasses.replace(bare.kb, sources=frozenset()))
        step = PROTOCOL.plan(bare).steps[0]  # type: ignore[union-attr]
        assert "sources" not in claim_schema(step)
        unsourced = {"text": "A claim", "args": ["arg-003"], "presented_as": "contested"}
        result = PROTOCOL.accept(step, step.schema.model_validate(opening_answer(unsourced)), bare)
        assert result.payload["claims"][0]["sources"] == []

    def test_limits_are_stated_for_the_models_that_honour_them_not_enforced(self):
        step = PROTOCOL.plan(view({})).steps[0]  # type: ignore[union-attr]
        sent = json.dumps(anthropic.transform_schema(step.schema))
        assert "maxItems: 5" in sent and "minLength: 1" in sent  # moved into descriptions for Anthropic
        step.schema.model_validate(opening_answer(*[claim(["arg-003"], "contested", "")] * 7))

    def test_a_debater_is_offered_only_the_moves_open_to_it_and_not_asked_what_it_answers(self):
        step, _ = step_and_view(HONEST)
        assert set(step.schema.model_fields) == {"move", "text", "claims", "mutations"}
        assert step.schema.model_json_schema()["properties"]["move"]["enum"] == ["rebut", "partial-rebut"]

    def test_a_debater_with_a_closure_to_object_to_is_offered_an_objection_to_that_claim_only(self):
        step, _ = step_and_view(CLOSED)
        entry = step.schema.model_json_schema()["$defs"]["Objection"]["properties"]["entry"]
        assert entry.get("enum", [entry.get("const")]) == ["L-004"]

    def test_the_moderator_refers_to_ledger_entries_positions_and_turns_that_exist(self):
        step, _ = step_and_view(REBUTTED, moderator_every=1)
        assert step.task == "moderator"
        defs = step.schema.model_json_schema()["$defs"]
        assert defs["Press"]["properties"]["entry"]["enum"] == [f"L-{n:03d}" for n in range(1, 7)]
        assert defs["Callout"]["properties"]["position"]["enum"] == ["con-x", "pro-x"]
        assert defs["Callout"]["properties"]["turn"]["enum"] == [1, 2, 3]
        assert defs["Ruling"]["properties"]["arg_id"]["enum"] == [
            "arg-003",
            "arg-006",
            "arg-005",
            "arg-001",
            "arg-002",
            "arg-007",
        ]
        assert "objection_decision" not in step.schema.model_fields  # nothing pending

    def test_the_synthesis_is_offered_the_verdicts_the_ledger_allows(self):
        assert verdicts_possible(["con-x", "pro-x"]) == [
            "better-grounded:con-x",
            "better-grounded:pro-x",
            "engagement-asymmetry:con-x",
            "engagement-asymmetry:pro-x",
            "genuinely-contested",
            "unresolved-by-corpus",
        ]
        # Both sides engaged both central questions and stand: no side is better grounded.
        history = {**REBUTTED, f"t04/turn/{PRO}": answer("L-005", 3, "defend")}
        step, _ = step_and_view(history, max_turns=4, min_turns=2)
        label = step.schema.model_json_schema()["$defs"]["KbVerdict"]["properties"]["label"]
        assert label["enum"] == ["genuinely-contested", "unresolved-by-corpus"]


# --- what code fills in -----------------------------------------------------------------------------------------------


class FilledTests:
    def test_a_debaters_turn_is_recorded_as_the_answer_to_the_entry_and_turn_it_was_handed(self):
        result = accept(HONEST, {"move": "partial-rebut", "text": "Weakens it.", "claims": []})
        assert result.payload == {
            "responds_to": {"entry": "L-005", "turn": 2},
            "move": "partial-rebut",
            "text": "Weakens it.",
            "claims": [],
            "objection": None,
            "mutations": [],
        }

    def test_a_decided_objection_is_recorded_on_the_pending_entry(self):
        history = {**CLOSED, f"t04/turn/{CON}": answer("L-006", 2, "rebut", objection=OBJECTION)}
        result = accept(
            history, {"text": "Heard.", "objection_decision": {"decision": "reverse", "text": "Holds."}}
        )
        assert result.payload["objection_decisions"] == [
            {"entry": "L-004", "decision": "reverse", "text": "Holds."}
        ]

    def test_the_human_consoles_objection_ruling_is_a_valid_answer_and_is_recorded_the_same(self):
        history = {**CLOSED, f"t04/turn/{CON}": answer("L-006", 2, "rebut", objection=OBJECTION)}
        step, before = step_and_view(history, human=True)
        posted = {"text": "Heard.", "objection_entry": "L-004", "objection_decision": "reaffirm"}
        answer_ = step.schema.model_validate(PROTOCOL.human_payload(step, posted))
        assert PROTOCOL.validate(step, answer_, before) == []
        assert PROTOCOL.accept(step, answer_, before).payload["objection_decisions"] == [
            {"entry": "L-004", "decision": "reaffirm", "text": "reaffirm"}
        ]
        assert "objection_decisions" not in moderator_payload(posted)

    def test_a_picked_verdict_is_stored_as_label_and_position(self):
        history = {**DISMANTLED, f"t05/turn/{PRO}": answer("L-002", 1, "rebut")}
        settings = {"max_turns": 5, "min_turns": 2, "statuses": {"arg-003": "refuted"}}
        picked = {"label": "better-grounded:pro-x", "evidence": "e", "engagement": "g"}
        result = accept(history, {"text": "# S", "verdict": picked}, **settings)
        assert result.payload["verdict"] == {
            "label": "better-grounded",
            "position": "pro-x",
            "evidence": "e",
            "engagement": "g",
        }

    def test_a_proposed_change_is_stored_with_every_kinds_fields_as_the_discipline_reads_it(self):
        edge = {
            "kind": "new-edge",
            "src": "arg-007",
            "edge_type": "refutes",
            "target": "arg-003",
            "justification": "Turn 3.",
        }
        result = accept(HONEST, {"move": "rebut", "text": "t", "claims": [], "mutations": [edge]})
        (stored,) = result.payload["mutations"]
        assert stored == {**schema.Mutation(kind="new-edge", justification="x").model_dump(), **edge}
        assert mutation_payload(stored) == {"src": "arg-007", "type": "refutes", "target": "arg-003"}


# --- the flags --------------------------------------------------------------------------------------------------------


class FlagTests:
    def test_too_many_items_keep_the_first_and_are_flagged(self):
        claims = [
            claim([a], "contested")
            for a in ("arg-003", "arg-005", "arg-006", "arg-004", "arg-003", "arg-005")
        ]
        result = PROTOCOL.accept(*self._opening(opening_answer(*claims)))
        assert len(result.payload["claims"]) == 5 and ("too_many", "claims") in kinds(result)

    def test_an_empty_text_is_kept_and_flagged(self):
        result = PROTOCOL.accept(*self._opening(opening_answer(claim(["arg-003"], "contested"), summary=" ")))
        assert result.payload["summary"] == "" and kinds(result) == [("empty", "summary")]

    def test_a_claim_citing_nothing_is_flagged_untraced(self):
        result = PROTOCOL.accept(*self._opening(opening_answer(claim([], "contested"))))
        assert kinds(result) == [("untraced", "claims.0")]

    def test_a_claim_presented_above_the_rating_of_what_it_cites_is_flagged(self):
        result = PROTOCOL.accept(*self._opening(opening_answer(claim(["arg-006", "arg-005"], "strong"))))
        assert kinds(result) == [("above_rating", "claims.0.presented_as")]
        assert "above the KB rating of arg-005 (weak)" in result.flags[0].detail

    def test_a_downgrade_that_is_none_is_kept_for_the_discipline_to_refuse_and_flagged(self):
        promotion = {"kind": "status-downgrade", "arg_id": "arg-003", "to": "strong", "justification": "t1"}
        result = PROTOCOL.accept(
            *self._opening(opening_answer(claim(["arg-003"], "contested"), mutations=[promotion]))
        )
        assert result.payload["mutations"][0]["to"] == "strong"
        assert kinds(result) == [("not_a_downgrade", "mutations.0.to")]

    def test_an_objection_to_a_claim_that_cannot_be_objected_to_is_left_out_and_flagged(self):
        # A step planned before the ruling was reversed (a stale enum): the answer is kept, the objection is not.
        before = view(HONEST)
        step = Step(
            key=f"t03/turn/{CON}",
            seat=CON,
            stage="debate",
            task="turn",
            schema=schema.turn_schema(tuple(ARGS), tuple(SOURCES), ("rebut",), ("L-001",)),
            sees=None,
            context={"entry": {"id": "L-005"}, "answer_turn": 2},
        )
        objection = {"entry": "L-001", "text": "No.", "new_args": ["arg-008"], "new_sources": []}
        payload = {"move": "rebut", "text": "t", "claims": [], "objection": objection}
        result = PROTOCOL.accept(step, step.schema.model_validate(payload), before)
        assert result.payload["objection"] is None and kinds(result) == [("objection_refused", "objection")]

    def test_a_ruling_on_a_claim_closed_already_is_left_out_and_flagged(self):
        history = {**CLOSED, f"t04/turn/{CON}": answer("L-006", 2, "rebut")}
        payload = {"text": "Again.", "rulings": [ruling("L-004", "arg-004")]}
        result = accept(history, payload, moderator_every=1)
        assert result.payload["rulings"] == [] and kinds(result) == [("ruling_refused", "rulings")]
        assert "L-004 is closed already" in result.flags[0].detail

    def test_a_verdict_the_ledger_does_not_allow_is_kept_and_flagged_when_every_verdict_is_offered(self):
        before = view(DISMANTLED, statuses={"arg-003": "refuted"})
        step = Step(
            key="t05/synthesis/orchestrator",
            seat="orchestrator",
            stage="synthesis",
            task="synthesis",
            schema=schema.synthesis_schema(tuple(verdicts_possible(["con-x", "pro-x"]))),
            sees=None,
        )
        picked = {"label": "genuinely-contested", "evidence": "e", "engagement": "g"}
        result = PROTOCOL.accept(step, step.schema.model_validate({"text": "# S", "verdict": picked}), before)
        assert result.payload["verdict"]["label"] == "genuinely-contested"
        assert kinds(result) == [("verdict_inconsistent", "verdict")]
        assert "no balanced verdict — con-x's central claims are closed (L-001)" in result.flags[0].detail

    def _opening(self, payload: dict[str, Any]) -> tuple[Step, Any, Any]:
        before = view({})
        step = PROTOCOL.plan(before).steps[0]  # type: ignore[union-attr]
        return step, step.schema.model_validate(payload), before


def test_a_flagged_claim_and_change_are_marked_in_the_turn_body():
    result = PROTOCOL.accept(
        *FlagTests()._opening(
            opening_answer(
                claim(["arg-003"], "contested"),
                claim(["arg-005"], "robust"),
                mutations=[
                    {"kind": "status-downgrade", "arg_id": "arg-003", "to": "strong", "justification": "t1"}
                ],
            )
        )
    )
    html = render_to_string(
        "debates/protocols/kb_debate.html#opening",
        {
            "data": result.payload,
            "flags": [flag.as_json() for flag in result.flags],
            "card": {"key": f"t01/opening/{CON}"},
        },
    )
    claims = html[html.index('<ol class="claims') : html.index("</ol>")].split('<li class="claim"')[1:]
    assert ["flag-mark" in item for item in claims] == [False, True]
    assert 'data-flag-kind="above_rating"' in claims[1]
    assert 'data-flag-kind="not_a_downgrade"' in html[html.index('class="proposals"') :]
