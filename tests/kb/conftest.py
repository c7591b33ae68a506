from __future__ import annotations

import pytest

from kb.models import Argument, Edge, KnowledgeBase, Source


@pytest.fixture
def small_kb(db) -> KnowledgeBase:
    """Six arguments, one per status, two positions, one source and a few edges."""
    kb = KnowledgeBase.objects.create(
        slug="small",
        title="Small",
        kind=KnowledgeBase.GRAPH,
        quality_summary="Graph state: stable.",
        stable_detected=True,
    )
    for number, status in enumerate(
        ["robust", "strong", "contested", "weak", "refuted", "baseless"], start=1
    ):
        Argument.objects.create(
            kb=kb,
            arg_id=f"arg-{number:03d}",
            slug=f"a{number}",
            position="pro-x" if number % 2 else "con-x",
            layer="empirical",
            scope="everywhere",
            basis_type="empirical",
            status=status,
            asserter="someone",
            summary=f"Argument {number}",
            title=f"Statement {number}",
            statement=f"Statement {number}.",
        )
    Source.objects.create(
        kb=kb, path="kb/sources/media/s.md", title="S", frontmatter={"title": "S"}, fields=[["Criticism", ""]]
    )
    Edge.objects.create(kb=kb, order=1, src="arg-001", type="supports", target="arg-003")
    Edge.objects.create(kb=kb, order=2, src="arg-002", type="addresses", target="arg-004")
    return kb
