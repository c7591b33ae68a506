"""Reads for the KB pages."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from kb.formats.seed004 import leaf_paths, path_get
from kb.models import (
    ENGAGEMENT_EDGES,
    STATUSES,
    Argument,
    KnowledgeBase,
    MutationStatus,
    ProposedMutation,
    Snapshot,
)


def kb_list() -> QuerySet[KnowledgeBase]:
    return KnowledgeBase.objects.annotate(
        argument_count=Count("arguments", distinct=True),
        pending_count=Count("mutations", filter=Q(mutations__status=MutationStatus.PENDING), distinct=True),
    )


def kb_arguments(
    kb: KnowledgeBase, *, position: str = "", status: str = "", layer: str = ""
) -> QuerySet[Argument]:
    arguments = kb.arguments.all()
    if position:
        arguments = arguments.filter(position=position)
    if status:
        arguments = arguments.filter(status=status)
    if layer:
        arguments = arguments.filter(layer=layer)
    return arguments


def kb_filter_choices(kb: KnowledgeBase) -> dict[str, list[str]]:
    values = kb.arguments.values_list("position", "layer")
    return {
        "positions": sorted({p for p, _ in values}),
        "layers": sorted({layer for _, layer in values}),
        "statuses": STATUSES,
    }


def kb_graph(kb: KnowledgeBase) -> dict[str, Any]:
    """Nodes (arguments, cited sources) and edges for cytoscape; engagement edges are marked as such."""
    nodes = [
        {
            "data": {
                "id": a.arg_id,
                "label": a.arg_id,
                "title": a.summary,
                "status": a.status,
                "position": a.position,
                "layer": a.layer,
                "kind": "argument",
            }
        }
        for a in kb.arguments.all()
    ]
    source_ids = set()
    edges = []
    for edge in kb.edges.all():
        if edge.type == "derived-from-source" and edge.target not in source_ids:
            source_ids.add(edge.target)
            nodes.append(
                {"data": {"id": edge.target, "label": edge.target.rsplit("/", 1)[-1], "kind": "source"}}
            )
        edges.append(
            {
                "data": {
                    "id": f"e{edge.order}",
                    "source": edge.src,
                    "target": edge.target,
                    "type": edge.type,
                    "engagement": edge.type in ENGAGEMENT_EDGES,
                    "comment": edge.comment,
                }
            }
        )
    return {"nodes": nodes, "edges": edges}


def kb_diff(kb: KnowledgeBase, snapshot: Snapshot | None) -> dict[str, Any]:
    """What changed since the snapshot: status moves, new arguments, new edges (by revision)."""
    if snapshot is None:
        return {"snapshot": None, "changed": [], "added": []}
    before = snapshot.arguments
    changed, added = [], []
    for argument in kb.arguments.all():
        old = before.get(argument.arg_id)
        if old is None:
            added.append(argument)
        elif old["status"] != argument.status:
            changed.append({"argument": argument, "before": old["status"], "after": argument.status})
    revisions = kb.revisions.filter(created_at__gte=snapshot.created_at)
    return {"snapshot": snapshot, "changed": changed, "added": added, "revisions": revisions}


def data_rows(kb: KnowledgeBase, prefix: str = "") -> list[tuple[str, Any]]:
    data = kb.data or {}
    rows = []
    for path in leaf_paths(data):
        if not prefix or path == prefix or path.startswith(prefix + "."):
            rows.append((path, path_get(data, path)))
    return rows


def inbox(kb: KnowledgeBase | None = None) -> dict[str, QuerySet[ProposedMutation]]:
    mutations = ProposedMutation.objects.select_related("kb", "run", "turn__seat", "decided_by", "revision")
    if kb is not None:
        mutations = mutations.filter(kb=kb)
    return {
        "pending": mutations.filter(status=MutationStatus.PENDING).order_by("created_at", "id"),
        "decided": mutations.exclude(status=MutationStatus.PENDING).order_by("-decided_at", "-created_at")[
            :50
        ],
    }
