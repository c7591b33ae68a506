"""The archive at `/` (issue 8, part 1): every run, paginated, filtered by GET parameters (protocol, status, KB,
backend, model, picks, verdict label, override, dates) and a text search over topics and turn text; a fixed number
of queries whatever the number of runs; integrity badges per row; escaping; viewers see it, POST is refused."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from debates.models import Run, Seat, Turn
from debates.selectors.archive import PAGE_SIZE, archive_queryset, text_search
from debates.services import runs as services
from kb.models import KnowledgeBase

pytestmark = pytest.mark.django_db

SUMMARY = [
    {"analyst": "analyst-ada", "name": "Ada", "questions": 4, "defended": 1, "conceded": 3, "deflected": 0},
    {"analyst": "analyst-bo", "name": "Bo", "questions": 4, "defended": 2, "conceded": 1, "deflected": 1},
]


def rows(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'id="run-row-(\d+)"', html)]


def table(client: Any, query: str = "") -> str:
    response = client.get(f"/?{query}", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


def done(run: Run, *, outcome: dict[str, Any] | None = None, **fields: Any) -> Run:
    """The run as a finished cross-examination leaves it (the outcome's per-analyst summary is what counts)."""
    values = {
        "status": "completed",
        "outcome": outcome or {"summary": SUMMARY},
        "finished_at": timezone.now(),
    }
    Run.objects.filter(pk=run.pk).update(**{**values, **fields})
    run.refresh_from_db()
    return run


def turn(run: Run, key: str, text: str = "", citations: list[str] = ()) -> Turn:  # type: ignore[assignment]
    seat = Seat.objects.filter(run=run).order_by("position").first()
    assert seat is not None
    return Turn.objects.create(
        run=run,
        seat=seat,
        key=key,
        stage="analysis",
        task="analysis",
        status="committed",
        raw_text=text,
        citations=[{"kind": "arg", "ref": "A1", "status": s} for s in citations],
    )


def created(run: Run, when: dt.datetime) -> None:
    Run.objects.filter(pk=run.pk).update(created_at=when)


# --- filters -----------------------------------------------------------------------------------------------------


class FilterTests:
    def test_each_filter_keeps_only_the_matching_runs(self, viewer_client, make_run):
        kb = KnowledgeBase.objects.create(slug="pricing", title="Pricing", kind="graph")
        plain = done(make_run(topic="Plain"))
        other_kb = done(make_run(topic="With KB"), kb=kb)
        anthropic = done(make_run(topic="Remote model"), backend="anthropic", model="claude-sonnet-4-5")
        failed = done(make_run(topic="Failed one"), status="failed")
        agreed = done(make_run(topic="Agreed"), judge_pick="A", human_pick="A")
        overridden = done(make_run(topic="Overridden"), judge_pick="A", human_pick="B")
        contested = done(
            make_run(topic="Contested"), outcome={"verdict": {"label": "genuinely-contested", "position": ""}}
        )
        approved = done(make_run(topic="Approved"), outcome={"verdict": "approve"})
        comparative = done(make_run(topic="Other protocol"), protocol="comparative")

        def only(query: str, *expected: Run) -> None:
            assert sorted(rows(table(viewer_client, query))) == sorted(r.pk for r in expected), query

        only("protocol=comparative", comparative)
        only("status=failed", failed)
        only("kb=pricing", other_kb)
        only("backend=anthropic", anthropic)
        only("model=claude-sonnet-4-5", anthropic)
        only("judge_pick=A", agreed, overridden)
        only("human_pick=B", overridden)
        only("verdict=genuinely-contested", contested)
        only("verdict=approve", approved)
        only("override=yes", overridden)
        only("override=no", agreed)
        only("judge_pick=A&override=no", agreed)
        assert plain.pk in rows(table(viewer_client, "")) and len(rows(table(viewer_client, ""))) == 9

    def test_the_date_range_includes_both_end_days(self, viewer_client, make_run):
        runs = [make_run(topic=f"Day {d}") for d in (1, 2, 3, 4)]
        for day, run in zip((1, 2, 3, 4), runs, strict=True):
            created(run, dt.datetime(2026, 3, day, 23, 30, tzinfo=dt.UTC))
        html = table(viewer_client, "date_from=2026-03-02&date_to=2026-03-03")
        assert sorted(rows(html)) == sorted([runs[1].pk, runs[2].pk])

    def test_a_bad_filter_is_reported_and_ignored_while_the_others_still_apply(self, viewer_client, make_run):
        kept = done(make_run(topic="Kept"), status="failed")
        done(make_run(topic="Dropped"))
        html = table(viewer_client, "status=failed&date_from=not-a-date&protocol=no-such-protocol")
        assert rows(html) == [kept.pk]
        errors = html[html.index('id="archive-errors"') :]
        assert "From: Enter a valid date." in errors and "Protocol: Select a valid choice" in errors

    def test_an_inverted_date_range_is_an_error(self, viewer_client, make_run):
        make_run()
        html = table(viewer_client, "date_from=2026-03-05&date_to=2026-03-01")
        assert "The end date is before the start date." in html


class PickFilterTests:
    """The picks filter takes what the table shows: the option's name (any case), as well as its code."""

    OPTIONS = {"pick_options": [["A", "Trams"], ["B", "Buses"]]}

    def test_a_pick_is_found_by_the_name_the_table_shows_or_by_its_code(self, viewer_client, make_run):
        overridden = done(make_run(topic="Overridden"), outcome=self.OPTIONS, judge_pick="A", human_pick="B")
        agreed = done(make_run(topic="Agreed"), outcome=self.OPTIONS, judge_pick="A", human_pick="A")
        verdict = done(
            make_run(topic="Verdict"),
            outcome={"pick_options": [["approve", "Approve the RFC"], ["reject", "Reject the RFC"]]},
            judge_pick="reject",
        )
        html = table(viewer_client)
        assert '<td class="human-pick">Buses' in html  # what the table shows, and so what a person types

        def only(query: str, *expected: Run) -> None:
            assert sorted(rows(table(viewer_client, query))) == sorted(r.pk for r in expected), query

        for text in ("Buses", "buses", "BUSES", " Buses ", "B", "b"):
            only(f"human_pick={text}", overridden)
        for text in ("Trams", "trams", "A"):
            only(f"judge_pick={text}", agreed, overridden)
        only("human_pick=Trams", agreed)
        only("judge_pick=reject+the+rfc", verdict)
        only("judge_pick=Reject", verdict)  # the code, in another case
        only("judge_pick=Buses")  # the name of an option nobody picked as judge
        only("human_pick=Bus")  # a name is matched whole
        only("judge_pick=Trams&override=yes", overridden)

    def test_a_name_matches_only_the_runs_whose_own_options_give_it(self, viewer_client, make_run):
        """Codes mean different options in different runs: "Trams" is A in one and B in another."""
        first = done(make_run(), outcome=self.OPTIONS, human_pick="A")
        swapped = done(make_run(), outcome={"pick_options": [["A", "Buses"], ["B", "Trams"]]}, human_pick="B")
        done(make_run(), outcome={"pick_options": [["A", "Ferries"], ["B", "Trams"]]}, human_pick="A")
        assert sorted(rows(table(viewer_client, "human_pick=trams"))) == sorted([first.pk, swapped.pk])

    def test_odd_outcomes_are_never_an_error(self, viewer_client, make_run):
        plain = done(make_run(), outcome={"pick_options": ["Trams", "Buses"]}, human_pick="Trams")
        done(make_run(), outcome={"pick_options": "Trams"}, human_pick="A")
        done(make_run(), outcome={"pick_options": [[], ["A"], [1, 2], {"A": "Trams"}]}, human_pick="A")
        done(make_run(), outcome={}, human_pick="A")
        done(make_run(), outcome=[], human_pick="A")
        assert rows(table(viewer_client, "human_pick=trams")) == [plain.pk]
        assert rows(table(viewer_client, "human_pick=%27%3B+DROP+TABLE+debates_run%3B--")) == []

    def test_the_filter_is_a_semi_join_that_reads_no_rows(self, make_run, django_assert_num_queries):
        done(make_run(), outcome=self.OPTIONS, human_pick="B")
        with django_assert_num_queries(0):
            queryset = archive_queryset({"human_pick": "Buses", "judge_pick": "A"})
        assert queryset.count() == 0
        assert archive_queryset({"human_pick": "Buses"}).count() == 1


class TextSearchTests:
    def test_the_search_finds_topics_and_turn_text_once_per_run(self, viewer_client, make_run):
        by_topic = make_run(topic="Should Zeppelins carry freight?")
        by_turns = make_run(topic="Airships")
        for n in range(3):  # three matching turns: still one row
            turn(by_turns, f"t{n}", text=f"The zeppelin argument, take {n}.")
        make_run(topic="Trains")
        html = table(viewer_client, "q=zeppelin")
        assert sorted(rows(html)) == sorted([by_topic.pk, by_turns.pk])
        assert 'id="archive-count" data-count="2"' in html

    def test_the_search_combines_with_the_filters(self, viewer_client, make_run):
        failed = done(make_run(topic="Zeppelin budget"), status="failed")
        done(make_run(topic="Zeppelin routes"))
        assert rows(table(viewer_client, "q=zeppelin&status=failed")) == [failed.pk]

    def test_the_search_is_the_databases_full_text_search_as_a_semi_join(self, make_run):
        run = make_run(topic="Nothing here")
        turn(run, "a", text="needle one")
        turn(run, "b", text="needle two")
        sql = str(text_search(Run.objects.all(), "needle").query)
        if connection.vendor == "sqlite":
            assert "MATCH" in sql and "debates_turn_fts" in sql
        else:  # PostgreSQL: full-text search over the indexed vectors
            assert "to_tsvector" in sql and "websearch_to_tsquery" in sql
        assert list(text_search(Run.objects.all(), "needle")) == [run]

    def test_words_are_stemmed_and_all_required_and_a_quoted_phrase_is_a_phrase(self, make_run):
        both = make_run(topic="Airships")
        turn(both, "a", text="Zeppelins were carrying freight across the Atlantic.")
        one = make_run(topic="Trains")
        turn(one, "a", text="A zeppelin once flew here; freight went by rail.")
        assert set(text_search(Run.objects.all(), "zeppelin carried")) == {both}
        assert set(text_search(Run.objects.all(), "zeppelin freight")) == {both, one}
        assert set(text_search(Run.objects.all(), '"carrying freight"')) == {both}
        assert set(text_search(Run.objects.all(), '"freight carrying"')) == set()

    def test_search_syntax_in_the_text_is_never_an_error(self, make_run):
        run = make_run(topic='Quotes " and (brackets) OR NOT near* -minus')
        for text in ['"', "(", "NOT", "a OR", "near*", "-minus", 'x"y', "?!"]:
            list(text_search(Run.objects.all(), text))  # no OperationalError
        assert list(text_search(Run.objects.all(), "brackets minus")) == [run]

    def test_the_index_follows_edits_and_deletes_of_turns_and_topics(self, make_run):
        run = make_run(topic="Old topic")
        streaming = turn(run, "a", text="first draft")
        Turn.objects.filter(pk=streaming.pk).update(raw_text="final wording about dirigibles")
        assert list(text_search(Run.objects.all(), "dirigibles")) == [run]
        assert list(text_search(Run.objects.all(), "draft")) == []
        Run.objects.filter(pk=run.pk).update(topic="Blimps")
        assert list(text_search(Run.objects.all(), "blimps")) == [run]
        assert list(text_search(Run.objects.all(), "old")) == []
        Turn.objects.filter(pk=streaming.pk).delete()
        assert list(text_search(Run.objects.all(), "dirigibles")) == []


# --- pagination, the page, its partial ------------------------------------------------------------------------------


class PageTests:
    def test_runs_are_paginated_newest_first_and_the_pages_keep_the_filters(self, viewer_client, make_run):
        runs = [make_run(topic=f"Run {n}") for n in range(PAGE_SIZE + 3)]
        newest_first = [r.pk for r in reversed(runs)]
        first = table(viewer_client, "protocol=cross-examination")
        assert rows(first) == newest_first[:PAGE_SIZE]
        assert f'data-count="{PAGE_SIZE + 3}"' in first
        pagination = first[first.index('id="archive-pagination"') :]
        assert 'href="?protocol=cross-examination&amp;page=2"' in pagination
        assert "Page 1 of 2" in pagination
        second = table(viewer_client, "protocol=cross-examination&page=2")
        assert rows(second) == newest_first[PAGE_SIZE:]
        assert 'href="?protocol=cross-examination&amp;page=1"' in second

    def test_the_full_page_has_the_filters_and_the_table_and_the_partial_only_the_table(
        self, viewer_client, make_run
    ):
        run = make_run()
        page = viewer_client.get("/?status=queued").content.decode()
        for dom_id in ("archive-filters", "archive-table", "archive-count"):
            assert f'id="{dom_id}"' in page
        start = page.index('id="archive-filters"')
        filters = page[start : page.index("</form>", start)]
        assert 'method="get"' in filters and 'hx-target="#archive-table"' in filters
        assert '<option value="queued" selected>' in filters
        partial = table(viewer_client, "status=queued")
        assert partial.lstrip().startswith('<div id="archive-table"') and "archive-filters" not in partial
        # The live-status poll asks for the same filtered page.
        assert 'hx-get="/?status=queued" hx-trigger="every 2s"' in partial and f"run-row-{run.pk}" in partial

    def test_viewers_see_the_archive_and_post_is_refused(self, viewer_client, make_run):
        make_run()
        assert viewer_client.get("/").status_code == 200
        assert viewer_client.post("/", {"status": "queued"}).status_code == 405

    def test_untrusted_topics_are_escaped(self, viewer_client, make_run):
        make_run(topic='<script>alert("x")</script><img src=x onerror=alert(1)>')
        html = viewer_client.get("/").content.decode()
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert" in html

    def test_an_empty_filter_result_says_so(self, viewer_client, make_run):
        make_run()
        html = table(viewer_client, "status=failed")
        assert rows(html) == [] and "No run matches these filters." in html


# --- integrity in the archive ----------------------------------------------------------------------------------------


class ArchiveSignalsTests:
    def test_a_finished_run_shows_its_badges_and_a_running_one_a_dash(self, viewer_client, make_run):
        finished = done(make_run(topic="Finished"), judge_pick="A", human_pick="B")
        turn(finished, "a", citations=["verified", "verified", "verified", "mismatch"])
        running = make_run(topic="Running")
        Run.objects.filter(pk=running.pk).update(status="running")
        html = table(viewer_client)
        row = html[
            html.index(f'id="run-row-{finished.pk}"') : html.index(
                "</tr>", html.index(f"run-row-{finished.pk}")
            )
        ]
        assert 'data-concession-max="75.0"' in row and "concede 75.0%" in row  # Ada conceded 3 of 4
        assert 'data-citation-rate="75.0"' in row and "cites 75.0%" in row
        live = html[
            html.index(f'id="run-row-{running.pk}"') : html.index(
                "</tr>", html.index(f"run-row-{running.pk}")
            )
        ]
        assert '<td class="integrity-cell"' in live and '<span class="muted">—</span>' in live

    def test_the_agreement_summary_counts_the_filtered_runs(self, viewer_client, make_run):
        done(make_run(), judge_pick="A", human_pick="A")
        done(make_run(), judge_pick="A", human_pick="B")
        done(make_run(), judge_pick="B", human_pick="B", protocol="comparative")
        done(make_run(), judge_pick="", human_pick="A")  # adjudicated: not counted as agreeing or overriding
        everything = table(viewer_client)
        assert "agreed 2 of 3 (66.7%)" in everything and "1 adjudicated" in everything
        assert "agreed 1 of 2 (50.0%)" in table(viewer_client, "protocol=cross-examination")
        assert 'href="/decisions/"' in everything


# --- no N+1 ----------------------------------------------------------------------------------------------------------


def populate(count: int, user: Any) -> None:
    """`count` finished runs, each with seats, cited turns and a human pick; a KB on some."""
    kb = KnowledgeBase.objects.get_or_create(slug="bench", defaults={"title": "Bench", "kind": "graph"})[0]
    for n in range(count):
        run = services.run_create(
            protocol="cross-examination",
            topic=f"Topic {n}",
            material="m",
            config={
                "analysts": [{"name": "Ada", "lens": "x"}, {"name": "Bo", "lens": "y"}],
                "examiner": "agent",
            },
            enqueue=False,
            user=user,
        )
        done(run, judge_pick="A", human_pick="AB"[n % 2], kb=kb if n % 2 else None)
        turn(run, "a", text="text", citations=["verified", "mismatch"])
        turn(run, "b", text="more", citations=["verified"])


class QueryCountTests:
    @pytest.mark.parametrize(
        ("query", "shown"),
        [("", PAGE_SIZE), ("q=topic", PAGE_SIZE), ("status=completed&kb=bench&override=yes", 2 + 22)],
    )
    def test_the_archive_costs_the_same_queries_for_5_and_50_runs(
        self, query, shown, viewer_client, moderator, django_assert_num_queries
    ):
        populate(5, moderator)
        with CaptureQueriesContext(connection) as five:
            assert viewer_client.get(f"/?{query}").status_code == 200
        populate(45, moderator)
        with django_assert_num_queries(len(five)):
            html = viewer_client.get(f"/?{query}").content.decode()
        assert len(rows(html)) == shown

    def test_archive_queryset_reads_no_rows(self, django_assert_num_queries):
        with django_assert_num_queries(0):
            archive_queryset({"q": "x", "status": "completed"})
