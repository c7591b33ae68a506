"""`manage.py worker`'s look for runs to take over: once per TAKEOVER_CHECK_SECONDS for the whole process, however
many of its slots are idle (the takeovers themselves are proven against PostgreSQL in tests/scaled)."""

from __future__ import annotations

import threading

import pytest

from debates.management.commands import worker


def test_of_the_idle_slots_of_a_process_one_looks_for_takeovers_per_interval(monkeypatch: pytest.MonkeyPatch):
    now = [100.0]
    monkeypatch.setattr(worker.time, "monotonic", lambda: now[0])
    clock = worker.PollClock(worker.TAKEOVER_CHECK_SECONDS)
    answers: list[bool] = []
    slots = [threading.Thread(target=lambda: answers.append(clock.due())) for _ in range(5)]
    for slot in slots:
        slot.start()
    for slot in slots:
        slot.join()
    assert sorted(answers) == [False, False, False, False, True]  # the first process-wide look goes through
    now[0] += worker.TAKEOVER_CHECK_SECONDS / 2
    assert not clock.due()
    now[0] += worker.TAKEOVER_CHECK_SECONDS / 2
    assert clock.due()


def test_a_slot_that_may_not_look_yet_reports_nothing_to_do_without_a_query(monkeypatch: pytest.MonkeyPatch):
    def no_query() -> list[int]:
        raise AssertionError("looked for takeovers although another slot just did")

    command = worker.Command()
    command.takeovers = worker.PollClock(worker.TAKEOVER_CHECK_SECONDS)
    assert command.takeovers.due()  # another slot's look
    monkeypatch.setattr(worker, "runs_to_take_over", no_query)
    assert command._take_over_one("test-worker/2") is False


def test_of_the_idle_slots_of_a_process_one_looks_at_the_queue_per_interval(monkeypatch: pytest.MonkeyPatch):
    """Ten idle slots polling every half second each were 24 ms of CPU a second per worker: the process as a
    whole now looks once per --interval; a slot whose turn it is not reports nothing to do without a query."""
    command = worker.Command()
    command.takeovers = worker.PollClock(worker.TAKEOVER_CHECK_SECONDS)
    command.queue_polls = worker.PollClock(0.5)
    assert command.takeovers.due() and command.queue_polls.due()  # other slots' looks

    def no_query(*args: object) -> object:
        raise AssertionError("looked at the queue although another slot just did")

    monkeypatch.setattr(worker, "queue_worker", no_query)
    assert command._serve_once("test-worker/2", threading.Event()) is False


def test_a_slot_that_takes_a_task_lets_the_next_idle_slot_look_at_once(monkeypatch: pytest.MonkeyPatch):
    now = [100.0]
    monkeypatch.setattr(worker.time, "monotonic", lambda: now[0])
    clock = worker.PollClock(0.5)
    assert clock.due()
    assert not clock.due()
    clock.found()  # the look found a task: more may be waiting
    assert clock.due()
    assert not clock.due()
    now[0] += 0.5
    assert clock.due()
