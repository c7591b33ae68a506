"""Helpers for the crash-safety suite: start `manage.py` subprocesses against the test database, kill them with
SIGKILL, and check a finished run against the guarantees (no turn lost, none duplicated, a contiguous log)."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from debates.models import Run, RunEvent, Turn
from debates.platform import dburl
from tests.conftest import EXPECTED_KEYS

TOPIC = "Should the city charge cars entering the centre?"
PROTOCOL = "cross-examination"
# run_debate's default cross-examination config seats the three demo analysts.

INTERRUPTED = "an earlier attempt was interrupted"


def database_url() -> str:
    """The URL of the database this test runs against, for the subprocesses' DATABASE_URL."""
    return dburl.database_url(settings.DATABASES["default"])


def subprocess_env(*, crash_at: str = "") -> dict[str, str]:
    env = dict(os.environ)
    for name in ("DISPUTA_CRASH_AT", "REDIS_URL", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    env.update(
        DJANGO_SETTINGS_MODULE="debates.settings",
        DATABASE_URL=database_url(),
        DISPUTA_LEASE_SECONDS="1",
        DISPUTA_CONTROL_POLL_SECONDS="0.1",
        DISPUTA_FLUSH_SECONDS="0.1",  # the named crash points count flushes (mid_stream:N) at this pace
        DISPUTA_TASKS_BACKEND="dummy",  # nothing here may enqueue; the commands drive runs themselves
        DISPUTA_RESUME_ON_START="false",
        DISPUTA_LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    if crash_at:
        env["DISPUTA_CRASH_AT"] = crash_at
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """condition()'s first truthy value within `timeout` seconds, or the test fails saying what it waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}", pytrace=False)


def _die_with_parent() -> None:
    """Linux: SIGKILL this child if the test process dies, so an aborted test leaves no runner behind."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


@dataclass
class Proc:
    """One `manage.py` subprocess; output goes to a log file (pipes could fill up and stall it)."""

    command: str
    args: list[str]
    log: Path
    tag: str = ""  # the run a run_debate creates
    crash_at: str = ""
    kill_at: float | None = None  # time.monotonic() at which the test SIGKILLs it
    env: dict[str, str] | None = None  # instead of subprocess_env()
    popen: subprocess.Popen[bytes] = field(init=False)
    started: float = field(init=False)
    killed: bool = False

    def start(self) -> Proc:
        manage = Path(settings.BASE_DIR) / "manage.py"
        with self.log.open("wb") as out:
            self.popen = subprocess.Popen(
                [sys.executable, str(manage), self.command, *self.args],
                cwd=settings.BASE_DIR,
                env=self.env or subprocess_env(crash_at=self.crash_at),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        self.started = time.monotonic()
        return self

    def poll(self) -> int | None:
        return self.popen.poll()

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
            self.killed = True
        self.popen.wait()

    def wait(self, timeout: float) -> int:
        return self.popen.wait(timeout=timeout)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def describe(self) -> str:
        return f"{self.command} {' '.join(self.args)} (crash_at={self.crash_at!r}) -> {self.popen.returncode}\n{self.output()}"


def run_debate(log_dir: Path, tag: str, *, seed: int, cps: int, crash_at: str = "") -> Proc:
    options = f'{{"cps": {cps}, "tag": "{tag}"}}'  # the simulated backend ignores the tag; the test finds runs by it
    args = [
        "--protocol",
        PROTOCOL,
        "--topic",
        TOPIC,
        "--seed",
        str(seed),
        "--options",
        options,
        "--no-progress",
    ]
    log = log_dir / f"run_debate-{tag}-{time.monotonic_ns()}.log"
    return Proc("run_debate", args, log, tag=tag, crash_at=crash_at)


def resume_runs(log_dir: Path, *, once: bool = False, crash_at: str = "") -> Proc:
    """`--once` takes only the runs whose lease has expired by the time it starts, then drives them to the end."""
    args = ["--once"] if once else []
    return Proc("resume_runs", args, log_dir / f"resume_runs-{time.monotonic_ns()}.log", crash_at=crash_at)


def lease_owner_pid(owner: str) -> int:
    return int(owner.split(":")[-2])  # runner.owner_id(): host:pid:uuid


def lease_live(run: Run) -> bool:
    return (
        bool(run.lease_owner) and run.lease_expires_at is not None and run.lease_expires_at > timezone.now()
    )


def kill_all(procs: list[Proc]) -> None:
    for proc in procs:
        if getattr(proc, "popen", None) is not None:
            proc.kill()


def run_by_tag(tag: str) -> Run | None:
    return Run.objects.filter(backend_options__tag=tag).first()


def turn_payloads(run: Run) -> dict[str, Any]:
    return dict(Turn.objects.filter(run=run).values_list("key", "payload"))


def interrupted_attempts(run: Run) -> int:
    return RunEvent.objects.filter(run=run, kind="turn_restarted", payload__reason=INTERRUPTED).count()


@dataclass
class TurnRecord:
    status: str
    attempt: int
    raw_text: str
    finished: bool
    payload: Any
    error: str
    input_tokens: int
    output_tokens: int


@dataclass
class RunRecord:
    """A run as the guarantees are checked on it, read from any database (the ORM here, psycopg elsewhere)."""

    label: str
    status: str
    status_reason: str
    outcome: Any
    last_seq: int
    input_tokens: int
    output_tokens: int
    turns: dict[str, TurnRecord]
    events: list[tuple[int, str, dict[str, Any]]]  # (seq, kind, payload) in seq order

    @property
    def payloads(self) -> dict[str, Any]:
        return {key: turn.payload for key, turn in self.turns.items()}

    def counts(self, kind: str) -> Counter[str]:
        """How many events of `kind` each turn key has."""
        return Counter(payload["key"] for _, k, payload in self.events if k == kind and "key" in payload)

    def restarts_of_its_own(self) -> Counter[tuple[str, str]]:
        """(key, reason) of the restarts the debate makes itself (a reply asked to be reconsidered), not those of
        an interrupted attempt."""
        return Counter(
            (payload["key"], str(payload.get("reason", "")))
            for _, kind, payload in self.events
            if kind == "turn_restarted" and payload.get("reason") != INTERRUPTED
        )


def run_record(run: Run) -> RunRecord:
    run.refresh_from_db()
    return RunRecord(
        label=f"run {run.pk} ({run.backend_options.get('tag') or run.protocol})",
        status=run.status,
        status_reason=run.status_reason,
        outcome=run.outcome,
        last_seq=run.last_seq,
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        turns={
            t.key: TurnRecord(
                status=t.status,
                attempt=t.attempt,
                raw_text=t.raw_text,
                finished=t.finished_at is not None,
                payload=t.payload,
                error=t.error,
                input_tokens=t.input_tokens,
                output_tokens=t.output_tokens,
            )
            for t in Turn.objects.filter(run=run)
        },
        events=list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "kind", "payload")),
    )


def exactly_once_problems(record: RunRecord, reference: RunRecord | dict[str, Any]) -> list[str]:
    """G1 + G2 for a run that lived through kills or outages, against an uninterrupted run of the same debate
    (same protocol, config and seed), or only its turns' payloads: every turn of that run committed exactly once,
    with the same content, and an event log without gaps or doubles. What is wrong, in words (empty: nothing)."""
    payloads = reference.payloads if isinstance(reference, RunRecord) else reference
    problems: list[str] = []
    turns = record.turns
    if record.status != "completed":
        errors = {key: t.error for key, t in turns.items() if t.error}
        problems.append(f"{record.status} {record.status_reason}; turn errors {errors}")
    if isinstance(reference, RunRecord) and record.outcome != reference.outcome:
        problems.append("its outcome differs from the uninterrupted run's")
    if set(turns) != set(payloads):
        problems.append(
            f"turns missing {sorted(set(payloads) - set(turns))}, extra {sorted(set(turns) - set(payloads))}"
        )
    if not_committed := sorted(key for key, t in turns.items() if t.status != "committed"):
        problems.append(f"turns not committed: {not_committed}")
    seqs = [seq for seq, _, _ in record.events]
    if seqs != list(range(1, record.last_seq + 1)):
        problems.append(f"event seqs are not 1..{record.last_seq}")
    once = dict.fromkeys(payloads, 1)
    if (commits := record.counts("turn_committed")) != once:
        problems.append(f"commits {dict(commits)}")
    if (starts := record.counts("turn_started")) != once:
        problems.append(f"starts {dict(starts)}")
    failures = record.counts("turn_failed")
    expected_failures = reference.counts("turn_failed") if isinstance(reference, RunRecord) else Counter()
    if failures != expected_failures:
        problems.append(f"failed attempts {dict(failures)}")
    if isinstance(reference, RunRecord) and record.restarts_of_its_own() != reference.restarts_of_its_own():
        problems.append("its turns were asked to reconsider other replies than the uninterrupted run's")
    restarts = record.counts("turn_restarted")
    for key, turn in turns.items():
        # Every new attempt is recorded by exactly one turn_restarted event, in the same transaction.
        if turn.attempt != 1 + restarts[key]:
            problems.append(f"{key} attempt {turn.attempt}, restarts {restarts[key]}")
        if not turn.raw_text or not turn.finished:
            problems.append(f"{key} has no text or no finish time")
    # The content is what an uninterrupted run produces: no half-attempt text, nothing mixed up.
    if record.payloads != payloads:
        differ = sorted(key for key in payloads if record.payloads.get(key) != payloads[key])
        problems.append(f"payloads differ from the uninterrupted run's: {differ}")
    # Usage is counted once per turn (a repeated commit would count it twice).
    if record.input_tokens != sum(t.input_tokens for t in turns.values()):
        problems.append("input tokens counted more than once")
    if record.output_tokens != sum(t.output_tokens for t in turns.values()):
        problems.append("output tokens counted more than once")
    return problems


def assert_run_finished_exactly_once(run: Run, reference: dict[str, Any]) -> None:
    """G1 + G2 for a cross-examination that survived kills: every expected turn committed exactly once, with the
    same content an uninterrupted run produces, and an event log without gaps or doubles."""
    record = run_record(run)
    assert set(reference) == EXPECTED_KEYS, f"the reference run has turns {sorted(reference)}"
    assert record.outcome and record.outcome.get("mode") == "full" or record.status != "completed", (
        f"{record.label}: outcome {record.outcome!r}"
    )
    problems = exactly_once_problems(record, reference)
    assert not problems, f"{record.label}: " + "; ".join(problems)
