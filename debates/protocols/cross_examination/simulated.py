"""Simulated seats of the cross-examination (seed 000), handed to `debates.agents.simulated` by the registry.

The analysts pick real sentences of the material as evidence; the examiner questions the weakest claims; the
analysts defend strong ones with new evidence, concede weak ones and sometimes deflect; the examiner classifies
each answer. `Run.backend_options`: `"answers": "mixed|defend|concede|deflect"`, `"no_questions": true` (and the
backend's own `fail` / `flaky` patterns)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from debates.agents.base import AgentRequest, BackendError
from debates.agents.simulated import material_sentences
from debates.protocols.cross_examination.schema import PLACES
from debates.protocols.schemas import property_names


def _shorten(sentence: str, words: int = 14) -> str:
    parts = sentence.rstrip(".!?").split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


CLAIM_FRAMES = (
    "{s}",
    "The evidence establishes that {s_lower}",
    "{s} — which is decisive for this question",
    "Most importantly, {s_lower}",
)
NO_MATERIAL_SOURCE = "general knowledge (no material supplied)"


def _evidence_source(request: AgentRequest) -> str:
    return "material" if request.view.material.strip() else NO_MATERIAL_SOURCE


GAPS = (
    "The claim rests on one quoted sentence; nothing in the material measures how large or how lasting the "
    "effect is.",
    "A confidence of {conf:.0%} is asserted, but the cited evidence is descriptive, not causal.",
    "The claim generalises from a single statement; no counter-case in the material is examined.",
    "The cited passage is compatible with the opposite conclusion; the assumption linking them is unstated.",
)
QUESTIONS = (
    "What specific figure or source in the material shows that {short}?",
    "Which evidence rules out the opposite reading of “{short}”?",
    "What would have to be true for this claim to fail, and does the material show it is not?",
)


def _analysis(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    sentences = material_sentences(request.view.material)
    source = _evidence_source(request)
    count = min(len(sentences), rng.randint(3, 4))
    picked = rng.sample(range(len(sentences)), count)
    claims: list[dict[str, Any]] = []
    for index in sorted(picked):
        sentence = sentences[index].rstrip(".")
        frame = rng.choice(CLAIM_FRAMES)
        text = frame.format(s=sentence, s_lower=sentence[:1].lower() + sentence[1:]) + "."
        claims.append(
            {
                "text": text,
                "evidence": [{"quote": sentences[index], "source": source}],
                "confidence": round(rng.uniform(0.45, 0.92), 2),
            }
        )
    strongest = max(range(len(claims)), key=lambda n: float(claims[n]["confidence"]))
    lens = context.get("lens") or "general"
    summary = (
        f"Through the lens of {lens}, the {'material' if source == 'material' else 'question'} on "
        f"“{request.view.topic}” supports {len(claims)} claims. "
        f"The strongest is c{strongest + 1}: {_shorten(str(claims[strongest]['text']))}"
    )
    return {"summary": summary, "claims": claims}


def _questions(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    if request.options.get("no_questions"):
        # The questions' schema cannot say "none": the examiner's turn fails, as a model's that asks none would.
        raise BackendError(
            "The simulated examiner asked no questions (configured in the run's backend options).",
            retryable=False,
        )
    context = request.step.context
    questions: dict[str, Any] = {}
    names = property_names([analysis["analyst"] for analysis in context["analyses"]])
    for analysis in context["analyses"]:
        claims = sorted(analysis["claims"], key=lambda c: (c["confidence"], rng.random()))
        wanted = int(context["per_analyst"])
        # Fewer claims than questions: the weakest are asked about again, from another angle.
        targets = [claims[n % len(claims)] for n in range(wanted)]
        questions[names[analysis["analyst"]]] = {
            place: {
                "claim_id": claim["id"],
                "gap": rng.choice(GAPS).format(conf=claim["confidence"]),
                "question": rng.choice(QUESTIONS).format(short=_shorten(claim["text"], 10).rstrip(".")),
            }
            for place, claim in zip(PLACES, targets, strict=False)
        }
    return questions


def _answer_style(rng: random.Random, confidence: float, configured: str) -> str:
    if configured in {"defend", "concede", "deflect"}:
        return configured
    draw = confidence + rng.uniform(-0.1, 0.1)
    if draw >= 0.75:
        return "defend"
    return "deflect" if draw >= 0.62 else "concede"


def _answers(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    claims = {c["id"]: c for c in context["analysis"]["claims"]}
    cited = {e["quote"] for c in claims.values() for e in c["evidence"]}
    fresh = [s for s in material_sentences(request.view.material) if s not in cited]
    answers: dict[str, Any] = {}
    for place, question in zip(PLACES, context["questions"], strict=False):
        claim = claims.get(question["claim_id"], {"confidence": 0.5, "text": question["quoted_claim"]})
        style = _answer_style(rng, claim["confidence"], str(request.options.get("answers", "mixed")))
        if style == "defend" and fresh:
            new = fresh.pop(rng.randrange(len(fresh)))
            answers[place] = {
                "choice": "DEFEND",
                "response": f"The gap is closed by a second, independent passage: “{_shorten(new, 18)}”. "
                "It bears directly on the claim and was not cited before.",
                "evidence": [
                    {
                        "quote": new,
                        "source": _evidence_source(request),
                    }
                ],
                "revised_position": "",
            }
        elif style in {"defend", "deflect"}:
            answers[place] = {
                "choice": "DEFEND",
                "response": f"As my analysis said, {_shorten(claim['text'], 16).rstrip('.')}. "
                "The claim stands as stated.",
                "evidence": [],
                "revised_position": "",
            }
        else:
            answers[place] = {
                "choice": "CONCEDE",
                "response": "The examiner is right: the cited sentence does not carry the weight I put on it.",
                "evidence": [],
                "revised_position": f"Only a weaker form holds: {_shorten(claim['text'], 12).rstrip('.…')} "
                "may be true, but the material does not show how much it matters.",
            }
    return answers


def _assessment(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    classifications: dict[str, Any] = {}
    for item in request.step.context["record"]:
        answer = item["answer"]
        if answer is None:
            continue
        if answer["choice"] == "CONCEDE":
            verdict, why = "CONCEDED", "Acknowledged the weakness and revised the position."
        elif answer["evidence"]:
            verdict, why = "DEFENDED", "Brought a new passage of the material that addresses the gap."
        else:
            verdict, why = "DEFLECTED", "Restated the claim without new evidence."
        classifications[item["question_id"]] = {"classification": verdict, "rationale": why}
    return classifications


GENERATORS: dict[tuple[str, str], Callable[[random.Random, AgentRequest], dict[str, Any]]] = {
    ("cross-examination", "analysis"): _analysis,
    ("cross-examination", "questions"): _questions,
    ("cross-examination", "answers"): _answers,
    ("cross-examination", "assessment"): _assessment,
}
