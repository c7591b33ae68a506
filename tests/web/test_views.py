"""Pages and POST endpoints: login, the moderate permission, CSRF, CSP, and the human-action contract."""

from __future__ import annotations

import re
import uuid
from decimal import Decimal

import pytest
from django.test import Client

from debates.models import HumanAction, Run


@pytest.fixture
def enqueued():
    from django.tasks import default_task_backend

    default_task_backend.clear()
    return default_task_backend.results


class PageTests:
    def test_pages_need_a_login(self, db, make_run):
        run = make_run()
        for url in ["/", "/runs/new/", f"/runs/{run.pk}/"]:
            response = Client().get(url)
            assert response.status_code == 302 and "/accounts/login/" in response["Location"]

    def test_every_html_page_carries_a_strict_csp(self, moderator_client, make_run):
        run = make_run()
        for url in ["/", "/runs/new/", f"/runs/{run.pk}/", "/accounts/login/"]:
            csp = moderator_client.get(url)["Content-Security-Policy"]
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
            assert "unsafe-inline" not in csp and "unsafe-eval" not in csp

    def test_the_run_list_shows_runs_and_their_status(self, viewer_client, make_run):
        run = make_run(topic="Is remote work here to stay?")
        html = viewer_client.get("/").content.decode()
        assert "Is remote work here to stay?" in html and 'data-status="queued"' in html
        partial = viewer_client.get("/", HTTP_HX_REQUEST="true").content.decode()
        assert partial.lstrip().startswith('<div id="archive-table"') and f"run-row-{run.pk}" in partial

    def test_the_run_page_has_the_stable_ids_and_a_socket(self, viewer_client, make_run):
        run = make_run()
        html = viewer_client.get(f"/runs/{run.pk}/").content.decode()
        run.refresh_from_db()
        for dom_id in ["run-status", "transcript", "moderator", "cost", "outcome"]:
            assert f'id="{dom_id}"' in html
        assert f'ws-connect="/ws/runs/{run.pk}/?seq={run.last_seq}"' in html  # the seq the page shows
        assert "simulated" in html

    def test_a_viewer_sees_no_controls(self, viewer_client, make_run):
        run = make_run()
        html = viewer_client.get(f"/runs/{run.pk}/").content.decode()
        assert "control-pause" not in html and "watching as a viewer" in html


class NewRunTests:
    def _post(self, client, **extra):
        data = {
            "protocol": "cross-examination",
            "topic": "Should we adopt a four-day week?",
            "material": "Trials in 2022 reported stable output. Staff turnover fell.",
            "analysts": "Ada: economics\nBo: wellbeing",
            "examiner": "agent",
            "questions_per_analyst": "2",
            "backend": "simulated",
            "model": "simulated",
            "seed": "5",
            "sim_answers": "mixed",
            "sim_cps": "0",
            **extra,
        }
        return client.post("/runs/new/", data)

    def test_a_moderator_starts_a_run_and_it_is_enqueued(self, moderator_client, enqueued):
        response = self._post(moderator_client, sim_fail_analyst="on")
        run = Run.objects.get()
        assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
        assert run.status == "queued" and run.seed == 5
        assert list(run.seats.values_list("handle", flat=True)) == ["analyst-ada", "analyst-bo", "examiner"]
        assert run.backend_options["fail"] == ["r1/analysis/analyst-bo"]
        assert [r.args for r in enqueued] == [[run.pk]]

    def test_the_form_carries_a_fresh_idempotency_key_each_time_it_is_rendered(self, moderator_client):
        pattern = re.compile(r'<input type="hidden" name="client_uuid" value="([0-9a-f-]{36})"')
        keys = [pattern.search(moderator_client.get("/runs/new/").content.decode()) for _ in range(2)]
        assert all(keys) and keys[0].group(1) != keys[1].group(1)  # type: ignore[union-attr]

    def test_a_resubmitted_form_goes_to_the_run_it_created_and_starts_no_second(
        self, moderator_client, enqueued
    ):
        key = str(uuid.uuid4())
        first = self._post(moderator_client, client_uuid=key)
        again = self._post(moderator_client, client_uuid=key)
        run = Run.objects.get()
        assert first.status_code == again.status_code == 302
        assert first["Location"] == again["Location"] == f"/runs/{run.pk}/"
        assert run.client_uuid == uuid.UUID(key)
        assert [r.args for r in enqueued] == [[run.pk]]

    def test_two_renders_of_the_form_start_two_runs(self, moderator_client, enqueued):
        self._post(moderator_client, client_uuid=str(uuid.uuid4()))
        self._post(moderator_client, client_uuid=str(uuid.uuid4()))
        assert Run.objects.count() == 2

    def test_a_damaged_idempotency_key_is_a_clear_error_and_starts_nothing(self, moderator_client):
        response = self._post(moderator_client, client_uuid="not-a-uuid")
        assert (
            "This form&#x27;s id is damaged: reload the page and submit it again."
            in response.content.decode()
        )
        assert not Run.objects.exists()

    @pytest.mark.django_db(transaction=True)  # publishing happens after the commit
    def test_a_run_created_while_redis_is_down_answers_success_not_500(
        self, moderator, channel_layer_down, enqueued
    ):
        client = Client(raise_request_exception=False)
        client.force_login(moderator)
        response = self._post(client, client_uuid=str(uuid.uuid4()))
        run = Run.objects.get()
        assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
        assert [r.args for r in enqueued] == [[run.pk]]

    def test_anthropic_is_offered_disabled_with_the_reason(self, moderator_client, monkeypatch):
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        html = moderator_client.get("/runs/new/").content.decode()
        assert 'value="anthropic" disabled' in html
        assert "ANTHROPIC_API_KEY is not set" in html
        response = self._post(moderator_client, backend="anthropic")
        assert response.status_code == 200 and not Run.objects.exists()

    def test_with_a_key_a_run_on_anthropic_gets_its_models_and_budget(
        self, moderator_client, monkeypatch, enqueued
    ):
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-view-test")
        response = self._post(
            moderator_client,
            backend="anthropic",
            model="simulated",  # left at the default: the backend's default model is used
            seat_models="examiner: claude-opus-5-5",
            budget_usd="1.5",
            budget_tokens="200000",
        )
        run = Run.objects.get()
        assert response.status_code == 302
        assert (run.backend, run.model, run.budget_usd, run.budget_tokens) == (
            "anthropic",
            "claude-sonnet-5-5",
            Decimal("1.5"),
            200000,
        )
        models = dict(run.seats.values_list("handle", "model"))
        assert models == {
            "analyst-ada": "claude-sonnet-5-5",
            "analyst-bo": "claude-sonnet-5-5",
            "examiner": "claude-opus-5-5",
        }
        assert run.consent == "auto" and run.backend_options == {}

    def test_seat_models_are_checked_by_line_and_by_seat(self, moderator_client, monkeypatch):
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-view-test")
        html = self._post(
            moderator_client, backend="anthropic", seat_models="examiner: gpt-9"
        ).content.decode()
        assert "Line 1: Anthropic does not offer &#x27;gpt-9&#x27;." in html
        html = self._post(
            moderator_client, backend="anthropic", seat_models="judge: claude-opus-5-5"
        ).content.decode()
        assert "seat_models: no seat judge in this debate" in html
        assert not Run.objects.exists()

    def test_a_kb_debate_needs_a_knowledge_base(self, moderator_client):
        html = self._post(moderator_client, protocol="kb-debate", analysts="").content.decode()
        assert "kb: a KB debate needs a knowledge base; choose one" in html
        assert not Run.objects.exists()

    def test_a_kb_debate_seats_a_debater_per_position_of_the_kb(self, moderator_client, enqueued):
        from kb.demo import demo_kbs_load

        kb = demo_kbs_load()[0]
        response = self._post(
            moderator_client,
            protocol="kb-debate",
            kb=str(kb.pk),
            analysts="",
            kb_moderator="human",
            max_turns="14",
            auto_approve="on",
        )
        run = Run.objects.get()
        assert response.status_code == 302
        assert run.config["positions"] == ["con-pricing", "pro-pricing"]
        assert (run.config["moderator"], run.config["max_turns"], run.config["auto_approve"]) == (
            "human",
            14,
            True,
        )
        seats = list(run.seats.values_list("handle", "role", "human"))
        assert seats == [
            ("debater-con-pricing", "debater", False),
            ("debater-pro-pricing", "debater", False),
            ("moderator", "moderator", True),
            ("orchestrator", "orchestrator", False),
        ]

    def test_bad_analysts_are_reported_by_line(self, moderator_client):
        response = self._post(moderator_client, analysts="Ada: economics\n: no name")
        assert "Line 2" in response.content.decode() and not Run.objects.exists()

    def test_a_viewer_cannot_start_a_run(self, viewer_client):
        assert self._post(viewer_client).status_code == 403
        assert not Run.objects.exists()

    def test_posts_need_a_csrf_token(self, moderator):
        client = Client(enforce_csrf_checks=True)
        client.force_login(moderator)
        assert self._post(client).status_code == 403


class ControlTests:
    def test_pause_is_committed_before_the_answer_and_idempotent(self, moderator_client, make_run):
        run = make_run()
        token = str(uuid.uuid4())
        for _ in range(2):
            response = moderator_client.post(
                f"/runs/{run.pk}/control/pause/", {"client_uuid": token}, HTTP_HX_REQUEST="true"
            )
            assert response.status_code == 200 and 'id="moderator"' in response.content.decode()
        run.refresh_from_db()
        assert run.pause_requested
        assert HumanAction.objects.filter(run=run, kind="pause").count() == 1

    def test_a_viewer_cannot_act(self, viewer_client, make_run):
        run = make_run()
        assert viewer_client.post(f"/runs/{run.pk}/control/cancel/").status_code == 403
        run.refresh_from_db()
        assert run.status == "queued" and not run.cancel_requested

    def test_step_needs_a_paused_run_and_says_so(self, moderator_client, make_run):
        run = make_run()
        html = moderator_client.post(f"/runs/{run.pk}/control/step/", HTTP_HX_REQUEST="true").content.decode()
        assert "pause it first" in html

    def test_cancel_without_a_live_runner_cancels_at_once(self, moderator_client, make_run):
        run = make_run()
        moderator_client.post(f"/runs/{run.pk}/control/cancel/", HTTP_HX_REQUEST="true")
        run.refresh_from_db()
        assert run.status == "cancelled"
        html = moderator_client.post(
            f"/runs/{run.pk}/control/pause/", HTTP_HX_REQUEST="true"
        ).content.decode()
        assert "nothing can be changed" in html


class CostControlTests:
    def test_a_moderator_approves_the_estimate_and_the_run_is_enqueued(
        self, moderator_client, make_run, anthropic_api, settings, enqueued
    ):
        settings.DISPUTA = {**settings.DISPUTA, "CONSENT_THRESHOLD_USD": "0.01"}
        run = make_run(backend="anthropic", model="claude-sonnet-5-5", backend_options={})
        page = moderator_client.get(f"/runs/{run.pk}/").content.decode()
        assert 'id="consent-approve"' in page and "Approve the estimated cost?" in page
        response = moderator_client.post(
            f"/runs/{run.pk}/consent/", {"approve": "yes"}, headers={"HX-Request": "true"}
        )
        assert response.status_code == 200 and "Approved: the run starts." in response.content.decode()
        run.refresh_from_db()
        assert run.status == "queued" and [r.args for r in enqueued] == [[run.pk]]

    def test_a_viewer_can_neither_consent_nor_change_the_budget(self, viewer_client, make_run):
        run = make_run()
        assert viewer_client.post(f"/runs/{run.pk}/consent/", {"approve": "yes"}).status_code == 403
        assert viewer_client.post(f"/runs/{run.pk}/budget/", {"budget_usd": "9"}).status_code == 403
        run.refresh_from_db()
        assert run.budget_usd is None

    def test_a_bad_budget_is_refused_with_the_field_named(self, moderator_client, make_run):
        run = make_run()
        response = moderator_client.post(
            f"/runs/{run.pk}/budget/", {"budget_usd": "-1"}, headers={"HX-Request": "true"}
        )
        assert response.status_code == 400
        assert "budget_usd: Ensure this value is greater than or equal to 0." in response.content.decode()
        moderator_client.post(
            f"/runs/{run.pk}/budget/", {"budget_usd": "2.5"}, headers={"HX-Request": "true"}
        )
        run.refresh_from_db()
        assert run.budget_usd == Decimal("2.5")

    @pytest.mark.django_db(transaction=True)
    def test_the_cost_panel_shows_seats_budget_and_the_price_date(self, viewer_client, make_run):
        from tests.conftest import run_to_stop

        run = make_run(budget_tokens=10**7)
        run_to_stop(run)
        html = viewer_client.get(f"/runs/{run.pk}/").content.decode()
        assert html.count('<tr data-seat="') == 4
        assert 'id="budget-tokens"' in html and "of 10000000" in html


class ExportTests:
    def test_the_json_export_downloads(self, viewer_client, make_run):
        run = make_run()
        response = viewer_client.get(f"/runs/{run.pk}/export.json")
        assert response["Content-Disposition"] == f'attachment; filename="disputa-run-{run.pk}.json"'
        assert response.json()["run"]["backend_label"] == "simulated"
