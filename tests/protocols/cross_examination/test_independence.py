"""What each step of a cross-examination may read of the transcript (`Step.sees`), as seed 000 says: the analyses
are independent (no analyst reads another's); the examiner reads ALL analyses; an analyst answers its own
questions with its original analysis before it, and never reads a sibling's answer (every answerer reads the same
transcript, the analyses and the questions: one cached prefix for the stage); the examiner assesses with the whole
record. So a run stepped one turn at a time by a moderator sends every seat the same prompt as a run left to go
(the generic check over every protocol's first parallel stage is tests/engine/test_independence.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from debates.agents.prompts import prompt_render
from debates.contract import Steps
from debates.models import Run, Turn
from debates.services import runs as services
from tests.conftest import run_to_stop
from tests.protocols.cross_examination.test_protocol import (
    ANALYSTS,
    PROTOCOL,
    analysis,
    full_history,
    view,
)


def planned(turns: dict) -> Steps:
    plan = PROTOCOL.plan(view(turns))
    assert isinstance(plan, Steps)
    return plan


def transcript_keys(step, turns: dict) -> list[str]:
    prompt = prompt_render(protocol="cross-examination", step=step, view=view(turns))
    return [block.split('"')[1] for block in prompt.transcript]


class DeclarationTests:
    def test_the_analyses_see_no_turn(self):
        assert [step.sees for step in planned({}).steps] == [(), ()]

    def test_the_examiner_asks_having_read_all_analyses(self):
        (step,) = planned({f"r1/analysis/{h}": analysis(h) for h in ANALYSTS}).steps
        assert step.sees == ("r1/analysis/",)

    def test_the_analysts_answer_seeing_the_analyses_and_questions_never_an_answer(self):
        history = full_history()
        del history["r3/answers/analyst-ada"], history["r3/answers/analyst-bo"]
        sees = {step.sees for step in planned(history).steps}
        assert sees == {("r1/analysis/", "r2/questions/examiner")}

    def test_the_examiner_assesses_with_the_whole_record(self):
        (step,) = planned(full_history()).steps
        assert step.task == "assessment" and step.sees is None


class PromptTests:
    def test_an_analysis_planned_after_a_sibling_committed_reads_nothing_of_it(self):
        """Step mode: Bo's analysis is planned once Ada's has committed; its prompt is the one of the parallel
        stage, with no turn in its transcript."""
        alone = planned({}).steps[1]
        after = {"r1/analysis/analyst-ada": analysis("analyst-ada")}
        (later,) = planned(after).steps
        assert later.key == alone.key == "r1/analysis/analyst-bo"
        assert transcript_keys(later, after) == []
        assert prompt_render(protocol="cross-examination", step=later, view=view(after)) == prompt_render(
            protocol="cross-examination", step=alone, view=view({})
        )

    def test_an_answer_planned_after_a_sibling_answered_reads_nothing_of_that_answer(self):
        history = full_history()
        del history["r3/answers/analyst-bo"]  # Ada has answered already (step mode, or a crash mid-stage)
        (bo,) = planned(history).steps
        assert transcript_keys(bo, history) == [
            "r1/analysis/analyst-ada",
            "r1/analysis/analyst-bo",
            "r2/questions/examiner",
        ]
        prompt = prompt_render(protocol="cross-examination", step=bo, view=view(history))
        assert '"question_id"' not in prompt.text and '"choice"' not in prompt.text  # no answer at all
        # Its own questions and its own analysis, referenced in the task (the transcript above holds them).
        assert '{"see": "r2/questions/examiner questions[2]"}' in prompt.task
        assert '{"see": "r2/questions/examiner questions[0]"}' not in prompt.task  # Ada's
        assert '"see_turn": "r1/analysis/analyst-bo"' in prompt.task
        # The same prompt as when both answers are planned together, and the same prefix as Ada's.
        del history["r3/answers/analyst-ada"]
        ada, together = planned(history).steps
        assert prompt == prompt_render(protocol="cross-examination", step=together, view=view(history))
        assert (
            prompt.prefix == prompt_render(protocol="cross-examination", step=ada, view=view(history)).prefix
        )


@pytest.mark.django_db(transaction=True)
def test_a_run_stepped_one_turn_at_a_time_sends_every_seat_the_prompt_of_a_free_run(
    make_run: Callable[..., Run],
) -> None:
    """The reported symptom: stepped with "Step one turn", later analysts' prompts grew (893 → 1,261 tokens) by
    the earlier analyses. Every turn's prompt size is now the same as in a run left to go."""
    free = make_run()
    run_to_stop(free)
    stepped = make_run()
    services.run_control(run_id=stepped.pk, action="pause", user=None)
    run_to_stop(stepped)
    for _ in range(20):
        services.run_control(run_id=stepped.pk, action="step", user=None)
        run_to_stop(stepped)
        if stepped.is_terminal:
            break
    assert free.status == stepped.status == "completed"

    def sizes(run: Run) -> dict[str, int]:
        return dict(Turn.objects.filter(run=run).values_list("key", "input_tokens"))

    assert sizes(stepped) == sizes(free)
    analyses = [size for key, size in sizes(stepped).items() if key.startswith("r1/")]
    answers = [size for key, size in sizes(stepped).items() if key.startswith("r3/")]
    assert max(analyses) - min(analyses) < 20  # seats differ only by their name and lens
    assert max(answers) < 2 * min(answers)  # no answerer carries a sibling's answers
