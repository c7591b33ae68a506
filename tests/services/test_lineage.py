"""Re-run and fork (debates.services.lineage): a new run from a finished one with the same config, optionally another seed
or backend; or a fork that copies the history up to a chosen turn and lets the protocol plan the rest. The child
names its parent; copied turns name their originals and are not paid for twice; what cannot be replayed is
refused with a reason."""

from __future__ import annotations

from typing import Any

import pytest

from debates.agents.base import default_model
from debates.exports.run_json import run_export_json
from debates.exports.transcript import run_transcript_md
from debates.models import HumanAction, Run, RunEvent, Turn
from debates.selectors.runs import run_awaited_steps
from debates.services import lineage
from debates.services import runs as services
from debates.services.turns import human_turn_submit
from kb.demo import demo_kbs_load
from kb.models import KnowledgeBase, ProposedMutation
from tests.conftest import run_to_stop

QUESTIONS = "r2/questions/examiner"
FIRST_HALF = ["r1/analysis/analyst-ada", "r1/analysis/analyst-bo", "r1/analysis/analyst-cy", QUESTIONS]
SECOND_HALF = [
    "r3/answers/analyst-ada",
    "r3/answers/analyst-bo",
    "r3/answers/analyst-cy",
    "r4/assessment/examiner",
]


def keys(run: Run) -> list[str]:
    return list(run.turns.order_by("first_seq", "id").values_list("key", flat=True))


def finished(make_run: Any, **overrides: Any) -> Run:
    run = make_run(**overrides)
    assert run_to_stop(run) == "done"
    return run


@pytest.mark.django_db(transaction=True)
class RerunTests:
    def test_a_rerun_with_another_seed_keeps_the_config_and_names_its_parent(self, make_run, moderator):
        parent = finished(make_run)
        child = lineage.run_rerun(parent.pk, user=moderator, seed=99, enqueue=False)

        assert child.parent_id == parent.pk and child.forked_at_key == "" and child.seed == 99
        assert (child.protocol, child.topic, child.material, child.config) == (
            parent.protocol,
            parent.topic,
            parent.material,
            parent.config,
        )
        assert list(child.seats.values_list("handle", "role", "model")) == list(
            parent.seats.values_list("handle", "role", "model")
        )
        assert child.backend_options == parent.backend_options and child.created_by == moderator
        assert child.status == "queued" and not child.turns.exists()
        assert RunEvent.objects.get(run=child, kind="lineage").payload == {
            "parent": parent.pk,
            "forked_at_key": "",
            "copied": 0,
        }

        assert run_to_stop(child) == "done"
        assert keys(child) == keys(parent)
        assert not child.turns.filter(copied_from__isnull=False).exists()
        assert list(parent.children.all()) == [child]

    def test_the_same_seed_on_the_simulated_backend_replays_the_same_debate(self, make_run, moderator):
        parent = finished(make_run)
        child = lineage.run_rerun(parent.pk, user=moderator, enqueue=False)
        run_to_stop(child)
        assert child.seed == parent.seed
        assert [t.payload for t in child.turns.order_by("first_seq")] == [
            t.payload for t in parent.turns.order_by("first_seq")
        ]

    def test_another_backend_takes_its_default_model_and_drops_the_simulated_switches(
        self, make_run, moderator, anthropic_api
    ):
        parent = finished(make_run, backend_options={"cps": 0, "flaky": 0})
        child = lineage.run_rerun(parent.pk, user=moderator, backend="anthropic", enqueue=False)
        assert child.backend == "anthropic" and child.model == default_model("anthropic")
        assert child.backend_options == {}
        assert set(child.seats.values_list("model", flat=True)) == {default_model("anthropic")}

    def test_an_unavailable_backend_is_refused(self, make_run, moderator, monkeypatch):
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        parent = finished(make_run)
        with pytest.raises(lineage.LineageRefused, match="Anthropic cannot be used"):
            lineage.run_rerun(parent.pk, user=moderator, backend="anthropic", enqueue=False)
        assert not Run.objects.filter(parent=parent).exists()

    def test_a_run_that_has_not_finished_is_not_rerun(self, make_run, moderator):
        parent = make_run()
        with pytest.raises(lineage.LineageRefused, match="is queued; re-run it once it has finished"):
            lineage.run_rerun(parent.pk, user=moderator, enqueue=False)


@pytest.mark.django_db(transaction=True)
class ForkTests:
    def test_the_fork_copies_the_history_up_to_the_turn_and_generates_the_rest(self, make_run, moderator):
        parent = finished(make_run)
        child = lineage.run_fork(parent.pk, upto_key=QUESTIONS, user=moderator, seed=5, enqueue=False)

        assert child.parent_id == parent.pk and child.forked_at_key == QUESTIONS and child.seed == 5
        assert keys(child) == FIRST_HALF and child.status == "queued"
        originals = {t.key: t for t in parent.turns.all()}
        for copy in child.turns.all():
            original = originals[copy.key]
            assert copy.copied_from_id == original.pk
            assert (copy.status, copy.raw_text, copy.payload, copy.citations, copy.model) == (
                original.status,
                original.raw_text,
                original.payload,
                original.citations,
                original.model,
            )
            assert original.input_tokens > 0 and copy.input_tokens == copy.output_tokens == 0
        copied_events = RunEvent.objects.filter(run=child, payload__copied_from=parent.pk)
        assert (
            sorted(copied_events.values_list("kind", flat=True))
            == ["turn_committed"] * 4 + ["turn_started"] * 4
        )

        assert run_to_stop(child) == "done"
        assert keys(child) == FIRST_HALF + SECOND_HALF
        generated = child.turns.filter(copied_from__isnull=True)
        assert sorted(generated.values_list("key", flat=True)) == SECOND_HALF
        # The child pays for what it generated, never for the copies: its totals are the new turns' sums.
        assert child.input_tokens == sum(t.input_tokens for t in generated) > 0
        assert child.input_tokens < parent.input_tokens

    def test_a_fork_in_the_middle_of_a_parallel_stage_keeps_only_what_came_before(self, make_run, moderator):
        parent = finished(make_run)
        child = lineage.run_fork(parent.pk, upto_key="r1/analysis/analyst-ada", user=moderator, enqueue=False)
        assert keys(child) == ["r1/analysis/analyst-ada"]
        run_to_stop(child)
        assert child.status == "completed" and set(keys(child)) == set(FIRST_HALF + SECOND_HALF)
        # Same seed: the turns generated anew are the ones the parent had (the plan goes on where it stood).
        assert child.outcome == parent.outcome

    def test_only_a_committed_turn_of_the_run_is_a_fork_point(self, make_run, moderator):
        parent = finished(make_run)
        Turn.objects.filter(run=parent, key="r3/answers/analyst-bo").update(status="failed", error="boom")
        with pytest.raises(lineage.LineageRefused, match="is failed, not committed"):
            lineage.run_fork(parent.pk, upto_key="r3/answers/analyst-bo", user=moderator, enqueue=False)
        with pytest.raises(lineage.LineageRefused, match="has no turn 'r9/nothing'"):
            lineage.run_fork(parent.pk, upto_key="r9/nothing", user=moderator, enqueue=False)
        assert not Run.objects.filter(parent=parent).exists()

    def test_failed_turns_before_the_fork_point_are_copied_as_failed(self, make_run, moderator):
        parent = finished(make_run)
        Turn.objects.filter(run=parent, key="r3/answers/analyst-bo").update(status="failed", error="boom")
        child = lineage.run_fork(parent.pk, upto_key="r3/answers/analyst-cy", user=moderator, enqueue=False)
        failed = child.turns.get(key="r3/answers/analyst-bo")
        assert failed.status == "failed" and failed.error == "boom" and failed.copied_from is not None
        assert RunEvent.objects.filter(run=child, kind="turn_failed", payload__key=failed.key).exists()
        assert run_to_stop(child) == "done"
        assert child.turns.get(key="r3/answers/analyst-bo").status == "failed"  # not generated again

    def test_a_human_turn_is_copied_with_its_submission(self, make_run, moderator):
        parent = make_run(config={"examiner": "human"})
        run_to_stop(parent)
        (step,) = run_awaited_steps(parent)
        form = {}
        for analysis in step.context["analyses"]:
            for row, claim in enumerate(analysis["claims"][:2], start=1):
                prefix = f"{analysis['analyst']}-{row}"
                form |= {
                    f"{prefix}-claim": claim["id"],
                    f"{prefix}-gap": "No figure.",
                    f"{prefix}-question": "?",
                }
        human_turn_submit(run_id=parent.pk, step_key=step.key, data=form, user=moderator)
        run_to_stop(parent)
        services.run_control(run_id=parent.pk, action="cancel", user=moderator)

        child = lineage.run_fork(parent.pk, upto_key=QUESTIONS, user=moderator, enqueue=False)
        submission = HumanAction.objects.get(run=child, kind="submit_turn")
        assert submission.step_key == QUESTIONS and submission.user == moderator
        assert submission.payload == HumanAction.objects.get(run=parent, step_key=QUESTIONS).payload
        assert child.turns.get(key=QUESTIONS).human
        assert "### mod as Examiner (examiner, human) — questions" in run_transcript_md(child)
        # The answers come next; the examiner's assessment waits for the human, as in the parent.
        assert run_to_stop(child) == "waiting" and child.awaiting == ["r4/assessment/examiner"]

    def test_the_json_export_names_the_parent_and_the_copies(self, make_run, moderator):
        parent = finished(make_run)
        child = lineage.run_fork(parent.pk, upto_key=QUESTIONS, user=moderator, enqueue=False)
        data = run_export_json(child)
        assert data["run"]["parent"] == parent.pk and data["run"]["forked_at_key"] == QUESTIONS
        assert [t["copied_from_run"] for t in data["turns"]] == [parent.pk] * 4
        assert run_export_json(parent)["run"]["parent"] is None


@pytest.mark.django_db(transaction=True)
class ConsultationForkTests:
    def test_the_copied_rounds_get_their_artifacts_and_the_state_machine_goes_on(self, moderator):
        from debates.protocols.consultation.exports import consultation_artifacts

        parent = services.run_create(
            protocol="consultation",
            topic="Should the city charge cars entering the centre?",
            config={"mode": "explore"},  # no early stop: rounds 3 and 4 follow the synthesis
            seed=9,
            backend_options={"cps": 0},
            enqueue=False,
        )
        assert run_to_stop(parent) == "done"
        child = lineage.run_fork(parent.pk, upto_key="r2/synthesis/judge", user=moderator, enqueue=False)
        artifacts = {
            e["turn"]
            for e in RunEvent.objects.filter(run=child, kind="round_artifact").values_list(
                "payload", flat=True
            )
        }
        assert artifacts == set(keys(child)) and "r2/synthesis/judge" in artifacts
        assert run_to_stop(child) == "done" and child.status == parent.status
        assert keys(child) == keys(parent) and "r4/verdict/judge" in keys(child)
        assert child.turns.filter(copied_from__isnull=True).count() == len(keys(parent)) - len(artifacts)
        assert set(consultation_artifacts(child)) == set(consultation_artifacts(parent))
        states = [
            p["to"]
            for p in RunEvent.objects.filter(run=child, kind="state")
            .order_by("seq")
            .values_list("payload", flat=True)
        ]
        assert states[-1] == "complete" and "synthesis" in states


@pytest.mark.django_db(transaction=True)
class KbDebateForkTests:
    @pytest.fixture
    def kb(self) -> KnowledgeBase:
        demo_kbs_load()
        return KnowledgeBase.objects.get(kind=KnowledgeBase.GRAPH)

    def debate(self, kb: KnowledgeBase, **config: Any) -> Run:
        run = services.run_create(
            protocol="kb-debate",
            topic="Does congestion pricing cut traffic without unfair harm?",
            kb=kb,
            config=config,
            backend_options={"cps": 0},
            seed=3,
            enqueue=False,
        )
        run_to_stop(run)
        return run

    def first_proposal(self, run: Run) -> Turn:
        mutation = ProposedMutation.objects.filter(run=run).select_related("turn").order_by("pk").first()
        assert mutation is not None and mutation.turn is not None
        return mutation.turn

    def test_a_fork_before_any_proposal_on_an_unchanged_kb_goes_on(self, kb, moderator):
        parent = self.debate(kb, auto_approve=False)
        assert not kb.revisions.exists()
        proposing = self.first_proposal(parent)
        before = parent.turns.filter(first_seq__lt=proposing.first_seq, status="committed").last()
        assert before is not None
        child = lineage.run_fork(parent.pk, upto_key=before.key, user=moderator, enqueue=False)
        assert keys(child) == keys(parent)[: len(keys(child))] and child.forked_at_key == before.key
        assert run_to_stop(child) in {"done", "waiting"}
        assert child.turns.count() > len(keys(parent)[: keys(parent).index(before.key) + 1])

    def test_a_fork_at_or_after_a_turn_that_proposed_kb_changes_is_refused(self, kb, moderator):
        parent = self.debate(kb, auto_approve=False)
        proposing = self.first_proposal(parent)
        with pytest.raises(
            lineage.LineageRefused, match=f"Turn {proposing.key} .* proposed changes to the knowledge"
        ):
            lineage.run_fork(parent.pk, upto_key=proposing.key, user=moderator, enqueue=False)
        last = parent.turns.filter(status="committed").last()
        with pytest.raises(lineage.LineageRefused, match=f"Fork at a turn before {proposing.key}"):
            lineage.run_fork(parent.pk, upto_key=last.key, user=moderator, enqueue=False)
        assert not Run.objects.filter(parent=parent).exists()

    def test_a_kb_changed_since_the_parents_snapshot_refuses_the_fork_but_not_a_rerun(self, kb, moderator):
        parent = self.debate(kb, auto_approve=True)
        assert kb.revisions.exists()  # the parent applied its downgrades to the live KB
        first = parent.turns.order_by("first_seq").first()
        with pytest.raises(lineage.LineageRefused, match="knowledge base has changed since run"):
            lineage.run_fork(parent.pk, upto_key=first.key, user=moderator, enqueue=False)
        assert not Run.objects.filter(parent=parent).exists()
        child = lineage.run_rerun(parent.pk, user=moderator, enqueue=False)
        assert child.parent_id == parent.pk and child.kb_id == kb.pk
