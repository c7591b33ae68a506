"""The consultation's page helpers: the state machine's progress strip and history (from the run's `state`
events), the round artifacts' warnings, and filters computed from a turn's own data (so they also work while it
streams)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html

from debates.models import Run
from debates.protocols.consultation.protocol import (
    COST_ABORT_RATIO,
    Consultation,
    ConsultationConfig,
    mean_confidence,
    synthesis_clean,
)
from debates.protocols.consultation.states import (
    FORWARD,
    ROUND_OF_STATE,
    STATE_LABELS,
)
from debates.protocols.schemas import flags_at

register = template.Library()


def consultation_states(state_events: list[tuple[dict[str, Any], Any]]) -> dict[str, Any]:
    """The state history (from / to / time / reason, oldest first) and the strip of the 9 states: each done,
    current, skipped (passed over, e.g. by an early termination) or pending; `aborted` only once it happened.
    `state_events`: the payload and time of each `state` event, oldest first."""
    transitions = [
        {
            "from": str(payload.get("from", "")),
            "to": str(payload.get("to", "")),
            "reason": str(payload.get("reason", "")),
            "at": at,
        }
        for payload, at in state_events
    ]
    current = str(transitions[-1]["to"]) if transitions else "idle"
    visited = {"idle", *(t["to"] for t in transitions)}
    last_forward = max((FORWARD.index(s) for s in visited if s in FORWARD), default=0)
    strip = []
    for index, state in enumerate(FORWARD):
        if state == current:
            status = "current"
        elif state in visited:
            status = "done"
        elif index < last_forward:
            status = "skipped"
        else:
            status = "pending"
        strip.append({"state": state, "label": STATE_LABELS[state], "status": status})
    if "aborted" in visited:
        strip.append({"state": "aborted", "label": STATE_LABELS["aborted"], "status": "current"})
    return {
        "current": current,
        "current_label": STATE_LABELS.get(current, current),
        "round": ROUND_OF_STATE.get(current, 0),
        "terminal": current in {"complete", "aborted"},
        "strip": strip,
        "transitions": transitions,
    }


# An artifact type as the page names it, where its key is not already a word ("R3 cross-examination").
ARTIFACT_LABELS = {"cross_exam": "cross-examination"}


@register.simple_tag
def consultation_panel(run: Run) -> dict[str, Any]:
    """Everything the consultation's side panel shows: states, the estimate, the cost gate's answer and the 150 %
    limit, the warnings recorded with the round artifacts, and the artifacts recorded so far."""
    events = list(
        run.events.filter(kind__in=("state", "round_artifact"))
        .order_by("seq")
        .values_list("kind", "payload", "created_at")
    )
    panel = consultation_states([(payload, at) for kind, payload, at in events if kind == "state"])
    artifacts = [payload for kind, payload, _ in events if kind == "round_artifact"]
    config = ConsultationConfig.model_validate(run.config)
    panel.update(
        {
            "mode": config.mode,
            "threshold": config.consensus_threshold,
            "auto_approve_under": Consultation.threshold(config),
            "estimate": run.estimate_usd,
            "consent": run.consent,
            "limit": run.estimate_usd * COST_ABORT_RATIO if run.estimate_usd is not None else None,
            "nominal": bool((run.estimate or {}).get("nominal_model")),
            "warnings": [w for a in artifacts for w in a.get("warnings", [])],
            "artifact_errors": [e for a in artifacts for e in a.get("errors", [])],
            "artifacts": [
                {
                    "round": a.get("round_number"),
                    "type": a.get("artifact_type"),
                    "label": ARTIFACT_LABELS.get(a.get("artifact_type"), a.get("artifact_type")),
                    "turn": a.get("turn", ""),
                }
                for a in artifacts
            ],
        }
    )
    return panel


@register.filter
def synthesis_warnings(data: Any) -> list[str]:
    """The tensions of a synthesis that will be dropped (fewer than 2 viewpoints), as warnings."""
    if not isinstance(data, dict):
        return []
    try:
        return synthesis_clean(data)[1]
    except (AttributeError, TypeError):  # a partial stream
        return []


@register.filter
def consensus_mean(points: Any) -> float | None:
    try:
        return round(mean_confidence(points), 2) if points else None
    except (KeyError, TypeError, ValueError):
        return None


@register.filter
def valid_viewpoints(tension: Any) -> bool:
    return isinstance(tension, dict) and len(tension.get("viewpoints") or []) >= 2


@register.simple_tag
def flag_mark(flags: Any, *path: Any) -> str:
    """A mark beside an item code flagged in the turn (`flags`: the turn's, as the body template receives them):
    any flag whose `where` is the item's path (the parts joined by dots) or inside it; "" without one."""
    where = ".".join(str(part) for part in path)
    hits = flags_at(flags, where)
    if not hits:
        return ""
    kinds = ", ".join(dict.fromkeys(str(flag.get("kind", "flag")).replace("_", " ") for flag in hits))
    details = " ".join(str(flag.get("detail", "")) for flag in hits)
    return format_html(
        ' <span class="flag-mark" data-flag-where="{}" title="{}">{}</span>', where, details, kinds
    )
