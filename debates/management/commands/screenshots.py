"""`manage.py screenshots`: regenerate the README's screenshots by driving the demo in Chromium — a live run while
its turns stream, and a comparison's scorecard with the pick form above it. The demo runs in a child process on a
throwaway SQLite database, with simulated agents; nothing of this machine's database is touched."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from debates.devtools.browser import CHROMIUM_ARGS, chromium_path

START_SECONDS = 60
WAIT_MS = 60_000


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Command(BaseCommand):
    help = "Regenerate docs/screenshots/*.png (the README's) from the demo, in Chromium."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--out", default=str(settings.BASE_DIR / "docs" / "screenshots"))
        parser.add_argument("--chromium", default=chromium_path())

    def handle(self, *args: Any, out: str, chromium: str, **options: Any) -> None:
        from playwright.sync_api import expect, sync_playwright  # a test extra: only this command needs it

        if not Path(chromium).exists():
            raise CommandError(
                f"No Chromium at {chromium}: install it (apt-get install chromium) or pass --chromium."
            )
        target = Path(out)
        target.mkdir(parents=True, exist_ok=True)
        port = _free_port()
        with tempfile.TemporaryDirectory(prefix="disputa-shots-") as scratch:
            env = {
                **os.environ,
                "DATABASE_URL": f"sqlite:///{scratch}/demo.sqlite3",
                "DISPUTA_VAR_DIR": scratch,
                "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            }
            for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "REDIS_URL", "DISPUTA_TASKS_BACKEND"):
                env.pop(name, None)  # the demo as a fresh machine runs it: one process, simulated agents
            demo = subprocess.Popen(
                [sys.executable, "manage.py", "demo", "--port", str(port), "--simulated"],
                cwd=settings.BASE_DIR,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            try:
                printed = self._until_listening(demo)
                password = re.search(r"moderator\s+username 'moderator'\s+password '([^']+)'", printed)
                live = re.search(r"open\s+(http://\S+)", printed)
                comparison = re.search(r"comparison\s+(http://\S+)", printed)
                if not (password and live and comparison):
                    raise CommandError(f"The demo did not print its addresses and password:\n{printed}")
                base = f"http://127.0.0.1:{port}"
                with sync_playwright() as playwright:
                    browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                    page = browser.new_page(viewport={"width": 1440, "height": 900})
                    page.goto(f"{base}/accounts/login/")
                    page.get_by_label("Username").fill("moderator")
                    page.get_by_label("Password").fill(password.group(1))
                    page.get_by_role("button", name="Log in").click()
                    page.wait_for_url(f"{base}/")

                    page.goto(live.group(1).replace(f"http://127.0.0.1:{port}", base))
                    expect(page.locator("#transcript article.turn-streaming").first).to_be_visible(
                        timeout=WAIT_MS
                    )
                    page.wait_for_timeout(1500)  # a few tokens more on screen
                    page.screenshot(path=str(target / "live-run.png"))

                    page.goto(comparison.group(1).replace(f"http://127.0.0.1:{port}", base))
                    expect(page.locator("#pick-form")).to_be_visible(timeout=WAIT_MS)
                    expect(page.locator("#scorecard")).to_be_visible(timeout=WAIT_MS)
                    page.locator("#pick").scroll_into_view_if_needed()
                    page.screenshot(path=str(target / "scorecard-pick.png"))
                    browser.close()
            finally:
                demo.terminate()
                try:
                    demo.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    demo.kill()
        for name in ("live-run.png", "scorecard-pick.png"):
            self.stdout.write(f"wrote {target / name}")

    def _until_listening(self, demo: subprocess.Popen[str]) -> str:
        """What the demo printed up to "listening" (its accounts, addresses and password)."""
        assert demo.stdout is not None
        printed = ""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            line = demo.stdout.readline()
            if not line:
                if demo.poll() is not None:
                    raise CommandError(f"The demo exited ({demo.returncode}):\n{printed}")
                continue
            printed += line
            if "is listening on" in line:
                return printed
        raise CommandError(f"The demo did not start within {START_SECONDS} s:\n{printed}")
