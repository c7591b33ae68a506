"""A Redis server of a test's own (`redis-server` on a free port, nothing saved to disk), so a test can stop and
restart it without touching the machine's server that other work uses."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

from tests.engine.crash_helpers import _die_with_parent, free_port


def _binary() -> str:
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else ""
    )
    if not found:
        pytest.fail("a throwaway Redis needs redis-server", pytrace=False)
    return found


class ThrowawayRedis:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="disputa-redis-"))
        self.port = free_port()
        self.binary = _binary()
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def ping(self) -> bool:
        try:
            return bool(redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1).ping())
        except redis.RedisError:
            return False

    def start(self, timeout: float = 30) -> None:
        """Start it (again, on the same port) and wait until it answers."""
        with (self.root / "server.log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    self.binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.root),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + timeout
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start:\n{self.log()}", pytrace=False)
            time.sleep(0.05)

    def stop(self) -> None:
        """As a crash does: SIGKILL, every connection dropped at once, nothing kept (it saves nothing anyway)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
