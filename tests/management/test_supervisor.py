"""The supervisor of `manage.py serve_scaled` (issue 25): a program that exits is started again after a growing
delay, with a line saying so, and the others are never touched; SIGINT or SIGTERM stops every program (SIGKILL
for one that ignores SIGTERM) and the supervisor exits 0. It runs here in a process of its own, as it does in
serve_scaled, supervising small Python programs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from debates.management.supervisor import Program, Supervisor
from tests.engine.crash_helpers import wait_for

pytestmark = pytest.mark.timeout(60)

# A program that prints its pid and then sleeps (ignoring SIGTERM when asked to), or exits with a code.
PROGRAM = textwrap.dedent(
    """
    import os, signal, sys, time
    print("pid", os.getpid(), flush=True)
    if sys.argv[1] == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if sys.argv[1].startswith("exit"):
        time.sleep(0.1)
        sys.exit(int(sys.argv[1][4:]))
    time.sleep(600)
    """
)


class Supervised:
    """A supervisor process over named programs (steady | stubborn | exitN), with its output in a file."""

    def __init__(self, tmp_path: Path, programs: dict[str, str], **options: float) -> None:
        self.log = tmp_path / "supervisor.log"
        listed = [Program(name, [sys.executable, "-c", PROGRAM, kind]) for name, kind in programs.items()]
        code = (
            "import sys\n"
            "from debates.management.supervisor import Program, Supervisor\n"
            f"sys.exit(Supervisor({listed!r}, **{options!r}).run())\n"
        )
        with self.log.open("wb") as out:
            self.popen = subprocess.Popen(
                [sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT, cwd=Path.cwd()
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def pids(self, name: str) -> list[int]:
        return [int(pid) for pid in re.findall(rf"^\S+ {re.escape(name)}\s+\| pid (\d+)$", self.text(), re.M)]

    def restart_delays(self, name: str) -> list[float]:
        pattern = rf"{re.escape(name)} exited with code \d+ after [\d.]+ s; restarting in ([\d.]+) s"
        return [float(delay) for delay in re.findall(pattern, self.text())]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[list[Supervised]]:
    started: list[Supervised] = []
    yield started
    for s in started:
        if s.popen.poll() is None:
            s.popen.kill()
        for name in ("steady", "stubborn", "crashing"):
            for pid in s.pids(name):
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


def test_a_program_that_exits_is_restarted_and_the_others_keep_running(tmp_path, supervised):
    s = Supervised(tmp_path, {"steady": "steady", "crashing": "exit3"}, first_backoff=0.1, max_backoff=0.2)
    supervised.append(s)
    wait_for(lambda: len(s.pids("crashing")) >= 3, 20, "the crashing program to be started three times")
    [steady] = s.pids("steady")
    assert alive(steady)  # started once, never stopped with the other
    assert "crashing exited with code 3 after" in s.text()
    assert s.popen.poll() is None


def test_the_delay_before_a_restart_doubles_while_a_program_keeps_exiting_up_to_its_cap(tmp_path, supervised):
    s = Supervised(tmp_path, {"crashing": "exit1"}, first_backoff=0.1, max_backoff=0.4)
    supervised.append(s)
    wait_for(lambda: len(s.restart_delays("crashing")) >= 5, 20, "five restarts")
    assert s.restart_delays("crashing")[:5] == [0.1, 0.2, 0.4, 0.4, 0.4]


def test_a_program_that_ran_a_while_before_exiting_is_restarted_after_the_first_delay_again(
    tmp_path, supervised
):
    # Every run counts as stable (stable_after 0): an exit after a long run is not a crash loop.
    s = Supervised(tmp_path, {"crashing": "exit1"}, first_backoff=0.1, max_backoff=5.0, stable_after=0.0)
    supervised.append(s)
    wait_for(lambda: len(s.restart_delays("crashing")) >= 3, 20, "three restarts")
    assert set(s.restart_delays("crashing")[:3]) == {0.1}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_signal_stops_every_program_and_the_supervisor_exits_0(tmp_path, supervised, signum):
    s = Supervised(tmp_path, {"web": "steady", "worker.1": "steady"}, stop_timeout=5.0)
    supervised.append(s)
    wait_for(lambda: s.pids("web") and s.pids("worker.1"), 20, "both programs to start")
    pids = s.pids("web") + s.pids("worker.1")
    s.popen.send_signal(signum)
    assert s.popen.wait(timeout=10) == 0
    assert not any(alive(pid) for pid in pids)
    assert "stopping every program" in s.text() and "restarting" not in s.text()


def test_a_program_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path, supervised):
    s = Supervised(tmp_path, {"stubborn": "stubborn"}, stop_timeout=0.5)
    supervised.append(s)
    [pid] = wait_for(lambda: s.pids("stubborn"), 20, "the program to start")
    started = time.monotonic()
    s.popen.send_signal(signal.SIGTERM)
    assert s.popen.wait(timeout=10) == 0
    assert time.monotonic() - started < 5
    assert not alive(pid)
    assert "stubborn still running after 0.5 s: SIGKILL" in s.text()


def test_a_supervisor_refuses_duplicate_names_and_an_empty_list():
    with pytest.raises(ValueError, match="unique"):
        Supervisor([Program("web", ["true"]), Program("web", ["true"])])
    with pytest.raises(ValueError, match="at least one"):
        Supervisor([])
