"""Reads: the human's pick after a judge's verdict (the run's decision, its history and form) and how often humans
override the judge. Generic over protocols: a protocol with a pick puts `judge_pick` and `pick_options` ([value,
label] pairs) in its outcome (debates.services.runs.run_pick_record); nothing here knows any protocol."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.db.models import Count, F, Q

from debates.models import HumanAction, HumanActionKind, Run, RunStatus


def _pick_state(judge_pick: str, human_pick: str) -> str:
    """The human's pick against the judge's: agrees, overrides, adjudicated (no judge's pick), or "" (none)."""
    if not human_pick:
        return ""
    if not judge_pick:
        return "adjudicated"
    return "agrees" if human_pick == judge_pick else "overrides"


def pick_history(run: Run) -> list[dict[str, Any]]:
    """Every pick recorded on the run, oldest first (the last one stands)."""
    actions = HumanAction.objects.filter(run=run, kind=HumanActionKind.PICK).select_related("user")
    return [
        {
            "pick": str(a.payload.get("pick", "")),
            "label": run.pick_label(str(a.payload.get("pick", ""))),
            "reason": str(a.payload.get("reason", "")),
            "agrees": a.payload.get("agrees"),
            "user": a.user.get_username() if a.user else "",
            "at": a.created_at,
        }
        for a in actions.order_by("created_at", "id")
    ]


def pick_context(run: Run) -> dict[str, Any]:
    """The run's decision as the run page, the frames and the export show it: the options with labels, the judge's
    and the human's picks, whether the human agrees, overrides or adjudicated (the judge gave no verdict), the
    reason, who and when, and the history of picks. `has_pick` is False for a protocol without a pick."""
    options = run.pick_options
    if not options:
        return {"has_pick": False, "options": [], "history": []}
    state = _pick_state(run.judge_pick, run.human_pick)
    history = pick_history(run) if run.human_pick else []
    return {
        "has_pick": True,
        "completed": run.status == RunStatus.COMPLETED,
        "options": [
            {
                "value": value,
                "label": label,
                "judge": value == run.judge_pick,
                "human": value == run.human_pick,
            }
            for value, label in options
        ],
        "judge_pick": run.judge_pick,
        "judge_label": run.judge_pick_label,
        "human_pick": run.human_pick,
        "human_label": run.human_pick_label,
        "state": state,
        "agrees": state == "agrees",
        "overrides": state == "overrides",
        "adjudicated": state == "adjudicated",
        "reason": run.pick_reason,
        "picked_by": run.picked_by.get_username() if run.picked_by else "",
        "picked_at": run.picked_at,
        "history": history,
        "revised": len(history) > 1,
    }


def pick_form_context(run: Run, *, values: Any = None, error: str = "") -> dict[str, Any] | None:
    """The moderator's pick form: only on a completed run whose outcome has options. `values`: what was posted,
    shown again with `error` when the pick was refused."""
    if run.status != RunStatus.COMPLETED or not run.pick_options:
        return None
    selected = run.human_pick or run.judge_pick
    reason = run.pick_reason
    if values is not None:
        selected = str(values.get("pick", "")) or selected
        reason = str(values.get("reason", ""))
    return {
        "options": [
            {"value": value, "label": label, "judge": value == run.judge_pick, "checked": value == selected}
            for value, label in run.pick_options
        ],
        "judge_pick": run.judge_pick,
        "judge_label": run.judge_pick_label,
        "human_pick": run.human_pick,
        "reason": reason,
        "error": error,
        "client_uuid": uuid.uuid4(),
    }


def _rate(overridden: int, agreed: int) -> float | None:
    """Overrides as a % of the picks that had a judge's pick to agree with or override (adjudications excluded)."""
    judged = overridden + agreed
    return round(100 * overridden / judged, 1) if judged else None


DECISIONS_SHOWN = 200


def override_stats() -> dict[str, Any]:
    """How often humans overrode the judge: overall and per protocol (runs picked, agreed, overridden,
    adjudicated, override rate in %), runs still awaiting a decision, the chart of rates per protocol, and the
    latest decisions (overrides with their reasons). A fixed number of queries whatever the number of runs."""
    picked = Run.objects.exclude(human_pick="")
    rows = (
        picked.values("protocol")
        .annotate(
            picked=Count("id"),
            agreed=Count("id", filter=~Q(judge_pick="") & Q(human_pick=F("judge_pick"))),
            adjudicated=Count("id", filter=Q(judge_pick="")),
        )
        .order_by("protocol")
    )
    awaiting = dict(
        Run.objects.filter(status=RunStatus.COMPLETED, human_pick="", outcome__has_key="pick_options")
        .values("protocol")
        .annotate(n=Count("id"))
        .values_list("protocol", "n")
    )
    protocols = []
    for row in rows:
        overridden = row["picked"] - row["agreed"] - row["adjudicated"]
        protocols.append(
            {
                "protocol": row["protocol"],
                "picked": row["picked"],
                "agreed": row["agreed"],
                "overridden": overridden,
                "adjudicated": row["adjudicated"],
                "awaiting": awaiting.pop(row["protocol"], 0),
                "override_rate": _rate(overridden, row["agreed"]),
            }
        )
    for protocol, n in sorted(awaiting.items()):  # protocols with runs awaiting a pick but none picked yet
        protocols.append(
            {
                "protocol": protocol,
                "picked": 0,
                "agreed": 0,
                "overridden": 0,
                "adjudicated": 0,
                "awaiting": n,
                "override_rate": None,
            }
        )
    protocols.sort(key=lambda p: p["protocol"])
    totals = {
        key: sum(p[key] for p in protocols)
        for key in ("picked", "agreed", "overridden", "adjudicated", "awaiting")
    }
    totals["override_rate"] = _rate(totals["overridden"], totals["agreed"])

    recent = (
        picked.select_related("picked_by")
        .only(
            "id",
            "protocol",
            "topic",
            "outcome",
            "judge_pick",
            "human_pick",
            "pick_reason",
            "picked_at",
            "picked_by__username",
        )
        .order_by("-picked_at", "-id")[:DECISIONS_SHOWN]
    )
    decisions = [
        {
            "run_id": run.pk,
            "protocol": run.protocol,
            "topic": run.topic,
            "judge_pick": run.judge_pick,
            "judge_label": run.judge_pick_label,
            "human_pick": run.human_pick,
            "human_label": run.human_pick_label,
            "state": _pick_state(run.judge_pick, run.human_pick),
            "reason": run.pick_reason,
            "picked_by": run.picked_by.get_username() if run.picked_by else "",
            "picked_at": run.picked_at,
        }
        for run in recent
    ]
    charted = [p for p in protocols if p["override_rate"] is not None]
    chart = {
        "type": "bar",
        "data": {
            "labels": [p["protocol"] for p in charted],
            "datasets": [
                {
                    "label": "Override rate (%)",
                    "data": [p["override_rate"] for p in charted],
                    "backgroundColor": "#b4533a",
                    "maxBarThickness": 48,
                }
            ],
        },
        "options": {
            "indexAxis": "y",
            "scales": {"x": {"min": 0, "max": 100, "title": {"display": True, "text": "% of judged picks"}}},
            "plugins": {"legend": {"display": False}},
        },
    }
    return {
        "totals": totals,
        "protocols": protocols,
        "decisions": decisions,
        "overrides": [d for d in decisions if d["state"] == "overrides"],
        "decisions_shown": DECISIONS_SHOWN,
        "chart_json": json.dumps(chart) if charted else "",
    }


def verdict_reviews() -> list[dict[str, Any]]:
    """Human reviews of a judge's verdict (an outcome's `review`: accept, or dissent with the reason), dissents
    first, newest first: a dissent is a decision too, and belongs beside the picks."""
    runs = (
        Run.objects.filter(status=RunStatus.COMPLETED, outcome__has_key="review")
        .exclude(outcome__review=None)
        .only("id", "protocol", "topic", "outcome", "finished_at")
        .order_by("-finished_at", "-id")[:DECISIONS_SHOWN]
    )
    reviews = []
    for run in runs:
        review = run.outcome.get("review") if isinstance(run.outcome, dict) else None
        if not isinstance(review, dict) or review.get("decision") not in {"accept", "dissent"}:
            continue
        reviews.append(
            {
                "run_id": run.pk,
                "topic": run.topic,
                "protocol": run.protocol,
                "decision": review["decision"],
                "text": str(review.get("text") or ""),
                "at": run.finished_at,
            }
        )
    reviews.sort(key=lambda r: r["decision"] != "dissent")
    return reviews
