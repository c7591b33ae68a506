"""`manage.py bench overhead|cache`.

`bench overhead`: how much the engine adds to the critical path of a debate.

A cross-examination runs against a fixed-latency fake model (the simulated backend with a fixed time to first
token and a fixed pace: a turn of n characters takes exactly ttft + n / cps). The critical path is the sum over
stages of the slowest turn's model time; wall time over critical path is the engine's overhead (target <= 1.03),
and each parallel stage's span over its slowest turn shows that the stage really runs in parallel (<= 1.05).

`bench cache`: a reference cross-examination over the demo knowledge base on the Anthropic backend, through the
real SDK against the local fake server (which applies the documented caching rules: breakpoints, 20-block
lookback, minimum length, entries visible once a response has begun). Prints the share of prompt tokens read
from the cache from round 2 on (target >= 80 %) and the number of cache writes in round 1 (target 1)."""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from debates import demo, services
from debates.engine.runner import run_execute
from debates.models import Run
from debates.testing.fake_llm import FakeLLMServer

TARGET_WALL = 1.03
TARGET_STAGE = 1.05


def measure_overhead(*, ttft: float, cps: float, analysts: int, seed: int) -> dict[str, Any]:
    names = ["Ada", "Bo", "Cy", "Di", "Ed", "Flo"][:analysts]
    run = services.run_create(
        protocol="cross-examination",
        topic=demo.DEMO_TOPIC,
        material=demo.DEMO_MATERIAL,
        config={"analysts": [{"name": n, "lens": "bench"} for n in names], "examiner": "agent"},
        seed=seed,
        backend_options={"ttft": ttft, "cps": cps},
        enqueue=False,
    )
    started = time.monotonic()
    outcome = asyncio.run(run_execute(run.pk))
    wall = time.monotonic() - started
    if outcome != "done":
        raise CommandError(f"bench run {run.pk} stopped with {outcome!r}")
    stages: dict[str, list[Any]] = {}
    for turn in run.turns.all():
        stages.setdefault(turn.stage, []).append(turn)
    critical = 0.0
    per_stage = []
    for stage, turns in stages.items():
        slowest = max(ttft + len(t.raw_text) / cps for t in turns)
        span = (max(t.finished_at for t in turns) - min(t.started_at for t in turns)).total_seconds()
        critical += slowest
        per_stage.append(
            {"stage": stage, "turns": len(turns), "slowest": slowest, "span": span, "ratio": span / slowest}
        )
    Run.objects.filter(pk=run.pk).delete()
    return {"wall": wall, "critical": critical, "ratio": wall / critical, "stages": per_stage}


TARGET_CACHE_SHARE = 0.80


def _stage_of(body: dict[str, Any]) -> str:
    last = body["messages"][0]["content"][-1]["text"]
    found = re.search(r'<step [^>]*key="([^"/]+)/', last)
    return found.group(1) if found else ""


def measure_cache(*, analysts: int, seed: int) -> dict[str, Any]:
    from kb.demo import demo_kbs_load

    kb = demo_kbs_load()[0]
    names = ["Ada", "Bo", "Cy", "Di", "Ed", "Flo"][:analysts]
    saved = {name: os.environ.get(name) for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    with FakeLLMServer() as server:
        # Never send a real key to the fake server.
        os.environ["ANTHROPIC_API_KEY"] = "bench-fake-key"
        os.environ["ANTHROPIC_BASE_URL"] = server.url
        try:
            run = services.run_create(
                protocol="cross-examination",
                topic=demo.DEMO_TOPIC,
                kb=kb,
                config={"analysts": [{"name": n, "lens": "bench"} for n in names], "examiner": "agent"},
                backend="anthropic",
                seed=seed,
                consented=True,
                enqueue=False,
            )
            outcome = asyncio.run(run_execute(run.pk))
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        requests = [r for r in server.requests if r.api == "anthropic"]
    if outcome != "done":
        raise CommandError(f"bench run {run.pk} stopped with {outcome!r}")
    # A warm-up belongs to the stage of the call that follows it.
    stages: list[str] = []
    for request in reversed(requests):
        stage = _stage_of(request.body) or (stages[-1] if stages else "")
        stages.append(stage)
    stages.reverse()
    first = stages[0]
    round1 = [r for r, s in zip(requests, stages, strict=True) if s == first]
    later = [r for r, s in zip(requests, stages, strict=True) if s != first]

    def prompt(r: Any) -> int:
        u = r.usage
        return u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]

    read_later = sum(r.usage["cache_read_input_tokens"] for r in later)
    prompt_later = sum(prompt(r) for r in later)
    run.refresh_from_db()
    result = {
        "run": run.pk,
        "requests": len(requests),
        "round1_writes": sum(1 for r in round1 if r.usage["cache_creation_input_tokens"] > 0),
        "round1_calls": len(round1),
        "share_later": read_later / prompt_later if prompt_later else 0.0,
        "prompt_tokens": sum(prompt(r) for r in requests),
        "cost": run.cost_usd,
        "per_stage": [
            (
                stage,
                sum(1 for s in stages if s == stage),
                sum(
                    r.usage["cache_read_input_tokens"]
                    for r, s in zip(requests, stages, strict=True)
                    if s == stage
                ),
                sum(prompt(r) for r, s in zip(requests, stages, strict=True) if s == stage),
            )
            for stage in dict.fromkeys(stages)
        ],
    }
    Run.objects.filter(pk=run.pk).delete()
    return result


class Command(BaseCommand):
    help = (
        "Benchmarks. `bench overhead`: engine overhead over the critical path of a debate. "
        "`bench cache`: prompt-cache reads and writes of a reference debate against the fake Anthropic server."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("which", choices=["overhead", "cache"])
        parser.add_argument("--runs", type=int, default=3)
        parser.add_argument("--ttft", type=float, default=0.3, help="Fake model's time to first token (s).")
        parser.add_argument("--cps", type=float, default=1500, help="Fake model's characters per second.")
        parser.add_argument("--analysts", type=int, default=3)

    def handle(
        self, *args: Any, which: str, runs: int, ttft: float, cps: float, analysts: int, **opts: Any
    ) -> None:
        if which == "cache":
            return self._cache(analysts=analysts)
        results = [
            measure_overhead(ttft=ttft, cps=cps, analysts=analysts, seed=1000 + i) for i in range(runs)
        ]
        self.stdout.write(
            f"bench overhead: {runs} cross-examinations, {analysts} analysts, fake model ttft={ttft}s cps={cps}"
        )
        for index, result in enumerate(results, start=1):
            stages = "  ".join(f"{s['stage']}×{s['turns']} {s['ratio']:.3f}" for s in result["stages"])
            self.stdout.write(
                f"  run {index}: wall {result['wall']:.3f}s  critical path {result['critical']:.3f}s  "
                f"ratio {result['ratio']:.3f}   stage span/slowest: {stages}"
            )
        ratios = [r["ratio"] for r in results]
        parallel = [s["ratio"] for r in results for s in r["stages"] if s["turns"] > 1]
        self.stdout.write(
            f"wall / critical path: median {statistics.median(ratios):.3f}, max {max(ratios):.3f} "
            f"(target <= {TARGET_WALL}) {'OK' if max(ratios) <= TARGET_WALL else 'MISSED'}"
        )
        if parallel:
            self.stdout.write(
                f"parallel stage span / slowest turn: median {statistics.median(parallel):.3f}, max {max(parallel):.3f} "
                f"(target <= {TARGET_STAGE}) {'OK' if max(parallel) <= TARGET_STAGE else 'MISSED'}"
            )

    def _cache(self, *, analysts: int) -> None:
        result = measure_cache(analysts=analysts, seed=1)
        self.stdout.write(
            f"bench cache: cross-examination over the demo KB, {analysts} analysts, Anthropic backend through the "
            f"real SDK against the local fake server; {result['requests']} requests, "
            f"{result['prompt_tokens']:,} prompt tokens, ${result['cost']:.4f} at list prices"
        )
        for stage, count, read, prompt in result["per_stage"]:
            self.stdout.write(
                f"  {stage}: {count} requests, {read:,} of {prompt:,} prompt tokens read from cache"
            )
        share = result["share_later"]
        writes = result["round1_writes"]
        self.stdout.write(
            f"cache reads from round 2 on: {share:.1%} of prompt tokens (target >= {TARGET_CACHE_SHARE:.0%}) "
            f"{'OK' if share >= TARGET_CACHE_SHARE else 'MISSED'}"
        )
        self.stdout.write(
            f"cache writes in round 1: {writes} of {result['round1_calls']} requests (target 1) "
            f"{'OK' if writes == 1 else 'MISSED'}"
        )
