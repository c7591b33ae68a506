"""The budget: a stop before a call that could go over is re-checked under the run's lock."""

from decimal import Decimal

import pytest

from debates.engine.budget import BudgetExceeded, run_budget_stop
from debates.models import Run


@pytest.mark.django_db(transaction=True)
class BudgetStopTests:
    """The stop is re-checked under the run's lock once the stage's other calls have ended."""

    def _stop(self, run, **budget):
        Run.objects.filter(pk=run.pk).update(lease_owner="me", **budget)
        return run_budget_stop(
            run.pk, "me", BudgetExceeded("Budget reached: …", cost_usd=Decimal("0.5"), tokens=10)
        )

    def test_it_stops_when_the_call_still_does_not_fit(self, make_run):
        seq, stopped = self._stop(make_run(), budget_usd=Decimal("0.1"))
        assert stopped and seq is not None
        run = Run.objects.get()
        assert run.status == "paused" and run.budget_stopped and run.pause_requested

    def test_a_cancel_requested_meanwhile_wins(self, make_run):
        assert self._stop(make_run(), budget_usd=Decimal("0.1"), cancel_requested=True) == (None, False)
        assert not Run.objects.get().budget_stopped

    def test_a_budget_raised_meanwhile_lets_the_run_go_on(self, make_run):
        assert self._stop(make_run(), budget_usd=Decimal("5")) == (None, False)
        assert Run.objects.get().status == "queued"
