"""`manage.py bench overhead|cache|pages|fanout|robustness|cpu` (fanout: debates/devtools/bench_fanout.py;
robustness: debates/devtools/robustness.py; cpu: debates/devtools/bench_cpu.py).

`bench overhead`: how much the engine adds to the critical path of a debate.

A cross-examination runs against a fixed-latency fake model (the simulated backend with a fixed time to first
token and a fixed pace: a turn of n characters takes exactly ttft + n / cps). The critical path is the sum over
stages of the slowest turn's model time; wall time over critical path is the engine's overhead (target <= 1.03),
and each parallel stage's span over its slowest turn shows that the stage really runs in parallel (<= 1.05).

`bench cache`: a reference cross-examination over the demo knowledge base on the Anthropic backend, through the
real SDK against the local fake server (which applies the documented caching rules: breakpoints, 20-block
lookback, minimum length, entries visible once a response has begun). Prints the share of prompt tokens read
from the cache from round 2 on (target >= 80 %) and the number of cache writes in round 1 (target 1).

`bench robustness`: every protocol (its headless config; the demo KBs for kb-debate and market-panel) on the
Anthropic and the OpenAI-compatible backends, through the real SDKs against the local fake server in schema-only
mode: a model that honours the JSON schema it is sent and nothing else (an arbitrary valid instance, ignoring the
prompt). One table per backend: completed or not (final status and reason), turns, failed turns, repair calls
(attempts restarted because the output was invalid), flagged items, steps down a fallback chain, answer calls made
(cache warm-ups apart), and those relative to the same run answered by the protocol's simulated agents (a model
that obeys everything). Targets: 6/6 complete, 0 failed turns, 0 steps down, repairs <= 5 % of answer calls.

`bench pages`: server-side time of the archive (first page, a filtered page, a text search) and of a 500-turn run
page on generated data (default 10,000 runs and 200,000 turns), each the median of --repeat requests through the
Django test client, against the target of 150 ms. The data are clones of one simulated cross-examination (its
outcome, seats and turns), written with bulk_create into a throwaway SQLite database (default) or, with
`--database configured`, into the configured database under the topic prefix "[bench-pages]" and deleted after."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import re
import statistics
import time
from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.core.management.color import no_style
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction

from debates import demo
from debates.devtools import bench_cpu, bench_fanout
from debates.devtools.fake_llm import FakeLLMServer
from debates.devtools.robustness import (
    ROBUSTNESS_BACKENDS,
    TARGET_REPAIR_SHARE,
    backend_at,
    measure_obeying,
    measure_robustness,
)
from debates.engine import registry
from debates.engine.runner import run_execute
from debates.engine.turns import RunnerOutcome
from debates.models import HumanAction, Run, RunEvent, Seat, Turn
from debates.services import runs as services
from kb.demo import demo_kbs_load

TARGET_WALL = 1.03
TARGET_STAGE = 1.05


def _names(value: str) -> list[str]:
    """A comma-separated option (--layers, --protocols, --backends) as its names, blanks left out."""
    return [name.strip() for name in value.split(",") if name.strip()]


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
    if outcome != RunnerOutcome.DONE:
        raise CommandError(f"bench run {run.pk} stopped with {outcome.value!r}")
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

    kb = demo_kbs_load()[0]
    names = ["Ada", "Bo", "Cy", "Di", "Ed", "Flo"][:analysts]
    with FakeLLMServer() as server, backend_at("anthropic", server):  # never a real key to the fake server
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
        requests = [r for r in server.requests if r.api == "anthropic"]
    if outcome != RunnerOutcome.DONE:
        raise CommandError(f"bench run {run.pk} stopped with {outcome.value!r}")
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


TARGET_PAGE_MS = 150.0
BENCH_PREFIX = "[bench-pages]"
BENCH_USER = "bench-pages-viewer"
SEARCH_WORD = "zeppelin"  # in the turn text of one run in SEARCH_EVERY: a selective search
SEARCH_EVERY = 100
LONG_RUN_TURNS = (500, 2000)  # the run page is timed at each length
TARGET_LONG_RUN_COLD_MS = {500: 150.0, 2000: 300.0}  # its first request
BENCH_TOPICS = (
    "Should the city charge cars entering the centre?",
    "Is a four-day week good for a small software company?",
    "Which database should the order-tracking service use?",
    "Will the central bank cut rates before the summer?",
    "Should the team rewrite the billing service in Rust?",
)
BENCH_WORDS = [
    "traffic",
    "pricing",
    "evidence",
    "retail",
    "footfall",
    "congestion",
    "buses",
    "cyclists",
    "commuters",
    "revenue",
    "fairness",
    "exemption",
    "scheme",
    "study",
    "decline",
    "lanes",
    "emissions",
    "transit",
    "downtown",
    "policy",
    "survey",
    "trial",
    "outcome",
    "baseline",
]


def _prose(index: int, words: int = 60) -> str:
    return " ".join(BENCH_WORDS[(index * 7 + n * 3) % len(BENCH_WORDS)] for n in range(words)) + "."


def _template_run() -> Run:
    """One real simulated cross-examination, whose outcome, seats and turns the generated runs copy."""
    run = services.run_create(
        protocol="cross-examination",
        topic=f"{BENCH_PREFIX} {demo.DEMO_TOPIC}",
        material=demo.DEMO_MATERIAL,
        config={"analysts": [{"name": n, "lens": "bench"} for n in ("Ada", "Bo", "Cy")], "examiner": "agent"},
        seed=4242,
        backend_options={"cps": 0},
        enqueue=False,
    )
    outcome = asyncio.run(run_execute(run.pk))
    if outcome != RunnerOutcome.DONE:
        raise CommandError(f"bench template run {run.pk} stopped with {outcome.value!r}")
    run.refresh_from_db()
    return run


def _insert_rows(model: Any, rows: list[dict[str, Any]]) -> None:
    """INSERT many rows with executemany: the ORM's bulk_create spends minutes preparing 200,000 turns. Values
    given are database-ready; every other column gets the field's default, prepared once."""
    if not rows:
        return
    fields = model._meta.concrete_fields
    defaults = {f.attname: f.get_db_prep_save(f.get_default(), connection) for f in fields}
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) VALUES ({marks})"
    names = [f.attname for f in fields]
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 5000):
            cursor.executemany(
                sql, [tuple(row.get(n, defaults[n]) for n in names) for row in rows[start : start + 5000]]
            )


def generate_pages_data(*, runs: int, turns: int) -> dict[str, Any]:
    """`runs` runs with `turns` turns in all (spread evenly), plus one run of each length in LONG_RUN_TURNS; returns the
    ids the timings need."""
    from django.utils import timezone

    template = _template_run()
    seats = list(template.seats.order_by("position", "id"))
    source = list(template.turns.select_related("seat").order_by("first_seq", "id"))
    per_run = max(1, turns // max(runs, 1))
    now = timezone.now()
    statuses = ["completed"] * 8 + ["failed", "cancelled"]
    backends = [("simulated", "simulated"), ("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5-mini")]
    created_at = Run._meta.get_field("created_at")
    created_at.auto_now_add = False  # type: ignore[attr-defined]  # spread the runs over a year
    turn_citations = Turn._meta.get_field("citations")
    citations = [  # prepared once: (verified, mismatch)
        turn_citations.get_db_prep_save([{"kind": "arg", "ref": "A1", "status": status}], connection)
        for status in ("verified", "mismatch")
    ]
    try:
        with transaction.atomic():
            next_seat = Seat.objects.order_by("-id").values_list("id", flat=True).first() or 0
            next_turn = Turn.objects.order_by("-id").values_list("id", flat=True).first() or 0
            for start in range(0, runs, 1000):
                batch = range(start, min(start + 1000, runs))
                made = Run.objects.bulk_create(
                    [
                        Run(
                            protocol=template.protocol,
                            topic=f"{BENCH_PREFIX} {BENCH_TOPICS[i % len(BENCH_TOPICS)]} (#{i})",
                            config=template.config,
                            outcome=template.outcome,
                            status=statuses[i % len(statuses)],
                            backend=backends[i % 3][0],
                            model=backends[i % 3][1],
                            seed=i,
                            created_at=now - dt.timedelta(minutes=50 * i),
                            finished_at=now - dt.timedelta(minutes=50 * i - 5),
                        )
                        for i in batch
                    ]
                )
                seat_rows, turn_rows = [], []
                seat_of = {}
                for run in made:
                    for seat in seats:
                        next_seat += 1
                        seat_of[(run.pk, seat.handle)] = next_seat
                        seat_rows.append(
                            {
                                "id": next_seat,
                                "run_id": run.pk,
                                "handle": seat.handle,
                                "name": seat.name,
                                "role": seat.role,
                                "lens": seat.lens,
                                "position": seat.position,
                            }
                        )
                for i, run in zip(batch, made, strict=True):
                    for n in range(per_run):
                        model = source[n % len(source)]
                        text = _prose(i + n) + (f" {SEARCH_WORD}" if i % SEARCH_EVERY == 0 and n == 1 else "")
                        next_turn += 1
                        turn_rows.append(
                            {
                                "id": next_turn,
                                "run_id": run.pk,
                                "key": f"g{n:03d}/{model.key}",
                                "seat_id": seat_of[(run.pk, model.seat.handle)],
                                "stage": model.stage,
                                "task": model.task,
                                "status": "committed",
                                "raw_text": text,
                                "citations": citations[n % 5 == 0],
                                "first_seq": n + 1,
                                "backend": run.backend,
                                "model": run.model,
                            }
                        )
                _insert_rows(Seat, seat_rows)
                _insert_rows(Turn, turn_rows)
            if connection.vendor == "postgresql":  # the rows above were written with explicit ids
                with connection.cursor() as cursor:
                    for sql in connection.ops.sequence_reset_sql(no_style(), [Seat, Turn]):
                        cursor.execute(sql)
            long_runs = {}
            for length in LONG_RUN_TURNS:
                long_run = Run.objects.create(
                    protocol=template.protocol,
                    topic=f"{BENCH_PREFIX} a run of {length} turns",
                    material=template.material,
                    config=template.config,
                    outcome=template.outcome,
                    status="completed",
                    backend="simulated",
                    created_at=now + dt.timedelta(minutes=1),
                )
                long_seats = {
                    s.handle: s
                    for s in Seat.objects.bulk_create(
                        [
                            Seat(
                                run=long_run,
                                handle=s.handle,
                                name=s.name,
                                role=s.role,
                                lens=s.lens,
                                position=s.position,
                            )
                            for s in seats
                        ]
                    )
                }
                Turn.objects.bulk_create(
                    [
                        Turn(
                            run=long_run,
                            # The first copy keeps the real keys, so the protocol finds its turns by key.
                            key=model.key if n < len(source) else f"x{n:03d}/{model.key}",
                            seat=long_seats[model.seat.handle],
                            stage=model.stage,
                            task=model.task,
                            status=model.status,
                            raw_text=model.raw_text,
                            payload=model.payload,
                            schema_version=model.schema_version,
                            citations=model.citations,
                            first_seq=n + 1,
                            backend=model.backend,
                            model=model.model,
                            input_tokens=model.input_tokens,
                            output_tokens=model.output_tokens,
                            started_at=model.started_at,
                            finished_at=model.finished_at,
                        )
                        for n, model in ((n, source[n % len(source)]) for n in range(length))
                    ],
                    batch_size=500,
                )
                Run.objects.filter(pk=long_run.pk).update(last_seq=length + 1)
                long_runs[length] = long_run.pk
    finally:
        created_at.auto_now_add = True  # type: ignore[attr-defined]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # planner statistics, as autovacuum / a maintained database would have them
    return {"long_runs": long_runs, "template": template.pk}


def bench_pages_cleanup() -> None:
    """Delete what generate_pages_data wrote (raw deletes: nothing outside the bench refers to these rows)."""
    from django.contrib.auth import get_user_model

    runs = Run.objects.filter(topic__startswith=BENCH_PREFIX)
    for model in (Turn, RunEvent, HumanAction, Seat):
        model.objects.filter(run__in=runs.values("pk"))._raw_delete(DEFAULT_DB_ALIAS)  # type: ignore[attr-defined]
    runs.delete()
    get_user_model().objects.filter(username=BENCH_USER).delete()


def time_pages(*, long_runs: dict[int, int], template_run: int, repeat: int) -> list[dict[str, Any]]:
    """Median server-side time (and query count) of each page through the test client, after one warm-up."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    user, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
    hosts = [h for h in settings.ALLOWED_HOSTS if h not in ("*", "") and not h.startswith(".")]
    client = Client(
        HTTP_HOST=hosts[0] if hosts else "localhost"
    )  # outside the test runner "testserver" is refused
    client.force_login(user)
    pages = [
        ("archive, first page", "/"),
        (
            "archive, filtered (status, backend, dates)",
            "/?status=completed&backend=anthropic&date_from=2000-01-01",
        ),
        (f"archive, text search '{SEARCH_WORD}'", f"/?q={SEARCH_WORD}"),
        ("archive, htmx table of page 3", "/?page=3"),
        *((f"run page, {length} turns", f"/runs/{pk}/") for length, pk in long_runs.items()),
    ]
    cold_targets = {f"run page, {length} turns": TARGET_LONG_RUN_COLD_MS.get(length) for length in long_runs}
    # A run page's templates are compiled by a short run's page first (a serving process has done that on its first
    # run page): a long run's first request is then what its own turns cost.
    client.get(f"/runs/{template_run}/")
    results = []
    for label, url in pages:
        headers = {"HX-Request": "true"} if "htmx" in label else {}
        started = time.perf_counter()
        response = client.get(url, headers=headers)  # cold: nothing of this page rendered before
        cold_ms = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise CommandError(f"bench pages: GET {url} answered {response.status_code}")
        timings = []
        for _ in range(repeat):
            started = time.perf_counter()
            client.get(url, headers=headers)
            timings.append((time.perf_counter() - started) * 1000)
        with CaptureQueriesContext(connection) as queries:
            client.get(url, headers=headers)
        results.append(
            {
                "label": label,
                "url": url,
                "median_ms": statistics.median(timings),
                "cold_ms": cold_ms,
                "max_ms": max(timings),
                "queries": len(queries),
                "cold_target_ms": cold_targets.get(label),
            }
        )
    return results


class Command(BaseCommand):
    help = (
        "Benchmarks. `bench overhead`: engine overhead over the critical path of a debate. "
        "`bench cache`: prompt-cache reads and writes of a reference debate against the fake Anthropic server."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("which", choices=["overhead", "cache", "pages", "fanout", "robustness", "cpu"])
        parser.add_argument("--debates", type=int, default=10, help="fanout: debates at once (10).")
        parser.add_argument(
            "--viewers", type=int, default=50, help="fanout: websocket viewers per debate (50)."
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=None,
            help="fanout: worker processes running the debates on the Redis layers, sharing them out (default: one "
            "per core, as the README advises: at 20 debates on 2 cores, one worker per debate gave a p95 lag of "
            "2-4 s, two ten-slot workers 0.23-0.44 s).",
        )
        parser.add_argument(
            "--layers",
            default="inmemory,redis-pubsub",
            help="fanout: channel layers, in order (inmemory, redis-pubsub; redis, the list-based layer, for "
            "comparison; Redis at REDIS_URL).",
        )
        parser.add_argument(
            "--runs",
            type=int,
            default=None,
            help="overhead, cpu: debates to run (3); pages: runs generated (10,000).",
        )
        parser.add_argument("--turns", type=int, default=200_000, help="pages: turns generated in all.")
        parser.add_argument("--repeat", type=int, default=7, help="pages: requests timed per page (median).")
        parser.add_argument(
            "--database",
            choices=["throwaway", "configured"],
            default="throwaway",
            help="A throwaway SQLite file (default), or the configured database (what the bench wrote is deleted "
            "after).",
        )
        parser.add_argument("--ttft", type=float, default=0.3, help="Fake model's time to first token (s).")
        parser.add_argument("--cps", type=float, default=1500, help="Fake model's characters per second.")
        parser.add_argument("--analysts", type=int, default=3)
        parser.add_argument(
            "--protocols",
            default="",
            help="robustness: comma-separated protocol names (default: all registered protocols).",
        )
        parser.add_argument(
            "--backends",
            default=None,
            help="robustness: anthropic, openai (default both); cpu: simulated, anthropic (default both, one after "
            "the other).",
        )
        parser.add_argument("--seed", type=int, default=1, help="robustness: the schema-only server's seed.")
        parser.add_argument(
            "--peer",
            default="",
            help="cpu: a command measuring the reference peer (llm-council) on this machine with the same fake "
            "model, printing its CPU per debate in seconds as its last line (split as a shell would, not run by "
            "one: sh -c '...' for pipes); run before and after each backend's debates, it replaces the published "
            "figure and the CPU targets are judged against it.",
        )
        parser.add_argument(
            "--protocol",
            default=bench_fanout.REFERENCE_PROTOCOL,
            help="fanout: the protocol debated (a cross-examination of three analysts by default; another "
            "protocol runs its headless demo).",
        )

    def handle(
        self, *args: Any, which: str, runs: int | None, ttft: float, cps: float, analysts: int, **opts: Any
    ) -> None:
        if which == "cache":
            with _database(opts["database"], "bench cache", cleanup=lambda: None):
                return self._cache(analysts=analysts)
        if which == "robustness":
            with _database(opts["database"], "bench robustness", cleanup=lambda: None) as where:
                return self._robustness(
                    protocols=_names(opts["protocols"]),
                    backends=_names(opts["backends"])
                    if opts["backends"] is not None
                    else list(ROBUSTNESS_BACKENDS),
                    seed=opts["seed"],
                    where=where,
                )
        if which == "fanout":
            layers = _names(opts["layers"])
            unknown = [name for name in layers if name not in ("inmemory", "redis", "redis-pubsub")]
            if unknown or not layers:
                raise CommandError(
                    f"bench fanout: unknown layer(s) {unknown}; choose from inmemory, redis, redis-pubsub"
                )
            if opts["workers"] is not None and opts["workers"] < 1:
                raise CommandError(f"bench fanout: --workers must be at least 1, not {opts['workers']}")
            try:
                registry.get(opts["protocol"])
            except LookupError as error:
                raise CommandError(f"bench fanout: unknown protocol {opts['protocol']!r}") from error
            return self._fanout(
                protocol=opts["protocol"],
                debates=opts["debates"],
                viewers=opts["viewers"],
                layers=layers,
                cps=cps,
                database=opts["database"],
                workers=opts["workers"],
            )
        if which == "cpu":
            backends = _names(opts["backends"]) if opts["backends"] is not None else list(bench_cpu.BACKENDS)
            unknown = [b for b in backends if b not in bench_cpu.BACKENDS]
            if unknown or not backends:
                raise CommandError(
                    f"bench cpu: unknown backend(s) {unknown}; choose from {', '.join(bench_cpu.BACKENDS)}"
                )
            if opts["peer"]:
                try:
                    bench_cpu.peer_argv(opts["peer"])
                except bench_fanout.BenchBroke as error:
                    raise CommandError(f"bench cpu: {error}") from error
            with _database(opts["database"], "bench cpu", cleanup=bench_cpu.bench_cpu_cleanup) as where:
                try:
                    peer = bench_cpu.peer_cpu(opts["peer"]) if opts["peer"] else None
                    for backend in backends:
                        peer = self._cpu(
                            runs=3 if runs is None else runs,
                            ttft=ttft,
                            cps=cps,
                            where=where,
                            backend=backend,
                            peer_command=opts["peer"],
                            peer_before=peer,
                        )
                except bench_fanout.BenchBroke as error:
                    raise CommandError(f"bench cpu: {error}") from error
                return None
        if which == "pages":
            return self._pages(
                runs=10_000 if runs is None else runs,
                turns=opts["turns"],
                repeat=opts["repeat"],
                database=opts["database"],
            )
        runs = 3 if runs is None else runs
        with _database(opts["database"], "bench overhead", cleanup=lambda: None):
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

    def _robustness(self, *, protocols: list[str], backends: list[str], seed: int, where: str) -> None:

        names = protocols or [p.name for p in registry.all_protocols()]
        unknown = [b for b in backends if b not in ROBUSTNESS_BACKENDS]
        if unknown or not backends:
            raise CommandError(
                f"bench robustness: unknown backend(s) {unknown}; choose from anthropic, openai"
            )
        self.stdout.write(
            f"bench robustness: {len(names)} protocols (headless configs) against the local fake server in "
            f"schema-only mode (seed {seed}: an arbitrary valid instance of the schema sent, prompt ignored), "
            f"through the real SDKs; baseline: the same run answered by the protocol's simulated agents (a model that obeys "
            f"everything); calls: answer calls (cache warm-ups apart); {where}"
        )
        for backend in backends:
            rows = []
            for name in names:
                schema_only = measure_robustness(
                    protocol=name, backend=backend, mode="schema-only", seed=seed
                )
                obeying = measure_obeying(protocol=name, seed=seed)
                rows.append((schema_only, obeying))
            self._robustness_table(backend, rows)

    def _robustness_table(self, backend: str, rows: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        label = {"anthropic": "Anthropic", "openai": "OpenAI-compatible"}[backend]
        self.stdout.write(f"\n{label} backend")
        header = (
            f"  {'protocol':<18} {'completed':<10} {'turns':>5} {'failed':>6} {'repairs':>7} {'asks':>4} {'flags':>5} "
            f"{'downs':>5} {'calls':>5} "
            f"{'obeying':>7} {'cost x':>6}  final status (reason)"
        )
        self.stdout.write(header)
        self.stdout.write("  " + "-" * (len(header) - 2))
        for result, baseline in rows:
            completed = "yes" if result["status"] == "completed" else "NO"
            ratio = (
                result["answer_calls"] / baseline["answer_calls"]
                if baseline["answer_calls"]
                else float("nan")
            )
            status = result["status"] + (f" ({result['reason']})" if result["reason"] else "")
            if result["outcome"].startswith("stuck"):
                status += f" [{result['outcome']}]"
            if baseline["status"] != "completed":
                status += f" [obeying run: {baseline['status']}]"
            self.stdout.write(
                f"  {result['protocol']:<18} {completed:<10} {result['turns']:>5} {result['failed']:>6} "
                f"{result['repairs']:>7} {result['reconsiders']:>4} {result['flags']:>5} {result['step_downs']:>5} {result['answer_calls']:>5} "
                f"{baseline['answer_calls']:>7} {ratio:>6.2f}  "
                f"{status[:160]}"
            )
        for result, _ in rows:
            for key, error in result["failed_keys"]:
                self.stdout.write(f"    {result['protocol']} failed turn {key}: {error[:200]}")
            for reason in result["repair_reasons"]:
                self.stdout.write(f"    {result['protocol']} repair: {reason[:200]}")
        done = sum(1 for r, _ in rows if r["status"] == "completed")
        failed = sum(r["failed"] for r, _ in rows)
        repairs = sum(r["repairs"] + r["reconsiders"] for r, _ in rows)  # every second call for a turn
        calls = sum(r["answer_calls"] for r, _ in rows)
        obeying = sum(b["answer_calls"] for _, b in rows)
        flags = sum(r["flags"] for r, _ in rows)
        downs = sum(r["step_downs"] for r, _ in rows)
        share = repairs / calls if calls else 0.0
        self.stdout.write(
            f"  {label}: {done}/{len(rows)} complete (target {len(rows)}/{len(rows)}), {failed} failed turns "
            f"(target 0), {repairs} repairs (asks included) = {share:.1%} of {calls} calls (target <= {TARGET_REPAIR_SHARE:.0%}), "
            f"{flags} flagged items, {downs} steps down (target 0), "
            f"calls x{calls / obeying if obeying else float('nan'):.2f} of a model that obeys everything "
            f"({obeying}) {'OK' if done == len(rows) and not failed and not downs and share <= TARGET_REPAIR_SHARE else 'MISSED'}"
        )

    def _cpu(
        self,
        *,
        runs: int,
        ttft: float,
        cps: float,
        where: str,
        backend: str,
        peer_command: str,
        peer_before: float | None,
    ) -> float | None:
        """One backend's debates and their verdicts; with a peer command, the peer's figure measured after them
        (the next backend's `peer_before`)."""
        result = bench_cpu.measure_cpu(runs=runs, ttft=ttft, cps=cps, backend=backend)
        self.stdout.write(
            f"bench cpu, {bench_cpu.BACKENDS[backend]}: {runs} {result['protocol']} debates (3 agents + judge) after "
            f"a warm-up debate, model ttft={ttft}s cps={cps:.0f}, one after another in a `manage.py serve` process "
            f"with one websocket viewer; {where}"
        )

        def row_line(row: dict[str, Any]) -> str:
            return (
                f"server CPU {row['cpu']:.3f}s over {row['wall']:.1f}s wall, {row['turns']} turns, "
                f"{row['chars']:,} characters streamed, {row['cpu_per_1000']:.4f}s per 1,000 characters"
            )

        for row in result["warmups"]:
            self.stdout.write(f"  warm-up (the server's first debate, not counted): {row_line(row)}")
        for index, row in enumerate(result["rows"], start=1):
            self.stdout.write(f"  run {index}: {row_line(row)}")

        def verdict(ok: bool) -> str:
            return "PASS" if ok else "FAIL"

        # After the debates' own lines: a peer command that fails now does not lose them.
        peer_after = bench_cpu.peer_cpu(peer_command) if peer_command else None
        cpu, per_1000, first = result["cpu"], result["cpu_per_1000"], result["first_text_p95_ms"]
        if peer_before is None or peer_after is None:
            self.stdout.write(
                f"{backend}: CPU per debate: median {cpu:.3f}s (target <= {bench_cpu.TARGET_CPU_PER_DEBATE}s; "
                f"reference llm-council {bench_cpu.REFERENCE_PEER_CPU}s, no streaming: "
                f"x{cpu / bench_cpu.REFERENCE_PEER_CPU:.2f}) {verdict(cpu <= bench_cpu.TARGET_CPU_PER_DEBATE)}"
            )
            self.stdout.write(
                f"{backend}: CPU per 1,000 streamed characters: median {per_1000:.4f}s "
                f"(target <= {bench_cpu.TARGET_CPU_PER_1000_CHARS}s) "
                f"{verdict(per_1000 <= bench_cpu.TARGET_CPU_PER_1000_CHARS)}"
            )
        else:
            peer = (peer_before + peer_after) / 2
            # How much dearer this machine is than the issue's, by what the peer costs on each.
            dearer = peer / bench_cpu.REFERENCE_PEER_CPU
            per_1000_target = bench_cpu.TARGET_CPU_PER_1000_CHARS * dearer
            self.stdout.write(
                f"{backend}: CPU per debate: median {cpu:.3f}s, x{cpu / peer:.2f} of llm-council measured on this "
                f"machine by the peer command ({peer_before:.3f}s before these debates, {peer_after:.3f}s after; no "
                f"streaming; {bench_cpu.REFERENCE_PEER_CPU}s on the issue's machine: x{dearer:.2f} here) (target <= "
                f"x{bench_cpu.TARGET_PEER_RATIO}) {verdict(cpu <= bench_cpu.TARGET_PEER_RATIO * peer)}"
            )
            self.stdout.write(
                f"{backend}: CPU per 1,000 streamed characters: median {per_1000:.4f}s (target <= "
                f"{per_1000_target:.4f}s: {bench_cpu.TARGET_CPU_PER_1000_CHARS}s on the issue's machine x{dearer:.2f}) "
                f"{verdict(per_1000 <= per_1000_target)}"
            )
        self.stdout.write(
            f"{backend}: first text on screen after the model's first token: p95 {first:.0f} ms over "
            f"{result['first_text_turns']} turns (target <= {bench_cpu.TARGET_FIRST_TEXT_MS:.0f} ms) "
            f"{verdict(first <= bench_cpu.TARGET_FIRST_TEXT_MS)}"
        )
        return peer_after

    def _pages(self, *, runs: int, turns: int, repeat: int, database: str) -> None:
        with _database(database, "bench pages", cleanup=bench_pages_cleanup) as where:
            started = time.monotonic()
            ids = generate_pages_data(runs=runs, turns=turns)
            generated = time.monotonic() - started
            self.stdout.write(
                f"bench pages: {runs:,} runs and {turns:,} turns (+ 1 run of each of {', '.join(map(str, LONG_RUN_TURNS))} "
                f"turns) generated in "
                f"{generated:.1f}s into the {where}; median of {repeat} requests per page, server-side"
            )
            results = time_pages(long_runs=ids["long_runs"], template_run=ids["template"], repeat=repeat)
            for result in results:
                cold_target = result["cold_target_ms"]
                result["ok"] = result["median_ms"] <= TARGET_PAGE_MS and (
                    cold_target is None or result["cold_ms"] <= cold_target
                )
                cold = f" (target <= {cold_target:.0f} ms)" if cold_target is not None else ""
                self.stdout.write(
                    f"  {result['label']}: median {result['median_ms']:.1f} ms, max {result['max_ms']:.1f} ms, "
                    f"first (cold) {result['cold_ms']:.1f} ms{cold}, {result['queries']} queries "
                    f"(target <= {TARGET_PAGE_MS:.0f} ms) {'PASS' if result['ok'] else 'FAIL'}"
                )
            passed = sum(1 for r in results if r["ok"])
            self.stdout.write(f"pages within target: {passed} of {len(results)}")

    def _fanout(
        self,
        *,
        protocol: str,
        debates: int,
        viewers: int,
        layers: list[str],
        cps: float,
        database: str,
        workers: int | None,
    ) -> None:

        workers = min(workers or os.cpu_count() or 1, debates)
        concurrency = -(-debates // workers)  # the debates shared out, rounded up

        redis_url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
        if any(layer != "inmemory" for layer in layers):
            _redis_reachable(redis_url)
        with _database(database, "bench fanout", cleanup=bench_fanout.bench_fanout_cleanup) as where:
            self.stdout.write(
                f"bench fanout: {debates} simulated {protocol} debates at once ({cps:.0f} characters/s), {viewers} websocket "
                f"viewers each, in this process; per layer a Daphne server process, running the debates itself "
                f"(in-memory) or with {workers} worker process{'es' if workers > 1 else ''} running them "
                f"({concurrency} each; Redis layers, the scaled setup); {where}"
            )
            results = []
            for layer in layers:
                try:
                    result = bench_fanout.measure_fanout(
                        layer=layer,
                        redis_url=redis_url,
                        debates=debates,
                        viewers=viewers,
                        cps=cps,
                        workers=workers,
                        protocol=protocol,
                    )
                except Exception as error:  # an overloaded layer can fail outright: that is a result too
                    self.stdout.write(f"  {layer}: FAIL, the bench broke off: {error}")
                    bench_fanout.bench_fanout_cleanup()
                    continue
                results.append(result)
                ok = (
                    result["p95_ms"] <= bench_fanout.TARGET_P95_MS
                    and result["fps_max"] <= bench_fanout.TARGET_FRAMES_PER_SECOND
                    and result["silence_max_ms"] <= bench_fanout.TARGET_SILENCE_MS
                    and result.get("mib_per_debate", 0) <= bench_fanout.TARGET_MIB_PER_DEBATE
                )
                memory = (
                    f"worker memory {result['worker_ready_mib']:.0f} MiB ready, {result['worker_peak_mib']:.0f} "
                    f"MiB at peak, {result['mib_per_debate']:.1f} MiB per debate it ran at once (target <= "
                    f"{bench_fanout.TARGET_MIB_PER_DEBATE:.0f}); "
                    if "mib_per_debate" in result
                    else ""
                )
                self.stdout.write(
                    f"  {layer}: frame lag p50 {result['p50_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms over "
                    f"{result['lagged_frames']:,} events (target p95 <= {bench_fanout.TARGET_P95_MS:.0f} ms; "
                    f"the last event of each frame alone p95 {result['status_p95_ms']:.1f} ms; "
                    f"first viewer p95 {result['first_p95_ms']:.1f} ms, spread over viewers p95 "
                    f"{result['spread_p95_ms']:.1f} ms); "
                    f"live frames per turn per second max {result['fps_max']:.1f}, median "
                    f"{result['fps_median']:.1f} over {result['turns_rated']} turns "
                    f"(target <= {bench_fanout.TARGET_FRAMES_PER_SECOND:.0f}); longest silence while a turn "
                    f"streams {result['silence_max_ms']:.0f} ms (target <= {bench_fanout.TARGET_SILENCE_MS:.0f} ms); "
                    f"{memory}{_cpu_during(result['cpu'])}{result['frames']:,} frames to "
                    f"{result['viewers']} viewers in {result['wall']:.1f}s, all converged "
                    f"{'PASS' if ok else 'FAIL'}"
                )
            for result in results[1:]:
                base = results[0]
                self.stdout.write(
                    f"  {result['layer']} / {base['layer']}: p95 lag x{result['p95_ms'] / base['p95_ms']:.2f}, "
                    f"wall x{result['wall'] / base['wall']:.2f}"
                )


def _cpu_during(cpu: dict[str, Any]) -> str:
    """What the CPU did while the debates ran: a lag figure means little without it on a machine the benchmark's
    own viewers share."""
    runners = (
        f"Daphne {cpu['daphne']:.1f} s, workers {cpu['workers']:.1f} s"
        if cpu["workers"] is not None
        else f"Daphne (running the debates too) {cpu['daphne']:.1f} s"
    )
    return (
        f"CPU while the debates ran ({cpu['seconds']:.1f} s): {runners}, the viewers (this process) "
        f"{cpu['viewers']:.1f} s, the machine's {cpu['cores']} cores {cpu['busy_cores']:.1f} busy on average; "
    )


def _redis_reachable(url: str) -> None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError as error:
        raise CommandError(
            f"bench fanout: Redis at {url} is not reachable ({error}); start it, set REDIS_URL, or pass "
            "--layers inmemory"
        ) from error


@contextlib.contextmanager
def _database(database: str, bench: str, *, cleanup: Any) -> Iterator[str]:
    """The throwaway SQLite file the bench writes into (migrated here, deleted after), or the configured database
    (what the bench wrote deleted after by `cleanup`). Yields a description for the first printed line."""
    import tempfile
    from pathlib import Path

    from django.core.management import call_command

    connection = connections[DEFAULT_DB_ALIAS]
    saved_name = connection.settings_dict["NAME"]
    scratch = None
    if database == "throwaway":
        if connection.vendor != "sqlite":
            raise CommandError(f"{bench}: the throwaway database needs SQLite; use --database configured")
        if connection.in_atomic_block:
            raise CommandError(
                f"{bench}: cannot switch databases inside a transaction; use --database configured"
            )
        scratch = Path(tempfile.mkdtemp(prefix="disputa-bench-")) / "bench.sqlite3"
        connection.close()
        connection.settings_dict["NAME"] = str(scratch)
        call_command("migrate", verbosity=0, interactive=False)
    try:
        yield f"throwaway SQLite {scratch}" if scratch else f"configured {connection.vendor} database"
    finally:
        if scratch is not None:
            connection.close()
            connection.settings_dict["NAME"] = saved_name
            for leftover in scratch.parent.iterdir():
                leftover.unlink()
            scratch.parent.rmdir()
        else:
            cleanup()
