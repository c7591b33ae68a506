"""The KB discipline: downgrade only, nothing deleted, statements never rewritten, new nodes at contested or lower,
every applied change an R-NNN revision, the snapshot never written; refused proposals kept as findings."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.discipline import (
    STATUS_RANK,
    DisciplineViolation,
    kb_snapshot_take,
    mutation_decide,
    mutation_propose,
)
from kb.formats import seed002
from kb.models import STATUSES, Argument, Edge, KnowledgeBase, ProposedMutation, Snapshot
from kb.services import kb_files


def propose(kb, kind, payload, **kw):
    return mutation_propose(
        kb=kb, kind=kind, payload=payload, proposed_by="debater-pro-x", justification="why", **kw
    )


class DowngradeTests:
    def test_an_approved_downgrade_changes_the_status_and_writes_a_revision(self, small_kb, moderator):
        mutation = propose(small_kb, "status-downgrade", {"arg_id": "arg-002", "to": "weak"})
        assert mutation.status == "pending"
        mutation_decide(mutation=mutation, approve=True, user=moderator)
        mutation.refresh_from_db()
        argument = small_kb.arguments.get(arg_id="arg-002")
        assert (mutation.status, argument.status) == ("applied", "weak")
        revision = mutation.revision
        assert (revision.r_id, revision.type, revision.change) == (
            "R-001",
            "status-downgrade",
            "status strong → weak",
        )
        assert "debater-pro-x" in revision.heading and "proposal" in revision.triggered_by

    def test_a_promotion_is_refused_with_the_rule_and_kept_as_a_finding(self, small_kb):
        mutation = propose(small_kb, "status-downgrade", {"arg_id": "arg-004", "to": "strong"})
        assert mutation.status == "refused"
        assert "status only moves down" in mutation.reason
        assert small_kb.arguments.get(arg_id="arg-004").status == "weak"
        assert ProposedMutation.objects.filter(status="refused").count() == 1

    def test_a_rejection_needs_a_reason_and_changes_nothing(self, small_kb, moderator):
        mutation = propose(small_kb, "status-downgrade", {"arg_id": "arg-001", "to": "strong"})
        with pytest.raises(DisciplineViolation, match="why"):
            mutation_decide(mutation=mutation, approve=False, user=moderator, reason="")
        mutation_decide(mutation=mutation, approve=False, user=moderator, reason="the traceback holds")
        mutation.refresh_from_db()
        assert (mutation.status, mutation.reason) == ("rejected", "the traceback holds")
        assert small_kb.arguments.get(arg_id="arg-001").status == "robust"
        assert not small_kb.revisions.exists()

    def test_refuted_to_baseless_is_lateral_and_allowed(self, small_kb, moderator):
        mutation = propose(small_kb, "status-downgrade", {"arg_id": "arg-005", "to": "baseless"})
        mutation_decide(mutation=mutation, approve=True, user=moderator)
        assert small_kb.arguments.get(arg_id="arg-005").status == "baseless"


class ForbiddenTests:
    @pytest.mark.parametrize(
        ("kind", "payload", "rule"),
        [
            ("delete", {"arg_id": "arg-001"}, "nothing is ever deleted"),
            ("statement-rewrite", {"arg_id": "arg-001", "statement": "x"}, "never rewritten"),
            (
                "new-node",
                {"statement": "New", "position": "pro-x", "layer": "empirical", "status": "strong"},
                "contested or lower",
            ),
            (
                "new-node",
                {
                    "statement": "New",
                    "position": "pro-x",
                    "layer": "empirical",
                    "status": "contested",
                    "refines": "arg-004",
                },
                "may not rank above",
            ),
            ("new-edge", {"src": "arg-001", "type": "endorses", "target": "arg-002"}, "unknown edge type"),
            ("new-edge", {"src": "arg-001", "type": "refutes", "target": "arg-099"}, "missing argument"),
        ],
    )
    def test_forbidden_proposals_are_refused_with_their_rule(self, small_kb, kind, payload, rule):
        mutation = propose(small_kb, kind, payload)
        assert mutation.status == "refused"
        assert rule in mutation.reason

    def test_the_orm_refuses_deletes(self, small_kb):
        with pytest.raises(DisciplineViolation), transaction.atomic():
            small_kb.arguments.get(arg_id="arg-006").delete()
        with pytest.raises(DisciplineViolation), transaction.atomic():
            KnowledgeBase.objects.filter(pk=small_kb.pk).delete()
        assert small_kb.arguments.count() == 6

    def test_the_orm_refuses_a_statement_rewrite(self, small_kb):
        argument = small_kb.arguments.get(arg_id="arg-001")
        argument.statement = "Something else."
        with pytest.raises(DisciplineViolation, match="never rewritten"), transaction.atomic():
            argument.save()

    def test_the_database_refuses_a_statement_rewrite(self, small_kb):
        with pytest.raises(DatabaseError, match="never rewritten"), transaction.atomic():
            Argument.objects.filter(kb=small_kb, arg_id="arg-001").update(statement="Sneaky.")

    def test_the_snapshot_is_never_written(self, small_kb):
        snapshot = kb_snapshot_take(kb=small_kb)
        snapshot.arguments = {}
        with pytest.raises(DisciplineViolation), transaction.atomic():
            snapshot.save()
        with pytest.raises(DatabaseError, match="never written"), transaction.atomic():
            Snapshot.objects.filter(pk=snapshot.pk).update(files={})


class NewNodeTests:
    def test_a_refinement_enters_at_contested_with_the_debate_asserter_and_a_refines_edge(
        self, small_kb, moderator
    ):
        mutation = propose(
            small_kb,
            "new-node",
            {
                "statement": "A narrower claim.",
                "position": "pro-x",
                "layer": "empirical",
                "status": "contested",
                "refines": "arg-002",
            },
        )
        mutation_decide(mutation=mutation, approve=True, user=moderator)
        node = small_kb.arguments.get(arg_id="arg-007")
        assert (node.status, node.asserter) == ("contested", "derived-during-debate-by-debater-pro-x")
        assert Edge.objects.filter(kb=small_kb, src="arg-007", type="refines", target="arg-002").exists()


DISPUTED = "kb/sources/media/s.md"
NEW_SOURCE = {
    "title": "Central London Congestion Charging: Impacts Monitoring, Sixth Annual Report",
    "journal_or_source": "Transport for London",
    "year": "2008",
    "source_type": "institutional",
    "url": "https://content.tfl.gov.uk/central-london-congestion-charging-impacts-monitoring-sixth-annual-report.pdf",
    "key_finding": "Traffic entering the zone stayed about a fifth below 2002 while delays rose with road works.",
    "content": "- Entering traffic 2007: about 21% below 2002.\n- Excess delay back near 2002 levels.",
    "arg_id": "arg-003",
    "note": "The rebound is in delay, not volume: the sixth report separates the two.",
    "disputes": DISPUTED,
    "criticism": "Reads the delay series as a volume series.",
}
AGENT_PATH = "kb/sources/agents/debater-pro-x/transport-for-london-2008-central-london-congestion-charging.md"


class NewSourceTests:
    """A source a debater read to settle a source dispute (seed 002): filed under kb/sources/agents/<handle>/ once a
    person approves it, with the construction template's fields, the criticism recorded both ways and the
    disputed argument's traceback noted."""

    def test_it_waits_for_a_person_even_where_proposals_are_applied_at_once(self, small_kb):
        mutation = propose(small_kb, "new-source", dict(NEW_SOURCE), auto_approve=True)
        assert (mutation.status, mutation.revision) == ("pending", None)
        assert not small_kb.sources.filter(path=AGENT_PATH).exists()

    def test_approved_it_is_filed_under_the_debaters_handle_with_the_template_fields(
        self, small_kb, moderator
    ):
        mutation = propose(small_kb, "new-source", dict(NEW_SOURCE))
        mutation_decide(mutation=mutation, approve=True, user=moderator)
        mutation.refresh_from_db()
        assert mutation.status == "applied"
        source = small_kb.sources.get(path=AGENT_PATH)
        assert source.title == NEW_SOURCE["title"]
        assert source.frontmatter["source_type"] == "institutional" and source.frontmatter["year"] == 2008
        assert source.frontmatter["url"] == NEW_SOURCE["url"] and source.frontmatter["key_finding"]
        labels = [label for label, _ in source.fields]
        assert labels == [
            "Authors",
            "Journal/Source",
            "Year",
            "DOI",
            "URL",
            "Date accessed",
            "Source type",
            "Quality notes",
            "Citations",
            "Cites (primary sources this leans on)",
            "Cited by (sources in our corpus that lean on this)",
            "Author network",
            "Criticism",
        ]
        assert "Disputa fetched nothing" in dict(source.fields)["Quality notes"]
        assert source.body.startswith("## Content\n\n- Entering traffic 2007")
        # The criticism both ways, and the disputed argument's traceback.
        assert dict(source.fields)["Criticism"].startswith(f"Criticises {DISPUTED}: Reads the delay series")
        disputed = small_kb.sources.get(path=DISPUTED)
        assert (
            disputed.criticism
            == f"Reads the delay series as a volume series. (see {AGENT_PATH}; outside a debate, debater-pro-x)"
        )
        assert small_kb.arguments.get(arg_id="arg-003").traceback_notes.endswith(
            f"Source dispute: The rebound is in delay, not volume: the sixth report separates the two. [{AGENT_PATH}]"
        )
        revision = mutation.revision
        assert (revision.type, revision.target) == ("new-source", AGENT_PATH)
        assert revision.change == f"new source; criticism appended to {DISPUTED}; traceback note on arg-003"

    def test_the_export_writes_it_and_its_index_row_and_reads_back(self, small_kb, moderator):
        mutation = propose(small_kb, "new-source", dict(NEW_SOURCE))
        mutation_decide(mutation=mutation, approve=True, user=moderator)
        files = kb_files(small_kb)
        assert f"# {NEW_SOURCE['title']}\n" in files[AGENT_PATH]
        assert "agents/debater-pro-x/transport-for-london-2008" in files["kb/sources/index.md"]
        assert "- **Type**: new-source" in files["kb/revisions.md"]
        parsed = seed002.parse_texts(files)
        assert parsed.problems == []
        assert AGENT_PATH in {s.path for s in parsed.sources}

    @pytest.mark.parametrize(
        ("change", "rule"),
        [
            ({"url": "", "doi": ""}, "needs the URL it was read at or its DOI"),
            ({"url": "javascript:alert(1)"}, "is not an http(s) URL"),
            ({"doi": "not-a-doi"}, "is not a DOI"),
            ({"source_type": "blog"}, "unknown source_type 'blog'"),
            ({"year": "20x8"}, "is not a year"),
            ({"title": " "}, "needs its title"),
            ({"key_finding": ""}, "needs its key finding"),
            ({"arg_id": "arg-099"}, "no argument 'arg-099'"),
            ({"arg_id": ""}, "a traceback note needs the argument"),
            ({"disputes": "kb/sources/none.md"}, "no source 'kb/sources/none.md' in this KB to dispute"),
            ({"disputes": ""}, "a criticism needs the disputed source"),
            ({"slug": "Not A Slug"}, "is not a kebab-case slug"),
            ({"url": "https://example.org/s"}, "the KB holds this source already (kb/sources/media/s.md"),
        ],
    )
    def test_what_it_cannot_be_is_refused_with_the_rule(self, small_kb, change, rule):
        small_kb.sources.filter(path=DISPUTED).update(
            frontmatter={"title": "S", "url": "https://example.org/s/"}
        )
        mutation = propose(small_kb, "new-source", {**NEW_SOURCE, **change})
        assert mutation.status == "refused"
        assert rule in mutation.reason

    def test_a_source_is_never_filed_over_one_the_kb_holds(self, small_kb, moderator):
        first = propose(small_kb, "new-source", dict(NEW_SOURCE))
        second = propose(small_kb, "new-source", {**NEW_SOURCE, "url": "https://example.org/other"})
        mutation_decide(mutation=first, approve=True, user=moderator)
        second = mutation_decide(mutation=second, approve=True, user=moderator)
        assert second.status == "refused" and f"a source at {AGENT_PATH} exists already" in second.reason
        assert small_kb.sources.filter(path=AGENT_PATH).count() == 1

    def test_a_proposer_that_is_no_handle_is_refused(self, small_kb):
        mutation = mutation_propose(
            kb=small_kb, kind="new-source", payload=dict(NEW_SOURCE), proposed_by="../x", justification="why"
        )
        assert mutation.status == "refused" and "'../x' is no handle" in mutation.reason


PROPOSALS = st.one_of(
    st.builds(
        lambda n, to: ("status-downgrade", {"arg_id": f"arg-{n:03d}", "to": to}),
        st.integers(1, 8),
        st.sampled_from(STATUSES + ["certain"]),
    ),
    st.builds(
        lambda status, refines: (
            "new-node",
            {
                "statement": "N.",
                "position": "con-x",
                "layer": "empirical",
                "status": status,
                "refines": refines,
            },
        ),
        st.sampled_from(STATUSES),
        st.sampled_from([None, "arg-001", "arg-004", "arg-006"]),
    ),
    st.builds(
        lambda s, t, d: ("new-edge", {"src": f"arg-{s:03d}", "type": t, "target": f"arg-{d:03d}"}),
        st.integers(1, 8),
        st.sampled_from(["supports", "refutes", "addresses", "endorses"]),
        st.integers(1, 8),
    ),
    st.just(("delete", {"arg_id": "arg-001"})),
    st.just(("statement-rewrite", {"arg_id": "arg-002", "statement": "x"})),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(proposals=st.lists(st.tuples(PROPOSALS, st.booleans()), max_size=12))
def test_no_random_sequence_of_proposals_breaks_a_rule(small_kb, moderator, proposals):
    with transaction.atomic():
        before = {a.arg_id: (a.status, a.statement) for a in small_kb.arguments.all()}
        edges_before = small_kb.edges.count()
        for (kind, payload), approve in proposals:
            mutation = propose(small_kb, kind, payload)
            if mutation.status == "pending":
                mutation_decide(mutation=mutation, approve=approve, user=moderator, reason="no")
        after = {a.arg_id: a for a in small_kb.arguments.all()}
        for arg_id, (status, statement) in before.items():
            assert arg_id in after  # nothing deleted
            assert after[arg_id].statement == statement  # never rewritten
            assert STATUS_RANK[after[arg_id].status] <= STATUS_RANK[status]  # only down
        for arg_id, node in after.items():
            if arg_id not in before:
                assert STATUS_RANK[node.status] <= STATUS_RANK["contested"]
                assert node.asserter.startswith("derived-during-debate-by-")
        assert small_kb.edges.count() >= edges_before
        applied = ProposedMutation.objects.filter(kb=small_kb, status="applied").count()
        assert small_kb.revisions.count() == applied  # every applied change has its revision
        transaction.set_rollback(True)
