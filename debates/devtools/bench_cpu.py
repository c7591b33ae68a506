"""`manage.py bench cpu`: what a debate costs the server's CPU, and how soon its text shows.

The one-laptop server (`manage.py serve`: Daphne, in-memory layer, the debates on its own loop) runs the reference
debate, the consultation demo (three agents and a judge), against a model paced as a real one (time to first token
--ttft, --cps characters per second), while one websocket viewer watches it as the run page does. The model answers
in one of two ways (--backends, both by default, one after the other in one run): the simulated backend, paced in
the server's own process (its pacing counts as the server's work), or the real Anthropic SDK in the server against
the fake model server (debates.devtools.fake_llm) run in the bench's process, which streams the same answers at the
same pace in 12-character events, as a real stream comes: the SDK's work on every event counts, the fake model's
does not (the peer was measured so). The server's own CPU time (user + system, from /proc) over the debate, from
the moderator's start to the viewer having the final frame, is the figure: per debate, and per 1,000 characters
streamed. The same viewer's frames give the delay from each turn's first token (Turn.first_token_at, written by the
server) to the first frame that shows the text, p95 over the turns.

Reference: karpathy's llm-council, measured on the machine of issue 24 with the same fake model (8 calls, no
streaming, FastAPI writing JSON files): 0.23 s per debate. It is not vendored, so by default this bench prints that
figure as the reference and judges the absolute targets set on that machine. `--peer CMD` measures the peer on this
machine instead, side by side: CMD (run before the first backend's debates and after each backend's; split as a
shell would, not run by one) prints the peer's CPU per debate in seconds as the last line of its output; each
backend is then judged against 1.5x the mean of the peer's figures before and after its debates (the target's own
definition), and the CPU per 1,000 characters against its target scaled by how much dearer the peer is here than on
the issue's machine."""

from __future__ import annotations

import asyncio
import contextlib
import html
import os
import re
import shlex
import signal
import statistics
import subprocess
import time
from collections.abc import Iterator
from typing import Any
from unittest import mock

from debates.devtools.bench_fanout import (
    BENCH_MODERATOR,
    BENCH_VIEWER,
    STATUS,
    BenchBroke,
    Server,
    percentile,
    process_cpu,
    runs_watch,
    session_cookie,
)
from debates.devtools.fake_llm import FakeLLMServer
from debates.models import Run, Turn
from debates.services.demos import run_headless_demo_create

TOPIC_PREFIX = "[bench-cpu] "
BACKENDS = {
    "simulated": "simulated backend (the model paced in the server's own process)",
    "anthropic": "Anthropic SDK against a fake model server in the bench's process (as the peer was measured)",
}
REFERENCE_PEER_CPU = 0.23  # llm-council, s per debate (measured for issue 24 on its machine, same fake model)
TARGET_CPU_PER_DEBATE = 0.35  # within 1.5x of a peer that does not stream at all
TARGET_CPU_PER_1000_CHARS = 0.04
TARGET_FIRST_TEXT_MS = 100.0  # after the model's first token, p95
TARGET_PEER_RATIO = 1.5  # CPU per debate, against the peer measured on the same machine
PEER_TIMEOUT_SECONDS = 900.0  # one run of the peer command
LIVE_PART = re.compile(r'id="(turn-[^"]+)-live"')
CURSOR = re.compile(r'<span class="cursor">.*?</span>', re.S)
TAG = re.compile(r"<[^>]+>")


def _first_text_at(frames: list[tuple[float, str]]) -> dict[str, float]:
    """For each turn (its dom id), when the viewer first got a live frame of it showing some text: its live body
    with the tags and the streaming cursor taken out is not blank."""
    shown: dict[str, float] = {}
    for arrived, frame in frames:
        if STATUS.search(frame):
            continue  # an event's frame (a turn's card as it starts or ends), not a live one
        marks = list(LIVE_PART.finditer(frame))
        for index, mark in enumerate(marks):
            dom = mark.group(1)
            stop = marks[index + 1].start() if index + 1 < len(marks) else len(frame)
            body = CURSOR.sub("", frame[mark.end() : stop])
            if dom not in shown and html.unescape(TAG.sub("", body.split(">", 1)[-1])).strip():
                shown[dom] = arrived
    return shown


@contextlib.contextmanager
def _model(backend: str, *, ttft: float, cps: float) -> Iterator[None]:
    """Where the debates' model answers. `simulated`: in the server's own process (the simulated backend paces its
    stream there, so its cost counts as the server's). `anthropic`: the real Anthropic SDK in the server, against
    the fake model server run here, in this process (as the peer was measured: its fake model's work is not its
    server's), streaming at the same pace; a fake key, only in the server's environment."""
    if backend == "simulated":
        yield
        return
    chunk = 12
    with (
        FakeLLMServer(ttft=ttft, chunk_chars=chunk, chunk_delay=chunk / cps if cps else 0.0) as fake,
        # The server started inside inherits them; this process has them back as they were afterwards.
        mock.patch.dict(os.environ, {"ANTHROPIC_API_KEY": "bench-fake-key", "ANTHROPIC_BASE_URL": fake.url}),
    ):
        yield


def measure_cpu(
    *,
    runs: int,
    ttft: float,
    cps: float,
    protocol: str = "consultation",
    backend: str = "simulated",
    warmups: int = 1,
) -> dict[str, Any]:
    """`warmups` debates first, reported apart and left out of the medians: a server's first debate pays what it
    pays once (the SDK's lazy imports, its first connection to the model: 1.7 s against 0.4-0.7 s for each
    debate after it), and the server runs many."""
    viewer_cookie = session_cookie(BENCH_VIEWER, moderate=False)
    moderator_cookie = session_cookie(BENCH_MODERATOR, moderate=True)
    rows: list[dict[str, Any]] = []
    with _model(backend, ttft=ttft, cps=cps), Server("inmemory", "", 1, 1) as server:
        pid = server.popens["server"].pid
        time.sleep(1)  # the server's start-up work is not the debate's
        for n in range(warmups + runs):
            run = run_headless_demo_create(
                protocol=protocol,
                seed=100 + n,
                backend=backend,
                backend_options={"ttft": ttft, "cps": cps} if backend == "simulated" else {},
            )
            Run.objects.filter(pk=run.pk).update(topic=TOPIC_PREFIX + run.topic, pause_requested=True)
            before = process_cpu(pid)
            started = time.monotonic()
            try:
                audience = asyncio.run(runs_watch(server, [run.pk], 1, viewer_cookie, moderator_cookie))
            except (BenchBroke, OSError, TimeoutError) as error:
                raise BenchBroke(f"{error}\nthe server's output:\n{server.output()}") from error
            cpu = process_cpu(pid) - before
            turns = list(Turn.objects.filter(run=run).only("key", "raw_text", "first_token_at"))
            shown = _first_text_at(audience[0].frames)
            delays = [
                (shown[t.dom_id] - t.first_token_at.timestamp()) * 1000
                for t in turns
                if t.first_token_at and t.dom_id in shown
            ]
            chars = sum(len(t.raw_text) for t in turns)
            rows.append(
                {
                    "cpu": cpu,
                    "wall": time.monotonic() - started,
                    "turns": len(turns),
                    "chars": chars,
                    "cpu_per_1000": cpu / max(chars / 1000, 1e-9),
                    "first_text_ms": delays,
                }
            )
    warmup_rows, rows = rows[:warmups], rows[warmups:]
    delays = [d for row in rows for d in row["first_text_ms"]]
    return {
        "protocol": protocol,
        "backend": backend,
        "warmups": warmup_rows,
        "rows": rows,
        "cpu": statistics.median(r["cpu"] for r in rows),
        "cpu_per_1000": statistics.median(r["cpu_per_1000"] for r in rows),
        "first_text_p95_ms": percentile(delays, 0.95),
        "first_text_turns": len(delays),
    }


def peer_argv(command: str) -> list[str]:
    """`--peer` as the argv it runs (split as a POSIX shell would, but not run by one: `sh -c '...'` for pipes)."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise BenchBroke(f"--peer {command!r} is not a command line: {error}") from None
    if not argv:
        raise BenchBroke("--peer is empty: give the command that measures the peer")
    return argv


def peer_cpu(command: str) -> float:
    """The reference peer's CPU per debate on this machine, in seconds: the last line of what `command` prints.
    It runs in a session of its own, so a timeout stops whatever it started (the peer's server, its fake model)."""
    try:
        process = subprocess.Popen(
            peer_argv(command),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as error:
        raise BenchBroke(f"--peer {command!r} could not run: {error}") from error
    try:
        out, err = process.communicate(timeout=PEER_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise BenchBroke(
            f"--peer {command!r} gave no figure within {PEER_TIMEOUT_SECONDS:.0f} s; stopped"
        ) from None
    if process.returncode != 0:
        raise BenchBroke(
            f"--peer {command!r} exited with {process.returncode}: {err.strip()[-500:] or '(no error output)'}"
        )
    lines = out.strip().splitlines()
    last = lines[-1].strip() if lines else ""
    try:
        seconds = float(last)
    except ValueError:
        raise BenchBroke(
            f"--peer {command!r}: its last line should be the peer's CPU per debate in seconds, not {last!r}"
        ) from None
    if not 0 < seconds < 3600:
        raise BenchBroke(f"--peer {command!r}: {seconds} s is not a CPU time per debate")
    return seconds


def bench_cpu_cleanup() -> None:
    Run.objects.filter(topic__startswith=TOPIC_PREFIX).delete()
