"""Services: runs left without a live runner are found once their lease expires or their wake-up is due."""

from __future__ import annotations

import pytest
from django.db import transaction

from debates.services.resume import runs_resumable


@pytest.mark.django_db(transaction=True)
class ResumeTests:
    def test_runs_with_a_dead_runner_are_found_once_the_lease_expires(self, make_run):
        from datetime import timedelta

        from django.utils import timezone

        from debates.models import Run

        alive, dead, fresh = make_run(), make_run(), make_run()
        now = timezone.now()
        Run.objects.filter(pk=alive.pk).update(
            status="running", lease_owner="x", lease_expires_at=now + timedelta(seconds=30)
        )
        Run.objects.filter(pk=dead.pk).update(
            status="running", lease_owner="y", lease_expires_at=now - timedelta(seconds=1)
        )
        ready, next_expiry = runs_resumable(now=now)
        assert sorted(ready) == sorted([dead.pk, fresh.pk])
        assert next_expiry == now + timedelta(seconds=30)

    def test_a_resumed_run_still_paused_is_found_but_not_one_paused_or_stopped_by_its_budget(self, make_run):
        """A resume wakes the runner with a task; a worker killed holding that task must not leave the run paused
        for good. A moderator's pause and a budget stop (pause requested) stay paused."""
        from debates.models import Run

        resumed, stepped, paused = make_run(), make_run(), make_run()
        Run.objects.filter(pk=resumed.pk).update(status="paused", pause_requested=False)
        Run.objects.filter(pk=stepped.pk).update(status="paused", pause_requested=True, step_credits=1)
        Run.objects.filter(pk=paused.pk).update(status="paused", pause_requested=True, budget_stopped=True)
        ready, _ = runs_resumable()
        assert resumed.pk in ready and stepped.pk in ready and paused.pk not in ready

    def test_a_run_waiting_for_a_human_is_found_once_answered_but_not_while_still_waiting(self, make_run):
        """The human's action wakes the runner with a task, which may die with a worker; the action is recorded
        after the run began to wait, and a runner that decides to wait again records a fresh status."""
        from debates.engine.events import event_append
        from debates.models import Run

        answered, waiting = make_run(), make_run()
        for run in (answered, waiting):
            with transaction.atomic():
                Run.objects.filter(pk=run.pk).update(status="awaiting_human")
                event_append(run_id=run.pk, kind="run_status", payload={"status": "awaiting_human"})
        with transaction.atomic():
            event_append(run_id=answered.pk, kind="human_action", payload={"step_key": "r1/moderator"})
        ready, _ = runs_resumable()
        assert answered.pk in ready and waiting.pk not in ready
        with transaction.atomic():  # a runner took it over and found it must still wait
            event_append(run_id=answered.pk, kind="run_status", payload={"status": "awaiting_human"})
        ready, _ = runs_resumable()
        assert answered.pk not in ready
