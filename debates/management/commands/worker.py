"""`manage.py worker`: one worker process of the scaled setup (DESIGN §3). It runs the debate tasks queued in the
database (django-tasks-db's worker, one task at a time in each of its --concurrency slots) and, whenever no task
is ready, takes over a run whose runner died: a run that should be running whose lease has expired (the runner
heartbeats it every third of DISPUTA_LEASE_SECONDS, so a SIGKILLed worker's run is picked up within the lease, 30 s
by default, once a worker is free). Start N of them on any machines that reach the database and Redis."""

from __future__ import annotations

import functools
import logging
import os
import random
import signal
import socket
import threading
import time
from types import FrameType
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections, connections

from debates.agents.base import backend_choices, backend_get
from debates.engine import registry
from debates.engine.runner import run_execute
from debates.engine.turns import RunnerOutcome
from debates.models import Run
from debates.platform.db_retry import Backoff, Outage, db_error_is_transient
from debates.platform.gc_tuning import gc_settle
from debates.services.resume import runs_to_take_over
from debates.web.frames import INTEGRITY_TEMPLATE, RUN_TEMPLATE

log = logging.getLogger("debates.worker")

# The longest nap between two polls of an unreachable database.
DATABASE_RETRY_MAX_SECONDS = 5.0
# How often a worker process looks for a run to take over, whatever its number of idle slots and their poll
# interval: a dead runner's lease runs for DISPUTA_LEASE_SECONDS (30 s) anyway, and each look is several queries.
# Idle slots polling every 0.1 s each were a fifth of py-spy's samples of a busy worker in `bench fanout`.
TAKEOVER_CHECK_SECONDS = 1.0


class PollClock:
    """Lets one of a process's idle slots look through per `period`: the others report nothing to do without a
    query. A look that found work makes the next one due at once (more may be waiting)."""

    def __init__(self, period: float) -> None:
        self.period = period
        self._lock = threading.Lock()
        self._last = -float("inf")

    def due(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if now - self._last < self.period:
                return False
            self._last = now
            return True

    def found(self) -> None:
        with self._lock:
            self._last = -float("inf")


@functools.cache
def _queue_worker_class() -> type:
    """django-tasks-db's worker (imported once the apps are ready), telling the process's other slots when it takes
    a task: more may be waiting, so the next idle slot looks at once instead of an --interval later."""
    from django_tasks_db.management.commands.db_worker import Worker

    class QueueWorker(Worker):
        def __init__(self, polls: PollClock, **options: Any) -> None:
            super().__init__(**options)
            self.polls = polls

        def run_task(self, db_task_result: Any) -> None:
            self.polls.found()
            super().run_task(db_task_result)

    return QueueWorker


def queue_worker(polls: PollClock, worker_id: str) -> Any:
    """A look at the queue that runs at most one ready task and returns at once when none is ready (batch mode)."""
    return _queue_worker_class()(
        polls,
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=1,
        worker_id=worker_id,
        excluded_queue_names=[],
    )


def worker_warm_up() -> None:
    """Do before taking a debate the one-off work of a process's first debate, which would otherwise block its
    event loop while the debate's viewers wait: load the URLconf (templates reverse URLs; a worker serves no
    request that would load it), the templates and what they load on first render (the locale's date formats, the
    integrity panel's signals), import the channel layer's client and the agent backends this process can run, and
    open the database and the caches."""
    from channels.layers import get_channel_layer
    from django.core.cache import cache, caches
    from django.template.loader import get_template
    from django.urls import reverse
    from django.utils import formats

    from debates.selectors import integrity  # noqa: F401  (the integrity panel's tag imports it on first render)

    reverse("run-list")
    for name in {RUN_TEMPLATE, INTEGRITY_TEMPLATE, *(p.template for p in registry.all_protocols())}:
        get_template(name)
    formats.get_format_modules()
    get_channel_layer()
    for choice in backend_choices():
        if not choice["disabled_reason"]:
            backend_get(choice["name"])
    try:
        Run.objects.exists()
    except Exception as error:
        if not db_error_is_transient(error):
            raise
        # Started during an outage: the slots wait for the database like any idle worker.
        log.warning("worker: the database is unreachable at start (%s); waiting for it", error)
    cache.get("worker-warm-up")
    caches["fragments"].get("worker-warm-up")
    connections.close_all()  # the slots' threads open their own


class Command(BaseCommand):
    help = (
        "Run debate tasks from the database queue and take over runs whose runner died "
        "(DISPUTA_TASKS_BACKEND=database; REDIS_URL for live pages)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--interval",
            type=float,
            default=0.5,
            help="Seconds between two looks at the queue while there is nothing to do (0.5), whatever the number of "
            "idle slots: they take turns.",
        )
        parser.add_argument("--worker-id", default="", help="Name in task results (host:pid by default).")
        parser.add_argument(
            "--concurrency",
            type=int,
            default=1,
            help="Debates this process drives at once, each on a thread of its own (1). A debate mostly waits "
            "on its model provider, so one process can drive several.",
        )

    def handle(self, *args: Any, interval: float, worker_id: str, concurrency: int, **options: Any) -> None:
        backend = settings.TASKS["default"]["BACKEND"]
        if "django_tasks_db" not in settings.INSTALLED_APPS:  # its models cannot even be imported then
            raise CommandError(
                f"worker needs the database task backend, not {backend}: "
                "set DISPUTA_TASKS_BACKEND=database (and REDIS_URL, DATABASE_URL) for every process."
            )
        if concurrency < 1:
            raise CommandError(f"--concurrency must be at least 1, not {concurrency}")
        pool = connections["default"].settings_dict.get("OPTIONS", {}).get("pool")
        if isinstance(pool, dict) and "DISPUTA_DB_POOL_SIZE" not in os.environ:
            # Before the first connection opens the pool: a debate may hold about three connections at once (its
            # runner's thread, a partial save, a frame being rendered), and one waiting for a connection lags.
            pool["max_size"] = max(pool.get("max_size", 0), 3 * concurrency + 2)
        worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        stopping = threading.Event()
        self.takeovers = PollClock(TAKEOVER_CHECK_SECONDS)
        self.queue_polls = PollClock(interval)

        def stop(signum: int, frame: FrameType | None) -> None:
            if (
                stopping.is_set()
            ):  # a second signal: leave now (the leases expire, other workers resume the runs)
                raise SystemExit(1)
            stopping.set()
            log.warning(
                "worker %s: %s, stopping after the current debate", worker_id, signal.strsignal(signum)
            )

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, stop)
        worker_warm_up()
        gc_settle()
        self.stdout.write(f"worker {worker_id}: ready")
        self.stdout.flush()
        if concurrency == 1:
            self._serve(worker_id, interval, stopping)
            return
        slots = [
            threading.Thread(
                target=self._serve,
                args=(f"{worker_id}/{n}", interval, stopping),
                name=f"slot-{n}",
                daemon=True,
            )
            for n in range(1, concurrency + 1)
        ]
        for slot in slots:
            slot.start()
        while any(slot.is_alive() for slot in slots):
            for slot in slots:
                slot.join(timeout=0.2)  # short joins: the main thread must stay free to take signals

    def _serve(self, worker_id: str, interval: float, stopping: threading.Event) -> None:
        """One slot: a ready task from the queue, else a takeover, else a nap; until asked to stop. A lost
        database connection closes this thread's connections and naps a growing delay instead."""
        backoff, outage = Backoff(cap=DATABASE_RETRY_MAX_SECONDS), Outage(f"worker {worker_id}")
        try:
            while not stopping.is_set():
                try:
                    if outage.since is not None:
                        # Said when the database answers again, not once the debate this poll may take has ended
                        # (the outage's length would count the debate's).
                        Run.objects.exists()
                        outage.recovered()
                    busy = self._serve_once(worker_id, stopping)
                except Exception as error:
                    if not db_error_is_transient(error):
                        raise
                    connections.close_all()  # this thread's: the next poll opens a fresh one
                    delay = backoff.next_delay()
                    outage.failed(error, delay)
                    stopping.wait(delay)
                    continue
                outage.recovered()
                backoff.reset()
                if not busy:
                    stopping.wait(interval)
        finally:
            connections.close_all()  # this thread's connections

    def _serve_once(self, worker_id: str, stopping: threading.Event) -> bool:
        """Run one ready task, else take over one run whose runner died; False when there was nothing to do."""
        # django-tasks-db's own worker, asked for at most one ready task, so takeovers are checked between
        # tasks; batch mode returns at once when none is ready.
        if not self.queue_polls.due():  # another idle slot looked less than --interval ago and found nothing
            return self._take_over_one(worker_id)
        tasks = queue_worker(self.queue_polls, worker_id)
        tasks.run()
        if stopping.is_set() or tasks._run_tasks:
            return True
        return self._take_over_one(worker_id)

    def _take_over_one(self, worker_id: str) -> bool:
        """Drive one run whose runner died, if any; False when there was none to take (or another slot of this
        process looked a moment ago)."""
        if not self.takeovers.due():
            return False
        close_old_connections()
        ready = runs_to_take_over()
        # Two idle workers seldom race for the same run (the lease settles it if they do).
        random.shuffle(ready)
        for run_id in ready:
            outcome = async_to_sync(run_execute)(run_id, lease_wait=0)
            if outcome != RunnerOutcome.LEASE_BUSY:
                log.info("worker %s: took over run %s: %s", worker_id, run_id, outcome)
                return True
        return False
