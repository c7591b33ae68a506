"""The run's lease: one runner at a time drives a run. A runner takes the lease, renews it while it works and
gives it back when it stops; a runner that dies lets it expire, and the next one takes the run over. Every write a
runner makes under the run's row lock first checks it still holds the lease (`locked_run`)."""

from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from debates.models import ACTIVE_STATUSES, Run
from debates.platform.conf import conf


class LeaseLost(Exception):
    pass


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_try_acquire(run_id: int, owner: str) -> bool:
    now = timezone.now()
    ttl = timedelta(seconds=conf("LEASE_SECONDS"))
    with transaction.atomic():
        taken = (
            Run.objects.filter(pk=run_id, status__in=ACTIVE_STATUSES)
            .filter(
                Q(lease_owner="")
                | Q(lease_expires_at__isnull=True)
                | Q(lease_expires_at__lt=now)
                | Q(lease_owner=owner)
            )
            .update(lease_owner=owner, lease_expires_at=now + ttl, heartbeat_at=now)
        )
    return bool(taken)


def lease_renew(run_id: int, owner: str) -> bool:
    now = timezone.now()
    ttl = timedelta(seconds=conf("LEASE_SECONDS"))
    renewed = Run.objects.filter(pk=run_id, lease_owner=owner).update(
        lease_expires_at=now + ttl, heartbeat_at=now
    )
    return bool(renewed)


def lease_release(run_id: int, owner: str) -> None:
    Run.objects.filter(pk=run_id, lease_owner=owner).update(lease_owner="", lease_expires_at=None)


def locked_run(run_id: int, owner: str) -> Run:
    """The run's row, locked for this transaction; LeaseLost if another runner holds it now."""
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.lease_owner != owner:
        raise LeaseLost(f"run {run_id} is leased by {run.lease_owner or 'nobody'}")
    return run
