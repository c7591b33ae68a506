"""Where a runner writes (debates.engine.runner.runner_writes_executor): on a pool of threads of its own
(DISPUTA RUNNER_DB_THREADS, as the worker and server processes run), a debate of every protocol ends with the same
turns as on one thread, every write on the pool, every event once and in order. A parallel stage's commits then
run at once in several threads, on the same run's row."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from debates.engine import registry
from debates.engine import runner as runner_module
from debates.models import Run, RunEvent
from debates.services.demos import run_headless_demo_create

pytestmark = pytest.mark.django_db(transaction=True)  # the pool's threads have connections of their own

PROTOCOLS = [p.name for p in registry.all_protocols()]


def _kb_revisions(run: Run) -> int:
    return run.kb.revisions.count() if run.kb is not None else 0


def _debate(protocol: str) -> tuple[str, list[tuple[Any, ...]], list[int], bool]:
    """The outcome, the turns, the event seqs, and whether the debate revised its KB (auto-approved changes)."""
    run = run_headless_demo_create(protocol=protocol, seed=5, backend_options={"cps": 0})
    revisions = _kb_revisions(run)
    outcome = async_to_sync(runner_module.run_execute)(run.pk)
    turns = list(
        Run.objects.get(pk=run.pk).turns.order_by("key").values_list("key", "status", "attempt", "payload")
    )
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    return outcome, turns, seqs, _kb_revisions(run) != revisions


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_debate_written_from_the_pool_ends_as_one_written_from_one_thread(
    protocol: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, on_one_thread, _, revised = _debate(protocol)

    settings.DISPUTA = {**settings.DISPUTA, "RUNNER_DB_THREADS": 4}
    writers: list[str] = []
    commit = runner_module.turn_commit

    def commit_noting_its_thread(*args: Any, **kwargs: Any) -> Any:
        writers.append(threading.current_thread().name)
        return commit(*args, **kwargs)

    monkeypatch.setattr(runner_module, "turn_commit", commit_noting_its_thread)
    outcome, on_the_pool, seqs, _ = _debate(protocol)

    assert outcome == "done"
    assert [turn[:3] for turn in on_the_pool] == [turn[:3] for turn in on_one_thread]
    if not revised:  # (a KB the first debate revised is cited at its new ratings by the second)
        assert [turn[3] for turn in on_the_pool] == [turn[3] for turn in on_one_thread]
    assert writers and all(name.startswith("disputa-runner-db") for name in writers), writers
    assert seqs == list(range(1, len(seqs) + 1))  # every event once, none lost to a concurrent append


def test_one_thread_means_the_database_thread_of_asgiref(settings: Any) -> None:
    settings.DISPUTA = {**settings.DISPUTA, "RUNNER_DB_THREADS": 1}
    assert runner_module.runner_writes_executor() is None
    settings.DISPUTA = {**settings.DISPUTA, "RUNNER_DB_THREADS": 3}
    pool = runner_module.runner_writes_executor()
    assert pool is not None and pool is runner_module.runner_writes_executor()  # made once per process
