"""plan() of the cross-examination protocol over hand-built histories, including every degradation rule of
seed 000. The steps' schemas, what `accept` fills in and flags, and the human examiner's forms are specified in
test_schemas.py."""

from __future__ import annotations

from typing import Any

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
        assert all(s.schema is schema.Analysis for s in plan.steps)  # one schema: one cached prefix

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
        ada, bo = plan.steps
        assert ada.schema is bo.schema  # the stage's seats share one schema, hence one cached prefix

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
