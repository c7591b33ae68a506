"""Reads: the run page's panels: the moderator console (human forms, controls, the pick form), the protocol's
extra panels with their context, and the approvals of the KB mutations the run proposed."""

from __future__ import annotations

import re
import uuid
from typing import Any

from debates.contract import Panel
from debates.engine import registry
from debates.engine.view import run_read_shared
from debates.models import Run, RunStatus, turn_dom_id
from debates.selectors.decisions import pick_form_context
from debates.selectors.runs import error_plain, errors_by_field, run_awaited_steps, user_can_moderate
from kb.models import MutationStatus, ProposedMutation


def moderator_context(
    run: Run,
    user: Any,
    *,
    errors: dict[str, list[str]] | None = None,
    values: dict[str, Any] | None = None,
    kb: dict[str, Any] | None = None,
    pick_error: str = "",
) -> dict[str, Any]:
    """`kb`: the run's protocol context when the caller has it already (computed here when a form needs it).
    `pick_error`: why the pick just posted (in `values`) was refused; the pick form shows it with what was posted."""
    can_moderate = user_can_moderate(user)
    protocol = registry.get(run.protocol)
    forms = []
    steps = run_awaited_steps(run)
    if steps and kb is None:
        kb = run_protocol_context(run)
    for step in steps:
        step_errors = (errors or {}).get(step.key, [])
        forms.append(
            {
                "key": step.key,
                "dom_id": "human-form-" + turn_dom_id(step.key).removeprefix("turn-"),
                "seat": step.seat,
                "task": step.task,
                "template": f"{protocol.template}#form-{step.task}",
                "context": step.context,
                "client_uuid": uuid.uuid4(),
                "errors": [error_plain(e) for e in step_errors],
                "field_errors": {
                    name: [error_plain(e) for e in grouped]
                    for name, grouped in errors_by_field(step_errors, step.schema.model_fields).items()
                },
                "values": values or {},
                "kb": kb,
            }
        )
    terminal = run.is_terminal
    return {
        "run": run,
        "can_moderate": can_moderate,
        "forms": forms,
        "control_uuid": uuid.uuid4(),
        "can_pause": not terminal and not run.pause_requested,
        "can_resume": not terminal and run.pause_requested,
        "can_step": not terminal and run.pause_requested and run.status == RunStatus.PAUSED,
        "can_cancel": not terminal,
        "pick_form": pick_form_context(run, values=values if pick_error else None, error=pick_error)
        if can_moderate
        else None,
    }


MUTATION_EVENT = "mutation_decided"


def run_panel_specs(run: Run) -> tuple[Panel, ...]:
    return registry.get(run.protocol).panels


def run_panels(
    run: Run,
    user: Any = None,
    *,
    per_user: bool | None = None,
    kb: dict[str, Any] | None = None,
    message: str = "",
    error_for: int | None = None,
) -> list[dict[str, Any]]:
    """The run's extra panels (all, or only the per-user / shared ones) with what their partials render."""
    specs = [p for p in run_panel_specs(run) if per_user is None or p.per_user == per_user]
    if not specs:
        return []
    template = registry.get(run.protocol).template
    if kb is None and any(not p.per_user for p in specs):
        kb = run_protocol_context(run)
    panels = []
    for spec in specs:
        panel: dict[str, Any] = {
            "id": spec.id,
            "template": f"{template}#panel-{spec.id}",
            "run": run,
            "kb": kb,
            "message": message,
        }
        if spec.id == "approvals":
            panel.update(run_approvals(run, user, error_for=error_for))
        panels.append(panel)
    return panels


def run_protocol_context(run: Run) -> dict[str, Any] | None:
    """What a protocol's bodies and panels look up beyond a turn's own data (None when there is nothing); read once
    per `run_reads_shared` block."""
    return run_read_shared(run.pk, "page-context", lambda: registry.get(run.protocol).page_context(run))


TURN_NUMBER = re.compile(r"^t(\d+)/")


def run_approvals(run: Run, user: Any, *, error_for: int | None = None) -> dict[str, Any]:
    """The KB mutations this run proposed: pending first (oldest first), then the decided ones."""

    rows = list(
        ProposedMutation.objects.filter(run=run)
        .select_related("revision", "turn__seat", "decided_by")
        .order_by("pk")
    )
    targets = {str(m.payload.get("arg_id")) for m in rows if m.kind == "status-downgrade"}
    statuses = (
        dict(run.kb.arguments.filter(arg_id__in=targets).values_list("arg_id", "status"))
        if targets and run.kb is not None
        else {}
    )
    mutations = []
    for m in rows:
        key = m.turn.key if m.turn else ""
        number = TURN_NUMBER.match(key)
        mutations.append(
            {
                "id": m.pk,
                "dom_id": f"approval-{m.pk}",
                "kind": m.kind,
                "payload": m.payload,
                "arg_status": statuses.get(str(m.payload.get("arg_id", ""))),
                "proposed_by": m.proposer,
                "justification": m.justification,
                "status": m.status,
                "pending": m.status == MutationStatus.PENDING,
                "reason": m.reason,
                "revision": m.revision.r_id if m.revision else "",
                "change": m.revision.change if m.revision else "",
                "decided_by": m.decided_by.get_username() if m.decided_by else "",
                "decided_at": m.decided_at,
                "turn_key": key,
                "turn_number": int(number.group(1)) if number else None,
                "turn_dom_id": turn_dom_id(key) if key else "",
                "error": error_for == m.pk,
                "client_uuid": uuid.uuid4(),
            }
        )
    pending = [m for m in mutations if m["pending"]]
    return {
        "slug": run.kb.slug if run.kb is not None else "",
        "pending": pending,
        "decided": [m for m in mutations if not m["pending"]],
        "error_shown": any(m["error"] for m in mutations),
        "can_moderate": user_can_moderate(user),
    }
