"""`manage.py bench pages` at a tiny scale: the data it generates, the lines it prints (each page's median time
against the 150 ms target with PASS / FAIL and its query count), and that it cleans up. Not a timing assertion."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.models import F

from debates.management.commands import bench
from debates.models import Run, Seat, Turn

LINE = re.compile(
    r"^  (?P<label>[^:]+): median (?P<median>\d+\.\d) ms, max (?P<max>\d+\.\d) ms, "
    r"first \(cold\) (?P<cold>\d+\.\d) ms(?: \(target <= (?P<cold_target>\d+) ms\))?, (?P<queries>\d+) queries "
    r"\(target <= 150 ms\) (?P<verdict>PASS|FAIL)$"
)


def run_bench(*args: str) -> str:
    out = io.StringIO()
    call_command("bench", "pages", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_bench_pages_prints_each_page_against_the_target_and_cleans_up():
    out = run_bench("--runs", "50", "--turns", "500", "--repeat", "2", "--database", "configured")
    lines = out.splitlines()
    assert lines[0].startswith(
        "bench pages: 50 runs and 500 turns (+ 1 run of each of 500, 2000 turns) generated in "
    )
    assert f"configured {connection.vendor} database" in lines[0]
    timed = [LINE.match(line) for line in lines[1:-1]]
    assert all(timed), out
    labels = [m["label"] for m in timed if m]
    assert labels == [
        "archive, first page",
        "archive, filtered (status, backend, dates)",
        "archive, text search 'zeppelin'",
        "archive, htmx table of page 3",
        "run page, 500 turns",
        "run page, 2000 turns",
    ]
    cold_targets = [m["cold_target"] for m in timed if m]
    assert cold_targets == [None, None, None, None, "150", "300"]  # a long run's page, on its first request
    for match in timed:
        assert match is not None
        within = float(match["median"]) <= 150 and (
            match["cold_target"] is None or float(match["cold"]) <= float(match["cold_target"])
        )
        assert within == (match["verdict"] == "PASS")
        assert float(match["max"]) >= float(match["median"]) and int(match["queries"]) > 0
    passed = sum(1 for m in timed if m and m["verdict"] == "PASS")
    assert lines[-1] == f"pages within target: {passed} of 6"
    # Everything it wrote is gone.
    assert not Run.objects.exists() and not Seat.objects.exists() and not Turn.objects.exists()
    assert not get_user_model().objects.filter(username=bench.BENCH_USER).exists()


@pytest.mark.django_db(transaction=True)
def test_the_generated_data_has_the_requested_shape():
    ids = bench.generate_pages_data(runs=20, turns=200)
    generated = Run.objects.filter(topic__startswith=bench.BENCH_PREFIX).exclude(
        pk__in=[ids["template"], *ids["long_runs"].values()]
    )
    assert generated.count() == 20
    assert Turn.objects.filter(run__in=generated).count() == 200
    for length, pk in ids["long_runs"].items():
        assert Turn.objects.filter(run_id=pk).count() == length
    assert sorted(ids["long_runs"]) == sorted(bench.LONG_RUN_TURNS)
    # The search word is in one run in SEARCH_EVERY; seats and turns point at their own run.
    assert Turn.objects.filter(run__in=generated, raw_text__contains=bench.SEARCH_WORD).count() == 1
    assert not Turn.objects.exclude(seat__run_id=F("run_id")).exists()
    bench.bench_pages_cleanup()
    assert not Run.objects.exists() and not Turn.objects.exists()


@pytest.mark.django_db
def test_the_throwaway_database_is_refused_inside_a_transaction_or_away_from_sqlite():
    refusal = (
        "inside a transaction" if connection.vendor == "sqlite" else "the throwaway database needs SQLite"
    )
    with pytest.raises(CommandError, match=refusal):
        run_bench("--runs", "1", "--turns", "1")
