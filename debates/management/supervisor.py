"""A process supervisor for `manage.py serve_scaled`: it keeps a set of programs running on one machine. A program
that exits (a worker that crashed, a Daphne that died) is started again after a growing delay, with a line saying
so, and the others are never touched; SIGINT (Ctrl-C) or SIGTERM stops them all (SIGTERM to each, SIGKILL to what
is still running after a grace period) and the supervisor exits 0.

Each program's output is passed through line by line, prefixed with the time and its name (as honcho, its
predecessor here, did; honcho stopped every program when one exited). Under systemd the same is done by the units
in deploy/ (Restart=always), one program per unit."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class Program:
    name: str
    command: list[str]


def _die_with_supervisor() -> None:
    """Linux: the child is SIGKILLed if the supervisor dies without stopping it (it was itself SIGKILLed)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Supervisor:
    """Run `programs` until asked to stop. `first_backoff` seconds before a first restart, doubling for each exit
    that follows within `stable_after` seconds of its start, up to `max_backoff`; `stop_timeout` seconds between
    SIGTERM and SIGKILL when stopping."""

    def __init__(
        self,
        programs: list[Program],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        out: TextIO = sys.stdout,
        first_backoff: float = 1.0,
        max_backoff: float = 30.0,
        stable_after: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        if not programs:
            raise ValueError("a supervisor needs at least one program")
        names = [p.name for p in programs]
        if len(set(names)) != len(names):
            raise ValueError(f"program names must be unique: {names}")
        self.programs = programs
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.out = out
        self.first_backoff = first_backoff
        self.max_backoff = max_backoff
        self.stable_after = stable_after
        self.stop_timeout = stop_timeout
        self._width = max(len(name) for name in [*names, "supervisor"])
        self._running: dict[str, asyncio.subprocess.Process] = {}
        self._stopping: asyncio.Event | None = None

    def run(self) -> int:
        """Supervise until SIGINT or SIGTERM; returns the exit code (0)."""
        return asyncio.run(self._run())

    def say(self, name: str, line: str) -> None:
        self.out.write(f"{time.strftime('%H:%M:%S')} {name:<{self._width}} | {line}\n")
        self.out.flush()

    async def _run(self) -> int:
        self._stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._stop_requested, signum)
        keepers = [asyncio.create_task(self._keep(program)) for program in self.programs]
        await self._stopping.wait()
        await self._stop_all()
        for keeper in keepers:
            keeper.cancel()
        await asyncio.gather(*keepers, return_exceptions=True)
        self.say("supervisor", "stopped")
        return 0

    def _stop_requested(self, signum: int) -> None:
        assert self._stopping is not None
        if self._stopping.is_set():  # a second Ctrl-C: no more waiting
            self.say("supervisor", f"{signal.strsignal(signum)} again: killing every program")
            self._signal_all(signal.SIGKILL)
            return
        self.say("supervisor", f"{signal.strsignal(signum)}: stopping every program")
        self._stopping.set()

    def _signal_all(self, signum: int) -> None:
        for process in self._running.values():
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signum)  # its own session: the program and its children

    async def _stop_all(self) -> None:
        self._signal_all(signal.SIGTERM)
        waits = [p.wait() for p in self._running.values() if p.returncode is None]
        if not waits:
            return
        _, pending = await asyncio.wait([asyncio.ensure_future(w) for w in waits], timeout=self.stop_timeout)
        if pending:
            still = [name for name, p in self._running.items() if p.returncode is None]
            self.say("supervisor", f"{', '.join(still)} still running after {self.stop_timeout:g} s: SIGKILL")
            self._signal_all(signal.SIGKILL)
            await asyncio.wait(pending)

    async def _keep(self, program: Program) -> None:
        """Start the program, and again each time it exits, until the supervisor stops."""
        assert self._stopping is not None
        backoff = self.first_backoff
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                process = await asyncio.create_subprocess_exec(
                    *program.command,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    env=self.env,
                    cwd=self.cwd,
                    start_new_session=True,  # Ctrl-C reaches the supervisor only, which stops them in order
                    preexec_fn=_die_with_supervisor,
                )
            except OSError as error:
                code: int | str = f"not started ({error})"
            else:
                self._running[program.name] = process
                self.say("supervisor", f"{program.name} started (pid {process.pid})")
                if self._stopping.is_set():  # started while the others were being stopped
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGTERM)
                assert process.stdout is not None
                await self._pass_output(program.name, process.stdout)
                code = await process.wait()
            if self._stopping.is_set():
                return
            ran = time.monotonic() - started
            if ran >= self.stable_after:
                backoff = self.first_backoff
            self.say(
                "supervisor",
                f"{program.name} exited with code {code} after {ran:.1f} s; restarting in {backoff:g} s",
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), backoff)
            backoff = min(self.max_backoff, backoff * 2)

    async def _pass_output(self, name: str, stream: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # a line over the stream's limit: pass on what there is
                line = await stream.read(2**16)
            if not line:
                return
            self.say(name, line.decode(errors="replace").rstrip("\n"))
