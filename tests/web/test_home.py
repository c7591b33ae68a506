"""The home page (issue "The human's seat", onboarding): what Disputa does, the six protocols as cards — each starts
its demo run with one click for a moderator, none for a viewer — the archive below with its filters folded away
unless one is set, and the new-run form: `?protocol=` chooses the protocol, the rehearsal options are folded."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.utils.html import escape

from debates.engine import registry
from debates.models import Run
from debates.web.forms import RunForm
from kb.demo import demo_kbs_load
from kb.models import KnowledgeBase

PROTOCOLS = sorted(p.name for p in registry.all_protocols())


def cards(html: str) -> dict[str, str]:
    """The protocol cards: protocol name -> the card's HTML."""
    found = re.findall(
        r'<li class="card protocol-card"[^>]*data-protocol-card="([a-z-]+)">(.*?)</li>', html, re.S
    )
    return dict(found)


def element(html: str, start: str, end: str) -> str:
    begin = html.index(start)
    return html[begin : html.index(end, begin)]


@pytest.fixture
def enqueued() -> Any:
    from django.tasks import default_task_backend

    default_task_backend.clear()
    return default_task_backend.results


# --- the cards ---------------------------------------------------------------------------------------------------


class HomeTests:
    def test_every_protocol_says_what_it_is_for_and_declares_a_demo(self) -> None:
        assert len(PROTOCOLS) == 6
        for protocol in registry.all_protocols():
            assert protocol.purpose and protocol.when_to_use, protocol.name
            assert protocol.demo is not None and protocol.demo.topic, protocol.name
            assert "seed 0" not in protocol.title and "×" not in protocol.title, protocol.title

    def test_the_home_page_says_what_disputa_does_and_shows_six_cards_with_a_start(
        self, moderator_client: Client
    ) -> None:
        html = moderator_client.get("/").content.decode()
        assert "Run, watch and steer structured debates between AI agents" in html
        found = cards(html)
        assert sorted(found) == PROTOCOLS
        for name, card in found.items():
            protocol = registry.get(name)
            assert escape(protocol.title) in card and escape(protocol.purpose) in card
            assert f'action="/runs/demo/{name}/"' in card and 'name="csrfmiddlewaretoken"' in card
            assert f'id="demo-start-{name}"' in card
            assert f'href="/runs/new/?protocol={name}"' in card
        # The cards come before the archive.
        assert (
            html.index('id="protocols"')
            < html.index('id="archive-filters"')
            < html.index('id="archive-table"')
        )

    def test_a_viewer_sees_the_cards_without_start_buttons(self, viewer_client: Client) -> None:
        html = viewer_client.get("/").content.decode()
        found = cards(html)
        assert sorted(found) == PROTOCOLS
        assert "/runs/demo/" not in html and "demo-start" not in html and "/runs/new/" not in html
        assert "Moderators can start these" in html

    def test_the_archive_filters_are_folded_unless_one_is_set(
        self, viewer_client: Client, make_run: Any
    ) -> None:
        run = make_run(topic="Should the harbour ferries run all night?")
        html = viewer_client.get("/").content.decode()
        details = element(html, '<details id="archive-more-filters"', ">")
        assert " open" not in details
        assert f'id="run-row-{run.pk}"' in html and 'id="archive-q"' in html
        html = viewer_client.get("/?status=queued&protocol=cross-examination").content.decode()
        assert " open" in element(html, '<details id="archive-more-filters"', ">")
        filters = element(html, 'id="archive-filters"', "</form>")
        assert '<option value="queued" selected>' in filters
        assert '<option value="cross-examination" selected>' in filters
        assert f'id="run-row-{run.pk}"' in html
        partial = viewer_client.get("/?status=failed", HTTP_HX_REQUEST="true").content.decode()
        assert partial.lstrip().startswith('<div id="archive-table"') and "protocol-card" not in partial
        assert f"run-row-{run.pk}" not in partial and "No run matches these filters." in partial


# --- starting a demo -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROTOCOLS)
def test_a_card_starts_the_protocols_demo_on_simulated_agents(
    name: str, moderator: Any, moderator_client: Client, enqueued: Any
) -> None:
    response = moderator_client.post(f"/runs/demo/{name}/")
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    demo = registry.get(name).demo
    assert demo is not None
    assert (run.protocol, run.topic, run.backend, run.model) == (name, demo.topic, "simulated", "simulated")
    assert run.created_by == moderator and run.status == "queued"
    assert run.backend_options["cps"] > 0
    for key, value in demo.config.items():
        assert run.config[key] == value, key
    if demo.kb:
        assert run.kb is not None and run.kb.slug == demo.kb
    else:
        assert run.kb is None and run.material == demo.material
    assert [r.args for r in enqueued] == [[run.pk]]
    # The run page opens on it.
    assert moderator_client.get(f"/runs/{run.pk}/").status_code == 200


class DemoStartTests:
    def test_a_viewer_may_not_start_a_demo(self, viewer_client: Client) -> None:
        assert viewer_client.post("/runs/demo/cross-examination/").status_code == 403
        assert not Run.objects.exists()

    def test_only_a_post_starts_a_demo_of_a_known_protocol(self, moderator_client: Client) -> None:
        assert moderator_client.get("/runs/demo/cross-examination/").status_code == 405
        assert moderator_client.post("/runs/demo/no-such-protocol/").status_code == 404
        assert not Run.objects.exists()

    def test_the_demo_needs_the_csrf_token(self, moderator: Any) -> None:
        client = Client(enforce_csrf_checks=True)
        client.force_login(moderator)
        assert client.post("/runs/demo/cross-examination/").status_code == 403
        assert not Run.objects.exists()

    def test_past_the_run_limit_the_home_page_says_why(
        self, settings: Any, moderator: Any, moderator_client: Client, make_run: Any
    ) -> None:
        settings.DISPUTA = {**settings.DISPUTA, "MAX_ACTIVE_RUNS_PER_USER": 1, "MAX_RUNS_PER_HOUR": 0}
        make_run(user=moderator)
        response = moderator_client.post("/runs/demo/comparative/", follow=True)
        html = response.content.decode()
        assert response.redirect_chain == [("/", 302)]
        assert "The demo was not started" in html and "one user may have 1 at once" in html
        assert Run.objects.count() == 1
        # Said once.
        assert "The demo was not started" not in moderator_client.get("/").content.decode()


# --- the new-run form ------------------------------------------------------------------------------------------------


class NewRunFormTests:
    def test_protocol_in_the_address_chooses_it(self, moderator_client: Client) -> None:
        html = moderator_client.get("/runs/new/?protocol=comparative").content.decode()
        select = element(html, '<select name="protocol"', "</select>")
        assert re.findall(r'<option value="([a-z-]+)" selected>', select) == ["comparative"]
        html = moderator_client.get("/runs/new/?protocol=nonsense").content.decode()
        select = element(html, '<select name="protocol"', "</select>")
        assert re.findall(r'<option value="([a-z-]+)" selected>', select) == ["cross-examination"]

    def test_a_protocol_that_needs_a_kb_gets_its_demo_kb_when_loaded(self, moderator_client: Client) -> None:
        html = moderator_client.get("/runs/new/?protocol=market-panel").content.decode()
        assert " selected>market" not in element(html, '<select name="kb"', "</select>")
        demo_kbs_load()
        market = KnowledgeBase.objects.get(slug="market-2026-q4")
        html = moderator_client.get("/runs/new/?protocol=market-panel").content.decode()
        kb_select = element(html, '<select name="kb"', "</select>")
        assert re.findall(r'<option value="(\d+)" selected>', kb_select) == [str(market.pk)]

    def test_the_rehearsal_options_are_folded_after_the_main_fields(self, moderator_client: Client) -> None:
        html = moderator_client.get("/runs/new/").content.decode()
        rehearsal = element(html, '<details id="rehearsal-options"', "</details>")
        assert rehearsal.startswith('<details id="rehearsal-options" class="rehearsal">')  # closed
        form = RunForm()
        names = ["seed", "sim_cps", *(n for s in form.sections for n in s.simulation_fields)]
        for name in names:
            assert f'name="{name}"' in rehearsal, name
            assert html.count(f'name="{name}"') == 1, name
        # After every protocol's own fields and the backend, before the start button.
        assert html.rindex('data-protocol="market-panel" id="market-panel-setup"') < html.index(rehearsal)
        assert html.index('name="backend"') < html.index(rehearsal) < html.index('id="start-run"')

    def test_a_rehearsal_error_opens_them(self, moderator_client: Client) -> None:
        data = {
            "protocol": "cross-examination",
            "topic": "Should we adopt a four-day week?",
            "analysts": "Ada: economics",
            "examiner": "agent",
            "questions_per_analyst": "2",
            "backend": "simulated",
            "model": "simulated",
            "sim_answers": "mixed",
            "sim_cps": "-5",
        }
        html = moderator_client.post("/runs/new/", data).content.decode()
        assert '<details id="rehearsal-options" class="rehearsal" open>' in html
        assert not Run.objects.exists()

    def test_each_protocols_fields_and_the_paid_backends_fields_are_marked_for_the_page_to_show(
        self, moderator_client: Client
    ) -> None:
        html = moderator_client.get("/runs/new/").content.decode()
        for name in PROTOCOLS:
            assert f'<fieldset data-protocol="{name}"' in html, name
            assert f'class="protocol-purpose" data-protocol="{name}"' in html, name
        paid = re.findall(r'<(?:div|fieldset) class="paid-only">(.*?)</fieldset>', html, re.S)
        joined = "".join(paid)
        for name in ("model", "seat_models", "budget_usd", "budget_tokens"):
            assert f'name="{name}"' in joined, name
        assert 'data-backend="anthropic"' in joined and 'data-backend="simulated"' in joined

    def test_the_form_speaks_plainly(self, moderator_client: Client) -> None:
        html = moderator_client.get("/runs/new/").content.decode()
        for jargon in ("seed 00", "lens × stance", "(the seed)", "Seats —", "team → subagent", "raw outputs"):
            assert jargon not in html, jargon
