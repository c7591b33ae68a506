"""Cross-examination (seed 000): independent analyses in parallel, examiner questions quoting claims, answers
that DEFEND with new evidence or CONCEDE, examiner classification, summary. Every rule of the protocol, including
its graceful degradation, lives in this module."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from django.utils.text import slugify
from pydantic import BaseModel, ConfigDict, Field, model_validator

from debates import demo as demo_values
from debates.contract import (
    DemoStart,
    Done,
    Plan,
    Protocol,
    RunView,
    SeatSignals,
    SeatSpec,
    Stage,
    Step,
    Steps,
)
from debates.engine.registry import register
from debates.protocols.cross_examination import schema, signals

MIN_QUESTIONS, MAX_QUESTIONS = 2, 3


class AnalystConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=60)
    lens: str = Field(default="", max_length=300)


class CrossExaminationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    analysts: list[AnalystConfig] = Field(min_length=1, max_length=6)
    examiner: Literal["agent", "human"] = "agent"
    questions_per_analyst: int = Field(default=MAX_QUESTIONS, ge=MIN_QUESTIONS, le=MAX_QUESTIONS)

    @model_validator(mode="after")
    def _distinct_names(self) -> CrossExaminationConfig:
        handles = [analyst_handle(a.name) for a in self.analysts]
        if len(set(handles)) != len(handles):
            raise ValueError("analyst names must be distinct")
        return self


def analyst_handle(name: str) -> str:
    return "analyst-" + (slugify(name) or "unnamed")


def _key_analysis(handle: str) -> str:
    return f"r1/analysis/{handle}"


KEY_QUESTIONS = "r2/questions/examiner"


def _key_answers(handle: str) -> str:
    return f"r3/answers/{handle}"


KEY_ASSESSMENT = "r4/assessment/examiner"


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().strip("\"'“”‘’").lower()


@register
class CrossExamination(Protocol[CrossExaminationConfig]):
    name = "cross-examination"
    title = "Cross-examination"
    task_labels = {
        "analysis": "Analyse the question",
        "questions": "Ask the analysts questions",
        "answers": "Answer the questions",
        "assessment": "Classify the answers",
    }
    description = (
        "Independent analyses in parallel, then an examiner asks 2–3 questions per analyst quoting a claim; "
        "each answer defends with new evidence or concedes; the examiner classifies defended / conceded / "
        "deflected."
    )
    config_model = CrossExaminationConfig
    template = "debates/protocols/cross_examination.html"
    stages = (
        Stage("analysis", "Independent analysis"),
        Stage("questions", "Examiner questions"),
        Stage("answers", "Answers"),
        Stage("assessment", "Assessment"),
        Stage("done", "Summary"),
    )
    form = "debates.protocols.cross_examination.form.CrossExaminationForm"
    form_default = True
    headless_config = {"analysts": demo_values.DEMO_ANALYSTS, "examiner": "agent", "questions_per_analyst": 3}
    purpose = (
        "Several analysts study the same question on their own, each from an angle; an examiner then questions "
        "each of them on a claim they made, and every answer must back the claim with evidence or concede it."
    )
    when_to_use = (
        "You want analyses of one question stress-tested, and to see which claims survive questioning. You can "
        "take the examiner's seat yourself."
    )
    demo = DemoStart(
        topic=demo_values.DEMO_TOPIC,
        material=demo_values.DEMO_MATERIAL,
        config=headless_config,
        options={"answers": "mixed"},
    )

    def seat_signals(
        self,
        outcome: Mapping[str, Any],
        config: Mapping[str, Any],
        names: Mapping[str, str],
        turns: Sequence[tuple[str, str, Any]],
    ) -> SeatSignals:
        return signals.seat_signals(outcome, config, names, turns)

    def seats(self, config: CrossExaminationConfig) -> list[SeatSpec]:
        seats = [SeatSpec(analyst_handle(a.name), a.name, "analyst", a.lens) for a in config.analysts]
        seats.append(SeatSpec("examiner", "Examiner", "examiner", "", human=config.examiner == "human"))
        return seats

    # --- planning -------------------------------------------------------------------------------------------

    def plan(self, view: RunView) -> Plan:
        analysts = view.seats_with_role("analyst")

        pending = [a for a in analysts if not view.finished(_key_analysis(a.handle))]
        if pending:
            return Steps(tuple(self._analysis_step(view, a.handle) for a in pending))

        analyses = {a.handle: view.payload(_key_analysis(a.handle)) for a in analysts}
        available = {h: p for h, p in analyses.items() if p is not None}
        notes = [
            f"{view.seats[h].name} failed to produce an analysis; the run proceeds without it."
            for h, p in analyses.items()
            if p is None
        ]
        if not available:
            return Done(
                self._outcome(view, "analyses-only", notes), failed=True, reason="Every analyst failed."
            )

        if not view.finished(KEY_QUESTIONS):
            return Steps((self._questions_step(view, available),))
        questions_payload = view.payload(KEY_QUESTIONS)
        questions = list(questions_payload["questions"]) if questions_payload else []
        if not questions:
            # Seed: examiner fails to produce questions -> synthesis from the independent analyses only.
            notes.append("The examiner produced no questions: cross-examination skipped, analyses only.")
            return Done(self._outcome(view, "analyses-only", notes))

        questioned = [h for h in available if any(q["analyst"] == h for q in questions)]
        unanswered = [h for h in questioned if not view.finished(_key_answers(h))]
        if unanswered:
            return Steps(tuple(self._answers_step(view, h, questions, available[h]) for h in unanswered))
        for handle in questioned:
            if view.payload(_key_answers(handle)) is None:
                notes.append(f"{view.seats[handle].name} failed to answer; their questions stand unanswered.")

        if not any(view.payload(_key_answers(h)) for h in questioned):
            notes.append("No analyst answered: the raw questions are shown unclassified.")
            return Done(self._outcome(view, "unclassified", notes))

        if not view.finished(KEY_ASSESSMENT):
            return Steps((self._assessment_step(view, questions),))
        if view.payload(KEY_ASSESSMENT) is None:
            # Seed: examiner assessment fails -> raw Q&A transcript without classification.
            notes.append("The examiner's assessment failed: the raw Q&A is shown without classification.")
            return Done(self._outcome(view, "unclassified", notes))
        return Done(self._outcome(view, "full", notes))

    def _analysis_step(self, view: RunView, handle: str) -> Step:
        seat = view.seats[handle]
        return Step(
            key=_key_analysis(handle),
            seat=handle,
            stage="analysis",
            task="analysis",
            schema=schema.Analysis,
            context={"analyst": handle, "name": seat.name, "lens": seat.lens},
        )

    def _questions_step(self, view: RunView, analyses: Mapping[str, Mapping[str, Any]]) -> Step:
        config = self.view_config(view)
        return Step(
            key=KEY_QUESTIONS,
            seat="examiner",
            stage="questions",
            task="questions",
            schema=schema.Questions,
            context={
                "per_analyst": config.questions_per_analyst,
                "analyses": [
                    {"analyst": h, "name": view.seats[h].name, "lens": view.seats[h].lens, **dict(p)}
                    for h, p in analyses.items()
                ],
            },
        )

    def _answers_step(
        self, view: RunView, handle: str, questions: list[Mapping[str, Any]], analysis: Mapping[str, Any]
    ) -> Step:
        return Step(
            key=_key_answers(handle),
            seat=handle,
            stage="answers",
            task="answers",
            schema=schema.Answers,
            context={
                "analyst": handle,
                "name": view.seats[handle].name,
                "lens": view.seats[handle].lens,
                "questions": [dict(q) for q in questions if q["analyst"] == handle],
                "analysis": dict(analysis),
            },
        )

    def _assessment_step(self, view: RunView, questions: list[Mapping[str, Any]]) -> Step:
        return Step(
            key=KEY_ASSESSMENT,
            seat="examiner",
            stage="assessment",
            task="assessment",
            schema=schema.Assessment,
            context={"record": self._record(view, questions, classifications={})},
        )

    # --- validation beyond the schema -----------------------------------------------------------------------

    def validate(self, step: Step, payload: BaseModel, view: RunView) -> list[str]:
        if isinstance(payload, schema.Analysis):
            ids = [c.id for c in payload.claims]
            return [f"claim id {i} is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
        if isinstance(payload, schema.Questions):
            return self._validate_questions(step, payload)
        if isinstance(payload, schema.Answers):
            asked = {q["id"] for q in step.context["questions"]}
            answered = [a.question_id for a in payload.answers]
            errors = [f"answer to unknown question {q}" for q in answered if q not in asked]
            errors += [f"question {q} is not answered" for q in sorted(asked - set(answered))]
            errors += [
                f"question {q} is answered twice"
                for q in sorted({q for q in answered if answered.count(q) > 1})
            ]
            errors += [
                f"answer to {a.question_id} concedes but states no revised position"
                for a in payload.answers
                if a.choice == "CONCEDE" and not a.revised_position.strip()
            ]
            return errors
        if isinstance(payload, schema.Assessment):
            expected = {item["question_id"] for item in step.context["record"] if item["answer"] is not None}
            given = [c.question_id for c in payload.classifications]
            errors = [
                f"classification of unknown or unanswered question {q}" for q in given if q not in expected
            ]
            errors += [f"answer to {q} is not classified" for q in sorted(expected - set(given))]
            errors += [f"{q} is classified twice" for q in sorted({q for q in given if given.count(q) > 1})]
            return errors
        return []

    def _validate_questions(self, step: Step, payload: schema.Questions) -> list[str]:
        errors: list[str] = []
        analyses = {a["analyst"]: a for a in step.context["analyses"]}
        per_analyst: dict[str, int] = dict.fromkeys(analyses, 0)
        ids = [q.id for q in payload.questions]
        errors += [f"question id {i} is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
        for q in payload.questions:
            analysis = analyses.get(q.analyst)
            if analysis is None:
                errors.append(f"{q.id}: {q.analyst!r} is not an analyst with an analysis")
                continue
            per_analyst[q.analyst] += 1
            claim = next((c for c in analysis["claims"] if c["id"] == q.claim_id), None)
            if claim is None:
                errors.append(f"{q.id}: {analysis['name']} has no claim {q.claim_id}")
            elif _normalise(q.quoted_claim) not in _normalise(claim["text"]):
                errors.append(
                    f"{q.id}: the quote is not the words of {analysis['name']}'s claim {q.claim_id}"
                )
        if payload.questions:  # no questions at all is a legitimate (degraded) outcome, not invalid output
            for handle, count in per_analyst.items():
                if not MIN_QUESTIONS <= count <= MAX_QUESTIONS:
                    errors.append(
                        f"{analyses[handle]['name']} gets {count} questions; "
                        f"ask {MIN_QUESTIONS}–{MAX_QUESTIONS} per analyst"
                    )
        return errors

    # --- the human examiner's forms --------------------------------------------------------------------------

    def human_payload(self, step: Step, data: Mapping[str, Any]) -> dict[str, Any]:
        def field(name: str) -> str:
            return str(data.get(name, "")).strip()

        if step.task == "questions":
            questions: list[dict[str, Any]] = []
            for analysis in step.context["analyses"]:
                claims = {c["id"]: c for c in analysis["claims"]}
                for row in range(1, MAX_QUESTIONS + 1):
                    prefix = f"{analysis['analyst']}-{row}"
                    question, gap, claim_id = (
                        field(f"{prefix}-question"),
                        field(f"{prefix}-gap"),
                        field(f"{prefix}-claim"),
                    )
                    if not (question or gap):
                        continue  # an empty row is a question not asked
                    claim = claims.get(claim_id)
                    questions.append(
                        {
                            "id": f"q{len(questions) + 1}",
                            "analyst": analysis["analyst"],
                            "claim_id": claim_id,
                            "quoted_claim": claim["text"] if claim else "",
                            "gap": gap,
                            "question": question,
                        }
                    )
            if not questions:
                raise ValueError("Every row is empty: ask 2–3 questions per analyst.")
            return {"questions": questions}
        if step.task == "assessment":
            return {
                "classifications": [
                    {
                        "question_id": item["question_id"],
                        "classification": field(f"{item['question_id']}-classification"),
                        "rationale": field(f"{item['question_id']}-rationale"),
                    }
                    for item in step.context["record"]
                    if item["answer"] is not None
                ]
            }
        return super().human_payload(step, data)

    # --- progress and outcome -------------------------------------------------------------------------------

    def expected_turns(self, view: RunView) -> int:
        analysts = len(view.seats_with_role("analyst"))
        return analysts * 2 + 2

    def _record(
        self,
        view: RunView,
        questions: list[Mapping[str, Any]],
        classifications: Mapping[str, Mapping[str, Any]],
    ) -> list[dict[str, Any]]:
        answers: dict[str, Mapping[str, Any]] = {}
        for handle in {q["analyst"] for q in questions}:
            payload = view.payload(_key_answers(handle))
            for answer in payload["answers"] if payload else []:
                answers[answer["question_id"]] = answer
        record = []
        for q in questions:
            seat = view.seats.get(q["analyst"])
            record.append(
                {
                    "question_id": q["id"],
                    "analyst": q["analyst"],
                    "name": seat.name if seat else q["analyst"],
                    "question": dict(q),
                    "answer": dict(answers[q["id"]]) if q["id"] in answers else None,
                    "assessment": dict(classifications[q["id"]]) if q["id"] in classifications else None,
                }
            )
        return record

    def _outcome(self, view: RunView, mode: str, notes: list[str]) -> dict[str, Any]:
        analyses = {a.handle: view.payload(_key_analysis(a.handle)) for a in view.seats_with_role("analyst")}
        questions_payload = view.payload(KEY_QUESTIONS)
        questions = list(questions_payload["questions"]) if questions_payload else []
        assessment = view.payload(KEY_ASSESSMENT) if mode == "full" else None
        classifications = {c["question_id"]: c for c in assessment["classifications"]} if assessment else {}
        record = self._record(view, questions, classifications)

        summary, surviving, revised, weakened = [], [], [], []
        for seat in view.seats_with_role("analyst"):
            items = [r for r in record if r["analyst"] == seat.handle]
            counts = {"DEFENDED": 0, "CONCEDED": 0, "DEFLECTED": 0}
            for item in items:
                if item["assessment"]:
                    counts[item["assessment"]["classification"]] += 1
            summary.append(
                {
                    "analyst": seat.handle,
                    "name": seat.name,
                    "questions": len(items),
                    "answered": sum(1 for i in items if i["answer"]),
                    "defended": counts["DEFENDED"],
                    "conceded": counts["CONCEDED"],
                    "deflected": counts["DEFLECTED"],
                    "analysis_failed": analyses.get(seat.handle) is None,
                }
            )
            for item in items:
                verdict = item["assessment"]["classification"] if item["assessment"] else None
                claim = {"analyst": seat.handle, "name": seat.name, "claim": item["question"]["quoted_claim"]}
                if verdict == "DEFENDED":
                    surviving.append(claim)
                elif verdict == "CONCEDED":
                    revised.append({**claim, "revised": (item["answer"] or {}).get("revised_position", "")})
                elif verdict == "DEFLECTED":
                    weakened.append(claim)

        return {
            "protocol": self.name,
            "mode": mode,
            "notes": notes,
            "summary": summary,
            "surviving": surviving,
            "revised": revised,
            "weakened": weakened,
            "record": record,
            "analyses": [
                {"analyst": h, "name": view.seats[h].name, "claims": list(p["claims"])}
                for h, p in analyses.items()
                if p is not None
            ],
        }
