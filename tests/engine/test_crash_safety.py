"""Crash safety (G1 a turn is never lost, G2 never duplicated): the process running a debate is killed with SIGKILL,
by the test at random moments or by itself at the named points (DISPUTA_CRASH_AT), and `manage.py resume_runs`
carries the run on. Every run must end completed with exactly the expected turns, each committed once, with the
content an uninterrupted run produces and an event log without gaps.

Subprocesses share the (file) test database through DATABASE_URL; leases last 1 s so takeovers are quick."""

from __future__ import annotations

import asyncio
import io
import json
import random
import time
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command

from debates.models import Run, Turn
from tests.engine.crash_helpers import (
    EXPECTED_KEYS,
    INTERRUPTED,
    Proc,
    assert_run_finished_exactly_once,
    interrupted_attempts,
    kill_all,
    lease_live,
    lease_owner_pid,
    resume_runs,
    run_by_tag,
    run_debate,
    turn_payloads,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SEED = 7  # one seed for every run: each must reproduce the uninterrupted reference run turn for turn
SIGKILLED = -9


@pytest.fixture
def reference(transactional_db: None) -> dict[str, object]:
    """The turns of the same debate run in this process without interruption."""
    call_command(
        "run_debate",
        protocol="cross-examination",
        topic="Should the city charge cars entering the centre?",
        seed=SEED,
        options=json.dumps({"cps": 0, "tag": "reference"}),
        no_progress=True,
        stdout=io.StringIO(),
    )
    run = run_by_tag("reference")
    assert run is not None and run.status == "completed"
    payloads = turn_payloads(run)
    assert set(payloads) == EXPECTED_KEYS
    return payloads


def _state(tags: list[str]) -> str:
    lines = []
    for tag in tags:
        run = run_by_tag(tag)
        if run is None:
            lines.append(f"{tag}: no run")
            continue
        turns = Counter(Turn.objects.filter(run=run).values_list("status", flat=True))
        lines.append(f"{tag}: run {run.pk} {run.status} lease={run.lease_owner!r} turns={dict(turns)}")
    return "\n".join(lines)


# --- random SIGKILLs -------------------------------------------------------------------------------------------

# Runs stream at different speeds, so at any moment they are in different stages. At 400 characters/s an analysis
# streams for about 4 s and the examiner's questions for 10 s; at 1500, for about 1 s and 3 s: most of a run's time
# is spent streaming, so most kills land mid-stream. (A 300 cps run takes 29 s unharmed and kept the test near its
# deadline on a loaded two-core machine.)
CPS = [400, 500, 600, 700, 800, 1000, 1200, 1500]
RUNS = len(CPS)
# Each run's runner is killed this many times, each a random delay after a process took over the run's lease (so a
# slow start-up on a loaded machine does not swallow the kill, and later kills reach later stages).
KILLS_PER_RUN = 2
KILL_AFTER_LEASE = (0.2, 4.0)
# Plus kills of any live process at random moments: one starting up, one that has not taken a lease yet.
STRAY_KILLS = 8
STRAY_KILL_WINDOW = (1.0, 20.0)
# About 50 s on an idle two-core machine; the deadline only catches a run that stopped making progress (a loaded
# machine starves the 1 s leases' heartbeats, and runners then also lose leases to each other).
DEADLINE = 150.0


def test_runs_survive_random_sigkills_of_their_runner_processes(reference, tmp_path: Path):
    """Each run starts in its own `run_debate`; whenever a run's runner is dead and its lease has expired, a
    `resume_runs --once` takes it over (with any other run due at that moment). Runners are SIGKILLed at random."""
    rng = random.Random(20261127)
    tags = [f"random-{i}" for i in range(RUNS)]
    speed = dict(zip(tags, CPS, strict=True))
    budget = dict.fromkeys(tags, KILLS_PER_RUN)
    planned: dict[str, tuple[str, float]] = {}  # tag -> (lease owner to kill, when)
    stray_kills = sorted(rng.uniform(*STRAY_KILL_WINDOW) for _ in range(STRAY_KILLS))
    alive: list[Proc] = []
    finished: list[Proc] = []
    kills = Counter[str]()
    started = time.monotonic()

    def kill(proc: Proc) -> None:
        if proc.poll() is None:  # a resumer carrying several runs may be due for more than one planned kill
            proc.kill()
            kills[proc.command] += 1

    try:
        alive += [run_debate(tmp_path, tag, seed=SEED, cps=speed[tag]).start() for tag in tags]
        while True:
            now = time.monotonic()
            assert now - started < DEADLINE, f"not done after {DEADLINE} s:\n{_state(tags)}"
            found = {r.backend_options["tag"]: r for r in Run.objects.filter(backend_options__tag__in=tags)}
            runs = {tag: found.get(tag) for tag in tags}
            by_pid = {p.popen.pid: p for p in alive if p.poll() is None}
            holders = {
                lease_owner_pid(r.lease_owner) for r in runs.values() if r is not None and lease_live(r)
            }

            # Plan a kill for each new lease holder while the run's budget lasts; carry out the plans that are due.
            for tag, run in sorted(runs.items()):
                if run is None or run.is_terminal or not lease_live(run) or budget[tag] == 0:
                    continue
                if planned.get(tag, ("",))[0] != run.lease_owner:
                    planned[tag] = (run.lease_owner, now + rng.uniform(*KILL_AFTER_LEASE))
            for tag, (owner, due) in sorted(planned.items()):
                if now < due:
                    continue
                del planned[tag]
                run = runs[tag]
                victim = by_pid.get(lease_owner_pid(owner))
                if (
                    run is not None
                    and run.lease_owner == owner
                    and not run.is_terminal
                    and victim is not None
                ):
                    # (A resumer may carry other runs too: they are interrupted as well, on this run's budget.)
                    budget[tag] -= 1
                    kill(victim)
            if stray_kills and now - started >= stray_kills[0]:
                candidates = [p for p in alive if p.poll() is None and p.popen.pid not in holders]
                if candidates:  # else the kill waits for the next process to start
                    stray_kills.pop(0)
                    kill(rng.choice(candidates))

            for proc in list(alive):
                code = proc.poll()
                if code is None:
                    continue
                alive.remove(proc)
                finished.append(proc)
                assert code == 0 or (code == SIGKILLED and proc.killed), proc.describe()

            if all(run is not None and run.is_terminal for run in runs.values()):
                if not alive:
                    break
            else:
                # A run_debate killed before it created its run is started again. Each run that is due (no live
                # lease) gets a resumer of its own; resumers starting together race for the due runs' leases, which
                # spreads the runs over them.
                for tag, run in runs.items():
                    if run is None and not any(p.tag == tag for p in alive):
                        alive.append(run_debate(tmp_path, tag, seed=SEED, cps=speed[tag]).start())
                due = [r for r in runs.values() if r is not None and not r.is_terminal and not lease_live(r)]
                starting = [p for p in alive if p.command == "resume_runs" and p.popen.pid not in holders]
                for _ in range(len(due) - len(starting)):
                    alive.append(resume_runs(tmp_path, once=True).start())
            time.sleep(0.1)
    finally:
        kill_all(alive)
    elapsed = time.monotonic() - started

    restarted_by_round = Counter[str]()
    for tag in tags:
        run = run_by_tag(tag)
        assert run is not None
        assert_run_finished_exactly_once(run, reference)
        for key in Turn.objects.filter(run=run, attempt__gt=1).values_list("key", flat=True):
            restarted_by_round[key.split("/")[0]] += 1
    total_kills = sum(kills.values())
    attempts = sum(interrupted_attempts(run_by_tag(tag)) for tag in tags)  # type: ignore[arg-type]
    print(
        f"\ncrash-safety random: {total_kills} SIGKILLs ({kills['run_debate']} run_debate, "
        f"{kills['resume_runs']} resume_runs) over {RUNS} runs, {len(finished)} processes, "
        f"{attempts} interrupted turn attempts, turns restarted per round {dict(sorted(restarted_by_round.items()))}, "
        f"{elapsed:.1f} s"
    )
    assert total_kills >= 20
    assert attempts >= RUNS, "the kills hardly ever hit a turn in flight"
    assert len(restarted_by_round) >= 2, "the kills only ever hit one stage of the debates"


# --- the named crash points --------------------------------------------------------------------------------------

NAMED_CPS = 3000  # turns still stream in several 0.1 s flushes


def _turns(run: Run) -> dict[str, Turn]:
    return {t.key: t for t in Turn.objects.filter(run=run)}


def _committed(turns: dict[str, Turn]) -> set[str]:
    return {k for k, t in turns.items() if t.status == "committed"}


def _streaming(turns: dict[str, Turn]) -> list[Turn]:
    return [t for t in turns.values() if t.status == "streaming"]


def _died_before_the_first_token(run: Run) -> None:
    turns = _turns(run)
    assert not _committed(turns) and _streaming(turns)
    assert all(t.raw_text == "" for t in turns.values())  # not one token was saved


def _died_mid_stream(run: Run) -> None:
    turns = _turns(run)
    assert not _committed(turns) & {k for k in EXPECTED_KEYS if not k.startswith("r1/")}
    assert any(t.raw_text for t in _streaming(turns))  # a partial text was saved, then the process died


def _died_before_committing_the_third_analysis(run: Run) -> None:
    turns = _turns(run)
    assert _committed(turns) < {k for k in EXPECTED_KEYS if k.startswith("r1/")}
    assert any(t.key.startswith("r1/") for t in _streaming(turns))


def _died_before_committing_the_questions(run: Run) -> None:
    turns = _turns(run)
    assert _committed(turns) == {k for k in EXPECTED_KEYS if k.startswith("r1/")}
    assert turns["r2/questions/examiner"].status == "streaming"


def _died_after_the_first_commit(run: Run) -> None:
    turns = _turns(run)
    assert 1 <= len(_committed(turns)) < 3 and _streaming(turns)


def _died_after_the_last_commit(run: Run) -> None:
    assert _committed(_turns(run)) == EXPECTED_KEYS
    assert run.status == "running"  # the run itself was not yet marked completed


NAMED_POINTS = {
    "before_first_token:1": _died_before_the_first_token,
    "mid_stream:4": _died_mid_stream,
    "before_commit:3": _died_before_committing_the_third_analysis,
    "before_commit:4": _died_before_committing_the_questions,
    "after_commit:1": _died_after_the_first_commit,
    "after_commit:8": _died_after_the_last_commit,
}


def test_runs_survive_a_crash_at_each_named_point(reference, tmp_path: Path):
    started = time.monotonic()
    procs: list[Proc] = []
    tags = {point: f"named-{point}" for point in NAMED_POINTS}
    try:
        # Generation 1: one run per named point, each process SIGKILLs itself there.
        first = {
            point: run_debate(tmp_path, tag, seed=SEED, cps=NAMED_CPS, crash_at=point).start()
            for point, tag in tags.items()
        }
        procs += first.values()
        for point, proc in first.items():
            assert proc.wait(timeout=60) == SIGKILLED, proc.describe()
            run = run_by_tag(tags[point])
            assert run is not None, point
            NAMED_POINTS[point](run)
        # Resumers crash too, at points reached while they carry several runs at once; the last one is clean.
        for crash_at in ("mid_stream:3", "before_commit:2", "after_commit:1", ""):
            proc = resume_runs(tmp_path, crash_at=crash_at).start()
            procs.append(proc)
            assert proc.wait(timeout=60) == (SIGKILLED if crash_at else 0), proc.describe()
    finally:
        kill_all(procs)
    elapsed = time.monotonic() - started

    for point, tag in tags.items():
        run = run_by_tag(tag)
        assert run is not None
        assert_run_finished_exactly_once(run, reference)
        turns = _turns(run)
        if point == "after_commit:8":
            assert {t.attempt for t in turns.values()} == {1}  # nothing was re-run: all was committed
        elif point == "before_commit:4":
            assert turns["r2/questions/examiner"].attempt >= 2
        else:
            assert interrupted_attempts(run) >= 1, point
    kills = sum(1 for p in procs if p.popen.returncode == SIGKILLED)
    restarted = sum(interrupted_attempts(run_by_tag(tag)) for tag in tags.values())  # type: ignore[arg-type]
    print(
        f"\ncrash-safety named points: {kills} self-inflicted SIGKILLs at {', '.join(NAMED_POINTS)} and in 3 "
        f"resumers, {len(tags)} runs, {restarted} interrupted turn attempts ({INTERRUPTED!r}), {elapsed:.1f} s"
    )


# --- a resumer that lost a lease race ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_resumer_takes_back_a_run_it_lost_to_a_runner_that_then_died(make_run, settings, monkeypatch):
    """Two workers resume at once and one loses the lease race; if the winner is then killed, the loser (still
    waiting in `resume_runs`) must take the run over once the dead winner's lease expires, not idle forever."""
    from channels.db import database_sync_to_async

    from debates.engine.lease import lease_try_acquire
    from debates.management.commands import resume_runs as command

    settings.DISPUTA = {**settings.DISPUTA, "LEASE_SECONDS": 1}
    run = make_run()
    real_execute = command.run_execute
    calls: list[int] = []

    async def rival_wins_first(run_id: int, **kwargs: object) -> str:
        calls.append(run_id)
        if len(calls) == 1:  # a rival worker takes the lease just before us, then dies without renewing it
            assert await database_sync_to_async(lease_try_acquire)(run_id, "rival:1:dead")
        return await real_execute(run_id, **kwargs)

    monkeypatch.setattr(command, "run_execute", rival_wins_first)
    results = asyncio.run(asyncio.wait_for(command.Command()._resume(once=False), timeout=15))
    assert calls == [run.pk, run.pk]
    assert results == {run.pk: "done"}
    run.refresh_from_db()
    assert run.status == "completed"
