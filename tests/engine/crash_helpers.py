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


def assert_run_finished_exactly_once(run: Run, reference: dict[str, Any]) -> None:
    """G1 + G2 for a run that survived kills: every expected turn committed exactly once, with the same content
    an uninterrupted run produces, and an event log without gaps or doubles."""
    run.refresh_from_db()
    label = f"run {run.pk} ({run.backend_options.get('tag')})"
    errors = dict(Turn.objects.filter(run=run).exclude(error="").values_list("key", "error"))
    assert run.status == "completed", f"{label}: {run.status} {run.status_reason}; turn errors {errors}"
    assert run.outcome and run.outcome["mode"] == "full", f"{label}: outcome {run.outcome!r}"

    turns = {t.key: t for t in Turn.objects.filter(run=run)}
    assert set(turns) == EXPECTED_KEYS, label
    assert {t.status for t in turns.values()} == {"committed"}, label

    events = list(RunEvent.objects.filter(run=run).order_by("seq"))
    assert [e.seq for e in events] == list(range(1, run.last_seq + 1)), f"{label}: seqs are not 1..last_seq"
    by_kind: dict[str, Counter[str]] = {}
    for event in events:
        if "key" in event.payload:
            by_kind.setdefault(event.kind, Counter())[event.payload["key"]] += 1
    assert by_kind["turn_committed"] == dict.fromkeys(EXPECTED_KEYS, 1), (
        f"{label}: commits {by_kind['turn_committed']}"
    )
    assert by_kind["turn_started"] == dict.fromkeys(EXPECTED_KEYS, 1), (
        f"{label}: starts {by_kind['turn_started']}"
    )
    assert "turn_failed" not in by_kind, label
    restarts = by_kind.get("turn_restarted", Counter())
    for key, turn in turns.items():
        # Every new attempt is recorded by exactly one turn_restarted event, in the same transaction.
        assert turn.attempt == 1 + restarts[key], (
            f"{label}: {key} attempt {turn.attempt}, restarts {restarts[key]}"
        )
        assert turn.raw_text and turn.finished_at is not None, f"{label}: {key}"

    # The content is what an uninterrupted run produces: no half-attempt text, nothing mixed up.
    assert turn_payloads(run) == reference, f"{label}: payloads differ from the uninterrupted reference run"
    # Usage is counted once per turn (a repeated commit would count it twice).
    assert run.input_tokens == sum(t.input_tokens for t in turns.values()), label
    assert run.output_tokens == sum(t.output_tokens for t in turns.values()), label
