"""Services: a human seat's turn is validated like an agent's, applied once, and committed by the runner."""

from __future__ import annotations

import uuid

import pytest

from debates.models import HumanAction, Turn
from debates.selectors.runs import run_awaited_steps
from debates.services.runs import SubmissionInvalid
from debates.services.turns import human_turn_submit
from tests.conftest import run_to_stop


def _questions_form(step) -> dict[str, str]:
    form = {}
    for analysis in step.context["analyses"]:
        for row, claim in enumerate(analysis["claims"][:2], start=1):
            prefix = f"{analysis['analyst']}-{row}"
            form |= {
                f"{prefix}-claim": claim["id"],
                f"{prefix}-gap": "No figure given.",
                f"{prefix}-question": "Which figure?",
            }
    return form


@pytest.mark.django_db(transaction=True)
class HumanExaminerTests:
    def test_the_run_waits_for_the_human_then_takes_the_submitted_turns(self, make_run, moderator):
        run = make_run(config={"examiner": "human"})
        assert run_to_stop(run) == "waiting"
        assert run.status == "awaiting_human" and run.awaiting == ["r2/questions/examiner"]
        (step,) = run_awaited_steps(run)

        assert human_turn_submit(
            run_id=run.pk,
            step_key=step.key,
            data=_questions_form(step),
            user=moderator,
            client_uuid=uuid.uuid4(),
        )
        run.refresh_from_db()
        assert run.status == "queued"

        assert run_to_stop(run) == "waiting"
        assert run.awaiting == ["r4/assessment/examiner"]
        questions = Turn.objects.get(run=run, key="r2/questions/examiner")
        assert (
            questions.human and questions.status == "committed" and len(questions.payload["questions"]) == 6
        )

        (step,) = run_awaited_steps(run)
        form = {f"{item['question_id']}-classification": "DEFENDED" for item in step.context["record"]}
        human_turn_submit(run_id=run.pk, step_key=step.key, data=form, user=moderator)
        assert run_to_stop(run) == "done"
        assert run.status == "completed"
        assert [row["defended"] for row in run.outcome["summary"]] == [2, 2, 2]

    def test_an_invalid_submission_is_refused_with_reasons_and_records_nothing(self, make_run, moderator):
        run = make_run(config={"examiner": "human"})
        run_to_stop(run)
        (step,) = run_awaited_steps(run)
        form = _questions_form(step)
        form = {k: v for k, v in form.items() if not k.startswith("analyst-ada-2")}
        with pytest.raises(SubmissionInvalid) as refused:
            human_turn_submit(run_id=run.pk, step_key=step.key, data=form, user=moderator)
        assert refused.value.errors == ["Ada gets 1 questions; ask 2–3 per analyst"]
        assert not HumanAction.objects.filter(run=run).exists()

    def test_a_double_submit_is_applied_once(self, make_run, moderator):
        run = make_run(config={"examiner": "human"})
        run_to_stop(run)
        (step,) = run_awaited_steps(run)
        token = uuid.uuid4()
        first = human_turn_submit(
            run_id=run.pk, step_key=step.key, data=_questions_form(step), user=moderator, client_uuid=token
        )
        again = human_turn_submit(
            run_id=run.pk, step_key=step.key, data=_questions_form(step), user=moderator, client_uuid=token
        )
        fresh = human_turn_submit(
            run_id=run.pk, step_key=step.key, data=_questions_form(step), user=moderator
        )
        assert (first, again, fresh) == (True, False, False)
        assert HumanAction.objects.filter(run=run, kind="submit_turn").count() == 1
