"""What a plan sees of a KB (debates.engine.view.kb_view_load) is read once per process and revision: an applied
mutation (which records a revision) shows in the next view, and each view still carries its own run's snapshot
ratings and proposals."""

from __future__ import annotations

from debates.engine.view import kb_view_load
from debates.models import Run
from kb.discipline import mutation_decide, mutation_propose


def test_an_applied_downgrade_shows_in_the_next_view_of_every_run_over_the_kb(small_kb, moderator):
    first = Run.objects.create(protocol="kb-debate", topic="One", kb=small_kb)
    second = Run.objects.create(protocol="kb-debate", topic="Two", kb=small_kb)
    before = kb_view_load(first)
    assert before.arguments["arg-002"].status == "strong"
    mutation = mutation_propose(
        kb=small_kb,
        kind="status-downgrade",
        payload={"arg_id": "arg-002", "to": "weak"},
        proposed_by="debater-pro-x",
        justification="why",
        run=first,
    )
    assert kb_view_load(first).mutations[-1].status == "pending"  # the run's proposals are read each time
    mutation_decide(mutation=mutation, approve=True, user=moderator)
    after = [kb_view_load(run) for run in (first, second)]
    assert [view.arguments["arg-002"].status for view in after] == ["weak", "weak"]
    assert after[0].mutations[-1].status == "applied" and after[1].mutations == ()
    assert before.arguments["arg-002"].status == "strong"  # a view already taken is not changed under a plan
