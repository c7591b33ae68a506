"""Load and abuse limits: how many runs one user may have going at once and start per hour (refused
with 429 by the views that start runs), and how many websocket connects one IP address may open per minute
(refused with close code 4429). A run's own spending is limited by its budget (Run.budget_usd / budget_tokens,
enforced by the runner before each call). 0 turns a limit off. Management commands (demo, run_debate, bench) are
not limited: they are the operator's own."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.utils import timezone

from debates.models import ACTIVE_STATUSES, Run
from debates.platform.conf import conf

CLOSE_TOO_MANY_CONNECTS = 4429


@dataclass(frozen=True)
class Refusal:
    reason: str
    retry_after_seconds: int


def run_start_refusal(user: Any) -> Refusal | None:
    """Why this user may not start another run now, or None. Counted in the database, so every web process
    agrees; two requests at the same instant may both pass (the limits are about load, not accounting)."""
    mine = Run.objects.filter(created_by=user)
    concurrent = conf("MAX_ACTIVE_RUNS_PER_USER")
    if concurrent:
        active = mine.filter(status__in=ACTIVE_STATUSES).count()
        if active >= concurrent:
            return Refusal(
                f"You have {active} runs queued, running, paused or waiting for a human; one user may have "
                f"{concurrent} at once (DISPUTA_MAX_ACTIVE_RUNS_PER_USER). Let one finish or cancel one, then "
                "start this one.",
                retry_after_seconds=60,
            )
    hourly = conf("MAX_RUNS_PER_HOUR")
    if hourly:
        hour_ago = timezone.now() - timedelta(hours=1)
        started = list(
            mine.filter(created_at__gt=hour_ago)
            .order_by("-created_at")
            .values_list("created_at", flat=True)[:hourly]
        )
        if len(started) >= hourly:
            # The oldest of the last `hourly` runs leaves the window first.
            wait = math.ceil((started[-1] - hour_ago).total_seconds())
            return Refusal(
                f"You started {hourly} runs in the last hour, the most one user may start "
                f"(DISPUTA_MAX_RUNS_PER_HOUR). Try again in {max(1, math.ceil(wait / 60))} min.",
                retry_after_seconds=max(1, wait),
            )
    return None


def ws_connect_allowed(ip: str) -> bool:
    """Count this connect against the address's fixed one-minute window. The count lives in the default cache:
    per process with the in-memory cache, shared by all processes with Redis (REDIS_URL)."""
    limit = conf("MAX_WS_CONNECTS_PER_MINUTE")
    if not limit:
        return True
    key = f"ws-connects:{ip}:{int(time.time() // 60)}"
    cache.add(key, 0, timeout=120)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=120)
        count = 1
    return count <= limit
