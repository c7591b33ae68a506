"""Load and abuse limits (issue 9, debates.services.quotas): a user's runs at once and per hour (429 with Retry-After from
every view that starts a run, nothing created), websocket connects per IP per minute (closed with 4429), and a
run's own budget (enforced by the runner: see tests/test_services.py and tests/agents/test_anthropic_api.py)."""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from debates.asgi import application
from debates.models import Run
from debates.services import quotas
from tests.web.test_consumers import LOCAL_HOST, LOCAL_ORIGIN, session_cookie

FORM = {
    "protocol": "cross-examination",
    "topic": "Should the city charge cars entering the centre?",
    "material": "Stockholm ran a congestion-charge trial in 2006.",
    "analysts": "Ada: economics\nBo: equity",
    "examiner": "agent",
    "questions_per_analyst": "2",
    "backend": "simulated",
    "model": "simulated",
    "seed": "1",
    "sim_answers": "mixed",
    "sim_cps": "0",
}


def limits(settings: Any, **values: int) -> None:
    settings.DISPUTA = {**settings.DISPUTA, **values}


def runs_of(user: Any, count: int, make_run: Any, **fields: Any) -> list[Run]:
    runs = [make_run(user=user) for _ in range(count)]
    Run.objects.filter(pk__in=[r.pk for r in runs]).update(**fields)
    return runs


@pytest.mark.django_db
class RunStartTests:
    def test_a_user_at_the_concurrent_limit_gets_429_and_no_run(
        self, settings, moderator, moderator_client, make_run
    ):
        limits(settings, MAX_ACTIVE_RUNS_PER_USER=2, MAX_RUNS_PER_HOUR=0)
        runs_of(moderator, 2, make_run, status="running")
        before = Run.objects.count()
        response = moderator_client.post("/runs/new/", FORM)
        assert response.status_code == 429
        assert response["Retry-After"] == "60"
        html = response.content.decode()
        assert "one user may have 2 at once" in html and "DISPUTA_MAX_ACTIVE_RUNS_PER_USER" in html
        assert Run.objects.count() == before

    def test_finished_runs_do_not_count_and_another_user_is_not_affected(
        self, settings, moderator, moderator_client, make_run, django_user_model
    ):
        limits(settings, MAX_ACTIVE_RUNS_PER_USER=2, MAX_RUNS_PER_HOUR=0)
        runs_of(moderator, 3, make_run, status="completed")
        other = django_user_model.objects.create_user("other")
        runs_of(other, 2, make_run, status="running")
        response = moderator_client.post("/runs/new/", FORM)
        assert response.status_code == 302, response.content.decode()[:500]
        assert Run.objects.filter(created_by=moderator).count() == 4
        assert quotas.run_start_refusal(other) is not None

    def test_the_hourly_limit_answers_when_to_come_back(
        self, settings, moderator, moderator_client, make_run
    ):
        limits(settings, MAX_ACTIVE_RUNS_PER_USER=0, MAX_RUNS_PER_HOUR=3)
        runs = runs_of(moderator, 3, make_run, status="completed")
        # The oldest of the three was created 50 minutes ago: it leaves the hour in 10 minutes.
        Run.objects.filter(pk=runs[0].pk).update(created_at=timezone.now() - dt.timedelta(minutes=50))
        response = moderator_client.post("/runs/new/", FORM)
        assert response.status_code == 429
        assert 9 * 60 <= int(response["Retry-After"]) <= 10 * 60
        assert "Try again in 10 min." in response.content.decode()
        Run.objects.filter(pk=runs[0].pk).update(created_at=timezone.now() - dt.timedelta(minutes=61))
        assert moderator_client.post("/runs/new/", FORM).status_code == 302

    def test_rerun_and_fork_are_limited_too(self, settings, moderator, moderator_client, make_run):
        parent = make_run(user=moderator)
        Run.objects.filter(pk=parent.pk).update(status="completed")
        limits(settings, MAX_ACTIVE_RUNS_PER_USER=1, MAX_RUNS_PER_HOUR=0)
        runs_of(moderator, 1, make_run, status="awaiting_human")
        before = Run.objects.count()
        for url in (f"/runs/{parent.pk}/rerun/", f"/runs/{parent.pk}/fork/"):
            response = moderator_client.post(url, {"upto_key": ""}, HTTP_HX_REQUEST="true")
            assert response.status_code == 429, url
            assert "one user may have 1 at once" in response.content.decode()
        assert Run.objects.count() == before

    def test_zero_turns_a_limit_off(self, settings, moderator, make_run):
        limits(settings, MAX_ACTIVE_RUNS_PER_USER=0, MAX_RUNS_PER_HOUR=0)
        runs_of(moderator, 40, make_run, status="running")
        assert quotas.run_start_refusal(moderator) is None


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_websocket_connects_past_the_per_ip_limit_are_closed_with_4429(settings, moderator, make_run):
    limits(settings, MAX_WS_CONNECTS_PER_MINUTE=3)
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    run = await sync_to_async(make_run)()
    cookie = await session_cookie(moderator)

    async def connect(ip: str) -> tuple[bool, int | None]:
        comm = WebsocketCommunicator(
            application,
            f"/ws/runs/{run.pk}/",
            headers=[(b"host", LOCAL_HOST), (b"origin", LOCAL_ORIGIN), (b"cookie", cookie)],
        )
        comm.scope["client"] = [ip, 50000]
        connected, code = await comm.connect(timeout=10)
        if connected:
            await comm.disconnect()
        return connected, code

    # Documentation addresses, fresh each time: counts last a minute (in Redis, beyond this test's process).
    crowded, other = (f"2001:db8::{secrets.token_hex(2)}:{secrets.token_hex(2)}" for _ in range(2))
    results = [await connect(crowded) for _ in range(4)]
    assert [ok for ok, _ in results] == [True, True, True, False]
    assert results[-1][1] == quotas.CLOSE_TOO_MANY_CONNECTS
    assert (await connect(other))[0]  # another address still connects
