"""How Disputa drives Chromium (the browser tests and `manage.py screenshots`): Debian's build, whose path
CHROMIUM_PATH overrides, with the flags a container without a GPU or sandbox needs and none of its network chatter."""

from __future__ import annotations

import os

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    return os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
