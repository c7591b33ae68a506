"""What the cross-examination's seats are asked to write (issue 22): each step's schema is built from the run's
state, so a reference can only name what exists; code fills in what it knows (claim and question ids, the
analyst questioned, the quoted claim, the question an answer answers) and flags what no schema can check."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Any

import pytest
from django.template.loader import get_template
from pydantic import BaseModel, ValidationError

from debates.agents.base import AgentRequest, BackendError
from debates.contract import Accepted, RunView, Step
from debates.protocols.cross_examination import schema
from debates.protocols.cross_examination.simulated import GENERATORS
from tests.conftest import run_to_stop
from tests.protocols.cross_examination.test_protocol import (
    ANALYSTS,
    PROTOCOL,
    analysis,
    full_history,
    questions_for,
    view,
)

MATERIAL = "Traffic in the charging zone fell by 22 % in the first year.\nBus ridership rose by 9 %."


def analyses_history() -> dict[str, Any]:
    ada = analysis("analyst-ada")
    ada["claims"].append({**ada["claims"][0], "id": "c3", "text": "analyst-ada claim three."})
    return {"r1/analysis/analyst-ada": ada, "r1/analysis/analyst-bo": analysis("analyst-bo")}


def step_of(history: dict[str, Any], **view_options: Any) -> tuple[Step, RunView]:
    run_view = replace(view(history, **view_options), material=MATERIAL)
    plan = PROTOCOL.plan(run_view)
    return plan.steps[0], run_view  # type: ignore[union-attr]


def accepted(step: Step, answer: dict[str, Any], run_view: RunView) -> Accepted:
    return PROTOCOL.accept(step, step.schema.model_validate(answer), run_view)


def flags(result: Accepted) -> list[tuple[str, str]]:
    return [(flag.kind, flag.where) for flag in result.flags]


def properties(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()["properties"]


def claim(
    text: str = "Traffic fell.", quote: str = "Traffic in the charging zone fell by 22 %", **fields: Any
):
    return {"text": text, "evidence": [{"quote": quote, "source": "material"}], "confidence": 0.7, **fields}


def question(
    claim_id: str = "c1", gap: str = "No baseline.", text: str = "Which baseline?"
) -> dict[str, str]:
    return {"claim_id": claim_id, "gap": gap, "question": text}


def answer(choice: str = "DEFEND", **fields: Any) -> dict[str, Any]:
    return {"choice": choice, "response": "Because.", "evidence": [], "revised_position": "", **fields}


def answers_history() -> dict[str, Any]:
    history = full_history()
    del history["r3/answers/analyst-ada"], history["r3/answers/analyst-bo"]
    return history


class AnalysisTests:
    def test_an_analyst_writes_no_claim_ids_and_every_analyst_gets_the_same_schema(self):
        claim_fields = schema.Analysis.model_json_schema()["$defs"]["Claim"]["properties"]
        assert set(claim_fields) == {"text", "evidence", "confidence"}

    def test_the_claims_are_numbered_in_order_by_code(self):
        step, run_view = step_of({})
        result = accepted(
            step, {"summary": "S.", "claims": [claim("A."), claim("B."), claim("C.")]}, run_view
        )
        assert [(c["id"], c["text"]) for c in result.payload["claims"]] == [
            ("c1", "A."),
            ("c2", "B."),
            ("c3", "C."),
        ]
        assert result.flags == ()

    def test_a_confidence_out_of_range_is_stated_not_enforced_then_clamped_and_flagged(self):
        confidence = schema.Analysis.model_json_schema()["$defs"]["Claim"]["properties"]["confidence"]
        assert (confidence["minimum"], confidence["maximum"]) == (0, 1)
        step, run_view = step_of({})
        result = accepted(step, {"summary": "S.", "claims": [claim(confidence=-3.5)]}, run_view)
        assert result.payload["claims"][0]["confidence"] == 0
        assert flags(result) == [("out_of_range", "claims.0.confidence")]

    def test_a_quote_that_is_not_the_materials_words_is_kept_and_flagged(self):
        step, run_view = step_of({})
        result = accepted(
            step, {"summary": "S.", "claims": [claim(), claim(quote="Traffic collapsed entirely.")]}, run_view
        )
        assert result.payload["claims"][1]["evidence"][0]["quote"] == "Traffic collapsed entirely."
        assert flags(result) == [("unverified_quote", "claims.1.evidence.0.quote")]

    def test_a_quote_is_verbatim_whatever_its_case_spacing_quotation_marks_or_ellipsis(self):
        step, run_view = step_of({})
        quote = "“traffic in the   charging zone … in the first year.”"
        assert accepted(step, {"summary": "S.", "claims": [claim(quote=quote)]}, run_view).flags == ()

    def test_without_material_quotes_are_not_checked(self):
        step, run_view = step_of({})
        result = accepted(
            step,
            {"summary": "S.", "claims": [claim(quote="General knowledge.")]},
            replace(run_view, material=""),
        )
        assert result.flags == ()

    def test_empty_texts_and_too_many_claims_are_flagged_not_refused(self):
        step, run_view = step_of({})
        answer = {"summary": " ", "claims": [claim(text="")] + [claim() for _ in range(schema.MAX_CLAIMS)]}
        result = accepted(step, answer, run_view)
        assert len(result.payload["claims"]) == schema.MAX_CLAIMS
        assert flags(result) == [("too_many", "claims"), ("empty", "claims.0.text"), ("empty", "summary")]

    def test_too_many_quotes_for_a_claim_keep_the_first_five(self):
        step, run_view = step_of({})
        evidence = [{"quote": "Bus ridership rose by 9 %."}] * (schema.MAX_EVIDENCE + 2)
        result = accepted(step, {"summary": "S.", "claims": [claim(evidence=evidence)]}, run_view)
        assert len(result.payload["claims"][0]["evidence"]) == schema.MAX_EVIDENCE
        assert flags(result) == [("too_many", "claims.0.evidence")]


class QuestionsTests:
    def test_one_required_property_per_analyst_named_by_handle(self):
        step, _ = step_of(analyses_history())
        model = step.schema.model_json_schema()
        assert list(model["properties"]) == model["required"] == ANALYSTS

    def test_a_question_names_a_claim_of_that_analyst_only(self):
        step, _ = step_of(analyses_history())
        defs = step.schema.model_json_schema()["$defs"]
        enums = sorted(
            d["properties"]["claim_id"]["enum"] for d in defs.values() if "claim_id" in d["properties"]
        )
        assert enums == [["c1", "c2"], ["c1", "c2", "c3"]]  # Bo has no c3
        ada_only = {"analyst-ada": dict.fromkeys(("first", "second", "third"), question("c3"))}
        with pytest.raises(ValidationError, match="analyst-bo"):
            step.schema.model_validate(
                {**ada_only, "analyst-bo": dict.fromkeys(("first", "second", "third"), question("c3"))}
            )

    def test_the_examiner_writes_no_id_analyst_or_quoted_claim(self):
        step, _ = step_of(analyses_history())
        defs = step.schema.model_json_schema()["$defs"]
        (question_fields,) = {tuple(d["properties"]) for d in defs.values() if "claim_id" in d["properties"]}
        assert question_fields == ("claim_id", "gap", "question")

    @pytest.mark.parametrize("per_analyst", [2, 3])
    def test_an_agent_examiner_asks_exactly_the_configured_number_per_analyst(self, per_analyst: int):
        step, run_view = step_of(analyses_history())
        config = run_view.config.model_copy(update={"questions_per_analyst": per_analyst})
        (step,) = PROTOCOL.plan(replace(run_view, config=config)).steps  # type: ignore[union-attr]
        per = next(
            d for d in step.schema.model_json_schema()["$defs"].values() if "second" in d["properties"]
        )
        assert per["required"] == list(schema.PLACES[:per_analyst]) == list(per["properties"])

    def test_a_human_examiner_may_ask_two_or_three(self):
        step, _ = step_of(analyses_history(), examiner_human=True)
        per = next(
            d for d in step.schema.model_json_schema()["$defs"].values() if "second" in d["properties"]
        )
        assert per["required"] == ["first", "second"] and "third" in per["properties"]

    def test_code_numbers_the_questions_puts_them_to_the_analyst_and_quotes_the_claim(self):
        step, run_view = step_of(analyses_history())
        answer = {
            "analyst-ada": {"first": question("c3"), "second": question("c1"), "third": question("c3")},
            "analyst-bo": {
                "first": question("c2"),
                "second": question("c2"),
                "third": question("c1", gap=""),
            },
        }
        result = accepted(step, answer, run_view)
        stored = result.payload["questions"]
        assert [(q["id"], q["analyst"], q["claim_id"]) for q in stored] == [
            ("q1", "analyst-ada", "c3"),
            ("q2", "analyst-ada", "c1"),
            ("q3", "analyst-ada", "c3"),
            ("q4", "analyst-bo", "c2"),
            ("q5", "analyst-bo", "c2"),
            ("q6", "analyst-bo", "c1"),
        ]
        assert stored[0]["quoted_claim"] == "analyst-ada claim three."
        assert stored[3]["quoted_claim"] == "analyst-bo claim two is weak."
        assert flags(result) == [("empty", "questions.5.gap")]

    def test_the_questions_are_stored_as_the_plan_reads_them(self):
        step, run_view = step_of(analyses_history())
        answer = {h: dict.fromkeys(schema.PLACES, question()) for h in ANALYSTS}
        history = {**analyses_history(), "r2/questions/examiner": accepted(step, answer, run_view).payload}
        plan = PROTOCOL.plan(view(history))
        assert [len(s.context["questions"]) for s in plan.steps] == [3, 3]  # type: ignore[union-attr]


class AnswersTests:
    def test_every_analyst_of_the_stage_answers_by_place_on_one_schema(self):
        plan = PROTOCOL.plan(view(answers_history()))
        ada, bo = plan.steps  # type: ignore[union-attr]
        assert ada.schema is bo.schema
        assert ada.schema.model_json_schema()["required"] == ["first", "second"]
        assert "question_id" not in ada.schema.model_json_schema()["$defs"]["Answer"]["properties"]

    def test_when_analysts_were_asked_different_numbers_the_third_answer_is_optional(self):
        history = answers_history()
        questions = questions_for(*ANALYSTS)["questions"]
        questions.insert(2, {**questions[0], "id": "q9"})  # Ada is asked three, Bo two
        history["r2/questions/examiner"] = {"questions": questions}
        ada, bo = PROTOCOL.plan(view(history)).steps  # type: ignore[union-attr]
        assert ada.schema is bo.schema
        assert ada.schema.model_json_schema()["required"] == ["first", "second"]
        assert "third" in properties(ada.schema)

    def test_each_answer_is_stored_under_the_question_at_its_place(self):
        step, run_view = step_of(answers_history())
        result = accepted(
            step, {"first": answer(), "second": answer("CONCEDE", revised_position="Weaker.")}, run_view
        )
        assert [(a["question_id"], a["choice"]) for a in result.payload["answers"]] == [
            ("q1", "DEFEND"),
            ("q2", "CONCEDE"),
        ]
        assert result.flags == ()

    def test_a_concession_without_a_revised_position_is_kept_and_flagged(self):
        step, run_view = step_of(answers_history())
        result = accepted(step, {"first": answer(), "second": answer("CONCEDE")}, run_view)
        assert result.payload["answers"][1]["choice"] == "CONCEDE"
        assert flags(result) == [("missing_revision", "answers.1.revised_position")]

    def test_new_evidence_that_is_not_the_materials_words_is_flagged(self):
        step, run_view = step_of(answers_history())
        evidence = [{"quote": "Bus ridership rose by 9 %."}, {"quote": "Ridership doubled."}]
        result = accepted(step, {"first": answer(evidence=evidence), "second": answer()}, run_view)
        assert flags(result) == [("unverified_quote", "answers.0.evidence.1.quote")]

    def test_a_question_left_unanswered_stands_unanswered_and_is_flagged(self):
        history = answers_history()
        questions = questions_for(*ANALYSTS)["questions"]
        questions.insert(2, {**questions[0], "id": "q9"})
        history["r2/questions/examiner"] = {"questions": questions}
        ada, bo = PROTOCOL.plan(view(history)).steps  # type: ignore[union-attr]
        run_view = view(history)
        result = accepted(ada, {"first": answer(), "second": answer()}, run_view)
        assert [a["question_id"] for a in result.payload["answers"]] == ["q1", "q2"]
        assert flags(result) == [("unanswered", "")]
        # Bo was asked two: an answer as a third question answers nothing and is dropped.
        result = accepted(bo, {"first": answer(), "second": answer(), "third": answer()}, run_view)
        assert [a["question_id"] for a in result.payload["answers"]] == ["q3", "q4"]
        assert flags(result) == [("not_asked", "")]


class AssessmentTests:
    def test_one_property_per_answered_question_with_a_fixed_classification(self):
        history = full_history(**{"r3/answers/analyst-bo": None})
        step, _ = step_of(history)
        assert step.schema.model_json_schema()["required"] == ["q1", "q2"]  # Bo did not answer q3, q4
        with pytest.raises(ValidationError, match="DEFENDED"):
            step.schema.model_validate({q: {"classification": "PARTLY"} for q in ("q1", "q2")})

    def test_the_classifications_are_stored_in_the_questions_order(self):
        step, run_view = step_of(full_history())
        answer = {q: {"classification": "DEFLECTED", "rationale": " No new evidence. "} for q in ("q4", "q3")}
        answer |= {"q1": {"classification": "DEFENDED"}, "q2": {"classification": "DEFENDED"}}
        result = accepted(step, answer, run_view)
        assert [(c["question_id"], c["classification"]) for c in result.payload["classifications"]] == [
            ("q1", "DEFENDED"),
            ("q2", "DEFENDED"),
            ("q3", "DEFLECTED"),
            ("q4", "DEFLECTED"),
        ]
        assert result.payload["classifications"][2]["rationale"] == "No new evidence."

    def test_a_classification_that_contradicts_the_analysts_choice_is_flagged(self):
        step, run_view = step_of(full_history())  # Ada defended q1, q2; Bo conceded q3, q4
        answer = {
            "q1": {"classification": "CONCEDED"},
            "q2": {"classification": "DEFLECTED"},
            "q3": {"classification": "DEFENDED"},
            "q4": {"classification": "CONCEDED"},
        }
        result = accepted(step, answer, run_view)
        assert flags(result) == [
            ("contradicts_answer", "classifications.0.classification"),
            ("contradicts_answer", "classifications.2.classification"),
        ]


class HumanExaminerTests:
    def _form(self, rows: int = 2) -> dict[str, str]:
        form = {}
        for handle in ANALYSTS:
            for row, claim_id in [(1, "c1"), (2, "c2"), (3, "c1")][:rows]:
                form |= {
                    f"{handle}-{row}-claim": claim_id,
                    f"{handle}-{row}-gap": "gap",
                    f"{handle}-{row}-question": "q?",
                }
        return form

    def test_the_questions_form_becomes_a_valid_answer_and_code_completes_it(self):
        step, run_view = step_of(analyses_history(), examiner_human=True)
        payload = step.schema.model_validate(PROTOCOL.human_payload(step, self._form()))
        stored = PROTOCOL.accept(step, payload, run_view).payload["questions"]
        assert [(q["id"], q["analyst"], q["claim_id"]) for q in stored] == [
            ("q1", "analyst-ada", "c1"),
            ("q2", "analyst-ada", "c2"),
            ("q3", "analyst-bo", "c1"),
            ("q4", "analyst-bo", "c2"),
        ]
        assert stored[1]["quoted_claim"] == "analyst-ada claim two is weak."

    def test_three_rows_ask_three(self):
        step, _ = step_of(analyses_history(), examiner_human=True)
        payload = PROTOCOL.human_payload(step, self._form(rows=3))
        assert list(payload["analyst-bo"]) == ["first", "second", "third"]

    def test_one_question_for_an_analyst_is_too_few(self):
        step, _ = step_of(analyses_history(), examiner_human=True)
        form = {k: v for k, v in self._form().items() if not k.startswith("analyst-ada-2")}
        with pytest.raises(ValueError, match="^Ada gets 1 questions; ask 2–3 per analyst$"):
            PROTOCOL.human_payload(step, form)

    def test_an_empty_form_is_refused(self):
        step, _ = step_of(analyses_history(), examiner_human=True)
        with pytest.raises(ValueError, match="2–3 questions"):
            PROTOCOL.human_payload(step, {})

    def test_the_assessment_form_becomes_a_valid_answer(self):
        step, run_view = step_of(full_history(), examiner_human=True)
        form = {f"q{n}-classification": "DEFENDED" for n in range(1, 5)} | {"q2-rationale": "New figure."}
        payload = step.schema.model_validate(PROTOCOL.human_payload(step, form))
        stored = PROTOCOL.accept(step, payload, run_view).payload["classifications"]
        assert [c["classification"] for c in stored] == ["DEFENDED"] * 4
        assert stored[1]["rationale"] == "New figure."


class SimulatedTests:
    def _request(self, step: Step, run_view: RunView, **options: Any) -> AgentRequest:
        return AgentRequest(
            step=step, view=run_view, protocol="cross-examination", options=options, attempt=1
        )

    def test_every_simulated_answer_is_valid_against_its_steps_schema(self):
        for history in ({}, analyses_history(), answers_history(), full_history()):
            step, run_view = step_of(history)
            answer = GENERATORS[("cross-examination", step.task)](
                random.Random(3), self._request(step, run_view)
            )
            accepted(step, answer, run_view)  # raises if invalid

    def test_an_examiner_configured_to_ask_no_questions_fails_its_turn(self):
        step, run_view = step_of(analyses_history())
        with pytest.raises(BackendError, match="asked no questions") as failed:
            GENERATORS[("cross-examination", "questions")](
                random.Random(3), self._request(step, run_view, no_questions=True)
            )
        assert not failed.value.retryable


@pytest.mark.django_db(transaction=True)
class SimulatedRunTests:
    @pytest.mark.parametrize("answers", ["mixed", "concede"])
    def test_a_simulated_run_obeys_everything_and_commits_no_flag(self, make_run: Any, answers: str):
        run = make_run(backend_options={"answers": answers})
        assert run_to_stop(run) == "done"
        assert [(t.key, t.flags) for t in run.turns.all() if t.flags] == []
        assert run.outcome["mode"] == "full"


class TurnBodyTests:
    def test_a_flagged_item_is_marked_where_it_is_shown(self):
        data = {"summary": "S.", "claims": [claim() | {"id": "c1"}, claim(quote="Made up.") | {"id": "c2"}]}
        flagged = [{"kind": "unverified_quote", "where": "claims.1.evidence.0.quote", "detail": "Not found."}]
        html = get_template("debates/protocols/cross_examination.html#analysis").render(
            {"data": data, "flags": flagged}
        )
        marks = re.findall(r'<blockquote class="evidence">(.*?)</blockquote>', html, re.S)
        assert ['data-flag-kind="unverified_quote"' in mark for mark in marks] == [False, True]
        assert (
            '<span class="flag-mark" data-flag-kind="unverified_quote" title="Not found.">unverified</span>'
            in html
        )

    def test_a_contradicting_classification_is_marked(self):
        data = {"classifications": [{"question_id": "q1", "classification": "DEFENDED", "rationale": ""}]}
        flagged = [{"kind": "contradicts_answer", "where": "classifications.0.classification", "detail": "x"}]
        html = get_template("debates/protocols/cross_examination.html#assessment").render(
            {"data": data, "flags": flagged}
        )
        assert ">contradicts the answer</span>" in html

    def test_a_streaming_turn_shows_what_the_seat_is_writing_in_its_own_shape(self):
        def live(task: str, data: dict[str, Any]) -> str:
            return get_template(f"debates/protocols/cross_examination.html#{task}").render(
                {"data": data, "names": {"analyst-ada": "Ada"}, "live": True}
            )

        questions = live(
            "questions", {"analyst-ada": {"first": question("c2"), "second": {"claim_id": "c1"}}}
        )
        assert questions.count('<li class="question">') == 2
        assert "to <strong>Ada</strong> on claim c2" in questions
        answers = live("answers", {"first": answer("CONCEDE", revised_position="Weaker."), "second": {}})
        assert answers.count('<li class="answer') == 1 and "Weaker." in answers
        assessment = live("assessment", {"q1": {"classification": "DEFLECTED"}})
        assert "<td>Q1</td>" in assessment and "DEFLECTED" in assessment
        analysis = live("analysis", {"summary": "S.", "claims": [claim(), claim()]})
        assert '<span class="claim-id">c2</span>' in analysis  # numbered as code will number it

    def test_property_names_streamed_by_a_model_are_escaped(self):
        hostile = "<script>alert(1)</script>"
        for task, data in (
            ("questions", {hostile: {hostile: question()}}),
            ("answers", {hostile: answer()}),
            ("assessment", {hostile: {"classification": "DEFENDED"}}),
        ):
            html = get_template(f"debates/protocols/cross_examination.html#{task}").render(
                {"data": data, "names": {}, "live": True}
            )
            assert "<script>" not in html and "&lt;script&gt;" in html.lower()
