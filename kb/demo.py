"""The bundled demo knowledge bases (kb/demo/): a seed-002 KB with two positions and a seed-004 market JSON."""

from __future__ import annotations

from pathlib import Path

from kb.discipline import mutation_propose
from kb.models import KnowledgeBase
from kb.services import kb_import_path

DEMO_DIR = Path(__file__).resolve().parent / "demo"
DEMO_KBS = [
    ("congestion-pricing", DEMO_DIR / "congestion-pricing"),
    ("market-2026-q4", DEMO_DIR / "market-2026-q4.json"),
]


def demo_kbs_load() -> list[KnowledgeBase]:
    """Import the demo KBs once; give the argument graph two pending proposals so the inbox has work."""
    kbs = []
    for slug, path in DEMO_KBS:
        kb = KnowledgeBase.objects.filter(slug=slug).first()
        if kb is None:
            kb = kb_import_path(path, slug=slug)
            if kb.kind == KnowledgeBase.GRAPH:
                _demo_proposals(kb)
        kbs.append(kb)
    return kbs


def _demo_proposals(kb: KnowledgeBase) -> None:
    downgradable = list(kb.arguments.filter(status__in=["strong", "contested"]).order_by("arg_id"))[:2]
    for argument in downgradable:
        lower = {"strong": "contested", "contested": "weak"}[argument.status]
        mutation_propose(
            kb=kb,
            kind="status-downgrade",
            payload={"arg_id": argument.arg_id, "to": lower},
            proposed_by="Demo reviewer",  # a person's name, as a user's own proposal would carry
            justification=f"Demo proposal: the traceback of {argument.arg_id} looks thinner than its rating.",
        )
