"""A debate over a KB: refused when the KB is not stable, snapshots it at start, and verifies cited arguments."""

from __future__ import annotations

import pytest

from kb.models import Snapshot
from tests.conftest import run_to_stop


@pytest.mark.django_db(transaction=True)
def test_a_run_over_a_kb_snapshots_it_and_verifies_its_citations(make_run, small_kb):
    run = make_run(kb=small_kb, material="")
    snapshot = Snapshot.objects.get(run=run)
    assert snapshot.arguments["arg-004"]["status"] == "weak"
    assert "kb/edges.md" in snapshot.files
    assert "arg-001 (robust, pro-x, empirical): Statement 1." in run.material
    run_to_stop(run)
    citations = [c for t in run.turns.all() for c in t.citations]
    assert citations and all(c["status"] == "verified" for c in citations if c["kind"] == "arg")
    assert {c["kb_status"] for c in citations if c["kind"] == "arg"} <= {
        "robust",
        "strong",
        "contested",
        "weak",
        "refuted",
        "baseless",
    }


@pytest.mark.django_db(transaction=True)
def test_a_kb_that_is_not_stable_is_refused(make_run, small_kb):
    small_kb.stable_detected = False
    small_kb.save()
    with pytest.raises(ValueError, match="does not state a stable graph"):
        make_run(kb=small_kb, material="")
