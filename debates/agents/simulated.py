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
import math
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from fnmatch import fnmatch
from typing import Any

from django.conf import settings

from debates.agents.base import AgentRequest, BackendError, Delta, Result
from debates.agents.usage import Usage

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


Generator = Callable[[random.Random, AgentRequest], dict[str, Any]]
# Each protocol's simulated seats, keyed (protocol, task): handed over by the registry from the protocol
# packages' simulated.py (generators_register).
GENERATORS: dict[tuple[str, str], Generator] = {}
# The simulated model delivers what is due on a shared 20 ms clock, as a network read carries the events that
# arrived since the last one: a wake-up of the server's loop per 3-14 character chunk (176 a second per stream at
# 1,500 characters/s, concurrent streams each waking it apart) was a quarter of a debate's server CPU in `bench
# cpu` (0.75 -> 0.55 s per debate on a 2-core machine). No chunk comes more than one tick after its time: a
# turn's first words show at most 20 ms later than they would have, and the rest is flushed every 0.2 s anyway.
PACE_TICK = 0.02


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
        prompt = request.prompt()
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

        # Deadline-based pacing: time spent by the consumer between chunks does not slow the stream down. A chunk
        # is due at its deadline and delivered at the next tick of the clock (PACE_TICK) with the others due by then.
        started = time.monotonic()
        if ttft:
            await asyncio.sleep(ttft)
        sent = 0
        for chunk in _chunks(random.Random(f"{request.view.seed}:{step.key}:chunks"), text):
            if 0 <= fail_at <= sent:
                raise BackendError("Simulated mid-stream failure (configured in the run's backend options).")
            if cps > 0:
                due = started + ttft + (sent + len(chunk)) / cps
                now = time.monotonic()
                if due > now:
                    await asyncio.sleep(math.ceil(due / PACE_TICK) * PACE_TICK - now)
            sent += len(chunk)
            yield Delta(chunk)
        prompt = request.prompt()
        usage = Usage(input_tokens=len(prompt.text) // 4, output_tokens=max(1, len(text) // 4))
        yield Result(text=text, payload=payload, usage=usage, model="simulated")


def generators_register(generators: Mapping[tuple[str, str], Generator]) -> None:
    """A protocol's simulated seats, keyed (protocol, task): each protocol package keeps them in its own
    `simulated.py` and the registry hands them over when it discovers the package (this layer sits below the
    protocols and does not import them)."""
    GENERATORS.update(generators)
