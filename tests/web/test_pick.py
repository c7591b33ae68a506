"""The human's pick after a judge's verdict, for every protocol whose outcome offers one (`judge_pick` and
`pick_options` in Run.outcome): agree, override with a reason, or adjudicate when the judge failed; the run page's
form and #decision block, the live frame, the runs list, the JSON export, and the override-rate page."""

from __future__ import annotations

import html as htmllib
import json
import re
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from debates.engine import registry
from debates.exports.run_json import run_export_json
from debates.models import HumanAction, Run, RunEvent
from debates.selectors.decisions import pick_context
from debates.services import runs as services
from debates.web.frames import event_frame
from tests.conftest import run_to_stop

OPTIONS = [["A", "Postgres"], ["B", "MongoDB"]]
REASON = "Our team already runs Mongo in production and knows it."


def completed(run: Run, *, judge_pick: str = "A", options: Any = OPTIONS) -> Run:
    """The run as a protocol with a pick leaves it: completed, the judge's choice copied from the outcome. The
    protocol's own outcome does not matter to the pick, so it is written directly."""
    outcome = {"judge_pick": judge_pick, "pick_options": options} if options is not None else {}
    fields: dict[str, Any] = {
        "status": "completed",
        "outcome": outcome,
        "judge_pick": judge_pick if options is not None else "",
        "finished_at": timezone.now(),
    }
    Run.objects.filter(pk=run.pk).update(**fields)
    run.refresh_from_db()
    return run


@pytest.fixture
def judged(make_run) -> Run:
    return completed(make_run())


def pick(run: Run, user: Any, choice: str, reason: str = "", **kwargs: Any) -> bool:
    return services.run_pick_record(run_id=run.pk, pick=choice, reason=reason, user=user, **kwargs)


def untouched(run: Run) -> bool:
    run.refresh_from_db()
    return (
        run.human_pick == ""
        and run.picked_at is None
        and not HumanAction.objects.filter(run=run, kind="pick").exists()
        and not RunEvent.objects.filter(run=run, kind="pick_recorded").exists()
    )


# --- the service's rules ------------------------------------------------------------------------------------------


class PickServiceTests:
    def test_agreeing_with_the_judge_needs_no_reason(self, judged, moderator):
        assert pick(judged, moderator, "A") is True
        judged.refresh_from_db()
        assert (judged.human_pick, judged.pick_reason, judged.picked_by) == ("A", "", moderator)
        assert judged.picked_at is not None and not judged.pick_overrides
        action = HumanAction.objects.get(run=judged, kind="pick")
        assert action.payload == {"pick": "A", "reason": "", "agrees": True} and action.user == moderator
        event = RunEvent.objects.get(run=judged, kind="pick_recorded")
        assert event.payload == {"pick": "A", "judge_pick": "A", "agrees": True, "user": "mod"}
        assert event.seq == judged.last_seq

    def test_overriding_the_judge_needs_a_reason_of_ten_characters(self, judged, moderator):
        for reason in ("", "   ", "too short"):  # "too short" is 9 characters
            with pytest.raises(services.ActionRefused, match="Say why you override the judge"):
                pick(judged, moderator, "B", reason)
        assert untouched(judged)

    def test_an_override_keeps_its_reason(self, judged, moderator):
        assert pick(judged, moderator, "B", f"  {REASON}  ")
        judged.refresh_from_db()
        assert (judged.judge_pick, judged.human_pick, judged.pick_reason) == ("A", "B", REASON)
        assert judged.pick_overrides and judged.human_pick_label == "MongoDB"
        assert HumanAction.objects.get(run=judged, kind="pick").payload == {
            "pick": "B",
            "reason": REASON,
            "agrees": False,
        }
        assert RunEvent.objects.get(run=judged, kind="pick_recorded").payload["agrees"] is False

    def test_a_pick_outside_the_options_is_refused_and_the_options_are_listed(self, judged, moderator):
        for choice in ("C", "", "Postgres"):  # a label is not a value
            with pytest.raises(services.ActionRefused) as refused:
                pick(judged, moderator, choice, REASON)
            assert "A (Postgres)" in str(refused.value) and "B (MongoDB)" in str(refused.value)
        assert untouched(judged)

    def test_only_a_completed_run_takes_a_pick(self, make_run, moderator):
        run = make_run()
        Run.objects.filter(pk=run.pk).update(
            outcome={"judge_pick": "A", "pick_options": OPTIONS}, judge_pick="A"
        )
        for status in ("queued", "running", "paused", "awaiting_human"):
            Run.objects.filter(pk=run.pk).update(status=status)
            with pytest.raises(services.ActionRefused, match="once it has completed"):
                pick(run, moderator, "A")
        for status in ("failed", "cancelled"):
            Run.objects.filter(pk=run.pk).update(status=status)
            with pytest.raises(services.ActionRefused, match=f"The run is {status}; it has no verdict"):
                pick(run, moderator, "A")
        assert untouched(run)

    def test_a_protocol_whose_outcome_offers_no_pick_takes_none(self, make_run, moderator):
        run = completed(make_run(), options=None)
        with pytest.raises(services.ActionRefused, match="nothing to pick from"):
            pick(run, moderator, "A", REASON)
        assert untouched(run) and pick_context(run) == {"has_pick": False, "options": [], "history": []}

    def test_without_a_judges_pick_the_human_adjudicates_and_says_why(self, make_run, moderator):
        run = completed(make_run(), judge_pick="")
        with pytest.raises(services.ActionRefused, match="The judge gave no verdict"):
            pick(run, moderator, "A", "ok")
        assert untouched(run)
        assert pick(run, moderator, "A", "Postgres's raw case cites the load test.")
        run.refresh_from_db()
        assert run.human_pick == "A" and not run.pick_overrides
        assert HumanAction.objects.get(run=run, kind="pick").payload["agrees"] is None
        decision = pick_context(run)
        assert decision["state"] == "adjudicated" and decision["judge_label"] == ""

    def test_a_double_submit_is_a_no_op(self, judged, moderator):
        token = uuid.uuid4()
        assert pick(judged, moderator, "B", REASON, client_uuid=token) is True
        # The same submission again, even with other values, changes nothing.
        assert pick(judged, moderator, "A", "", client_uuid=token) is False
        judged.refresh_from_db()
        assert judged.human_pick == "B"
        assert HumanAction.objects.filter(run=judged, kind="pick").count() == 1
        assert RunEvent.objects.filter(run=judged, kind="pick_recorded").count() == 1

    def test_a_pick_can_be_revised_the_latest_stands_and_the_history_stays(self, judged, moderator, viewer):
        assert pick(judged, moderator, "A")
        assert pick(judged, moderator, "B", REASON)
        judged.refresh_from_db()
        assert (judged.human_pick, judged.pick_reason) == ("B", REASON)
        decision = pick_context(judged)
        assert decision["state"] == "overrides" and decision["revised"]
        assert [(h["pick"], h["label"], h["agrees"], h["user"]) for h in decision["history"]] == [
            ("A", "Postgres", True, "mod"),
            ("B", "MongoDB", False, "mod"),
        ]
        # Back to agreeing: the stale override reason does not stay on the run.
        assert pick(judged, moderator, "A")
        judged.refresh_from_db()
        assert (judged.human_pick, judged.pick_reason) == ("A", "")
        assert len(pick_context(judged)["history"]) == 3


@pytest.mark.django_db(transaction=True)
def test_the_runner_copies_the_judges_pick_and_an_outcome_without_one_leaves_it_empty(make_run, moderator):
    """The runner copies outcome["judge_pick"] onto the run when the plan is Done. A cross-examination has no
    judge and no pick: the copy is empty and nothing can be picked."""
    run = make_run()
    assert run_to_stop(run) == "done"
    assert run.status == "completed" and run.outcome
    assert "judge_pick" not in run.outcome and "pick_options" not in run.outcome
    assert run.judge_pick == "" and run.pick_options == []
    with pytest.raises(services.ActionRefused, match="nothing to pick from"):
        pick(run, moderator, "A", REASON)


# --- the run page ---------------------------------------------------------------------------------------------------


def htmx_pick(client: Client, run: Run, choice: str, reason: str = "", **extra: Any):
    data = {"pick": choice, "reason": reason, "client_uuid": str(uuid.uuid4()), **extra}
    return client.post(f"/runs/{run.pk}/pick/", data, HTTP_HX_REQUEST="true")


def section(html: str, dom_id: str) -> str:
    """The element with this id, up to its matching close tag (good enough for the run page's sections)."""
    start = html.index(f'id="{dom_id}"')
    start = html.rindex("<", 0, start)
    tag = re.match(r"<(\w+)", html[start:]).group(1)
    depth, pos = 0, start
    for match in re.finditer(rf"<(/?){tag}\b", html[start:]):
        depth += -1 if match.group(1) else 1
        if depth == 0:
            pos = start + match.end()
            break
    return html[start : html.index(">", pos) + 1]


class RunPagePickTests:
    def test_a_moderator_gets_the_pick_form_on_a_completed_run_with_options(self, moderator_client, judged):
        html = moderator_client.get(f"/runs/{judged.pk}/").content.decode()
        form = section(html, "pick-form")
        assert f'hx-post="/runs/{judged.pk}/pick/"' in form and 'hx-target="#pick"' in form
        assert re.search(r'name="pick" value="A"[^>]* checked', form)  # the judge's pick comes pre-selected
        assert 'name="pick" value="B"' in form
        assert re.search(r"Postgres <span class=\"badge judge-pick\">judge's pick</span>", form)
        assert "MongoDB <span" not in form
        assert "Reason (required to override the judge)" in form and 'name="reason"' in form
        assert 'name="client_uuid"' in form and 'name="csrfmiddlewaretoken"' in form
        assert re.search(r'<button type="submit" id="pick-submit"[^>]*>Record my decision</button>', form)

    def test_no_pick_form_before_completion_or_without_options_or_for_a_viewer(
        self, moderator_client, viewer_client, make_run, judged
    ):
        queued = make_run()
        Run.objects.filter(pk=queued.pk).update(outcome={"judge_pick": "A", "pick_options": OPTIONS})
        no_pick = completed(make_run(), options=None)
        for client, run in [(moderator_client, queued), (moderator_client, no_pick), (viewer_client, judged)]:
            html = client.get(f"/runs/{run.pk}/").content.decode()
            assert 'id="pick-form"' not in html, run.pk
        # A protocol without a pick shows no decision block either; the viewer sees the judged run's block.
        assert 'id="decision"' not in moderator_client.get(f"/runs/{no_pick.pk}/").content.decode()
        assert 'id="decision"' in viewer_client.get(f"/runs/{judged.pk}/").content.decode()

    def test_the_outcome_shows_the_judges_pick_and_that_no_human_decided_yet(self, viewer_client, judged):
        block = section(viewer_client.get(f"/runs/{judged.pk}/").content.decode(), "decision")
        assert "Judge's pick: <strong>Postgres</strong>" in block
        assert "No human decision yet." in block and 'data-state="none"' in block

    def test_an_htmx_pick_answers_with_what_was_recorded_and_everyone_sees_the_decision(
        self, moderator_client, viewer_client, judged
    ):
        response = htmx_pick(moderator_client, judged, "B", REASON)
        assert response.status_code == 200
        panel = response.content.decode()
        assert panel.lstrip().startswith('<section id="pick"')
        assert "Recorded: you override the judge and pick MongoDB." in panel
        # The form gives way to what was recorded; revising it is one click away.
        assert '<details class="pick-revise"><summary>Revise your decision</summary>' in panel
        assert "Revise your decision" in section(panel, "pick-form")
        judged.refresh_from_db()
        assert (judged.human_pick, judged.pick_reason) == ("B", REASON)

        block = section(viewer_client.get(f"/runs/{judged.pk}/").content.decode(), "decision")
        assert 'data-state="overrides"' in block
        assert "Human's pick: <strong>MongoDB</strong>" in block and "overrides the judge" in block
        assert "Our team already runs Mongo in production and knows it." in block and "by mod" in block

    def test_agreeing_says_so(self, moderator_client, viewer_client, judged):
        panel = htmx_pick(moderator_client, judged, "A").content.decode()
        assert "Recorded: you agree with the judge (Postgres)." in panel
        block = section(viewer_client.get(f"/runs/{judged.pk}/").content.decode(), "decision")
        assert "agrees with the judge" in block and "overrides" not in block

    def test_a_refused_pick_says_why_and_keeps_what_was_typed(self, moderator_client, judged):
        response = htmx_pick(moderator_client, judged, "B", "Because")
        assert response.status_code == 200  # htmx swaps it in; the form says what went wrong
        form = section(response.content.decode(), "pick-form")
        assert re.search(r'role="alert"[^>]*>Say why you override the judge', form)
        assert re.search(r'name="pick" value="B"[^>]* checked', form)
        assert ">Because</textarea>" in form
        assert untouched(judged)

    def test_a_double_submit_records_once(self, moderator_client, judged):
        token = str(uuid.uuid4())
        first = htmx_pick(moderator_client, judged, "B", REASON, client_uuid=token)
        second = htmx_pick(moderator_client, judged, "B", REASON, client_uuid=token)
        assert first.status_code == second.status_code == 200
        assert "recorded already" in second.content.decode()
        assert HumanAction.objects.filter(run=judged, kind="pick").count() == 1

    def test_without_htmx_a_pick_redirects_to_the_run_page(self, moderator_client, judged):
        response = moderator_client.post(f"/runs/{judged.pk}/pick/", {"pick": "A"})
        assert response.status_code == 302 and response["Location"] == f"/runs/{judged.pk}/"
        judged.refresh_from_db()
        assert judged.human_pick == "A"

    def test_a_viewer_cannot_pick(self, viewer_client, judged):
        assert htmx_pick(viewer_client, judged, "A").status_code == 403
        assert viewer_client.get(f"/runs/{judged.pk}/pick/").status_code == 405
        assert untouched(judged)

    def test_a_pick_needs_login_and_a_csrf_token(self, moderator, judged):
        assert Client().post(f"/runs/{judged.pk}/pick/", {"pick": "A"}).status_code == 302  # to the login
        client = Client(enforce_csrf_checks=True)
        client.force_login(moderator)
        assert htmx_pick(client, judged, "A").status_code == 403
        assert untouched(judged)
        # With the token the page hands out (the body's hx-headers), the same post is recorded.
        client.get(f"/runs/{judged.pk}/")
        token = client.cookies["csrftoken"].value
        response = client.post(
            f"/runs/{judged.pk}/pick/",
            {"pick": "A", "client_uuid": str(uuid.uuid4())},
            HTTP_HX_REQUEST="true",
            HTTP_X_CSRFTOKEN=token,
        )
        assert response.status_code == 200
        judged.refresh_from_db()
        assert judged.human_pick == "A"


# --- live: the pick_recorded event re-renders #decision on every open page ------------------------------------------


class PickFrameTests:
    def test_the_pick_recorded_frame_carries_the_new_decision_block(self, judged, moderator):
        pick(judged, moderator, "B", REASON)
        event = RunEvent.objects.get(run=judged, kind="pick_recorded")
        html, per_user = event_frame(event)
        outcome = section(html, "outcome")
        assert 'hx-swap-oob="outerHTML"' in outcome.split(">", 1)[0]
        block = section(outcome, "decision")
        assert "Human's pick: <strong>MongoDB</strong>" in block and "overrides the judge" in block
        assert (
            per_user
        )  # every viewer's moderator panel is re-rendered too (the pick form shows the revision)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_viewer_on_the_socket_sees_the_pick_as_it_is_recorded(make_run, moderator, viewer, settings):
    from tests.web.test_consumers import connected_socket

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    run = await sync_to_async(lambda: completed(make_run()))()
    comm, snapshot = await connected_socket(run.pk, viewer)
    try:
        assert "No human decision yet." in snapshot
        await sync_to_async(pick)(run, moderator, "B", REASON)
        frames = [await comm.receive_from(timeout=10)]
        while not await comm.receive_nothing(timeout=0.5):
            frames.append(await comm.receive_from())
    finally:
        await comm.disconnect()
    live = "".join(frames)
    assert "overrides the judge" in section(live, "decision") and REASON in live
    assert 'id="pick-form"' not in live  # the viewer's re-rendered panel still has no controls


# --- runs list -------------------------------------------------------------------------------------------------------


class RunListPickTests:
    def test_the_runs_list_shows_both_picks_by_label_and_flags_an_override(
        self, moderator, viewer_client, make_run
    ):
        agreed, overridden, pending = (completed(make_run()) for _ in range(3))
        no_pick = make_run()
        pick(agreed, moderator, "A")
        pick(overridden, moderator, "B", REASON)
        html = viewer_client.get("/", HTTP_HX_REQUEST="true").content.decode()
        assert "<th>Judge's pick</th><th>Human's pick</th>" in html
        rows = {run.pk: section(html, f"run-row-{run.pk}") for run in (agreed, overridden, pending, no_pick)}
        assert '<td class="judge-pick">Postgres</td>' in rows[agreed.pk]
        assert '<td class="human-pick">Postgres</td>' in rows[agreed.pk]
        assert (
            '<td class="human-pick">MongoDB <span class="badge pick-override">override</span></td>'
            in (rows[overridden.pk])
        )
        assert "awaiting" in rows[pending.pk] and "override" not in rows[pending.pk]
        assert "override" not in rows[no_pick.pk] and "Postgres" not in rows[no_pick.pk]

    def test_the_runs_list_makes_no_query_per_run(self, moderator, viewer_client, make_run):
        def queries() -> int:
            with CaptureQueriesContext(connection) as captured:
                assert viewer_client.get("/").status_code == 200
            return len(captured)

        pick(completed(make_run()), moderator, "B", REASON)
        few = queries()
        for _ in range(6):
            pick(completed(make_run()), moderator, "B", REASON)
        assert queries() == few


# --- JSON export -----------------------------------------------------------------------------------------------------

EXPORT_KEYS = {
    "format",
    "format_version",
    "run",
    "seats",
    "turns",
    "events",
    "human_actions",
    "outcome",
    "ledger",
    "revisions",
    "proposed_mutations",
    "scorecard",
    "decision",
    "usage",
}


class ExportPickTests:
    def test_an_unpicked_run_exports_an_empty_decision(self, judged, make_run):
        data = run_export_json(judged)
        assert set(data) == EXPORT_KEYS
        assert data["decision"] == {
            "options": OPTIONS,
            "judge_pick": "A",
            "judge_label": "Postgres",
            "human_pick": None,
            "human_label": None,
            "agrees": None,
            "reason": None,
            "picked_by": None,
            "picked_at": None,
            "history": [],
        }
        no_pick = run_export_json(make_run())["decision"]
        assert no_pick["options"] == [] and no_pick["judge_pick"] is None and no_pick["history"] == []

    def test_the_decision_and_its_history_are_exported(self, judged, moderator, viewer_client):
        pick(judged, moderator, "A")
        pick(judged, moderator, "B", REASON)
        judged.refresh_from_db()
        decision = run_export_json(judged)["decision"]
        assert {k: decision[k] for k in ("judge_pick", "human_pick", "human_label", "agrees", "reason")} == {
            "judge_pick": "A",
            "human_pick": "B",
            "human_label": "MongoDB",
            "agrees": False,
            "reason": REASON,
        }
        assert decision["picked_by"] == "mod" and decision["picked_at"] == judged.picked_at.isoformat()
        assert [(h["pick"], h["agrees"], h["reason"], h["user"]) for h in decision["history"]] == [
            ("A", True, "", "mod"),
            ("B", False, REASON, "mod"),
        ]
        # The download carries the same.
        downloaded = json.loads(viewer_client.get(f"/runs/{judged.pk}/export.json").content)
        assert downloaded["decision"]["human_pick"] == "B"


# --- the override-rate page ------------------------------------------------------------------------------------------


def decided(
    make_run, moderator, protocol: str, choice: str, *, judge_pick: str = "A", reason: str = ""
) -> Run:
    """A run decided as `choice` ("" for none yet). The page groups by the protocol's name only: it is set after
    the pick (whose live frame renders the run's own protocol)."""
    run = completed(make_run(), judge_pick=judge_pick)
    if choice:
        assert pick(run, moderator, choice, reason)
    Run.objects.filter(pk=run.pk).update(protocol=protocol)
    return run


class DecisionsPageTests:
    def test_the_page_needs_a_login_and_is_in_the_top_nav(self, db, viewer_client):
        response = Client().get("/decisions/")
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
        html = viewer_client.get("/").content.decode()
        assert '<a href="/decisions/">Decisions</a>' in html
        page = viewer_client.get("/decisions/")
        assert page.status_code == 200 and "No human has recorded a decision yet." in page.content.decode()

    def test_override_rates_overall_and_per_protocol(self, make_run, moderator, viewer_client):
        decided(make_run, moderator, "comparative", "A")
        override = decided(make_run, moderator, "comparative", "B", reason=REASON)
        decided(make_run, moderator, "comparative", "B", reason="The judge ignored the migration cost.")
        decided(make_run, moderator, "adversarial", "A")
        adjudicated = decided(
            make_run, moderator, "adversarial", "B", judge_pick="", reason="Both raw cases, B cites data."
        )
        decided(make_run, moderator, "comparative", "")  # awaiting a decision
        make_run()  # a run with no pick at all does not count

        html = viewer_client.get("/decisions/").content.decode()
        assert "How often humans overrode the judge" in html
        # 2 overrides of 4 judged decisions; the adjudication is counted apart.
        assert '<strong id="override-rate">50.0%</strong>' in html
        for dom_id, count in [
            ("picked", 5),
            ("agreed", 2),
            ("overridden", 2),
            ("adjudicated", 1),
            ("awaiting", 1),
        ]:
            assert f'<dd id="count-{dom_id}">{count}</dd>' in html
        rows = {
            p: re.sub(r"\s+", "", section(html, "override-by-protocol").split(f'data-protocol="{p}">')[1])
            for p in ("comparative", "adversarial")
        }
        titles = {p: re.sub(r"\s+", "", registry.get(p).title) for p in rows}  # protocols by their titles
        assert rows["comparative"].startswith(
            f"<td>{titles['comparative']}</td><td>3</td><td>1</td><td>2</td><td>0</td><td>1</td>"
        )
        assert '<tdclass="rate">66.7%</td>' in rows["comparative"]
        assert rows["adversarial"].startswith(
            f"<td>{titles['adversarial']}</td><td>2</td><td>1</td><td>0</td><td>1</td><td>0</td>"
        )
        assert '<tdclass="rate">0.0%</td>' in rows["adversarial"]

        row = section(html, f"decision-row-{override.pk}")
        assert f'href="/runs/{override.pk}/#decision"' in row and 'data-state="overrides"' in row
        for text in (
            registry.get("comparative").title,
            "Postgres",
            "MongoDB",
            "override",
            REASON,
            "mod",
            "UTC",
        ):
            assert text in row, text
        assert 'data-state="adjudicated"' in section(html, f"decision-row-{adjudicated.pk}")
        assert len(re.findall(r'id="decision-row-', html)) == 5

        chart = re.search(r'<canvas id="override-chart" data-chart="([^"]+)"', html)
        config = json.loads(htmllib.unescape(chart.group(1)))
        assert config["type"] == "bar" and config["data"]["labels"] == ["adversarial", "comparative"]
        assert config["data"]["datasets"][0]["data"] == [0.0, 66.7]

    def test_the_page_makes_a_fixed_number_of_queries(
        self, make_run, moderator, viewer_client, django_assert_max_num_queries
    ):
        for n in range(12):
            choice = "B" if n % 3 else "A"
            decided(make_run, moderator, ("comparative", "adversarial")[n % 2], choice, reason=REASON)
        with django_assert_max_num_queries(8):
            assert viewer_client.get("/decisions/").status_code == 200


class VerdictReviewTests:
    """A human's review of a judge's verdict (an outcome's `review`) is a decision too: the Decisions page lists it,
    dissents first."""

    def test_a_dissent_and_an_acceptance_are_listed_dissent_first(self, viewer_client, make_run):
        accepted, dissented = make_run(), make_run()
        for run, review in (
            (accepted, {"decision": "accept", "text": ""}),
            (dissented, {"decision": "dissent", "text": "The engagement claim ignores the orbiting edges."}),
        ):
            Run.objects.filter(pk=run.pk).update(
                status="completed", outcome={"review": review}, finished_at=timezone.now()
            )
        html = viewer_client.get("/decisions/").content.decode()
        table = section(html, "verdict-reviews-table")
        rows = re.findall(r'<tr id="review-row-(\d+)" data-decision="(\w+)">', table)
        assert rows == [(str(dissented.pk), "dissent"), (str(accepted.pk), "accept")]
        assert "The engagement claim ignores the orbiting edges." in table

    def test_no_reviews_no_section(self, viewer_client, judged):
        assert 'id="verdict-reviews"' not in viewer_client.get("/decisions/").content.decode()
