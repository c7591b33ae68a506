"""plan() of the cross-examination protocol over hand-built histories, including every degradation rule of
seed 000, and the checks the schema cannot express."""

from __future__ import annotations

from typing import Any

import pytest

from debates.contract import Done, RunView, SeatView, Steps, TurnView
from debates.engine import registry
from debates.protocols.cross_examination import schema
from debates.protocols.cross_examination.protocol import CrossExaminationConfig

PROTOCOL = registry.get("cross-examination")
ANALYSTS = ["analyst-ada", "analyst-bo"]


def analysis(handle: str) -> dict[str, Any]:
    return {
        "summary": f"{handle} summary",
        "claims": [
            {
                "id": "c1",
                "text": f"{handle} claim one is strong.",
                "evidence": [{"quote": "q1"}],
                "confidence": 0.9,
            },
            {
                "id": "c2",
                "text": f"{handle} claim two is weak.",
                "evidence": [{"quote": "q2"}],
                "confidence": 0.5,
            },
        ],
    }


def questions_for(*handles: str) -> dict[str, Any]:
    qs = []
    for handle in handles:
        for claim in ("c1", "c2"):
            text = f"{handle} claim {'one is strong' if claim == 'c1' else 'two is weak'}."
            qs.append(
                {
                    "id": f"q{len(qs) + 1}",
                    "analyst": handle,
                    "claim_id": claim,
                    "quoted_claim": text,
                    "gap": "no figure",
                    "question": "which figure?",
                }
            )
    return {"questions": qs}


def answers_for(handle: str, questions: dict[str, Any], choice: str = "DEFEND") -> dict[str, Any]:
    return {
        "answers": [
            {
                "question_id": q["id"],
                "choice": choice,
                "response": "because",
                "evidence": [{"quote": "new"}] if choice == "DEFEND" else [],
                "revised_position": "" if choice == "DEFEND" else "weaker",
            }
            for q in questions["questions"]
            if q["analyst"] == handle
        ]
    }


def view(turns: dict[str, dict[str, Any] | None], *, examiner_human: bool = False, submitted=()) -> RunView:
    seats = {h: SeatView(h, h.removeprefix("analyst-").title(), "analyst", "lens", False) for h in ANALYSTS}
    seats["examiner"] = SeatView("examiner", "Examiner", "examiner", "", examiner_human)
    turn_views = {
        key: TurnView(
            key=key,
            seat=key.rsplit("/", 1)[1],
            stage=key.split("/")[1],
            task=key.split("/")[1],
            status="committed" if payload is not None else "failed",
            payload=payload,
        )
        for key, payload in turns.items()
    }
    config = CrossExaminationConfig(analysts=[{"name": "Ada"}, {"name": "Bo"}])
    return RunView(1, "topic", "material", 7, config, seats, turn_views, frozenset(submitted))


def full_history(**overrides: dict[str, Any] | None) -> dict[str, dict[str, Any] | None]:
    qs = questions_for(*ANALYSTS)
    history: dict[str, dict[str, Any] | None] = {
        "r1/analysis/analyst-ada": analysis("analyst-ada"),
        "r1/analysis/analyst-bo": analysis("analyst-bo"),
        "r2/questions/examiner": qs,
        "r3/answers/analyst-ada": answers_for("analyst-ada", qs, "DEFEND"),
        "r3/answers/analyst-bo": answers_for("analyst-bo", qs, "CONCEDE"),
    }
    history.update(overrides)
    return history


class PlanTests:
    def test_it_starts_with_every_analysis_in_parallel(self):
        plan = PROTOCOL.plan(view({}))
        assert isinstance(plan, Steps)
        assert [s.key for s in plan.steps] == ["r1/analysis/analyst-ada", "r1/analysis/analyst-bo"]
        assert all(s.schema is schema.Analysis for s in plan.steps)

    def test_only_the_missing_analyses_are_planned(self):
        plan = PROTOCOL.plan(view({"r1/analysis/analyst-ada": analysis("analyst-ada")}))
        assert [s.key for s in plan.steps] == ["r1/analysis/analyst-bo"]

    def test_the_examiner_questions_all_analyses_at_once(self):
        plan = PROTOCOL.plan(
            view({h_key: analysis(h) for h, h_key in ((h, f"r1/analysis/{h}") for h in ANALYSTS)})
        )
        assert [s.key for s in plan.steps] == ["r2/questions/examiner"]
        assert [a["analyst"] for a in plan.steps[0].context["analyses"]] == ANALYSTS

    def test_answers_run_in_parallel_each_with_its_own_questions(self):
        history = full_history()
        del history["r3/answers/analyst-ada"], history["r3/answers/analyst-bo"]
        plan = PROTOCOL.plan(view(history))
        assert [s.key for s in plan.steps] == ["r3/answers/analyst-ada", "r3/answers/analyst-bo"]
        assert {q["analyst"] for q in plan.steps[0].context["questions"]} == {"analyst-ada"}

    def test_the_assessment_sees_every_question_with_its_answer(self):
        plan = PROTOCOL.plan(view(full_history()))
        (step,) = plan.steps
        assert step.key == "r4/assessment/examiner"
        assert len(step.context["record"]) == 4
        assert all(item["answer"] for item in step.context["record"])

    def test_a_full_run_ends_with_the_summary_table_and_claim_lists(self):
        qs = questions_for(*ANALYSTS)
        assessment = {
            "classifications": [
                {"question_id": "q1", "classification": "DEFENDED"},
                {"question_id": "q2", "classification": "DEFLECTED"},
                {"question_id": "q3", "classification": "CONCEDED"},
                {"question_id": "q4", "classification": "CONCEDED"},
            ]
        }
        plan = PROTOCOL.plan(view(full_history(**{"r4/assessment/examiner": assessment})))
        assert isinstance(plan, Done) and not plan.failed
        outcome = plan.outcome
        assert outcome["mode"] == "full"
        ada, bo = outcome["summary"]
        assert (ada["questions"], ada["defended"], ada["conceded"], ada["deflected"]) == (2, 1, 0, 1)
        assert (bo["questions"], bo["defended"], bo["conceded"], bo["deflected"]) == (2, 0, 2, 0)
        assert [c["claim"] for c in outcome["surviving"]] == [qs["questions"][0]["quoted_claim"]]
        assert [c["claim"] for c in outcome["weakened"]] == [qs["questions"][1]["quoted_claim"]]
        assert [c["revised"] for c in outcome["revised"]] == ["weaker", "weaker"]


class DegradationTests:
    def test_no_questions_means_synthesis_from_the_analyses_only(self):
        plan = PROTOCOL.plan(view(full_history(**{"r2/questions/examiner": {"questions": []}})))
        assert isinstance(plan, Done)
        assert plan.outcome["mode"] == "analyses-only"
        assert "no questions" in plan.outcome["notes"][0]
        assert [a["analyst"] for a in plan.outcome["analyses"]] == ANALYSTS

    def test_a_failed_questions_turn_also_skips_cross_examination(self):
        plan = PROTOCOL.plan(view(full_history(**{"r2/questions/examiner": None})))
        assert isinstance(plan, Done) and plan.outcome["mode"] == "analyses-only"

    def test_a_failed_analyst_is_noted_and_the_others_proceed(self):
        plan = PROTOCOL.plan(
            view({"r1/analysis/analyst-ada": analysis("analyst-ada"), "r1/analysis/analyst-bo": None})
        )
        (step,) = plan.steps
        assert step.key == "r2/questions/examiner"
        assert [a["analyst"] for a in step.context["analyses"]] == ["analyst-ada"]

    def test_every_analyst_failing_fails_the_run_honestly(self):
        plan = PROTOCOL.plan(view({"r1/analysis/analyst-ada": None, "r1/analysis/analyst-bo": None}))
        assert isinstance(plan, Done) and plan.failed
        assert plan.reason == "Every analyst failed."

    def test_an_analyst_failing_to_answer_is_noted_and_the_assessment_goes_on(self):
        plan = PROTOCOL.plan(view(full_history(**{"r3/answers/analyst-bo": None})))
        (step,) = plan.steps
        assert step.key == "r4/assessment/examiner"
        unanswered = [i for i in step.context["record"] if i["answer"] is None]
        assert {i["analyst"] for i in unanswered} == {"analyst-bo"}

    def test_a_failed_assessment_shows_the_raw_qa_unclassified(self):
        plan = PROTOCOL.plan(view(full_history(**{"r4/assessment/examiner": None})))
        assert isinstance(plan, Done) and not plan.failed
        assert plan.outcome["mode"] == "unclassified"
        assert any("without classification" in n for n in plan.outcome["notes"])
        assert all(item["assessment"] is None for item in plan.outcome["record"])
        assert all(item["answer"] for item in plan.outcome["record"])

    def test_nobody_answering_shows_the_questions_unclassified(self):
        plan = PROTOCOL.plan(
            view(full_history(**{"r3/answers/analyst-ada": None, "r3/answers/analyst-bo": None}))
        )
        assert isinstance(plan, Done) and plan.outcome["mode"] == "unclassified"


class HumanExaminerTests:
    def test_the_questions_step_belongs_to_the_human_seat(self):
        history = {f"r1/analysis/{h}": analysis(h) for h in ANALYSTS}
        v = view(history, examiner_human=True)
        (step,) = PROTOCOL.plan(v).steps
        assert v.seats[step.seat].human

    def test_the_form_becomes_a_valid_questions_payload(self):
        history = {f"r1/analysis/{h}": analysis(h) for h in ANALYSTS}
        (step,) = PROTOCOL.plan(view(history, examiner_human=True)).steps
        form = {}
        for handle in ANALYSTS:
            for row, claim in ((1, "c1"), (2, "c2")):
                form |= {
                    f"{handle}-{row}-claim": claim,
                    f"{handle}-{row}-gap": "gap",
                    f"{handle}-{row}-question": "q?",
                }
        payload = schema.Questions.model_validate(PROTOCOL.human_payload(step, form))
        assert len(payload.questions) == 4
        assert PROTOCOL.validate(step, payload, view(history)) == []

    def test_an_empty_form_is_refused(self):
        history = {f"r1/analysis/{h}": analysis(h) for h in ANALYSTS}
        (step,) = PROTOCOL.plan(view(history, examiner_human=True)).steps
        with pytest.raises(ValueError, match="2–3 questions"):
            PROTOCOL.human_payload(step, {})


class ValidationTests:
    def _questions_step(self):
        history = {f"r1/analysis/{h}": analysis(h) for h in ANALYSTS}
        (step,) = PROTOCOL.plan(view(history)).steps
        return step, view(history)

    def test_one_question_for_an_analyst_is_too_few(self):
        step, v = self._questions_step()
        qs = questions_for(*ANALYSTS)
        qs["questions"] = qs["questions"][1:]
        errors = PROTOCOL.validate(step, schema.Questions.model_validate(qs), v)
        assert errors == ["Ada gets 1 questions; ask 2–3 per analyst"]

    def test_a_quote_that_is_not_the_claim_is_refused(self):
        step, v = self._questions_step()
        qs = questions_for(*ANALYSTS)
        qs["questions"][0]["quoted_claim"] = "words the analyst never wrote"
        errors = PROTOCOL.validate(step, schema.Questions.model_validate(qs), v)
        assert errors == ["q1: the quote is not the words of Ada's claim c1"]

    def test_a_concession_needs_a_revised_position(self):
        history = full_history()
        del history["r3/answers/analyst-ada"], history["r3/answers/analyst-bo"]
        step = PROTOCOL.plan(view(history)).steps[0]
        answers = answers_for("analyst-ada", history["r2/questions/examiner"], "CONCEDE")
        answers["answers"][0]["revised_position"] = ""
        errors = PROTOCOL.validate(step, schema.Answers.model_validate(answers), view(history))
        assert errors == ["answer to q1 concedes but states no revised position"]

    def test_every_answered_question_must_be_classified(self):
        (step,) = PROTOCOL.plan(view(full_history())).steps
        payload = schema.Assessment.model_validate(
            {"classifications": [{"question_id": "q1", "classification": "DEFENDED"}]}
        )
        assert PROTOCOL.validate(step, payload, view(full_history())) == [
            "answer to q2 is not classified",
            "answer to q3 is not classified",
            "answer to q4 is not classified",
        ]

    def test_there_is_no_middle_ground_between_defend_and_concede(self):
        with pytest.raises(ValueError, match="DEFEND"):
            schema.Answer.model_validate({"question_id": "q1", "choice": "PARTIALLY", "response": "x"})
