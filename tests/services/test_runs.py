"""Services: human actions are committed before anything answers, applied once, and wake the runner."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from debates.models import HumanAction, Run, RunEvent
from debates.services import runs as services
from tests.conftest import run_to_stop


@pytest.mark.django_db(transaction=True)
class ControlTests:
    def test_pause_stops_between_turns_and_step_runs_exactly_one(self, make_run, moderator):
        run = make_run()
        services.run_control(run_id=run.pk, action="pause", user=moderator)
        assert run_to_stop(run) == "paused"
        assert run.status == "paused" and run.turns.count() == 0

        services.run_control(run_id=run.pk, action="step", user=moderator)
        assert run_to_stop(run) == "paused"
        assert list(run.turns.values_list("key", flat=True)) == ["r1/analysis/analyst-ada"]

        services.run_control(run_id=run.pk, action="resume", user=moderator)
        assert run_to_stop(run) == "done"
        assert run.status == "completed" and run.turns.count() == 8

    def test_cancel_of_a_paused_run_is_final(self, make_run, moderator):
        run = make_run()
        services.run_control(run_id=run.pk, action="pause", user=moderator)
        run_to_stop(run)
        services.run_control(run_id=run.pk, action="cancel", user=moderator)
        run.refresh_from_db()
        assert run.status == "cancelled"
        with pytest.raises(services.ActionRefused, match="cancelled"):
            services.run_control(run_id=run.pk, action="resume", user=moderator)
        kinds = list(RunEvent.objects.filter(run=run).values_list("kind", flat=True))
        assert kinds[-2:] == ["control", "run_status"]


@pytest.mark.django_db(transaction=True)
class CostGateTests:
    """Seed 001's cost gate: a paid run above the consent threshold waits for a moderator before any call."""

    def test_a_run_above_the_threshold_waits_for_consent_and_calls_nothing(
        self, make_run, anthropic_api, settings, moderator
    ):
        settings.DISPUTA = {**settings.DISPUTA, "CONSENT_THRESHOLD_USD": "0.01"}
        run = make_run(backend="anthropic", model="claude-sonnet-5-5", backend_options={})
        assert run.consent == "required" and run.status == "awaiting_human"
        assert run.awaiting == ["consent"]
        assert run.estimate_usd > Decimal("0.01")
        assert f"${run.estimate_usd:.2f}" in run.status_reason
        assert run_to_stop(run) == "waiting"  # a runner that starts anyway (e.g. resume) calls nothing
        assert not anthropic_api.requests and not run.turns.exists()

        key = uuid.uuid4()
        assert services.run_consent(run_id=run.pk, approve=True, user=moderator, client_uuid=key)
        assert not services.run_consent(run_id=run.pk, approve=True, user=moderator, client_uuid=key)
        run.refresh_from_db()
        assert (run.consent, run.status) == ("approved", "queued")
        assert f"approved by {moderator.username}" in run.status_reason
        assert run_to_stop(run) == "done"
        assert HumanAction.objects.filter(run=run, kind="consent").count() == 1

    def test_declining_cancels_the_run_without_a_call(self, make_run, anthropic_api, settings, moderator):
        settings.DISPUTA = {**settings.DISPUTA, "CONSENT_THRESHOLD_USD": "0.01"}
        run = make_run(backend="anthropic", model="claude-sonnet-5-5", backend_options={})
        services.run_consent(run_id=run.pk, approve=False, user=moderator)
        run.refresh_from_db()
        assert run.status == "cancelled" and "; no model was called" in run.status_reason
        assert not anthropic_api.requests

    def test_under_the_threshold_the_run_is_approved_automatically(self, make_run, anthropic_api):
        run = make_run(backend="anthropic", model="claude-sonnet-5-5", backend_options={})
        assert run.consent == "auto" and run.status == "queued"
        event = RunEvent.objects.get(run=run, kind="cost_estimated")
        assert event.payload["consent"] == "auto" and event.payload["threshold"] == "0.50"
        assert Decimal(event.payload["estimate"]["cost_usd"]) == run.estimate_usd < Decimal("0.50")

    def test_simulated_runs_cost_nothing_and_need_no_estimate(self, make_run):
        run = make_run()
        assert run.consent == "" and run.estimate is None and run.status == "queued"

    def test_the_estimate_grows_with_the_material_and_errs_high(self, make_run, anthropic_api):
        from tests.conftest import LONG_MATERIAL

        short = make_run(backend="anthropic", model="claude-sonnet-5-5", backend_options={})
        long = make_run(
            backend="anthropic", model="claude-sonnet-5-5", backend_options={}, material=LONG_MATERIAL
        )
        assert long.estimate_usd > short.estimate_usd
        run_to_stop(long)
        assert long.cost_usd < long.estimate_usd  # the estimate assumes no cache hits


@pytest.mark.django_db(transaction=True)
class BudgetServiceTests:
    def test_setting_a_budget_is_recorded_once(self, make_run, moderator):
        run = make_run()
        key = uuid.uuid4()
        args = {"run_id": run.pk, "budget_usd": Decimal("2"), "budget_tokens": 1000, "user": moderator}
        assert services.run_budget_set(**args, client_uuid=key)
        assert not services.run_budget_set(**args, client_uuid=key)
        run.refresh_from_db()
        assert (run.budget_usd, run.budget_tokens) == (Decimal("2"), 1000)
        assert RunEvent.objects.filter(run=run, kind="budget_set").count() == 1

    def test_a_token_budget_stops_a_simulated_run_and_raising_it_resumes(self, make_run, moderator):
        run = make_run(budget_tokens=15_000)
        assert run_to_stop(run) == "paused"
        assert run.budget_stopped and run.status_reason.startswith("Token budget reached:")
        assert run.total_tokens <= 15_000
        services.run_budget_set(run_id=run.pk, budget_usd=None, budget_tokens=None, user=moderator)
        run.refresh_from_db()
        assert not run.budget_stopped and not run.pause_requested
        assert run_to_stop(run) == "done"

    def test_a_finished_run_refuses_a_budget_change(self, make_run, moderator):
        run = make_run()
        run_to_stop(run)
        with pytest.raises(services.ActionRefused, match="completed"):
            services.run_budget_set(run_id=run.pk, budget_usd=Decimal(1), budget_tokens=None, user=moderator)


@pytest.mark.django_db(transaction=True)
class CostGuardTests:
    def test_a_cancelled_run_cannot_be_approved_back_to_life(
        self, make_run, anthropic_api, settings, moderator
    ):
        settings.DISPUTA = {**settings.DISPUTA, "CONSENT_THRESHOLD_USD": "0.01"}
        run = make_run(backend="anthropic", model="claude-sonnet-5-5", backend_options={})
        services.run_control(run_id=run.pk, action="cancel", user=moderator)
        with pytest.raises(services.ActionRefused, match="cancelled; it can no longer be started"):
            services.run_consent(run_id=run.pk, approve=True, user=moderator)
        run.refresh_from_db()
        assert run.status == "cancelled"

    def test_declining_is_recorded_as_declined(self, make_run, anthropic_api, settings, moderator):
        settings.DISPUTA = {**settings.DISPUTA, "CONSENT_THRESHOLD_USD": "0.01"}
        run = make_run(backend="anthropic", model="claude-sonnet-5-5", backend_options={})
        services.run_consent(run_id=run.pk, approve=False, user=moderator)
        run.refresh_from_db()
        assert run.consent == "declined"

    def test_a_model_the_backend_does_not_offer_is_refused_at_creation(self, make_run, anthropic_api):
        with pytest.raises(ValueError, match="model: Anthropic does not offer 'claude-nope'"):
            make_run(backend="anthropic", model="claude-nope", backend_options={})

    def test_a_dollar_budget_needs_priced_models(self, make_run, openai_api):
        with pytest.raises(ValueError, match="budget_usd: local-model has no price in DISPUTA_PRICES"):
            make_run(backend="openai", model="local-model", backend_options={}, budget_usd=Decimal(1))
        run = make_run(backend="openai", model="local-model", backend_options={}, budget_tokens=50_000)
        assert run.budget_tokens == 50_000


@pytest.mark.django_db
def test_creating_a_run_loads_its_view_once_for_the_estimate_and_the_first_states(monkeypatch, settings):
    """A simulated consultation is estimated (its gate shows without a key) and has a state machine: both read
    the run's view, which run_create loads once; the states still see the gate's answer."""
    from debates.engine import turns, view
    from debates.services import estimates

    settings.DISPUTA = {**settings.DISPUTA, "CONSENT_THRESHOLD_USD": "0"}
    loads = []
    real = view.run_view_load

    def counting(run, *args, **kwargs):
        loads.append(run.pk)
        return real(run, *args, **kwargs)

    for module in (services, estimates, turns):
        monkeypatch.setattr(module, "run_view_load", counting)
    run = services.run_create(
        protocol="consultation",
        topic="Adopt trunk-based development?",
        config={"agents": [{"name": "Ana", "lens": "delivery"}, {"name": "Ben", "lens": "risk"}]},
        backend="simulated",
        seed=3,
        start=True,
        enqueue=False,
    )
    assert loads == [run.pk]
    assert run.consent == "required" and run.estimate_usd is not None
    states = list(RunEvent.objects.filter(run=run, kind="state").values_list("payload", flat=True))
    assert states and states[-1]["to"] == "awaiting_consent", states


@pytest.mark.django_db(transaction=True)
class PublishingIsBestEffortTests:
    def test_a_run_is_created_and_queued_even_when_its_events_cannot_be_published(
        self, make_run, channel_layer_down, caplog
    ):
        run = make_run()
        assert run.status == "queued"
        assert RunEvent.objects.filter(run=run, kind="run_created").exists()
        assert "viewers replay them from the database" in caplog.text

    def test_a_human_action_is_applied_even_when_its_event_cannot_be_published(
        self, make_run, moderator, channel_layer_down, caplog
    ):
        run = make_run()
        services.run_control(run_id=run.pk, action="pause", user=moderator)
        run.refresh_from_db()
        assert run.pause_requested
        assert HumanAction.objects.filter(run=run, kind="pause").count() == 1
        assert "viewers replay them from the database" in caplog.text


@pytest.mark.django_db
class RunCreateIdempotencyTests:
    def test_a_second_create_with_the_same_client_uuid_returns_the_first_run_and_starts_nothing(
        self, make_run
    ):
        key = uuid.uuid4()
        first = make_run(client_uuid=key, topic="First wording")
        events = RunEvent.objects.filter(run=first).count()
        again = make_run(client_uuid=key, topic="A resubmit may differ; the first stands")
        assert again.pk == first.pk and again.topic == "First wording"
        assert Run.objects.count() == 1
        assert RunEvent.objects.filter(run=first).count() == events

    def test_runs_without_a_client_uuid_are_never_taken_for_one_another(self, make_run):
        assert make_run().pk != make_run().pk

    def test_a_concurrent_twin_that_committed_first_is_returned_instead_of_an_error(
        self, make_run, monkeypatch
    ):
        key = uuid.uuid4()
        twin = make_run(client_uuid=key)
        # This submit looked before its twin committed: it found nothing, and its insert meets the unique uuid.
        real, calls = services.run_find_submitted, []

        def find_after_the_twin(client_uuid):
            calls.append(client_uuid)
            return None if len(calls) == 1 else real(client_uuid)

        monkeypatch.setattr(services, "run_find_submitted", find_after_the_twin)
        assert make_run(client_uuid=key).pk == twin.pk
        assert len(calls) == 2  # the look before, and the one after the insert met the twin
        assert Run.objects.count() == 1
