"""Citation verification: ids, paths and data paths resolved; figures compared tolerant of formatting."""

from __future__ import annotations

import pytest

from kb.citations import citation_verify, citations_extract, figures_match
from kb.models import KnowledgeBase


@pytest.mark.parametrize(
    ("quoted", "actual"),
    [
        ("4,850", 4850),
        ("4850.0", 4850),
        ("28.5%", 28.5),
        ("28.5%", 0.285),
        ("$1.2", 1.2),
        ("−3.4", -3.4),
        ("4 850", "4850"),
    ],
)
def test_figures_match_whatever_the_formatting(quoted, actual):
    assert figures_match(quoted, actual)


@pytest.mark.parametrize(("quoted", "actual"), [("4,900", 4850), ("28.5%", 0.3), ("-3.4", 3.4), ("n/a", 1)])
def test_different_figures_do_not_match(quoted, actual):
    assert not figures_match(quoted, actual)


def test_arguments_and_sources_resolve(small_kb):
    assert citation_verify(kb=small_kb, citation={"kind": "arg", "ref": "arg-004"})["status"] == "verified"
    assert citation_verify(kb=small_kb, citation={"kind": "arg", "ref": "arg-004"})["kb_status"] == "weak"
    assert citation_verify(kb=small_kb, citation={"kind": "arg", "ref": "arg-404"})["status"] == "unverified"
    assert (
        citation_verify(kb=small_kb, citation={"kind": "source", "ref": "kb/sources/media/s.md"})["status"]
        == "verified"
    )
    assert (
        citation_verify(kb=small_kb, citation={"kind": "source", "ref": "kb/sources/x.md"})["status"]
        == "unverified"
    )


def test_data_paths_and_figures(db):
    kb = KnowledgeBase.objects.create(
        slug="m",
        title="M",
        kind="data",
        data={"meta": {}, "indices": {"SPX": {"price": 4850.25, "change_pct": 0.285}}},
    )

    def verify(ref, quote=None):
        return citation_verify(kb=kb, citation={"kind": "data", "ref": ref, "quote": quote})  # noqa: E731

    assert verify("indices.SPX.price", "4,850.25")["status"] == "verified"
    assert verify("indices.SPX.change_pct", "28.5%")["status"] == "verified"
    assert verify("indices.SPX.price", "4,900")["status"] == "mismatch"
    assert verify("indices.NDX.price")["status"] == "unverified"
    assert (
        citation_verify(kb=kb, citation={"kind": "data", "ref": "x", "inferred": True})["status"]
        == "inferred"
    )


def test_citations_are_found_in_text_once_each():
    text = "As arg-001 shows (kb/sources/media/s.md), and arg-001 again, arg-002 fails."
    assert citations_extract(text) == [
        {"kind": "arg", "ref": "arg-001"},
        {"kind": "source", "ref": "kb/sources/media/s.md"},
        {"kind": "arg", "ref": "arg-002"},
    ]
