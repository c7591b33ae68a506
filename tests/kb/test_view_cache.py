"""What a plan sees of a KB (debates.engine.view.kb_view_load) is read once per process and revision: an applied
mutation (which records a revision) shows in the next view, and each view still carries its own run's snapshot
ratings and proposals. A run's snapshot, written with the run and never changed, is read once per process."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from debates.engine.turns import turn_citations
from debates.engine.view import kb_view_load, run_snapshot_arguments
from debates.models import Run
from kb.discipline import kb_snapshot_take, mutation_decide, mutation_propose
from kb.models import Snapshot


def arg_002_downgrade(kb, run=None):
    """A proposal to lower arg-002 (strong) to weak."""
    return mutation_propose(
        kb=kb,
        kind="status-downgrade",
        payload={"arg_id": "arg-002", "to": "weak"},
        proposed_by="debater-pro-x",
        justification="why",
        run=run,
    )


def test_an_applied_downgrade_shows_in_the_next_view_of_every_run_over_the_kb(small_kb, moderator):
    first = Run.objects.create(protocol="kb-debate", topic="One", kb=small_kb)
    second = Run.objects.create(protocol="kb-debate", topic="Two", kb=small_kb)
    before = kb_view_load(first)
    assert before.arguments["arg-002"].status == "strong"
    mutation = arg_002_downgrade(small_kb, run=first)
    assert kb_view_load(first).mutations[-1].status == "pending"  # the run's proposals are read each time
    mutation_decide(mutation=mutation, approve=True, user=moderator)
    after = [kb_view_load(run) for run in (first, second)]
    assert [view.arguments["arg-002"].status for view in after] == ["weak", "weak"]
    assert after[0].mutations[-1].status == "applied" and after[1].mutations == ()
    assert before.arguments["arg-002"].status == "strong"  # a view already taken is not changed under a plan


def test_a_runs_snapshot_is_read_once_and_a_run_that_takes_it_later_sees_it(small_kb, moderator):
    run = Run.objects.create(protocol="kb-debate", topic="Later", kb=small_kb)
    assert run_snapshot_arguments(run) is None  # none yet: nothing kept
    kb_snapshot_take(kb=small_kb, run=run)
    mutation_decide(mutation=arg_002_downgrade(small_kb), approve=True, user=moderator)
    view = kb_view_load(run)
    # The KB as it stands now, rated as the run's snapshot rated it when the run began.
    assert (view.arguments["arg-002"].status, view.arguments["arg-002"].snapshot_status) == ("weak", "strong")
    with CaptureQueriesContext(connection) as queries:
        again = kb_view_load(run)
        citations = turn_citations(run.pk, "As arg-002 shows.")
    assert again.arguments["arg-002"].snapshot_status == "strong"
    assert [c["kb_status"] for c in citations] == ["strong"]  # a citation is checked against the snapshot too
    assert not [q for q in queries.captured_queries if Snapshot._meta.db_table in q["sql"]]
