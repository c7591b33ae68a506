"""`manage.py bench overhead`: how much the engine adds to the critical path of a debate.

A cross-examination runs against a fixed-latency fake model (the simulated backend with a fixed time to first
token and a fixed pace: a turn of n characters takes exactly ttft + n / cps). The critical path is the sum over
stages of the slowest turn's model time; wall time over critical path is the engine's overhead (target <= 1.03),
and each parallel stage's span over its slowest turn shows that the stage really runs in parallel (<= 1.05)."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from debates import demo, services
from debates.engine.runner import run_execute
from debates.models import Run

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


class Command(BaseCommand):
    help = "Benchmarks. `bench overhead`: engine overhead over the critical path of a debate."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("which", choices=["overhead"])
        parser.add_argument("--runs", type=int, default=3)
        parser.add_argument("--ttft", type=float, default=0.3, help="Fake model's time to first token (s).")
        parser.add_argument("--cps", type=float, default=1500, help="Fake model's characters per second.")
        parser.add_argument("--analysts", type=int, default=3)

    def handle(
        self, *args: Any, which: str, runs: int, ttft: float, cps: float, analysts: int, **opts: Any
    ) -> None:
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
