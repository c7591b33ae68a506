"""SQLite's FTS5 indexes for the archive search (debates.platform.search_sqlite): created by migrate, kept in step by
triggers, and repaired after a migration that rebuilt a table and so dropped its triggers."""

from __future__ import annotations

import pytest
from django.db import connection

from debates.models import Run
from debates.platform.search_sqlite import FTS_TABLES, fts5_query, sqlite_fts_ensure
from debates.selectors.archive import text_search

pytestmark = pytest.mark.django_db


def fts_objects() -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor != "sqlite":
            cursor.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'debates_%%_fts%%'")
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE name LIKE 'debates_%_fts%'")
        return {name for (name,) in cursor.fetchall()}


def test_migrate_creates_one_index_with_three_triggers_per_table_on_sqlite_only():
    names = fts_objects()
    if connection.vendor == "sqlite":
        for fts, _, _ in FTS_TABLES:
            assert {fts, f"{fts}_ai", f"{fts}_ad", f"{fts}_au"} <= names
    else:
        assert names == set()  # PostgreSQL searches its own tsvector indexes


def test_a_lost_trigger_is_recreated_and_the_index_rebuilt(make_run):
    if connection.vendor != "sqlite":
        sqlite_fts_ensure(connection)  # a no-op elsewhere
        assert fts_objects() == set()
        return
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER debates_run_fts_ai")  # what a table rebuild by a later migration does
    unseen = make_run(topic="Hovercraft ferries")
    assert list(text_search(Run.objects.all(), "hovercraft")) == []
    sqlite_fts_ensure(connection)
    assert list(text_search(Run.objects.all(), "hovercraft")) == [unseen]
    assert "debates_run_fts_ai" in fts_objects()


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("zeppelin freight", '"zeppelin" "freight"'),
        ('"carrying freight" now', '"carrying freight" "now"'),
        ("NOT near* (x) -y", '"NOT" "near" "x" "y"'),
        ('say "hi', '"say" "hi"'),
        ("?! --", ""),
    ],
)
def test_the_users_text_becomes_a_query_of_quoted_words_and_phrases(text, query):
    assert fts5_query(text) == query
