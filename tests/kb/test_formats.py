"""Seed-002 and seed-004 formats: lossless round trip on a rich KB, and every broken input reported whole, by
file and line, with nothing imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.formats.problems import ImportRefused
from kb.models import EDGE_TYPES, STATUSES, KnowledgeBase
from kb.services import kb_export, kb_import_path

CORPUS = Path(__file__).parent / "corpus"
BROKEN = sorted(p for p in (CORPUS / "broken").iterdir() if p.is_dir())
BROKEN_JSON = sorted((CORPUS / "broken-json").glob("*.json"))


def expected_problems(path: Path) -> list[tuple[str, int, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            where, _, phrase = line.partition(": ")
            file, _, number = where.rpartition(":")
            rows.append((file, int(number), phrase.strip()))
    return rows


def kb_state(kb: KnowledgeBase) -> dict:
    """Everything the KB holds, independent of database ids."""
    return {
        "kb": (kb.kind, kb.quality_summary, kb.stable_statement, kb.log),
        "arguments": [
            {
                k: v
                for k, v in a.__dict__.items()
                if k not in {"_state", "id", "kb_id", "created_during_run_id"}
            }
            for a in kb.arguments.all()
        ],
        "sources": [
            (s.path, s.frontmatter, s.frontmatter_order, s.title, s.fields, s.body) for s in kb.sources.all()
        ],
        "entities": [(e.path, e.frontmatter, e.body) for e in kb.entities.all()],
        "edges": [(e.src, e.type, e.target, e.comment) for e in kb.edges.all()],
        "contradictions": [(c.c_id, c.title, c.type, c.status, c.fields) for c in kb.contradictions.all()],
        "questions": [(q.text, q.arg_ids) for q in kb.central_questions.all()],
        "revisions": [(r.r_id, r.heading, r.type, r.target, r.change) for r in kb.revisions.all()],
    }


class RoundTripTests:
    def test_the_rich_kb_holds_every_status_and_edge_type_and_non_ascii_text(self, db):
        kb = kb_import_path(CORPUS / "valid" / "rich", slug="rich")
        assert kb.arguments.count() >= 15
        assert set(kb.arguments.values_list("status", flat=True)) == set(STATUSES)
        assert set(kb.edges.values_list("type", flat=True)) == set(EDGE_TYPES)
        assert kb.stable_detected and kb.stable_statement.startswith("Graph state: stable")
        assert kb.central_questions.count() >= 2 and all(q.arg_ids for q in kb.central_questions.all())
        assert any(
            "ö" in a.statement or "ö" in a.scope or "ö" in a.asserter for a in kb.arguments.all()
        ) or any("ö" in s.title for s in kb.sources.all())
        argument = kb.arguments.first()
        assert argument.statement and argument.evidentiary_basis and argument.strength_assessment

    def test_import_export_import_is_lossless(self, db, tmp_path):
        first = kb_import_path(CORPUS / "valid" / "rich", slug="first")
        kb_export(first, tmp_path)
        assert (
            not (tmp_path / "kb" / "arguments" / "index.md").read_text().count("arg-")
            < first.arguments.count()
        )
        second = kb_import_path(tmp_path, slug="second")
        assert kb_state(second) == kb_state(first)

    def test_export_writes_the_seed_layout(self, db, tmp_path):
        kb = kb_import_path(CORPUS / "valid" / "rich", slug="layout")
        kb_export(kb, tmp_path)
        root = tmp_path / "kb"
        for name in [
            "edges.md",
            "contradictions.md",
            "quality-summary.md",
            "log.md",
            "arguments/index.md",
            "sources/index.md",
        ]:
            assert (root / name).is_file(), name
        assert len(list((root / "arguments").glob("arg-*.md"))) == kb.arguments.count()
        edge_line = next(
            line for line in (root / "edges.md").read_text().splitlines() if line.startswith("arg-")
        )
        assert len(edge_line.split(None, 3)) == 4 and edge_line.endswith('"')

    def test_a_data_kb_round_trips(self, db, tmp_path):
        kb = kb_import_path(Path(__file__).parents[2] / "kb" / "demo" / "market-2026-q4.json", slug="market")
        kb_export(kb, tmp_path)
        again = kb_import_path(tmp_path / "market.json", slug="market-again")
        assert again.data == kb.data and set(kb.data) >= {"meta", "indices", "macro", "sentiment"}


@pytest.mark.parametrize("case", BROKEN, ids=[p.name for p in BROKEN])
def test_a_broken_kb_is_reported_by_file_and_line_and_nothing_is_imported(db, case):
    with pytest.raises(ImportRefused) as refused:
        kb_import_path(case)
    problems = refused.value.problems
    expected = expected_problems(case / "EXPECTED")
    assert len(problems) == len(expected), [str(p) for p in problems]
    for file, line, phrase in expected:
        assert any(
            p.path == file and p.line == line and phrase.lower() in p.message.lower() for p in problems
        ), f"expected {file}:{line}: {phrase} in {[str(p) for p in problems]}"
    assert not KnowledgeBase.objects.exists()


@pytest.mark.parametrize("case", BROKEN_JSON, ids=[p.name for p in BROKEN_JSON])
def test_broken_json_is_reported_with_its_line(db, case):
    with pytest.raises(ImportRefused) as refused:
        kb_import_path(case)
    ((file, line, phrase),) = expected_problems(case.with_name(case.name + ".EXPECTED"))
    (problem,) = refused.value.problems
    assert (problem.path, problem.line) == (file, line) and phrase.lower() in problem.message.lower()
    assert not KnowledgeBase.objects.exists()


def test_the_import_command_prints_every_problem_and_fails(db, capsys):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="2 problem"):
        call_command("import_kb", str(CORPUS / "broken" / "two-defects"))
    err = capsys.readouterr().err
    assert "kb/edges.md:8:" in err and "arg-004-emissions-fell-with-traffic.md:8:" in err
