"""Writes: finding the runs left without a live runner (a worker died, a wake-up was lost) and waking them."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from debates.models import Run, RunEvent, RunStatus
from debates.services.runs import run_wake
from debates.tasks import run_debate_task


def runs_resumable(*, now: datetime | None = None) -> tuple[list[int], datetime | None]:
    """Runs that should be running but have no live runner, and when the next still-leased one expires. A paused
    run counts once it was resumed (or given a step), and one waiting for a human once answered: the wake-up may
    have died with a worker."""
    now = now or timezone.now()
    # A run waiting for a human has been answered when anything was recorded after it began to wait (its runner
    # records a fresh run_status whenever it decides to wait again): the human's wake-up may have died too.
    status_seq = Subquery(
        RunEvent.objects.filter(run=OuterRef("pk"), kind="run_status").order_by("-seq").values("seq")[:1]
    )
    answered = (
        Run.objects.filter(status=RunStatus.AWAITING_HUMAN)
        .annotate(status_seq=status_seq)
        .filter(last_seq__gt=F("status_seq"))
        .values("pk")
    )
    candidates = Run.objects.filter(
        Q(status__in=[RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.PAUSED]) | Q(pk__in=answered)
    ).filter(Q(pause_requested=False) | Q(step_credits__gt=0))
    ready = list(
        candidates.filter(
            Q(lease_owner="") | Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)
        ).values_list("pk", flat=True)
    )
    leased = candidates.exclude(lease_owner="").filter(lease_expires_at__gte=now)
    next_expiry = min((r for r in leased.values_list("lease_expires_at", flat=True) if r), default=None)
    return ready, next_expiry


# A wake-up task is queued just after the change that calls for it commits: a run changed this recently is about to
# be taken by the worker that takes that task.
TAKEOVER_GRACE_SECONDS = 1.0


def runs_to_take_over(*, now: datetime | None = None) -> list[int]:
    """The runs an idle worker of the database task queue should take over: those runs_resumable finds, less those
    another worker is about to drive, namely a run whose wake-up task is still queued and one changed within
    TAKEOVER_GRACE_SECONDS (its wake-up is being queued). Were such a run taken over too, the worker that then takes
    its task would wait for the lease as long as the debate goes on."""
    from django_tasks_db.models import DBTaskResult

    now = now or timezone.now()
    ready, _ = runs_resumable(now=now)
    if not ready:
        return []
    queued = {
        args_kwargs["args"][0]
        for args_kwargs in DBTaskResult.objects.ready()
        .filter(task_path=run_debate_task.module_path)
        .values_list("args_kwargs", flat=True)
    }
    changed = set(
        RunEvent.objects.filter(
            run_id__in=ready, created_at__gt=now - timedelta(seconds=TAKEOVER_GRACE_SECONDS)
        ).values_list("run_id", flat=True)
    )
    return [run_id for run_id in ready if run_id not in queued and run_id not in changed]


def runs_resume_due() -> list[int]:
    ready, _ = runs_resumable()
    for run_id in ready:
        run_wake(run_id=run_id)
    return ready


def lease_seconds_left(expiry: datetime | None) -> float:
    if expiry is None:
        return 0.0
    return max(0.0, (expiry - timezone.now()) / timedelta(seconds=1))
