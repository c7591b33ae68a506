"""`manage.py bench fanout` at a tiny scale (2 debates, 3 viewers each, real websockets to a Daphne server process
started per layer against the test database): the lines it prints per channel layer
(frame lag p50/p95 against 250 ms, live frames per turn per second against 20, PASS / FAIL), the ratios between
layers, that every viewer converged (the bench fails otherwise) and that it cleans up. Not a timing assertion."""

from __future__ import annotations

import io
import os
import re

import pytest
import redis
from django.core.management import CommandError, call_command

from debates.models import Run

LINE = re.compile(
    r"^  (?P<layer>inmemory|redis|redis-pubsub): frame lag p50 (?P<p50>\d+\.\d) ms, p95 (?P<p95>\d+\.\d) ms over "
    r"(?P<frames>[\d,]+) events \(target p95 <= 250 ms; the last event of each frame alone p95 (?P<status>\d+\.\d) "
    r"ms; first viewer p95 (?P<first>\d+\.\d) ms, spread over viewers "
    r"p95 (?P<spread>\d+\.\d) ms\); live frames per turn per second max (?P<fps>\d+\.\d), "
    r"median \d+\.\d over (?P<turns>\d+) turns \(target <= 20\); longest silence while a turn streams "
    r"(?P<silence>\d+) ms \(target <= 1000 ms\); (?:worker memory (?P<ready>\d+) MiB ready, (?P<peak>\d+) MiB at "
    r"peak, (?P<per_debate>-?\d+\.\d) MiB per debate it ran at once \(target <= 10\); )?"
    r"CPU while the debates ran \((?P<cpu_wall>\d+\.\d) s\): (?:Daphne \(running the debates too\) "
    r"(?P<serve>\d+\.\d) s|Daphne (?P<daphne>\d+\.\d) s, workers (?P<workers>\d+\.\d) s), the viewers "
    r"\(this process\) (?P<viewers>\d+\.\d) s, the machine's (?P<cores>\d+) cores (?P<busy>\d+\.\d) busy on "
    r"average; "
    r"[\d,]+ frames to 6 viewers in \d+\.\ds, "
    r"all converged (?P<verdict>PASS|FAIL)$"
)
REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


@pytest.fixture
def redis_running() -> None:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as error:
        if os.environ.get("CI"):
            pytest.fail(f"bench fanout needs Redis at {REDIS_URL}: {error}", pytrace=False)
        pytest.skip(f"no Redis at {REDIS_URL}")


@pytest.mark.django_db(transaction=True)
def test_bench_fanout_prints_each_layer_against_the_targets_and_cleans_up(redis_running: None):
    out = io.StringIO()
    call_command(
        "bench",
        "fanout",
        "--debates",
        "2",
        "--viewers",
        "3",
        "--layers",
        "inmemory,redis,redis-pubsub",
        "--database",
        "configured",
        stdout=out,
    )
    lines = out.getvalue().splitlines()
    # One worker per core by default, the debates shared out among them.
    workers = min(os.cpu_count() or 1, 2)
    processes = "2 worker processes" if workers == 2 else "1 worker process"
    assert lines[0].startswith(
        "bench fanout: 2 simulated cross-examination debates at once (1500 characters/s), 3 websocket viewers each, in this process; per "
        f"layer a Daphne server process, running the debates itself (in-memory) or with {processes} running "
        f"them ({2 // workers} each; Redis layers, the scaled setup)"
    )
    measured = [LINE.match(line) for line in lines[1:4]]
    assert all(measured), out.getvalue()
    assert [m["layer"] for m in measured if m] == ["inmemory", "redis", "redis-pubsub"]
    for m in measured:
        assert m is not None
        assert 0 < float(m["p50"]) <= float(m["p95"]) and float(m["status"]) > 0
        assert float(m["first"]) > 0 and float(m["spread"]) >= 0
        assert int(m["frames"].replace(",", "")) >= 6 and int(m["turns"]) > 0
        assert int(m["silence"]) > 0  # measured over the turns' streaming windows
        # A worker's memory is read where workers run the debates (the Redis layers).
        assert (m["per_debate"] is None) == (m["layer"] == "inmemory")
        if m["per_debate"] is not None:
            assert 0 < int(m["ready"]) <= int(m["peak"])
        # The CPU while the debates ran: who ran them (workers on the Redis layers), and the machine as a whole.
        runs_itself = m["layer"] == "inmemory"
        assert (m["serve"] is not None) == runs_itself and (m["workers"] is None) == runs_itself
        assert float(m["serve"] or m["workers"]) > 0
        assert float(m["viewers"]) >= 0  # six sockets: next to nothing
        assert int(m["cores"]) == os.cpu_count()
        assert 0 < float(m["busy"]) <= int(m["cores"]) and float(m["cpu_wall"]) > 0
        ok = (
            float(m["p95"]) <= 250
            and float(m["fps"]) <= 20
            and int(m["silence"]) <= 1000
            and float(m["per_debate"] or 0) <= 10
        )
        assert ok == (m["verdict"] == "PASS")
    assert re.fullmatch(r"  redis / inmemory: p95 lag x\d+\.\d\d, wall x\d+\.\d\d", lines[4])
    assert re.fullmatch(r"  redis-pubsub / inmemory: p95 lag x\d+\.\d\d, wall x\d+\.\d\d", lines[5])
    assert not Run.objects.filter(topic__startswith="[bench-fanout]").exists()


@pytest.mark.django_db(transaction=True)
def test_bench_fanout_runs_any_protocols_demo():
    out = io.StringIO()
    call_command(
        "bench",
        "fanout",
        *("--protocol", "consultation", "--debates", "1", "--viewers", "2", "--layers", "inmemory"),
        *("--database", "configured"),
        stdout=out,
    )
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("bench fanout: 1 simulated consultation debates at once"), lines[0]
    assert re.match(r"^  inmemory: frame lag .* longest silence while a turn streams \d+ ms ", lines[1]), (
        lines[1]
    )
    assert re.search(r"frames to 2 viewers in \d+\.\ds, all converged (PASS|FAIL)$", lines[1]), lines[1]
    assert not Run.objects.filter(topic__startswith="[bench-fanout]").exists()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--layers", "inmemory,carrier-pigeon"], "unknown layer(s) ['carrier-pigeon']"),
        (["--workers", "0"], "--workers must be at least 1, not 0"),
        (["--protocol", "shouting-match"], "unknown protocol 'shouting-match'"),
    ],
)
def test_bench_fanout_refuses_an_unknown_layer_protocol_or_no_worker(args: list[str], error: str):
    with pytest.raises(CommandError, match=re.escape(error)):
        call_command("bench", "fanout", *args)


def test_a_bench_viewer_shows_the_newest_status_its_frames_carried_read_when_asked():
    from debates.devtools.bench_fanout import Viewer

    def status(name: str, seq: int) -> str:
        return f'<section id="run-status" class="x" data-status="{name}" data-seq="{seq}">'

    viewer = Viewer(run_id=1)
    assert viewer.status == ("", 0)
    viewer._keep(status("running", 3).encode())
    viewer._keep(status("completed", 9) + status("running", 7))  # a replay's older status after the newer
    assert viewer.status == ("completed", 9)
    viewer._keep("<div>a live frame, no status</div>")
    viewer._keep(status("failed", 8))  # older than what it showed: stays
    assert viewer.status == ("completed", 9)
    viewer._keep(status("failed", 10))
    assert viewer.status == ("failed", 10)


@pytest.mark.django_db
def test_the_lag_counts_every_event_a_frame_brings_not_only_the_one_carrying_the_status(make_run):
    """A burst arrives in one frame with the status (its last event's seq) at the end: every event since the
    viewer's previous status reached it then, a commit held back for the next start included."""
    from datetime import timedelta

    from django.utils import timezone

    from debates.devtools.bench_fanout import Viewer, _figures
    from debates.engine.events import event_append
    from debates.models import RunEvent

    run = make_run()
    for kind in ("turn_started", "turn_committed", "turn_started"):
        event_append(run_id=run.pk, kind=kind, payload={"key": "r1/x/a", "attempt": 1})
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    base = timezone.now()
    for offset, seq in enumerate(seqs):  # each written 100 ms after the one before
        RunEvent.objects.filter(run=run, seq=seq).update(created_at=base + timedelta(seconds=0.1 * offset))

    def status(seq: int) -> str:
        return f'<section id="run-status" class="x" data-status="running" data-seq="{seq}">'

    viewer = Viewer(run_id=run.pk)
    arrived = base.timestamp() + 0.1 * (len(seqs) - 1) + 0.05  # 50 ms after the last event was written
    viewer.frames = [
        (base.timestamp(), status(seqs[-4])),
        (arrived, "<div>commit</div><div>start</div>" + status(seqs[-1])),
    ]
    figures = _figures("inmemory", [run.pk], [viewer], wall=1.0)
    # The three events after the snapshot's seq: 250, 150 and 50 ms behind; the status-carrying one alone 50 ms.
    assert figures["lagged_frames"] == 3
    assert round(figures["p95_ms"]) == 250 and round(figures["status_p95_ms"]) == 50
