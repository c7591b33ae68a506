"""The transcript reader (/runs/<id>/read/): turns grouped by round with their speakers and roles, citation badges
linking to the KB, the claims ledger and the KB revisions beside the transcript and linked both ways with the
turns, the outcome (scorecard) and the human's decision, deep links of the run page's shape, and a fixed number of
queries whatever the number of turns. The kb-debate transcripts are crafted (tests/test_kb_debate_page.py) where
the exact content matters, and simulated end to end where a finished run matters."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from debates.engine.turns import turn_citations
from debates.models import Run, RunStatus, Turn
from debates.selectors.review import turn_rounds
from debates.services import runs as services
from debates.services.mutations import run_mutation_decide
from kb.models import ProposedMutation, Revision
from tests.conftest import run_to_stop
from tests.platform.test_rendering import XSS_CORPUS, executable_parts
from tests.protocols.kb_debate.test_page import MODERATOR, OPENING_CON, OPENING_PRO, REBUT, commit

T1 = "turn-t01-opening-debater-con-pricing"
T2 = "turn-t02-opening-debater-pro-pricing"
T3 = "turn-t03-turn-debater-pro-pricing"
T4 = "turn-t04-moderator-moderator"


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
    """Two openings, a rebuttal of L-002 and a human moderator's turn (a ruling closing L-002, a press on L-001,
    a downgrade of arg-006 proposed), as in the run page's tests."""
    commit(kb_run, "t01/opening/debater-con-pricing", OPENING_CON)
    commit(kb_run, "t02/opening/debater-pro-pricing", OPENING_PRO)
    commit(kb_run, "t03/turn/debater-pro-pricing", REBUT)
    commit(kb_run, "t04/moderator/moderator", MODERATOR)
    return kb_run


def read(client: Client, run: Run, query: str = "") -> str:
    response = client.get(f"/runs/{run.pk}/read/{query}")
    assert response.status_code == 200
    return response.content.decode()


def element(html: str, dom_id: str, closing: str) -> str:
    """The markup of the element with `dom_id`, up to its first `closing` tag."""
    start = html.index(f'id="{dom_id}"')
    return html[start : html.index(closing, start)]


def squash(html: str) -> str:
    return " ".join(html.split())


def approve_downgrade(run: Run, user: Any) -> Revision:
    mutation = ProposedMutation.objects.get(run=run, kind="status-downgrade", payload__arg_id="arg-006")
    run_mutation_decide(run.pk, mutation.pk, True, "", user, client_uuid=uuid.uuid4())
    mutation.refresh_from_db()
    assert mutation.revision is not None
    return mutation.revision


# --- turns, rounds, speakers -------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_cross_examination_is_read_round_by_round_with_the_protocols_stage_labels(
    make_run, moderator_client
):
    run = make_run()
    assert run_to_stop(run) == "done"
    html = read(moderator_client, run)
    titles = [squash(t) for t in re.findall(r'<h2 class="round-title">(.*?)</h2>', html, re.S)]
    assert titles == [
        "Round 1 · Independent analysis",
        "Round 2 · Examiner questions",
        "Round 3 · Answers",
        "Round 4 · Assessment",
    ]
    round_3 = element(html, "round-3", "</section>")
    assert round_3.count("<article ") == 3
    for handle in ("analyst-ada", "analyst-bo", "analyst-cy"):
        assert f'id="turn-r3-answers-{handle}"' in round_3
    examiner = element(html, "turn-r2-questions-examiner", "</header>")
    assert (
        '<strong class="speaker">Examiner</strong>' in examiner
        and '<span class="role">examiner</span>' in examiner
    )
    # The body is the protocol's own partial, as on the run page, and the outcome partial closes the transcript.
    assert 'class="turn-body"' in element(html, "turn-r2-questions-examiner", "</article>")
    assert html.index('id="round-4"') < html.index('id="outcome"')


def test_every_turn_has_the_run_pages_dom_id_so_deep_links_have_one_shape(moderator_client, debated):
    reader = read(moderator_client, debated)
    page = moderator_client.get(f"/runs/{debated.pk}/").content.decode()
    reader_ids = re.findall(r'<article id="(turn-[^"]+)"', reader)
    assert reader_ids == [T1, T2, T3, T4]
    assert reader_ids == re.findall(r'<article id="(turn-[^"]+)"', page)
    for dom_id in reader_ids:
        assert f'class="permalink" href="#{dom_id}"' in reader


def test_a_kb_debates_rounds_close_with_the_moderators_turn():
    cards = [
        {"key": key, "stage": stage, "task": task, "number": n}
        for n, (key, stage, task) in enumerate(
            [
                ("t01/opening/debater-a", "openings", "opening"),
                ("t02/opening/debater-b", "openings", "opening"),
                ("t03/moderator/moderator", "debate", "moderator"),
                ("t04/turn/debater-a", "debate", "turn"),
                ("t05/turn/debater-b", "debate", "turn"),
                ("t06/moderator/moderator", "debate", "moderator"),
                ("t07/turn/debater-a", "debate", "turn"),
                ("t08/synthesis/orchestrator", "synthesis", "synthesis"),
            ],
            start=1,
        )
    ]
    labels = {"openings": "Openings", "debate": "Interleaved debate", "synthesis": "Synthesis and verdict"}
    rounds = turn_rounds(cards, labels)
    assert [(r["dom_id"], r["label"], [c["number"] for c in r["cards"]]) for r in rounds] == [
        ("round-1", "Openings", [1, 2, 3]),
        ("round-2", "Interleaved debate (turns 4–6)", [4, 5, 6]),
        ("round-3", "Interleaved debate (turn 7)", [7]),
        ("round-4", "Synthesis and verdict", [8]),
    ]


# --- citations ------------------------------------------------------------------------------------------------------


def test_citation_badges_keep_their_verification_and_link_to_the_kb(moderator_client, debated):
    source = "kb/sources/peer-reviewed/borjesson-2012-stockholm-five-years.md"
    citations = turn_citations(debated.pk, f"arg-006 and arg-999, see {source}")
    assert [c["status"] for c in citations] == ["verified", "unverified", "verified"]
    Turn.objects.filter(run=debated, key="t01/opening/debater-con-pricing").update(citations=citations)
    badges = element(read(moderator_client, debated), T1, "</p>")
    assert (
        '<a class="badge citation-verified" href="/kb/congestion-pricing/arguments/arg-006/" '
        'title="arg-006 is rated contested" data-citation="arg-006">arg-006 · verified (contested)</a>'
    ) in badges
    assert '<a class="badge citation-verified" href="/kb/congestion-pricing/#sources"' in badges
    # An id the KB does not have links nowhere, and says so.
    assert (
        '<span class="badge citation-unverified" title="no argument arg-999 in the KB" data-citation="arg-999">'
        "arg-999 · unverified</span>"
    ) in badges


# --- the ledger and the revisions, linked both ways with the turns ---------------------------------------------------


def test_a_ledger_entry_links_to_every_turn_of_its_thread(moderator_client, debated):
    html = read(moderator_client, debated)
    ledger = element(html, "reader-ledger", "</section>")
    entry = element(ledger, "ledger-L-002", "</li>")
    assert 'data-status="closed"' in entry
    thread = re.findall(r'class="turn-link" href="#(turn-[^"]+)"', entry)
    assert thread == [T1, T3, T4]  # raised at turn 1, rebutted at 3, closed by the ruling at 4
    assert f'href="/runs/{debated.pk}/read/?thread=L-002#{T1}"' in entry


def test_following_a_thread_highlights_its_turns_and_lists_them(moderator_client, debated):
    html = read(moderator_client, debated, "?thread=L-002")
    highlighted = re.findall(r'<article id="(turn-[^"]+)" class="[^"]*\bin-thread\b', html)
    assert highlighted == [T1, T3, T4]
    box = element(html, "reader-thread", "</div>")
    assert "Thread of L-002" in box
    assert re.findall(r'href="#(turn-[^"]+)"', box) == [T1, T3, T4]
    assert 'class="ledger-entry selected"' in element(html, "ledger-L-002", ">")
    # Without a thread, or with an entry the run does not have, nothing is highlighted.
    assert "in-thread" not in read(moderator_client, debated)
    missing = read(moderator_client, debated, "?thread=L-999")
    assert "in-thread" not in missing and "There is no ledger entry L-999 in this run." in missing


def test_each_turn_links_back_to_the_entries_it_raised_or_answered(moderator_client, debated):
    html = read(moderator_client, debated)

    def links(dom_id: str, kind: str) -> list[str]:
        footer = element(html, dom_id, "</article>")
        return re.findall(rf'class="entry-link {kind}" href="#ledger-(L-\d+)"', footer)

    assert links(T1, "raised") == ["L-001", "L-002"]
    assert links(T2, "raised") == ["L-003", "L-004"]
    assert links(T3, "raised") == ["L-005"] and links(T3, "answered") == ["L-002"]
    assert sorted(links(T4, "answered")) == ["L-001", "L-002"]  # the press on L-001, the ruling on L-002
    for entry in ("L-001", "L-002", "L-003", "L-004", "L-005"):
        assert f'id="ledger-{entry}"' in html


def test_a_revision_links_to_the_turn_that_triggered_it_and_back(moderator_client, moderator, debated):
    revision = approve_downgrade(debated, moderator)
    html = read(moderator_client, debated)
    revisions = element(html, "reader-revisions", "</section>")
    item = element(revisions, f"revision-{revision.r_id}", "</article>")
    assert f'class="revision-turn" href="#{T4}"' in item and ">turn 4</a>" in item
    assert "status contested → weak" in item
    assert '<span class="badge" data-type="status-downgrade">Lower a rating</span>' in item
    assert f'href="/kb/congestion-pricing/#revision-{revision.r_id}"' in item
    assert f'href="#revision-{revision.r_id}" data-revision="{revision.r_id}"' in element(
        html, T4, "</article>"
    )
    assert "data-revision" not in element(html, T3, "</article>")


def test_a_proposals_approvals_link_leads_to_the_run_pages_panel(moderator_client, debated):
    html = read(moderator_client, debated)
    links = re.findall(r'href="([^"]*#approval-\d+)" class="muted">approvals</a>', html)
    assert links and all(link.startswith(f"/runs/{debated.pk}/#approval-") for link in links)
    run_page = moderator_client.get(f"/runs/{debated.pk}/").content.decode()
    for link in links:
        assert f'id="{link.split("#")[1]}"' in run_page


@pytest.mark.django_db(transaction=True)
def test_a_run_without_revisions_says_so_and_a_run_without_a_kb_has_no_ledger(
    make_run, moderator_client, debated
):
    assert "This run changed nothing in the KB." in read(moderator_client, debated)
    plain = read(moderator_client, make_run())
    assert 'id="reader-ledger"' not in plain and 'id="reader-revisions"' not in plain


# --- outcome, decision, access -----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_finished_kb_debate_shows_its_verdict_with_the_transcript(moderator_client, demo_kb):
    run = services.run_create(
        protocol="kb-debate",
        topic="Does congestion pricing cut traffic without unfair harm?",
        kb=demo_kb,
        config={"auto_approve": True},
        seed=7,
        backend_options={"cps": 0},
        enqueue=False,
    )
    assert run_to_stop(run) == "done"
    html = read(moderator_client, run)
    verdict = run.outcome["verdict"]
    label = verdict["label"] + (f":{verdict['position']}" if verdict.get("position") else "")
    assert f'data-verdict="{label}"' in element(html, "kb-debate-outcome", "</div>")
    assert 'id="reader-unfinished"' not in html
    # Every revision the debate caused links to a turn of this transcript.
    revisions = Revision.objects.filter(run=run).select_related("turn")
    assert revisions.exists()
    for revision in revisions:
        item = element(html, f"revision-{revision.r_id}", "</article>")
        assert f'href="#{revision.turn.dom_id}"' in item
        assert f'id="{revision.turn.dom_id}"' in html
    assert executable_parts(html, page=True) == []


@pytest.mark.django_db(transaction=True)
def test_the_scorecard_and_the_humans_decision_are_shown(moderator_client, moderator):
    from tests.protocols.comparative.test_simulated import debate

    run = debate()
    assert services.run_pick_record(
        run_id=run.pk,
        pick="A" if run.judge_pick == "B" else "B",
        reason="The team knows it already.",
        user=moderator,
    )
    html = read(moderator_client, run)
    scorecard = element(html, "scorecard", "</table>")
    assert f'<td id="total-a"><strong>{run.outcome["scorecard"]["total_a"]}</strong>' in scorecard
    decision = element(html, "decision", "</section>")
    assert "overrides the judge" in decision and "The team knows it already." in decision
    assert html.index('id="round-3"') < html.index('id="decision"')


def test_a_viewer_may_read_and_an_anonymous_visitor_is_sent_to_log_in(viewer_client, debated):
    assert 'id="reader"' in read(viewer_client, debated)
    response = Client().get(f"/runs/{debated.pk}/read/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert viewer_client.get("/runs/999999/read/").status_code == 404


def test_an_unfinished_run_is_read_as_far_as_it_went(moderator_client, debated):
    html = read(moderator_client, debated)
    assert debated.status != RunStatus.COMPLETED
    assert 'id="reader-unfinished"' in html and f'href="/runs/{debated.pk}/"' in html


def test_the_run_page_links_to_the_reader_and_the_compare_picker(viewer_client, debated):
    page = viewer_client.get(f"/runs/{debated.pk}/").content.decode()
    actions = element(page, "read-transcript", "</div>")
    assert f'href="/runs/{debated.pk}/read/"' in actions
    assert f'href="/runs/compare/?a={debated.pk}"' in actions


@pytest.mark.parametrize("payload", XSS_CORPUS)
def test_untrusted_text_stays_inert_in_the_reader(moderator_client, kb_run, payload):
    commit(
        kb_run,
        "t01/opening/debater-con-pricing",
        {
            "summary": payload,
            "claims": [{"text": payload[:300], "args": ["arg-006"], "presented_as": "contested"}],
        },
    )
    commit(
        kb_run,
        "t02/opening/debater-pro-pricing",
        {"summary": "ok", "claims": [{"text": "Stockholm", "args": ["arg-001"], "presented_as": "robust"}]},
    )
    Run.objects.filter(pk=kb_run.pk).update(topic=payload)
    html = read(moderator_client, kb_run, "?thread=L-001")
    assert executable_parts(html, page=True) == []


# --- queries -------------------------------------------------------------------------------------------------------


def test_the_reader_makes_as_many_queries_for_forty_turns_as_for_four(
    moderator_client, moderator, debated, django_assert_num_queries
):
    approve_downgrade(debated, moderator)
    read(moderator_client, debated)  # warm caches (content types, permissions)
    with CaptureQueriesContext(connection) as small:
        read(moderator_client, debated, "?thread=L-002")
    for n in range(5, 41, 2):
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
    assert debated.turns.count() == 40
    with django_assert_num_queries(len(small)):
        html = read(moderator_client, debated, "?thread=L-002")
    assert html.count('<article id="turn-') == 40
