"""Simulated agents: deterministic for (run seed, step key), grounded in the material and the transcript, free.

They argue like the real thing would: pick real sentences of the material as evidence, question the weakest
claims, defend strong ones with new evidence, concede weak ones and sometimes deflect. `Run.backend_options`
switches on the degradation branches so they can be demonstrated and tested:

    {"fail": ["r1/analysis/analyst-bo"], "flaky": ["r2/*"], "no_questions": true,
     "answers": "mixed|defend|concede|deflect", "cps": 400, "ttft": 0.2}

`fail` patterns fail on every attempt (the turn ends failed), `flaky` ones only on the first attempt.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from fnmatch import fnmatch
from typing import Any

from django.conf import settings

from debates.agents.base import AgentRequest, BackendError, Delta, Result, Usage
from debates.agents.prompts import prompt_render

FALLBACK_MATERIAL = (
    "No material was supplied, so the analysts reason from the topic alone. "
    "Claims made without material rest on general knowledge and deserve low confidence. "
    "A decision on this topic would need data on costs, benefits and risks. "
    "Stakeholders are likely to disagree on how to weigh near-term against long-term effects."
)


def material_sentences(material: str) -> list[str]:
    sentences = []
    for line in (material or FALLBACK_MATERIAL).splitlines():  # a KB's material is one argument per line
        text = re.sub(r"\s+", " ", line).strip()
        sentences += [
            s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9“\"'(])", text) if len(s.strip()) > 20
        ]
    return sentences or [re.sub(r"\s+", " ", material or FALLBACK_MATERIAL).strip()]


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
    for number, index in enumerate(sorted(picked), start=1):
        sentence = sentences[index].rstrip(".")
        frame = rng.choice(CLAIM_FRAMES)
        text = frame.format(s=sentence, s_lower=sentence[:1].lower() + sentence[1:]) + "."
        claims.append(
            {
                "id": f"c{number}",
                "text": text,
                "evidence": [{"quote": sentences[index], "source": source}],
                "confidence": round(rng.uniform(0.45, 0.92), 2),
            }
        )
    strongest = max(claims, key=lambda c: float(c["confidence"]))  # type: ignore[arg-type]
    lens = context.get("lens") or "general"
    summary = (
        f"Through the lens of {lens}, the {'material' if source == 'material' else 'question'} on "
        f"“{request.view.topic}” supports {len(claims)} claims. "
        f"The strongest is {strongest['id']}: {_shorten(str(strongest['text']))}"
    )
    return {"summary": summary, "claims": claims}


def _questions(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    if request.options.get("no_questions"):
        return {"questions": []}
    context = request.step.context
    questions: list[dict[str, Any]] = []
    for analysis in context["analyses"]:
        claims = sorted(analysis["claims"], key=lambda c: (c["confidence"], rng.random()))
        wanted = min(int(context["per_analyst"]), len(claims))
        if wanted < 2:  # one claim cannot carry two distinct questions: ask two about it
            claims = claims * 2
            wanted = 2
        for claim in claims[:wanted]:
            questions.append(
                {
                    "id": f"q{len(questions) + 1}",
                    "analyst": analysis["analyst"],
                    "claim_id": claim["id"],
                    "quoted_claim": claim["text"],
                    "gap": rng.choice(GAPS).format(conf=claim["confidence"]),
                    "question": rng.choice(QUESTIONS).format(short=_shorten(claim["text"], 10).rstrip(".")),
                }
            )
    return {"questions": questions}


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
    answers = []
    for question in context["questions"]:
        claim = claims.get(question["claim_id"], {"confidence": 0.5, "text": question["quoted_claim"]})
        style = _answer_style(rng, claim["confidence"], str(request.options.get("answers", "mixed")))
        if style == "defend" and fresh:
            new = fresh.pop(rng.randrange(len(fresh)))
            answers.append(
                {
                    "question_id": question["id"],
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
            )
        elif style in {"defend", "deflect"}:
            answers.append(
                {
                    "question_id": question["id"],
                    "choice": "DEFEND",
                    "response": f"As my analysis said, {_shorten(claim['text'], 16).rstrip('.')}. "
                    "The claim stands as stated.",
                    "evidence": [],
                    "revised_position": "",
                }
            )
        else:
            answers.append(
                {
                    "question_id": question["id"],
                    "choice": "CONCEDE",
                    "response": "The examiner is right: the cited sentence does not carry the weight I put on it.",
                    "evidence": [],
                    "revised_position": f"Only a weaker form holds: {_shorten(claim['text'], 12).rstrip('.…')} "
                    "may be true, but the material does not show how much it matters.",
                }
            )
    return {"answers": answers}


def _assessment(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    classifications = []
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
        classifications.append(
            {"question_id": item["question_id"], "classification": verdict, "rationale": why}
        )
    return {"classifications": classifications}


Generator = Callable[[random.Random, AgentRequest], dict[str, Any]]
GENERATORS: dict[tuple[str, str], Generator] = {
    ("cross-examination", "analysis"): _analysis,
    ("cross-examination", "questions"): _questions,
    ("cross-examination", "answers"): _answers,
    ("cross-examination", "assessment"): _assessment,
}


def _matches(key: str, patterns: Any) -> bool:
    return any(fnmatch(key, str(p)) for p in (patterns or []))


def _chunks(rng: random.Random, text: str) -> list[str]:
    chunks, index = [], 0
    while index < len(text):
        size = rng.randint(3, 14)
        chunks.append(text[index : index + size])
        index += size
    return chunks


def simulated_payload(request: AgentRequest) -> dict[str, Any]:
    """The simulated agent's answer to a step: deterministic for (run seed, step key)."""
    generator = GENERATORS.get((request.protocol, request.step.task))
    if generator is None:
        raise BackendError(
            f"The simulated backend cannot play {request.protocol}/{request.step.task}.", retryable=False
        )
    return generator(random.Random(f"{request.view.seed}:{request.step.key}"), request)


class SimulatedBackend:
    name = "simulated"
    label = "simulated"

    def estimate(self, request: AgentRequest) -> Usage:
        prompt = prompt_render(protocol=request.protocol, step=request.step, view=request.view)
        return Usage(input_tokens=len(prompt.text) // 4 + 1, output_tokens=request.max_tokens)

    async def warm(self, requests: Sequence[AgentRequest]) -> Usage:
        return Usage()

    async def stream(self, request: AgentRequest) -> AsyncIterator[Delta | Result]:
        step = request.step
        payload = simulated_payload(request)
        text = json.dumps(payload, ensure_ascii=False)
        options: Mapping[str, Any] = request.options
        cps = float(options.get("cps", settings.DISPUTA["SIMULATED_CHARS_PER_SECOND"]))
        ttft = float(options.get("ttft", 0.0))
        fails = _matches(step.key, options.get("fail")) or (
            request.attempt == 1 and _matches(step.key, options.get("flaky"))
        )
        fail_at = len(text) * 2 // 5 if fails else -1

        # Deadline-based pacing: time spent by the consumer between chunks does not slow the stream down.
        started = time.monotonic()
        if ttft:
            await asyncio.sleep(ttft)
        sent = 0
        for chunk in _chunks(random.Random(f"{request.view.seed}:{step.key}:chunks"), text):
            if 0 <= fail_at <= sent:
                raise BackendError("Simulated mid-stream failure (configured in the run's backend options).")
            if cps > 0:
                delay = started + ttft + (sent + len(chunk)) / cps - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            sent += len(chunk)
            yield Delta(chunk)
        prompt = prompt_render(protocol=request.protocol, step=step, view=request.view)
        usage = Usage(input_tokens=len(prompt.text) // 4, output_tokens=max(1, len(text) // 4))
        yield Result(text=text, payload=payload, usage=usage, model="simulated")


def generators_register(generators: Mapping[tuple[str, str], Generator]) -> None:
    """A protocol's simulated seats, keyed (protocol, task): each protocol package keeps them in its own
    `simulated.py` and the registry hands them over when it discovers the package (this layer sits below the
    protocols and does not import them)."""
    GENERATORS.update(generators)
