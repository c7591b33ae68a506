"""The "Needs you" queue: every pending human action of every run a moderator may act on, one item each, newest
first, with a link straight to its form; consents, agreeing picks and KB changes decided in place; the nav count on
every page and pushed over the websocket."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from channels.testing import WebsocketCommunicator
from django.db import transaction
from django.utils import timezone

from debates.engine.effects import TurnEffects
from debates.models import Run, Turn
from debates.selectors.inbox import needs_you, needs_you_count
from debates.services import runs as services
from kb.demo import demo_kbs_load
from kb.discipline import mutation_propose
from tests.conftest import run_to_stop
from tests.kb.conftest import small_kb  # noqa: F401  (fixture)
from tests.kb.test_discipline import NEW_SOURCE
from tests.web.test_consumers import LOCAL_HOST, LOCAL_ORIGIN, application, needs_you_socket, session_cookie
from tests.web.test_pick import completed


def items_of(html: str) -> list[str]:
    block = html.split('id="needs-you"', 1)[1].split("</ul>", 1)[0]
    return re.findall(r'<li class="card needs-item needs-(\w+)"', block)


@pytest.fixture
def examiner_waits(make_run) -> Run:
    run = make_run(config={"examiner": "human"})
    assert run_to_stop(run) == "waiting"
    return run


@pytest.mark.django_db(transaction=True)
class QueueTests:
    def test_a_human_examiners_turn_is_one_item_linking_to_its_form(
        self, moderator, moderator_client, examiner_waits
    ):
        [item] = needs_you(moderator)
        assert item.kind == "turn" and item.run == examiner_waits
        assert item.asked.startswith("Ask the analysts questions, as ")
        page = moderator_client.get(f"/runs/{examiner_waits.pk}/").content.decode()
        anchor = item.url.split("#")[1]
        assert item.url.startswith(f"/runs/{examiner_waits.pk}/#") and f'id="{anchor}"' in page
        html = moderator_client.get("/inbox/").content.decode()
        assert items_of(html) == ["turn"] and item.url in html
        assert "r1/" not in html.split('id="needs-you"')[1]  # no internal step key on the page

    def test_items_come_newest_first_and_the_count_matches(self, moderator, make_run, examiner_waits):
        judged = completed(make_run())
        Run.objects.filter(pk=judged.pk).update(finished_at=timezone.now() + timedelta(minutes=5))
        kinds = [item.kind for item in needs_you(moderator)]
        assert kinds == ["pick", "turn"]
        assert needs_you_count(moderator) == 2

    def test_a_budget_stop_is_an_item_pointing_at_the_budget_form(self, moderator, make_run):
        run = make_run(budget_usd=Decimal("0.000001"), backend="simulated")
        Run.objects.filter(pk=run.pk).update(
            status="paused", budget_stopped=True, status_reason="Budget reached"
        )
        [item] = needs_you(moderator)
        assert (item.kind, item.url) == ("budget", f"/runs/{run.pk}/#budget-form")

    def test_a_viewer_has_nothing_waiting_and_is_told_why(self, viewer, viewer_client, examiner_waits):
        assert needs_you(viewer) == [] and needs_you_count(viewer) == 0
        html = viewer_client.get("/inbox/").content.decode()
        assert items_of(html) == [] and 'id="needs-you-viewer"' in html

    def test_the_nav_shows_the_count_on_every_page(self, moderator_client, examiner_waits):
        for path in ("/", "/kb/", "/decisions/", f"/runs/{examiner_waits.pk}/"):
            html = moderator_client.get(path).content.decode()
            assert re.search(r'id="needs-you-count"[^>]*data-count="1"', html), path


class ActInPlaceTests:
    def test_a_cost_consent_is_approved_in_place(self, moderator, moderator_client, settings):
        settings.DISPUTA = {**settings.DISPUTA, "CONSENT_THRESHOLD_USD": "0"}
        run = services.run_create(
            protocol="consultation",
            topic="Adopt trunk-based development?",
            config={"agents": [{"name": "Ana", "lens": "delivery"}, {"name": "Ben", "lens": "risk"}]},
            backend="simulated",
            seed=3,
            start=True,
            enqueue=False,
        )
        [item] = needs_you(moderator)
        assert item.kind == "consent"
        response = moderator_client.post(
            f"/inbox/runs/{run.pk}/consent/",
            {"approve": "yes", "dom_id": item.dom_id},
            HTTP_HX_REQUEST="true",
        )
        html = response.content.decode()
        assert f'id="{item.dom_id}"' in html and "Approved: the run starts." in html
        assert 'id="needs-you-count"' in html and 'hx-swap-oob="true"' in html
        run.refresh_from_db()
        assert run.consent == "approved" and needs_you(moderator) == []

    def test_agreeing_with_the_judge_is_recorded_in_place(self, moderator, moderator_client, make_run):
        run = completed(make_run())
        [item] = needs_you(moderator)
        html = moderator_client.post(
            f"/inbox/runs/{run.pk}/agree/", {"dom_id": item.dom_id}, HTTP_HX_REQUEST="true"
        ).content.decode()
        assert "Recorded: you agree with the judge (Postgres)." in html
        run.refresh_from_db()
        assert run.human_pick == "A" and needs_you_count(moderator) == 0

    def test_a_kb_change_is_approved_in_place(self, moderator, moderator_client, small_kb):  # noqa: F811
        mutation = mutation_propose(
            kb=small_kb,
            kind="status-downgrade",
            payload={"arg_id": "arg-002", "to": "contested"},
            proposed_by="x",
        )
        [item] = needs_you(moderator)
        assert item.kind == "approval" and "lower the rating of arg-002" in item.detail
        html = moderator_client.post(
            f"/inbox/mutations/{mutation.pk}/",
            {"decision": "approve", "dom_id": item.dom_id},
            HTTP_HX_REQUEST="true",
        ).content.decode()
        assert "approved and applied to the knowledge base" in html
        assert small_kb.arguments.get(arg_id="arg-002").status == "contested"

    def test_a_new_source_proposal_names_the_source_it_would_add(self, moderator, small_kb):  # noqa: F811
        mutation_propose(kb=small_kb, kind="new-source", payload=dict(NEW_SOURCE), proposed_by="debater-pro")
        [item] = needs_you(moderator)
        assert item.kind == "approval"
        assert f"add a new source, “{NEW_SOURCE['title']}”" in item.detail

    def test_a_viewer_cannot_act(self, viewer_client, make_run):
        run = completed(make_run())
        assert viewer_client.post(f"/inbox/runs/{run.pk}/agree/").status_code == 403
        run.refresh_from_db()
        assert run.human_pick == ""


@pytest.fixture
def _fresh_channel_layer(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "debates.platform.channel_layers.InMemoryChannelLayer"}}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("_fresh_channel_layer")
@pytest.mark.asyncio
class LiveCountTests:
    async def test_the_count_is_pushed_when_something_starts_waiting(self, moderator, make_run, settings):
        from asgiref.sync import sync_to_async

        settings.DISPUTA = {**settings.DISPUTA, "NEEDS_YOU_COALESCE_SECONDS": 0.01}
        headers = [
            (b"host", LOCAL_HOST),
            (b"origin", LOCAL_ORIGIN),
            (b"cookie", await session_cookie(moderator)),
        ]
        communicator = WebsocketCommunicator(application, "/ws/needs-you/", headers=headers)
        connected, _ = await communicator.connect()
        assert connected
        first = await communicator.receive_from(timeout=5)
        assert 'data-count="0"' in first and 'hx-swap-oob="true"' in first
        run = await sync_to_async(make_run)(config={"examiner": "human"})
        await sync_to_async(run_to_stop)(run)
        pushed = await communicator.receive_from(timeout=5)
        assert 'id="needs-you-count"' in pushed and 'data-count="1"' in pushed
        await communicator.disconnect()

    async def test_the_count_is_pushed_when_a_turn_proposes_a_kb_change(self, moderator, settings):
        from asgiref.sync import sync_to_async

        settings.DISPUTA = {**settings.DISPUTA, "NEEDS_YOU_COALESCE_SECONDS": 0.01}

        def run_of_the_demo_kb() -> Run:  # (loading the demo KB proposes its own demo changes)
            return services.run_create(
                protocol="kb-debate",
                topic="Pricing?",
                kb=demo_kbs_load()[0],
                config={},
                backend_options={"cps": 0},
                enqueue=False,
            )

        def propose(run: Run) -> None:
            with transaction.atomic():
                turn = Turn.objects.create(
                    run=run,
                    key="t04/moderator/moderator",
                    seat=run.seats.get(handle="moderator"),
                    stage="debate",
                )
                TurnEffects(run_id=run.pk, turn_id=turn.pk).mutation_propose(
                    kind="status-downgrade",
                    payload={"arg_id": "arg-006", "to": "weak"},
                    proposed_by="moderator",
                    justification="The rebound is confounded by road space.",
                    auto_approve=False,
                )

        run = await sync_to_async(run_of_the_demo_kb)()
        communicator = await needs_you_socket(moderator)
        before = await communicator.receive_from(timeout=5)
        await sync_to_async(propose)(run)  # a commit's proposal: no run changed status
        pushed = await communicator.receive_from(timeout=5)
        count = int(re.search(r'data-count="(\d+)"', before).group(1))
        assert 'id="needs-you-count"' in pushed and f'data-count="{count + 1}"' in pushed
        await communicator.disconnect()
