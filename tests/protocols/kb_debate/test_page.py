"""The kb-debate run page: turn bodies with citation badges and live KB ratings, the #ledger and #approvals
panels (page and WebSocket frames alike), the moderator console and the verdict review, approving and rejecting
the run's KB proposals from the page, the run directory link. Turns are crafted (schema-valid payloads committed
as the runner would), so nothing here depends on the simulated agents."""

from __future__ import annotations

import re
import uuid
from html import unescape
from typing import Any

import pytest
from django.db import connection, transaction
from django.template.loader import render_to_string
from django.test import Client
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel

from debates.contract import Step
from debates.engine import registry, view
from debates.engine.effects import TurnEffects
from debates.engine.events import event_append
from debates.engine.publish import event_messages
from debates.models import HumanAction, HumanActionKind, Run, RunEvent, RunStatus, Turn
from debates.protocols.kb_debate import schema
from debates.protocols.kb_debate.page import kb_debate_context
from debates.selectors import cards as selectors_cards
from debates.selectors import runs as selectors
from debates.selectors.panels import run_panels
from debates.services import runs as services
from debates.services.mutations import run_mutation_decide
from debates.web import frames
from kb.models import Argument, ProposedMutation
from tests.conftest import run_to_stop
from tests.platform.test_rendering import XSS_CORPUS, executable_parts

CON, PRO = "con-pricing", "pro-pricing"
# Inert form elements of the moderator console the page checker does not list (they execute nothing).
FORM_TAGS = {"<fieldset>", "<legend>", "<textarea>", "<optgroup>"}

OPENING_CON = {
    "summary": "Pricing's **traffic gains fade** and the poor pay.",
    "claims": [
        {
            "text": "London's congestion returned to pre-charge levels",
            "args": ["arg-006"],
            "presented_as": "contested",
        },
        {
            "text": "Low-income commuters pay most of the toll",
            "args": ["arg-010"],
            "sources": ["kb/sources/media/missing-citation/open-roads-blog-2019-regressive-toll.md"],
            "presented_as": "strong",
        },
    ],
}
OPENING_PRO = {
    "summary": "Stockholm shows a durable cut.",
    "claims": [
        {
            "text": "Stockholm's charge cut cordon traffic by about 20%",
            "args": ["arg-001"],
            "sources": ["kb/sources/peer-reviewed/borjesson-2012-stockholm-five-years.md"],
            "presented_as": "robust",
        },
        {"text": "Children's asthma visits fell", "args": ["arg-003"], "presented_as": "strong"},
    ],
}
REBUT = {
    "responds_to": {"entry": "L-002", "turn": 1},
    "move": "rebut",
    "text": "The only incidence study says the **opposite**: richer residents pay most (arg-009).",
    "claims": [
        {
            "text": "In Stockholm higher-income residents pay most",
            "args": ["arg-009"],
            "presented_as": "strong",
        }
    ],
}
MODERATOR = {
    "text": "Closing the baseless fairness claim; pro-pricing answers fairness with health.",
    "presses": [{"entry": "L-001", "text": "Separate volume from delay."}],
    "callouts": [{"type": "baseless-as-robust", "position": CON, "turn": 1, "text": "arg-010 is baseless."}],
    "deflections": [
        {"position": PRO, "cited_args": ["arg-003"], "turns": [2], "target_arg": "arg-008", "text": ""}
    ],
    "rulings": [
        {
            "entry": "L-002",
            "arg_id": "arg-010",
            "closed_as": "baseless",
            "justification": "No primary source on traceback",
            "turns": [1, 3],
        }
    ],
    "mutations": [
        {
            "kind": "status-downgrade",
            "arg_id": "arg-006",
            "to": "weak",
            "justification": "Turn 3: the rebound is confounded by road space (arg-007).",
        }
    ],
}
SCHEMAS: dict[str, type[BaseModel]] = {
    "opening": schema.Opening,
    "turn": schema.DebaterTurn,
    "moderator": schema.ModeratorTurn,
    "synthesis": schema.Synthesis,
    "verdict-review": schema.VerdictReview,
}


def commit(run: Run, key: str, payload: dict[str, Any]) -> Turn:
    """Commit a crafted turn as the runner does: started and committed events, the protocol's effects."""
    _, task, seat_handle = key.split("/")
    data = SCHEMAS[task].model_validate(payload).model_dump(mode="json")
    protocol = registry.get(run.protocol)
    with transaction.atomic():
        seq = event_append(run_id=run.pk, kind="turn_started", payload={"key": key, "attempt": 1})
        turn = Turn.objects.create(
            run=run,
            key=key,
            seat=run.seats.get(handle=seat_handle),
            stage="debate",
            task=task,
            status="committed",
            payload=data,
            first_seq=seq,
            human=seat_handle == "moderator",
        )
        step = Step(key=key, seat=seat_handle, stage="debate", task=task, schema=SCHEMAS[task], sees=None)
        protocol.on_commit(step, data, TurnEffects(run_id=run.pk, turn_id=turn.pk))
        event_append(run_id=run.pk, kind="turn_committed", payload={"key": key, "attempt": 1})
    return turn


@pytest.fixture
def demo_kb(db: None) -> Any:
    from kb.demo import demo_kbs_load

    return demo_kbs_load()[0]


@pytest.fixture
def kb_run(demo_kb: Any) -> Run:
    return services.run_create(
        protocol="kb-debate",
        topic="Does congestion pricing cut traffic without unfair harm?",
        kb=demo_kb,
        config={"moderator": "human"},
        backend_options={"cps": 0},
        seed=3,
        enqueue=False,
    )


@pytest.fixture
def debated(kb_run: Run) -> Run:
    """Two openings, a rebuttal and a human moderator's turn (ruling, deflection, press, callout, downgrade)."""
    commit(kb_run, "t01/opening/debater-con-pricing", OPENING_CON)
    commit(kb_run, "t02/opening/debater-pro-pricing", OPENING_PRO)
    commit(kb_run, "t03/turn/debater-pro-pricing", REBUT)
    commit(kb_run, "t04/moderator/moderator", MODERATOR)
    return kb_run


def page(client: Client, run: Run) -> str:
    response = client.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def the_downgrade(run: Run) -> ProposedMutation:
    return ProposedMutation.objects.get(run=run, kind="status-downgrade", payload__arg_id="arg-006")


# --- the page ------------------------------------------------------------------------------------------------------


def test_the_page_shows_the_ledger_with_live_ratings_threads_and_the_closure(moderator_client, debated):
    html = page(moderator_client, debated)
    assert 'id="ledger"' in html and 'id="approvals"' in html
    assert html.index('id="moderator"') < html.index('id="approvals"') < html.index('id="ledger"')
    # L-002 was closed by the ruling at turn 4; its thread links to the turns' anchors.
    entry = html[html.index('id="ledger-L-002"') :]
    entry = entry[: entry.index("</li>")]
    assert 'data-status="closed"' in entry
    assert (
        "Ruling: claim &quot;Low-income commuters pay most of the toll&quot; (arg-010) is CLOSED as baseless."
        in entry
    )
    for anchor in (
        "turn-t01-opening-debater-con-pricing",
        "turn-t03-turn-debater-pro-pricing",
        "turn-t04-moderator-moderator",
    ):
        assert f'href="#{anchor}"' in entry
    assert 'href="/kb/congestion-pricing/arguments/arg-010/"' in entry
    assert "kbs-arg-010" in entry and ">baseless<" in entry
    # L-001 stays open; L-004 (the rebuttal's new claim) is in the ledger.
    assert 'id="ledger-L-001"' in html and 'id="ledger-L-005"' in html


def test_turn_bodies_cite_with_badges_and_render_the_moderators_moves_in_the_seeds_form(
    moderator_client, debated
):
    html = page(moderator_client, debated)
    opening = html[html.index('id="turn-t01-opening-debater-con-pricing"') :]
    opening = opening[: opening.index("</article>")]
    assert 'class="badge cite cite-arg" href="/kb/congestion-pricing/arguments/arg-006/"' in opening
    assert "kbs-arg-006" in opening and ">contested<" in opening
    assert "missing-citation/open-roads-blog-2019-regressive-toll.md" in opening
    assert "<strong>traffic gains fade</strong>" in opening  # the summary is markdown
    rebut = html[html.index('id="turn-t03-turn-debater-pro-pricing"') :]
    rebut = rebut[: rebut.index("</article>")]
    assert 'href="#ledger-L-002"' in rebut and 'href="#turn-t01-opening-debater-con-pricing"' in rebut
    assert "move-rebut" in rebut
    moderator = html[html.index('id="turn-t04-moderator-moderator"') :]
    moderator = moderator[: moderator.index("</article>")]
    text = " ".join(moderator.split())
    assert "<strong>Deflection:</strong> <strong>For pricing</strong> has cited" in text
    assert "(layer: empirical, scope: Stockholm metropolitan area" in text and "status: strong)" in text
    assert "arg-003 is well-supported within its scope but is tangential to arg-008." in text
    assert "For pricing has not engaged arg-008 at its actual layer (ethical/metaphysical)." in text
    assert "<strong>Ruling:</strong> claim “Low-income commuters pay most of the toll”" in text
    assert 'is <strong>CLOSED</strong> as <span class="badge closed-as">baseless</span>' in text
    assert "<strong>Justification:</strong> No primary source on traceback" in text
    assert "<strong>Press</strong> on" in text and "baseless-as-robust" in text
    assert 'class="badge mutation-state status-pending mstate-' in text


def test_the_approvals_panel_offers_decisions_only_to_moderators(moderator_client, viewer_client, debated):
    mutation = the_downgrade(debated)
    html = page(moderator_client, debated)
    panel = html[html.index('id="approvals"') : html.index('id="ledger"')]
    assert f'id="approval-{mutation.pk}"' in panel and 'data-status="pending"' in panel
    assert f"/runs/{debated.pk}/mutations/{mutation.pk}/decide/" in panel
    assert "csrfmiddlewaretoken" in panel
    viewer_html = page(viewer_client, debated)
    viewer_panel = viewer_html[viewer_html.index('id="approvals"') : viewer_html.index('id="ledger"')]
    assert f'id="approval-{mutation.pk}"' in viewer_panel and "/decide/" not in viewer_panel


def test_the_page_passes_the_executable_parts_checker(moderator_client, viewer_client, debated):
    for client in (moderator_client, viewer_client):
        assert executable_parts(page(client, debated), page=True) == []


def test_the_run_page_of_a_cross_examination_has_no_kb_panels(moderator_client, make_run):
    html = page(moderator_client, make_run())
    assert 'id="ledger"' not in html and 'id="approvals"' not in html and "run-dir.zip" not in html


@pytest.mark.parametrize("payload", XSS_CORPUS)
def test_untrusted_text_in_every_body_and_panel_stays_inert(moderator_client, kb_run, payload):
    commit(
        kb_run,
        "t01/opening/debater-con-pricing",
        {
            "summary": payload,
            "claims": [{"text": payload[:300], "args": ["arg-006"], "presented_as": "contested"}],
            "mutations": [
                {
                    "kind": "status-downgrade",
                    "arg_id": "arg-006",
                    "to": "weak",
                    "justification": payload[:1000],
                }
            ],
        },
    )
    commit(kb_run, "t02/opening/debater-pro-pricing", OPENING_PRO)
    commit(
        kb_run,
        "t03/moderator/moderator",
        {
            "text": payload,
            "presses": [{"entry": "L-001", "text": payload}],
            "deflections": [
                {
                    "position": PRO,
                    "cited_args": ["arg-003"],
                    "turns": [2],
                    "target_arg": "arg-008",
                    "text": payload,
                }
            ],
            "rulings": [
                {
                    "entry": "L-001",
                    "arg_id": "arg-006",
                    "closed_as": "refuted",
                    "justification": payload,
                    "turns": [1],
                }
            ],
        },
    )
    html = page(moderator_client, kb_run)
    assert executable_parts(html, page=True) == []
    snapshot, _ = frames.snapshot_frame(kb_run.pk, kb_run.created_by)
    assert [p for p in executable_parts(snapshot, page=True) if p not in FORM_TAGS] == []


def test_a_streamed_turn_renders_its_partial_json(debated):
    text = '{"responds_to": {"entry": "L-001", "turn": 1}, "move": "reb'
    html = frames.turn_live_frame(
        key="t05/turn/debater-pro-pricing", task="turn", protocol="kb-debate", text=text
    )
    assert "L-001" in html and "▍ streaming" in html
    text = '{"text": "Closing", "rulings": [{"entry": "L-002", "arg_id": "arg-010", "closed_as": "basel'
    html = frames.turn_live_frame(
        key="t05/moderator/moderator", task="moderator", protocol="kb-debate", text=text
    )
    assert "<strong>Ruling:</strong>" in html and "arg-010" in html and "basel" in html
    text = '{"text": "The debate", "verdict": {"label": "engagement-asymmetry", "position": "pro-'
    html = frames.turn_live_frame(
        key="t09/synthesis/orchestrator", task="synthesis", protocol="kb-debate", text=text
    )
    assert "engagement-asymmetry:pro-" in html
    assert executable_parts(html) == []


def test_a_streaming_turn_shows_its_markdown_as_it_will_render_not_half_written(debated):
    """A bold still open shows as bold, not as asterisks; a list item just begun shows no empty bullet."""
    begun = '{"responds_to": {"entry": "L-001", "turn": 1}, "move": "rebut", "text": "Stockholm: **For pric'
    html = frames.turn_live_frame(
        key="t05/turn/debater-pro-pricing", task="turn", protocol="kb-debate", text=begun
    )
    body = html[html.index('class="turn-text"') :]
    assert "<strong>For pric</strong>" in body and "**" not in body
    listed = begun[: begun.index("Stockholm")] + "Two points:\\n- the cut held\\n- "
    html = frames.turn_live_frame(
        key="t05/turn/debater-pro-pricing", task="turn", protocol="kb-debate", text=listed
    )
    body = html[html.index('class="turn-text"') :]
    assert body.count("<li>") == 1 and "<li>the cut held</li>" in body and "<li></li>" not in body
    # Once committed, the text renders as written.
    commit(debated, "t05/turn/debater-pro-pricing", {**REBUT, "text": "Plainly **unbalanced"})
    card = Turn.objects.get(run=debated, key="t05/turn/debater-pro-pricing")
    assert "**unbalanced" in unescape(
        render_to_string(
            "debates/run_detail.html#turn", {"card": selectors_cards.turn_card(card, "kb-debate")}
        )
    )


def test_the_run_directory_link_serves_the_export_zip(moderator_client, debated, monkeypatch):
    import debates.protocols.kb_debate.exports

    monkeypatch.setattr(
        debates.protocols.kb_debate.exports,
        "run_export_zip",
        lambda run: b"PK-zip-of-" + str(run.pk).encode(),
    )
    assert f'href="/runs/{debated.pk}/run-dir.zip"' in page(moderator_client, debated)
    response = moderator_client.get(f"/runs/{debated.pk}/run-dir.zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response.content == b"PK-zip-of-" + str(debated.pk).encode()
    assert 'filename="disputa-run-' in response["Content-Disposition"]


def test_the_run_page_reads_a_bounded_number_of_queries(moderator_client, debated):
    page(moderator_client, debated)  # warm caches (content types, permissions)
    with CaptureQueriesContext(connection) as small:
        page(moderator_client, debated)
    for n in range(5, 15, 2):
        commit(
            debated,
            f"t{n:02d}/turn/debater-con-pricing",
            {**REBUT, "responds_to": {"entry": "L-003", "turn": 2}},
        )
        commit(
            debated,
            f"t{n + 1:02d}/turn/debater-pro-pricing",
            {**REBUT, "responds_to": {"entry": "L-001", "turn": 1}},
        )
    with CaptureQueriesContext(connection) as large:
        page(moderator_client, debated)
    assert len(small) <= 45, [q["sql"] for q in small.captured_queries]
    assert len(large) == len(small), "queries grow with the number of turns"


# --- approving and rejecting from the page ----------------------------------------------------------------------------


def decide(client: Client, run: Run, mutation: ProposedMutation, decision: str, **extra: str) -> Any:
    return client.post(
        f"/runs/{run.pk}/mutations/{mutation.pk}/decide/",
        {"decision": decision, "client_uuid": str(uuid.uuid4()), **extra},
        HTTP_HX_REQUEST="true",
    )


def test_approving_applies_the_downgrade_logs_a_revision_and_appends_an_event(moderator_client, debated):
    mutation = the_downgrade(debated)
    seq = Run.objects.get(pk=debated.pk).last_seq
    response = decide(moderator_client, debated, mutation, "approve")
    assert response.status_code == 200
    html = response.content.decode()
    mutation.refresh_from_db()
    assert mutation.status == "applied" and mutation.revision is not None
    r_id = mutation.revision.r_id
    assert f"Approved and applied: status-downgrade, logged as {r_id}." in html
    assert f'data-revision="{r_id}"' in html and 'id="approvals"' in html
    assert Argument.objects.get(kb=debated.kb, arg_id="arg-006").status == "weak"
    event = RunEvent.objects.get(run=debated, seq=seq + 1)
    assert event.kind == "mutation_decided"
    assert event.payload["status"] == "applied" and event.payload["revision"] == r_id
    assert HumanAction.objects.filter(run=debated, kind=HumanActionKind.MUTATION_DECIDE).count() == 1
    # The page now shows the new rating wherever arg-006 is cited, and the re-rating in the ledger.
    after = page(moderator_client, debated)
    assert 'id="ledger-rerated"' in after
    assert after.count('kbs-arg-006" title="KB rating now; contested when the debate started">weak') >= 3


def test_the_same_submission_twice_decides_once(moderator_client, debated):
    mutation = the_downgrade(debated)
    token = str(uuid.uuid4())
    url = f"/runs/{debated.pk}/mutations/{mutation.pk}/decide/"
    for _ in range(2):
        response = moderator_client.post(
            url, {"decision": "approve", "client_uuid": token}, HTTP_HX_REQUEST="true"
        )
        assert response.status_code == 200
    assert RunEvent.objects.filter(run=debated, kind="mutation_decided").count() == 1
    assert ProposedMutation.objects.get(pk=mutation.pk).status == "applied"
    # A fresh submission on a decided proposal is refused with its state, and changes nothing.
    html = decide(moderator_client, debated, mutation, "reject", reason="late").content.decode()
    assert "This proposal is applied as R-" in html and "already" in html
    assert RunEvent.objects.filter(run=debated, kind="mutation_decided").count() == 1


def test_rejecting_needs_a_reason(moderator_client, debated):
    mutation = the_downgrade(debated)
    html = decide(moderator_client, debated, mutation, "reject").content.decode()
    assert "Say why the proposal is rejected." in html
    assert ProposedMutation.objects.get(pk=mutation.pk).status == "pending"
    html = decide(
        moderator_client, debated, mutation, "reject", reason="The rebound is not confounded."
    ).content.decode()
    assert "Rejected: status-downgrade." in html
    mutation.refresh_from_db()
    assert mutation.status == "rejected" and mutation.reason == "The rebound is not confounded."
    assert Argument.objects.get(kb=debated.kb, arg_id="arg-006").status == "contested"


def test_a_viewer_cannot_decide(viewer_client, debated):
    mutation = the_downgrade(debated)
    assert decide(viewer_client, debated, mutation, "approve").status_code == 403
    assert ProposedMutation.objects.get(pk=mutation.pk).status == "pending"
    assert not RunEvent.objects.filter(run=debated, kind="mutation_decided").exists()


def test_deciding_needs_a_csrf_token(moderator, debated):
    mutation = the_downgrade(debated)
    client = Client(enforce_csrf_checks=True)
    client.force_login(moderator)
    url = f"/runs/{debated.pk}/mutations/{mutation.pk}/decide/"
    assert client.post(url, {"decision": "approve"}).status_code == 403
    assert ProposedMutation.objects.get(pk=mutation.pk).status == "pending"


def test_a_mutation_of_another_run_is_refused(moderator_client, debated, kb_run):
    other = services.run_create(
        protocol="kb-debate",
        topic="Another",
        kb=debated.kb,
        config={},
        backend_options={"cps": 0},
        enqueue=False,
    )
    mutation = the_downgrade(debated)
    html = decide(moderator_client, other, mutation, "approve").content.decode()
    assert f"Run {other.pk} proposed no KB change #{mutation.pk}." in html
    assert ProposedMutation.objects.get(pk=mutation.pk).status == "pending"


def test_without_htmx_the_decision_redirects_to_the_panel(moderator_client, debated):
    mutation = the_downgrade(debated)
    response = moderator_client.post(
        f"/runs/{debated.pk}/mutations/{mutation.pk}/decide/", {"decision": "approve"}
    )
    assert response.status_code == 302 and response["Location"].endswith(f"/runs/{debated.pk}/#approvals")


# --- live frames -------------------------------------------------------------------------------------------------------


def test_the_decision_event_re_renders_ledger_ratings_and_proposal_state_for_everyone(moderator, debated):
    mutation = the_downgrade(debated)
    mutation = run_mutation_decide(debated.pk, mutation.pk, True, "", moderator)
    event = RunEvent.objects.filter(run=debated).latest("seq")
    html, panels = frames.event_frame(event)
    assert panels, "the per-user approvals panel must be re-rendered too"
    assert '<section id="ledger" class="card ledger" hx-swap-oob="outerHTML">' in html
    assert 'hx-swap-oob="outerHTML:.kbs-arg-006">weak' in html
    assert f'hx-swap-oob="outerHTML:.mstate-{mutation.pk}">applied as R-' in html
    assert executable_parts(html, page=True) == []
    per_user = frames.panels_frame(debated.pk, moderator)
    assert '<section id="approvals" class="card approvals" hx-swap-oob="outerHTML">' in per_user
    assert f'data-revision="{mutation.revision.r_id}"' in per_user


def test_a_committed_turn_re_renders_the_ledger_but_not_the_approvals_when_it_proposes_nothing(debated):
    proposals = RunEvent.objects.filter(run=debated, kind="mutation_proposed").count()
    commit(debated, "t05/turn/debater-con-pricing", {**REBUT, "responds_to": {"entry": "L-003", "turn": 2}})
    event = RunEvent.objects.filter(run=debated, kind="turn_committed").latest("seq")
    html, panels = frames.event_frame(event)
    assert not panels, "the approvals (per viewer) change only with a proposal or a decision"
    assert 'id="turn-t05-turn-debater-con-pricing"' in html and 'id="ledger"' in html
    assert 'id="ledger-L-003"' in html and 'data-status="partially-rebutted"' in html
    assert RunEvent.objects.filter(run=debated, kind="mutation_proposed").count() == proposals


def ledger_entries(html: str) -> dict[str, str]:
    """Each ledger entry's <li> in a page or frame, by entry id (the ledger's own <li> close at its indentation)."""
    return {
        m.group(1): html[m.start() : html.index("\n    </li>", m.start())]
        for m in re.finditer(r'<li id="ledger-(L-\d+)"', html)
    }


def test_the_ledger_renders_an_entry_again_only_when_what_it_shows_changed(moderator, debated):
    """The ledger is re-rendered with every commit; an entry unchanged since is served as rendered before, and an
    entry whose claim, status or cited ratings changed is rendered anew (never shown stale)."""
    from django.core.cache import caches

    caches["fragments"].clear()
    before = kb_debate_context(debated)["ledger"]
    first = ledger_entries(frames.snapshot_frame(debated.pk, moderator)[0])
    again = ledger_entries(frames.snapshot_frame(debated.pk, moderator)[0])
    assert first == again and set(first) == {e["id"] for e in before}

    # A rebuttal of L-003: only L-003 changes (its status, its thread).
    commit(debated, "t05/turn/debater-con-pricing", {**REBUT, "responds_to": {"entry": "L-003", "turn": 2}})
    after_rebuttal = {e["id"]: e["fragment"] for e in kb_debate_context(debated)["ledger"]}
    changed = {e["id"] for e in before if after_rebuttal[e["id"]] != e["fragment"]}
    assert changed == {"L-003"}
    event = RunEvent.objects.filter(run=debated, kind="turn_committed").latest("seq")
    entries = ledger_entries(frames.event_frame(event)[0])
    assert 'data-status="partially-rebutted"' in entries["L-003"]
    assert 'href="#turn-t05-turn-debater-con-pricing"' in entries["L-003"]
    assert {k: v for k, v in entries.items() if k in first and k != "L-003"} == {
        k: v for k, v in first.items() if k != "L-003"
    }

    # Approving the downgrade of arg-006 re-rates it: every entry citing it shows the new rating.
    run_mutation_decide(debated.pk, the_downgrade(debated).pk, True, "", moderator)
    citing = {
        e["id"]
        for e in kb_debate_context(debated)["ledger"]
        if any(r["arg"] == "arg-006" for r in e["references"])
    }
    assert citing
    event = RunEvent.objects.filter(run=debated).latest("seq")
    entries = ledger_entries(frames.event_frame(event)[0])
    for entry_id in citing:
        assert 'title="KB rating now; contested when the debate started">weak' in entries[entry_id]
        assert entries[entry_id] != first[entry_id]


def test_a_proposed_change_is_an_event_that_re_renders_the_approvals(moderator, debated):
    proposed = RunEvent.objects.get(run=debated, kind="mutation_proposed")
    mutation = the_downgrade(debated)
    assert proposed.payload == {"mutation": mutation.pk, "kind": "status-downgrade", "status": "pending"}
    committed = RunEvent.objects.filter(run=debated, kind="turn_committed").latest("seq")
    assert proposed.seq < committed.seq  # appended by the turn's effects, in its commit's transaction
    html, panels = frames.event_frame(proposed)
    assert panels, "the per-user approvals panel must be re-rendered"
    assert f'id="approval-{mutation.pk}"' in frames.panels_frame(debated.pk, moderator)
    # The same change proposed again while the first waits is not proposed (nor announced) twice.
    commit(debated, "t05/moderator/moderator", MODERATOR)
    assert RunEvent.objects.filter(run=debated, kind="mutation_proposed").count() == 1


def test_a_started_turn_does_not_re_render_the_panels(debated):
    with transaction.atomic():
        seq = event_append(
            run_id=debated.pk, kind="turn_started", payload={"key": "t05/turn/debater-con-pricing"}
        )
        Turn.objects.create(
            run=debated,
            key="t05/turn/debater-con-pricing",
            seat=debated.seats.get(handle="debater-con-pricing"),
            stage="debate",
            task="turn",
            first_seq=seq,
        )
    html, panels = frames.event_frame(RunEvent.objects.get(run=debated, seq=seq))
    assert not panels and 'id="ledger"' not in html


def test_the_snapshot_carries_both_panels(moderator, debated):
    html, seq = frames.snapshot_frame(debated.pk, moderator)
    assert seq == Run.objects.get(pk=debated.pk).last_seq
    assert 'id="ledger" class="card ledger" hx-swap-oob' in html
    assert 'id="approvals" class="card approvals" hx-swap-oob' in html


def test_cross_examination_frames_are_unchanged(make_run, moderator):
    run = make_run()
    html, _ = frames.snapshot_frame(run.pk, moderator)
    assert 'id="ledger"' not in html and 'id="approvals"' not in html
    assert run_panels(run, moderator) == []


# --- the human moderator's console and the verdict review --------------------------------------------------------------


def awaiting(run: Run, key: str) -> None:
    Run.objects.filter(pk=run.pk).update(status=RunStatus.AWAITING_HUMAN, awaiting=[key])
    run.refresh_from_db()


def test_the_console_offers_every_move_and_keeps_posted_values_with_errors(moderator_client, kb_run):
    commit(kb_run, "t01/opening/debater-con-pricing", OPENING_CON)
    commit(kb_run, "t02/opening/debater-pro-pricing", OPENING_PRO)
    step = selectors.run_awaited_steps(kb_run) or None
    assert step is None  # not awaiting yet
    # After the openings the plan wants the moderator (a flag is open: arg-010 presented as strong).
    plan = registry.get("kb-debate").plan(selectors.run_view_load(kb_run))
    key = plan.steps[0].key
    assert key == "t03/moderator/moderator"
    awaiting(kb_run, key)
    html = page(moderator_client, kb_run)
    form = console_form(html)
    for name in (
        "text",
        "press_entry",
        "callout_type",
        "callout_position",
        "callout_turn",
        "deflection_position",
        "deflection_args",
        "deflection_turns",
        "deflection_target",
        "ruling_entry",
        "ruling_arg",
        "ruling_as",
        "ruling_justification",
        "ruling_turns",
        "mutation_arg",
        "mutation_to",
        "mutation_justification",
    ):
        assert f'name="{name}"' in form, name
    assert 'name="objection_decision"' not in form  # no objection pending
    assert "baseless-as-robust" in form  # the open flag is shown
    assert [p for p in executable_parts(html, page=True) if p not in FORM_TAGS] == []
    # A ruling on a contested argument without the downgrade is refused, shown by the ruling fields.
    response = moderator_client.post(
        f"/runs/{kb_run.pk}/human/", A_RULING | {"step_key": key}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    ruling = section(html, "console-ruling")
    assert "Closing needs arg-006 rated refuted or baseless" in ruling
    assert "The rebound is confounded</textarea>" in ruling and '<option value="L-001" selected>' in ruling
    assert '<input type="checkbox" name="ruling_turns" value="1" checked>' in ruling
    assert "The turn was not sent: 1 problem" in html
    # With the downgrade proposed in the same turn the ruling is taken.
    response = moderator_client.post(
        f"/runs/{kb_run.pk}/human/",
        A_RULING
        | {
            "step_key": key,
            "mutation_arg": "arg-006",
            "mutation_to": "refuted",
            "mutation_justification": "Turn 1 rests on an uncontrolled series.",
        },
        HTTP_HX_REQUEST="true",
    )
    assert "Submitted. The debate continues." in response.content.decode()


def console_form(html: str) -> str:
    form = html[html.index('id="human-form-t03-moderator-moderator"') :]
    return form[: form.index("</form>")]


def section(html: str, dom_id: str) -> str:
    """The console section (a <details>) holding the fieldset `dom_id`."""
    start = html.rindex("<details", 0, html.index(f'id="{dom_id}"'))
    return html[start : html.index("</details>", start)]


def options(html: str, name: str) -> list[tuple[str, str]]:
    """A select's options as (value, text)."""
    select = html[html.index(f'<select name="{name}"') :]
    select = select[: select.index("</select>")]
    return [(v, unescape(t)) for v, t in re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select)]


def checkboxes(html: str, name: str) -> list[tuple[str, str]]:
    """A checkbox list's boxes as (value, label text)."""
    return [
        (value, unescape(re.sub(r"<[^>]+>", "", text)).strip())
        for value, text in re.findall(
            rf'<input type="checkbox" name="{name}" value="([^"]*)"[^>]*>(.*?)</label>', html, re.S
        )
    ]


A_RULING = {
    "client_uuid": "",
    "text": "Ruling",
    "ruling_entry": "L-001",
    "ruling_arg": "arg-006",
    "ruling_as": "refuted",
    "ruling_justification": "The rebound is confounded",
    "ruling_turns": ["1"],
    "callout_type": "baseless-as-robust",
    "callout_position": CON,
    "callout_turn": "1",
    "callout_text": "arg-010 is baseless",
}


def test_the_console_picks_claims_turns_and_arguments_from_the_ledger_and_the_kb(moderator_client, kb_run):
    commit(kb_run, "t01/opening/debater-con-pricing", OPENING_CON)
    commit(kb_run, "t02/opening/debater-pro-pricing", OPENING_PRO)
    awaiting(kb_run, "t03/moderator/moderator")
    form = console_form(page(moderator_client, kb_run))
    # Nothing is typed but the words: no text or number input asks for an id or a turn number.
    assert not re.search(r'<input type="(text|number)"', form)
    claims = dict(options(form, "ruling_entry"))
    assert (
        claims["L-001"] == "L-001 (Against pricing, open): London's congestion returned to pre-charge levels"
    )
    assert set(claims) == {"", "L-001", "L-002", "L-003", "L-004"} == set(dict(options(form, "press_entry")))
    # The argument a ruling rests on, under the claim that cites it, with its title and live rating.
    args = form[form.index('<select name="ruling_arg"') :]
    assert '<optgroup label="cited by L-001"><option value="arg-006">arg-006 (contested): ' in args
    title = Argument.objects.get(kb=kb_run.kb, arg_id="arg-006").title
    assert title[:20] in dict(options(form, "ruling_arg"))["arg-006"]
    # Turns by number and speaker: checkboxes for the turns a ruling or a deflection rests on, a select for a callout.
    assert checkboxes(form, "ruling_turns") == [
        ("1", f"Turn 1 · {CON}, opening"),
        ("2", f"Turn 2 · {PRO}, opening"),
    ]
    assert checkboxes(form, "deflection_turns") == checkboxes(form, "ruling_turns")
    assert options(form, "callout_turn") == [("2", f"2 · {PRO}, opening"), ("1", f"1 · {CON}, opening")]
    # The open flag (turn 1, con-pricing) picks the callout's side and turn.
    assert '<option value="1" selected>' in form[form.index('<select name="callout_turn"') :]
    assert f'<option value="{CON}" selected>' in form[form.index('<select name="callout_position"') :]
    # What a side has cited, for a deflection; every KB argument for a downgrade or a deflection's target.
    cited = dict(checkboxes(form, "deflection_args"))
    assert set(cited) == {"arg-001", "arg-003", "arg-006", "arg-010"}
    assert cited["arg-003"].startswith("arg-003 (") and cited["arg-003"].endswith(f"— {PRO} in turn 2")
    arguments = Argument.objects.filter(kb=kb_run.kb)
    assert {v for v, _ in options(form, "deflection_target")} == {
        "",
        *arguments.values_list("arg_id", flat=True),
    }
    assert {v for v, _ in options(form, "mutation_arg")} == {
        "",
        *arguments.exclude(status__in=("refuted", "baseless")).values_list("arg_id", flat=True),
    }
    # Sections by what applies now: the flag to call out and the closable claim first and open, the rest
    # collapsed; plain words, no step keys or payload paths.
    sections = re.findall(
        r'<details class="console-section" id="section-(\w+)" data-section="\w+"( open)?>', form
    )
    assert sections == [
        ("callouts", " open"),
        ("close", " open"),
        ("deflection", ""),
        ("press", ""),
        ("kb", ""),
    ]
    assert "can be closed now: L-002 (arg-010 is baseless)" in form
    for internal in ("t03/", "rulings[", "callouts[", "status-downgrade"):
        assert internal not in form.replace('value="t03/moderator/moderator"', ""), internal


def test_with_nothing_flagged_the_console_opens_the_press(debated):
    """After a moderator turn that handled the flags, with no claim resting on a dead argument: pressing a claim is
    what applies, the other moves wait collapsed."""
    kb = kb_debate_context(debated)
    assert kb is not None
    step = {"turn": 5, "flags": [], "pending_objection": None, "ledger": kb["ledger"]}
    form = {"key": "t05/moderator/moderator", "dom_id": "human-form-t05", "context": step, "kb": kb}
    html = render_to_string(
        "debates/protocols/kb_debate.html#form-moderator",
        {
            "form": form | {"client_uuid": uuid.uuid4(), "errors": [], "field_errors": {}, "values": {}},
            "step_context": step,
            "run": debated,
        },
    )
    sections = re.findall(
        r'<details class="console-section" id="section-(\w+)" data-section="\w+"( open)?>', html
    )
    assert sections == [
        ("press", " open"),
        ("callouts", ""),
        ("deflection", ""),
        ("close", ""),
        ("kb", ""),
    ]
    # The closed claim is no longer offered for a ruling; the moderator's own turn is listed by number.
    assert "L-002" not in dict(options(html, "ruling_entry"))
    assert ("4", "Turn 4 · moderator") in checkboxes(html, "ruling_turns")
    assert ("4", "Turn 4 · moderator") not in checkboxes(html, "deflection_turns")
    assert ("3", f"Turn 3 · {PRO}, rebut L-002") in checkboxes(html, "deflection_turns")


@pytest.mark.django_db(transaction=True)
def test_a_refused_closure_offers_the_downgrade_it_needs_and_the_fix_commits_the_turn(
    moderator_client, kb_run
):
    commit(kb_run, "t01/opening/debater-con-pricing", OPENING_CON)
    commit(kb_run, "t02/opening/debater-pro-pricing", OPENING_PRO)
    key = "t03/moderator/moderator"
    awaiting(kb_run, key)
    posted = A_RULING | {"step_key": key, "ruling_as": "source-debunked"}
    html = moderator_client.post(f"/runs/{kb_run.pk}/human/", posted, HTTP_HX_REQUEST="true").content.decode()
    ruling = section(html, "console-ruling")
    assert "Ruling 1:" not in ruling
    assert (
        "Closing needs arg-006 rated refuted or baseless — it is contested; propose arg-006 → baseless"
        in ruling
    )
    # The fix: one button that sends the same turn again with the downgrade (a debunked source: baseless).
    fix = re.search(
        r'<button type="submit" name="also_propose" value="([^"]+)"[^>]*>([^<]+)</button>', ruling
    )
    assert fix is not None and fix.groups() == ("arg-006:baseless", "Also propose arg-006 → baseless")
    assert re.search(r'<details class="console-section" id="section-close" data-section="close" open>', html)
    # Used: the turn goes through with the ruling and the downgrade (the button's value is posted with the rest).
    response = moderator_client.post(
        f"/runs/{kb_run.pk}/human/", posted | {"also_propose": fix[1]}, HTTP_HX_REQUEST="true"
    )
    assert "Submitted. The debate continues." in response.content.decode()
    action = HumanAction.objects.get(run=kb_run, step_key=key)
    assert action.payload["rulings"][0] | {"turns": []} == {
        "entry": "L-001",
        "arg_id": "arg-006",
        "closed_as": "source-debunked",
        "justification": "The rebound is confounded",
        "turns": [],
    }
    assert action.payload["mutations"] == [
        {
            **action.payload["mutations"][0],
            "kind": "status-downgrade",
            "arg_id": "arg-006",
            "to": "baseless",
            "justification": "Closing L-001 as source-debunked: The rebound is confounded",
        }
    ]
    # The runner commits it: a moderator turn with the downgrade proposed, waiting in the approvals.
    assert run_to_stop(kb_run) in ("waiting", "completed")
    turn = Turn.objects.get(run=kb_run, key=key)
    assert turn.status == "committed" and turn.human
    assert turn.payload["mutations"][0]["arg_id"] == "arg-006"
    proposed = ProposedMutation.objects.get(run=kb_run, turn=turn)
    assert proposed.payload == {"arg_id": "arg-006", "to": "baseless"} and proposed.status == "pending"
    html = page(moderator_client, kb_run)
    entry = html[html.index('id="ledger-L-001"') :]
    assert 'data-status="closed"' in entry[: entry.index("</li>")]


def test_a_fix_kept_through_another_refusal_stays_ticked(moderator_client, kb_run):
    commit(kb_run, "t01/opening/debater-con-pricing", OPENING_CON)
    commit(kb_run, "t02/opening/debater-pro-pricing", OPENING_PRO)
    key = "t03/moderator/moderator"
    awaiting(kb_run, key)
    posted = A_RULING | {"step_key": key, "also_propose": "arg-006:refuted", "ruling_turns": []}
    html = moderator_client.post(f"/runs/{kb_run.pk}/human/", posted, HTTP_HX_REQUEST="true").content.decode()
    ruling = section(html, "console-ruling")
    assert "Closing needs" not in ruling and "The turn was not sent: 1 problem" in html
    assert (
        '<input type="checkbox" name="also_propose" value="arg-006:refuted" checked> Also propose arg-006 → refuted'
        in ruling
    )
    assert 'name="also_propose" value="arg-006:refuted" class' not in ruling  # no second button


def test_the_console_payload_reads_checkboxes_and_typed_lists_alike():
    from django.http import QueryDict

    from debates.protocols.kb_debate.console import moderator_payload

    data = QueryDict(mutable=True)
    data.setlist("ruling_turns", ["3", "1"])
    data.setlist("deflection_args", ["arg-003", "arg-015"])
    data.setlist("deflection_turns", ["2", "5"])
    data.update({"text": "t", "ruling_entry": "L-001", "deflection_position": PRO, "mutation_arg": "arg-006"})
    data.update({"mutation_to": "weak", "also_propose": "arg-006:refuted"})
    payload = moderator_payload(data)
    assert payload["rulings"][0]["turns"] == [1, 3]
    assert payload["deflections"][0]["cited_args"] == ["arg-003", "arg-015"]
    assert payload["deflections"][0]["turns"] == [2, 5]
    # The fix takes the place of the form's own downgrade of the same argument.
    assert [(m["arg_id"], m["to"]) for m in payload["mutations"]] == [("arg-006", "refuted")]
    typed = moderator_payload(
        {
            "text": "t",
            "ruling_entry": "L-001",
            "ruling_turns": "1, 3",
            "deflection_position": PRO,
            "deflection_args": "arg-003, arg-015",
            "deflection_turns": "2 5",
            "also_propose": "arg-6:gone",
        }
    )
    assert typed["rulings"][0]["turns"] == [1, 3] and typed["deflections"][0]["turns"] == [2, 5]
    assert typed["deflections"][0]["cited_args"] == ["arg-003", "arg-015"] and "mutations" not in typed


def test_the_console_rendered_in_a_frame_survives_re_renders(moderator, kb_run):
    commit(kb_run, "t01/opening/debater-con-pricing", OPENING_CON)
    commit(kb_run, "t02/opening/debater-pro-pricing", OPENING_PRO)
    awaiting(kb_run, "t03/moderator/moderator")
    html = frames.panels_frame(kb_run.pk, moderator)
    assert 'id="human-form-t03-moderator-moderator"' in html and 'hx-preserve="true"' in html


def test_a_pending_objection_is_put_to_the_moderator(moderator_client, debated):
    commit(
        debated,
        "t05/turn/debater-con-pricing",
        {
            "responds_to": {"entry": "L-001", "turn": 1},
            "move": "defend",
            "text": "New evidence on fairness.",
            "objection": {"entry": "L-002", "text": "A new study shows it.", "new_args": ["arg-022"]},
        },
    )
    plan = registry.get("kb-debate").plan(selectors.run_view_load(debated))
    key = plan.steps[0].key
    assert plan.steps[0].task == "moderator"
    awaiting(debated, key)
    html = page(moderator_client, debated)
    assert 'id="console-objection"' in html and 'name="objection_entry" value="L-002"' in html
    ledger = html[html.index('id="ledger-L-002"') :]
    assert "status-pending" in ledger[: ledger.index("</li>")]


def test_the_synthesis_verdict_review_and_outcome(moderator_client, debated):
    synthesis = {
        "text": "## Where it landed\nThe fairness claim was closed.",
        "verdict": {
            "label": "better-grounded",
            "position": PRO,
            "evidence": "Pro's central claims stand.",
            "engagement": "Pro engaged CQ1.",
        },
    }
    commit(debated, "t05/synthesis/orchestrator", synthesis)
    plan = registry.get("kb-debate").plan(selectors.run_view_load(debated))
    review_key = plan.steps[0].key
    assert plan.steps[0].task == "verdict-review"
    awaiting(debated, review_key)
    html = page(moderator_client, debated)
    assert 'data-verdict="better-grounded:pro-pricing"' in html
    assert "<h2>Where it landed</h2>" in html
    assert 'name="decision" value="dissent"' in html
    commit(debated, review_key, {"decision": "dissent", "text": "Con was not given CQ2."})
    view = selectors.run_view_load(debated)
    done = registry.get("kb-debate").plan(view)
    Run.objects.filter(pk=debated.pk).update(status=RunStatus.COMPLETED, outcome=done.outcome, awaiting=[])
    html = page(moderator_client, debated)
    outcome = html[html.index('id="kb-debate-outcome"') :]
    assert 'id="engagement-table"' in outcome and "Does congestion pricing durably reduce traffic" in outcome
    assert "Con was not given CQ2." in outcome and "review-dissent" in outcome
    closed = outcome[outcome.index('class="closed-claims"') :]
    assert "L-002" in closed[: closed.index("</ul>")]
    assert executable_parts(html, page=True) == []


@pytest.mark.parametrize(
    ("key", "payload"),
    [
        ("t01/opening/debater-con-pricing", {**OPENING_CON, "mutations": MODERATOR["mutations"]}),
        (
            "t03/turn/debater-pro-pricing",
            {
                **REBUT,
                "objection": {
                    "entry": "L-002",
                    "text": "New",
                    "new_args": ["arg-022"],
                    "new_sources": ["kb/sources/x.md"],
                },
            },
        ),
        (
            "t04/moderator/moderator",
            {
                **MODERATOR,
                "objection_decisions": [{"entry": "L-002", "decision": "reaffirm", "text": "Stands."}],
            },
        ),
        (
            "t09/synthesis/orchestrator",
            {
                "text": "# Done",
                "verdict": {"label": "genuinely-contested", "evidence": "e", "engagement": "g"},
            },
        ),
        ("t10/verdict-review/moderator", {"decision": "accept", "text": "Fine."}),
        # What a model streams is the shape it is asked for (the entry answered, the objection's entry and the
        # verdict's split are code's): it renders too.
        ("t03/turn/debater-pro-pricing", {k: v for k, v in REBUT.items() if k != "responds_to"}),
        (
            "t04/moderator/moderator",
            {"text": "Heard.", "objection_decision": {"decision": "reaffirm", "text": "Stands."}},
        ),
        (
            "t09/synthesis/orchestrator",
            {
                "text": "# Done",
                "verdict": {"label": "better-grounded:pro-pricing", "evidence": "e", "engagement": "g"},
            },
        ),
    ],
)
def test_every_prefix_of_a_streamed_turn_renders(key, payload):
    """Whatever the JSON parsed so far holds, the live body renders (no lookup of a missing key fails)."""
    import json

    text = json.dumps(payload)
    task = key.split("/")[1]
    for end in range(0, len(text) + 1, 3):
        html = frames.turn_live_frame(key=key, task=task, protocol="kb-debate", text=text[:end])
        assert "▍ streaming" in html
        assert executable_parts(html) == []


def test_a_decision_in_the_kb_inbox_reaches_the_run_too(moderator_client, debated):
    mutation = the_downgrade(debated)
    seq = Run.objects.get(pk=debated.pk).last_seq
    response = moderator_client.post(f"/kb/inbox/{mutation.pk}/decide/", {"decision": "approve"})
    assert response.status_code in (200, 302)
    mutation.refresh_from_db()
    assert mutation.status == "applied"
    assert RunEvent.objects.get(run=debated, seq=seq + 1).kind == "mutation_decided"


def test_a_committed_turns_message_shows_one_read_of_the_run(debated, monkeypatch):
    """The turn, the ledger, the status and the viewers' panels of one message (a moderator's turn proposing a KB
    change: the proposal's event and the commit's) are rendered from one read of the run's view and of the KB
    context (each widget read them again: 25 queries a commit before, then 10; with the run's KB read with it, its
    snapshot kept and no state read for a protocol without one, 8 for a commit alone)."""
    downgrade = {**MODERATOR["mutations"][0], "arg_id": "arg-007"}
    commit(debated, "t05/moderator/moderator", {**MODERATOR, "mutations": [downgrade]})
    seqs = list(RunEvent.objects.filter(run=debated).order_by("-seq").values_list("seq", flat=True)[:2])[::-1]
    event_messages(run_id=debated.pk, seqs=seqs)  # warm the per-process caches (seats, KB contents)
    reads: list[int] = []
    real_read = view._run_view_read
    monkeypatch.setattr(view, "_run_view_read", lambda run: reads.append(run.pk) or real_read(run))
    with CaptureQueriesContext(connection) as queries:
        proposed, committed = event_messages(run_id=debated.pk, seqs=seqs)
    assert reads == [debated.pk]
    html = proposed["html"] + committed["html"]
    assert 'id="turn-t05-moderator-moderator"' in html and 'id="ledger"' in html
    assert 'id="run-status"' in html and "viewer_panels" not in committed
    assert 'id="moderator"' in proposed["viewer_panels"] and 'id="approvals"' in proposed["viewer_panels"]
    assert len(queries) <= 10, [q["sql"] for q in queries.captured_queries]
    # A block inside another shares its reads; outside one, every call reads afresh.
    with view.run_reads_shared():
        view.run_view_load(debated)
        with view.run_reads_shared():
            view.run_view_load(debated)
    assert reads == [debated.pk] * 2
    view.run_view_load(debated)
    view.run_view_load(debated)
    assert reads == [debated.pk] * 4


# --- names, not ids ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("position", "label"),
    [
        ("pro-pricing", "For pricing"),
        ("con-pricing", "Against pricing"),
        ("pro-remote-work", "For remote work"),
        ("CON-x", "Against x"),
        ("meta", "Meta"),
        ("pro-", "Pro"),
    ],
)
def test_a_position_is_shown_in_words(position: str, label: str) -> None:
    from debates.protocols.kb_debate.ledger import position_label

    assert position_label(position) == label


def test_a_verdict_is_shown_in_words_with_the_position_it_favours() -> None:
    assert schema.verdict_words("better-grounded", "For pricing") == "Better grounded: For pricing"
    assert (
        schema.verdict_words("engagement-asymmetry", "Against pricing")
        == "Engagement asymmetry: Against pricing"
    )
    assert schema.verdict_words("genuinely-contested") == "Genuinely contested"
    assert schema.verdict_words("unresolved-by-corpus", "For pricing") == "Unresolved by the knowledge base"


@pytest.mark.django_db(transaction=True)
def test_a_whole_debate_names_its_seats_and_its_verdict_in_words_never_by_position_id(
    moderator_client: Client, demo_kb: Any
) -> None:
    """The demo KB's positions are `pro-pricing` and `con-pricing`: the agents cite them, the page says "For pricing"
    and "Against pricing" (seat names, turn headers, ledger, outcome, the verdict), and keeps the ids only in
    attributes."""
    run = services.run_create(
        protocol="kb-debate",
        topic="Does congestion pricing cut traffic without unfair harm?",
        kb=demo_kb,
        config={},
        seed=7,
        backend_options={"cps": 0},
        enqueue=False,
    )
    assert run_to_stop(run) == "done"
    assert sorted(run.seats.filter(role="debater").values_list("name", flat=True)) == [
        "Against pricing",
        "For pricing",
    ]
    html = page(moderator_client, run)
    # The material is the KB's text as the agents read it, shown verbatim: it keeps the KB's own ids.
    shown = re.sub(r'<details class="material">.*?</details>', " ", html, flags=re.S)
    visible = unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)\b.*?</\1>", " ", shown, flags=re.S)))
    assert "Against pricing" in visible and "For pricing" in visible
    assert "pro-pricing" not in visible and "con-pricing" not in visible
    assert "debater-" not in visible  # nor by its seat's handle (a proposal's author)
    label = re.search(
        r'id="verdict".*?class="badge verdict-label[^"]*" data-verdict="([^"]+)">([^<]+)<', html, re.S
    )
    assert label is not None
    raw, words = label.groups()
    name, position = schema.verdict_parts(raw)
    names = {"pro-pricing": "For pricing", "con-pricing": "Against pricing"}
    assert words == schema.verdict_words(name, names.get(position, ""))
    assert "-" not in words  # "Genuinely contested", not "genuinely-contested"
