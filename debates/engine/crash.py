"""Test-only fault injection for the crash-safety suite: DISPUTA_CRASH_AT="before_commit:3,mid_stream:1" kills
this process with SIGKILL the 3rd time it reaches `before_commit` (and the 1st time `mid_stream`)."""

from __future__ import annotations

import os
import signal
from collections import Counter

from django.conf import settings

_hits: Counter[str] = Counter()


def crash_point(name: str) -> None:
    spec = str(settings.DISPUTA["CRASH_AT"])
    if not spec:
        return
    _hits[name] += 1
    for item in spec.split(","):
        point, _, count = item.partition(":")
        if point.strip() == name and _hits[name] == int(count or 1):
            os.kill(os.getpid(), signal.SIGKILL)
