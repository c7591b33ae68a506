"""The runner drives a run to its end, commits each turn once, and leaves an ordered event log."""

from __future__ import annotations

from collections import Counter

import pytest

from debates.models import Run, RunEvent, Turn
from tests.conftest import EXPECTED_KEYS, run_to_stop


@pytest.mark.django_db(transaction=True)
class RunnerTests:
    def test_it_runs_a_cross_examination_to_completion(self, make_run):
        run = make_run()
        assert run_to_stop(run) == "done"
        assert run.status == "completed"
        assert set(run.turns.values_list("key", flat=True)) == EXPECTED_KEYS
        assert set(run.turns.values_list("status", flat=True)) == {"committed"}
        assert run.outcome["mode"] == "full"

    def test_event_seqs_are_contiguous_and_each_turn_commits_once(self, make_run):
        run = make_run()
        run_to_stop(run)
        seqs = list(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
        assert seqs == list(range(1, len(seqs) + 1))
        assert run.last_seq == seqs[-1]
        commits = Counter(e.payload["key"] for e in RunEvent.objects.filter(run=run, kind="turn_committed"))
        assert commits == dict.fromkeys(EXPECTED_KEYS, 1)

    def test_usage_totals_are_the_sum_of_the_turns(self, make_run):
        run = make_run()
        run_to_stop(run)
        turns = Turn.objects.filter(run=run)
        assert run.input_tokens == sum(t.input_tokens for t in turns) > 0
        assert run.output_tokens == sum(t.output_tokens for t in turns) > 0

    def test_the_same_seed_gives_the_same_debate(self, make_run):
        first, second = make_run(seed=11), make_run(seed=11)
        run_to_stop(first)
        run_to_stop(second)
        payloads = lambda run: {t.key: t.payload for t in Turn.objects.filter(run=run)}  # noqa: E731
        assert payloads(first) == payloads(second)

    def test_a_flaky_turn_is_retried_and_its_attempts_counted(self, make_run, settings):
        settings.DISPUTA = {**settings.DISPUTA, "RETRY_BACKOFF_SECONDS": 0}
        run = make_run(backend_options={"flaky": ["r2/questions/*"]})
        run_to_stop(run)
        questions = Turn.objects.get(run=run, key="r2/questions/examiner")
        assert (questions.status, questions.attempt) == ("committed", 2)
        assert RunEvent.objects.filter(run=run, kind="turn_restarted").count() == 1
        assert run.status == "completed"

    def test_a_turn_failing_every_attempt_ends_failed_with_its_cause(self, make_run, settings):
        settings.DISPUTA = {**settings.DISPUTA, "RETRY_BACKOFF_SECONDS": 0, "MAX_ATTEMPTS": 2}
        run = make_run(backend_options={"fail": ["r1/analysis/analyst-bo"]})
        run_to_stop(run)
        failed = Turn.objects.get(run=run, key="r1/analysis/analyst-bo")
        assert failed.status == "failed"
        assert "Simulated mid-stream failure" in failed.error and "after 2 attempts" in failed.error
        assert run.status == "completed"
        assert any("Bo failed to produce an analysis" in note for note in run.outcome["notes"])

    def test_a_second_runner_cannot_take_a_leased_run(self, make_run):
        from asgiref.sync import async_to_sync

        from debates.engine.lease import lease_try_acquire
        from debates.engine.runner import run_execute

        run = make_run()
        assert lease_try_acquire(run.pk, "someone-else")
        assert async_to_sync(run_execute)(run.pk, lease_wait=0) == "lease-busy"
        assert Run.objects.get(pk=run.pk).turns.count() == 0
