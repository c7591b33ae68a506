"""Cross-examination (seed 000): independent analyses in parallel, examiner questions quoting claims, answers
that DEFEND with new evidence or CONCEDE, examiner classification, summary. Every rule of the protocol, including
its graceful degradation, lives in this module."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from django.utils.text import slugify
from pydantic import BaseModel, ConfigDict, Field, model_validator

from debates import demo as demo_values
from debates.contract import (
    Accepted,
    DemoStart,
    Done,
    Flag,
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
from debates.protocols.cross_examination import exports, schema, signals
from debates.protocols.cross_examination.schema import (
    MAX_CLAIMS,
    MAX_EVIDENCE,
    MAX_QUESTIONS,
    MIN_QUESTIONS,
    PLACES,
)
from debates.protocols.schemas import at_most, by_property, clamped, per_key, said

if TYPE_CHECKING:
    from debates.models import Run


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


def _plain(text: str) -> str:
    """Text as compared for a verbatim quote: case, spacing and the kind of quotation marks aside."""
    text = text.translate(str.maketrans("“”‘’", "\"\"''"))
    return re.sub(r"\s+", " ", text).strip().lower()


def _verbatim(quote: str, material: str) -> bool:
    """Whether every part of `quote` (parts cut by an ellipsis) is the material's words."""
    haystack = _plain(material)
    parts = [_plain(part).strip("\"' .,;:") for part in re.split(r"…|\.\.\.", quote)]
    parts = [part for part in parts if part]
    return bool(parts) and all(part in haystack for part in parts)


def _evidence_stored(
    items: Sequence[Any], where: str, material: str, flags: list[Flag]
) -> list[dict[str, str]]:
    stored = []
    for index, evidence in enumerate(at_most(items, MAX_EVIDENCE, where, flags, "quotes")):
        at = f"{where}.{index}.quote"
        quote = said(evidence.quote, at, flags, "quote")
        # Without material the analysts reason from general knowledge: there is nothing to quote.
        if quote and material.strip() and not _verbatim(quote, material):
            flags.append(Flag("unverified_quote", at, "Not found word for word in the material."))
        stored.append({"quote": quote, "source": evidence.source.strip()})
    return stored


def _analysis_stored(payload: Any, material: str, flags: list[Flag]) -> dict[str, Any]:
    """The claims numbered c1, c2, ... in order; confidences clamped into 0–1."""
    claims = []
    for index, claim in enumerate(at_most(payload.claims, MAX_CLAIMS, "claims", flags, "claims")):
        where = f"claims.{index}"
        claims.append(
            {
                "id": f"c{index + 1}",
                "text": said(claim.text, f"{where}.text", flags, "claim"),
                "evidence": _evidence_stored(claim.evidence, f"{where}.evidence", material, flags),
                "confidence": clamped(claim.confidence, 0, 1, f"{where}.confidence", flags),
            }
        )
    return {"summary": said(payload.summary, "summary", flags, "summary"), "claims": claims}


def _questions_stored(
    payload: BaseModel, analyses: Sequence[Mapping[str, Any]], flags: list[Flag]
) -> dict[str, Any]:
    """The questions numbered q1, q2, ... across the analysts, each put to the analyst it was asked under and
    quoting the words of the claim it names."""
    claim_texts = {a["analyst"]: {c["id"]: c["text"] for c in a["claims"]} for a in analyses}
    questions: list[dict[str, Any]] = []
    for handle, asked in per_key(payload).items():
        for place in PLACES:
            question = getattr(asked, place, None)
            if question is None:
                continue
            where = f"questions.{len(questions)}"
            questions.append(
                {
                    "id": f"q{len(questions) + 1}",
                    "analyst": handle,
                    "claim_id": question.claim_id,
                    "quoted_claim": claim_texts.get(handle, {}).get(question.claim_id, ""),
                    "gap": said(question.gap, f"{where}.gap", flags, "gap"),
                    "question": said(question.question, f"{where}.question", flags, "question"),
                }
            )
    return {"questions": questions}


def _answers_stored(
    payload: BaseModel, questions: Sequence[Mapping[str, Any]], material: str, flags: list[Flag]
) -> dict[str, Any]:
    """Each answer given to the question at its place; a question left without an answer stands unanswered."""
    answers: list[dict[str, Any]] = []
    for index, place in enumerate(PLACES):
        answer = getattr(payload, place, None)
        if index >= len(questions):
            if answer is not None:
                flags.append(
                    Flag(
                        "not_asked",
                        "",
                        f"An answer under {place}, but only {len(questions)} questions were asked: dropped.",
                    )
                )
            continue
        question_id = questions[index]["id"]
        if answer is None:
            flags.append(Flag("unanswered", "", f"{question_id.upper()} is not answered."))
            continue
        where = f"answers.{len(answers)}"
        revised = answer.revised_position.strip()
        if answer.choice == "CONCEDE" and not revised:
            flags.append(
                Flag(
                    "missing_revision",
                    f"{where}.revised_position",
                    "A concession without a revised position.",
                )
            )
        answers.append(
            {
                "question_id": question_id,
                "choice": answer.choice,
                "response": said(answer.response, f"{where}.response", flags, "answer"),
                "evidence": _evidence_stored(answer.evidence, f"{where}.evidence", material, flags),
                "revised_position": revised,
            }
        )
    return {"answers": answers}


# A classification that says the opposite of what the analyst chose.
CONTRADICTIONS = {("DEFENDED", "CONCEDE"), ("CONCEDED", "DEFEND")}


def _assessment_stored(
    payload: BaseModel, record: Sequence[Mapping[str, Any]], flags: list[Flag]
) -> dict[str, Any]:
    answers = {item["question_id"]: item["answer"] or {} for item in record}
    classifications: list[dict[str, Any]] = []
    for question_id, verdict in per_key(payload).items():
        choice = answers.get(question_id, {}).get("choice", "")
        if (verdict.classification, choice) in CONTRADICTIONS:
            flags.append(
                Flag(
                    "contradicts_answer",
                    f"classifications.{len(classifications)}.classification",
                    f"{verdict.classification} for an answer that chose {choice}.",
                )
            )
        classifications.append(
            {
                "question_id": question_id,
                "classification": verdict.classification,
                "rationale": verdict.rationale.strip(),
            }
        )
    return {"classifications": classifications}


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

    def transcript_sections(self, run: Run) -> list[str]:
        """Seed 000's output in the Markdown transcript: per question its Q / A / assessment, the summary table,
        the surviving / revised / weakened claims and the degradation notes (exports.py)."""
        return exports.transcript_sections(run)

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
            # One schema for the whole stage (the prompt cache's key): the most questions any analyst was asked,
            # the fewest required.
            counts = [sum(1 for q in questions if q["analyst"] == h) for h in questioned]
            answers_schema = schema.answers_schema(max(counts), min(counts))
            return Steps(
                tuple(
                    self._answers_step(view, h, questions, available[h], answers_schema) for h in unanswered
                )
            )
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
            sees=(),  # seed: independent analyses; no analyst reads another's, in whatever order they commit
            context={"analyst": handle, "name": seat.name, "lens": seat.lens},
        )

    def _questions_step(self, view: RunView, analyses: Mapping[str, Mapping[str, Any]]) -> Step:
        config = self.view_config(view)
        # An agent asks exactly the configured number; a person may leave the third row empty (the form says so).
        human = view.seats["examiner"].human
        asked = MAX_QUESTIONS if human else config.questions_per_analyst
        at_least = MIN_QUESTIONS if human else config.questions_per_analyst
        claims = tuple((h, tuple(str(c["id"]) for c in p["claims"])) for h, p in analyses.items())
        return Step(
            key=KEY_QUESTIONS,
            seat="examiner",
            stage="questions",
            task="questions",
            schema=schema.questions_schema(claims, asked, at_least),
            sees=("r1/analysis/",),  # seed: the examiner reads ALL analyses
            context={
                "per_analyst": config.questions_per_analyst,
                "analyses": [
                    {"analyst": h, "name": view.seats[h].name, "lens": view.seats[h].lens, **dict(p)}
                    for h, p in analyses.items()
                ],
            },
        )

    def _answers_step(
        self,
        view: RunView,
        handle: str,
        questions: list[Mapping[str, Any]],
        analysis: Mapping[str, Any],
        answers_schema: type[BaseModel],
    ) -> Step:
        asked = [dict(q) for q in questions if q["analyst"] == handle]
        return Step(
            key=_key_answers(handle),
            seat=handle,
            stage="answers",
            task="answers",
            schema=answers_schema,
            # The analyses and the questions (its own are in the context, as references into them), never a
            # sibling's answer of this same stage. Every answerer reads the same transcript: one cached prefix.
            sees=("r1/analysis/", KEY_QUESTIONS),
            context={
                "analyst": handle,
                "name": view.seats[handle].name,
                "lens": view.seats[handle].lens,
                "questions": asked,  # in order: `first` answers the first, and so on
                "analysis": dict(analysis),
            },
        )

    def _assessment_step(self, view: RunView, questions: list[Mapping[str, Any]]) -> Step:
        record = self._record(view, questions, classifications={})
        answered = tuple(item["question_id"] for item in record if item["answer"] is not None)
        return Step(
            key=KEY_ASSESSMENT,
            seat="examiner",
            stage="assessment",
            task="assessment",
            schema=schema.assessment_schema(answered),
            sees=None,  # the examiner classifies with the whole record before it: analyses, questions, answers
            context={"record": record},
        )

    # --- what code fills in and what it flags ---------------------------------------------------------------

    def accept(self, step: Step, payload: BaseModel, view: RunView) -> Accepted:
        flags: list[Flag] = []
        if step.task == "analysis":
            stored = _analysis_stored(payload, view.material, flags)
        elif step.task == "questions":
            stored = _questions_stored(payload, step.context["analyses"], flags)
        elif step.task == "answers":
            stored = _answers_stored(payload, step.context["questions"], view.material, flags)
        elif step.task == "assessment":
            stored = _assessment_stored(payload, step.context["record"], flags)
        else:
            return super().accept(step, payload, view)
        return Accepted(stored, tuple(flags))

    # --- the human examiner's forms --------------------------------------------------------------------------

    def human_payload(self, step: Step, data: Mapping[str, Any]) -> dict[str, Any]:
        def field(name: str) -> str:
            return str(data.get(name, "")).strip()

        if step.task == "questions":
            payload: dict[str, Any] = {}
            too_few: list[str] = []
            for analysis in step.context["analyses"]:
                rows = []
                for row in range(1, MAX_QUESTIONS + 1):
                    prefix = f"{analysis['analyst']}-{row}"
                    question, gap = field(f"{prefix}-question"), field(f"{prefix}-gap")
                    if question or gap:  # an empty row is a question not asked
                        rows.append({"claim_id": field(f"{prefix}-claim"), "gap": gap, "question": question})
                if len(rows) < MIN_QUESTIONS:
                    too_few.append(
                        f"{analysis['name']} gets {len(rows)} questions; "
                        f"ask {MIN_QUESTIONS}–{MAX_QUESTIONS} per analyst"
                    )
                payload[analysis["analyst"]] = dict(zip(PLACES, rows, strict=False))
            payload = by_property(step.schema, payload)
            if not any(payload.values()):
                raise ValueError("Every row is empty: ask 2–3 questions per analyst.")
            if too_few:
                raise ValueError("; ".join(too_few))
            return payload
        if step.task == "assessment":
            return {
                item["question_id"]: {
                    "classification": field(f"{item['question_id']}-classification"),
                    "rationale": field(f"{item['question_id']}-rationale"),
                }
                for item in step.context["record"]
                if item["answer"] is not None
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
