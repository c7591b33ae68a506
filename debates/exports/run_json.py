"""The `json` export: the whole run (run, seats, turns, events, usage, decision; a protocol's ledger, revisions
and proposals come from its own package: Protocol.export_json)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings

from debates.engine import registry
from debates.models import Run
from debates.selectors.decisions import pick_history

EXPORT_FORMAT_VERSION = "1"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _money(value: Decimal) -> str:
    return format(value, "f")


def run_export_json(run: Run) -> dict[str, Any]:
    seats = list(run.seats.all())
    turns = list(run.turns.select_related("seat", "copied_from").order_by("first_seq", "id"))
    seat_cost: dict[str, Decimal] = {}
    seat_tokens: dict[str, int] = {}
    for t in turns:
        seat_cost[t.seat.handle] = seat_cost.get(t.seat.handle, Decimal(0)) + t.cost_usd
        seat_tokens[t.seat.handle] = seat_tokens.get(t.seat.handle, 0) + (
            t.input_tokens + t.cache_write_tokens + t.cache_read_tokens + t.output_tokens
        )
    own = registry.get(run.protocol).export_json(run)
    return {
        "format": "disputa-run",
        "format_version": EXPORT_FORMAT_VERSION,
        "run": {
            "id": run.pk,
            "protocol": run.protocol,
            "topic": run.topic,
            "material": run.material,
            "config": run.config,
            "status": run.status,
            "status_reason": run.status_reason,
            "backend": run.backend,
            "backend_label": "simulated" if run.backend == "simulated" else run.backend,
            "backend_options": run.backend_options,
            "model": run.model,
            "seed": run.seed,
            "created_by": run.created_by.get_username() if run.created_by else None,
            "created_at": _iso(run.created_at),
            "started_at": _iso(run.started_at),
            "finished_at": _iso(run.finished_at),
            "budget_usd": _money(run.budget_usd) if run.budget_usd is not None else None,
            "budget_tokens": run.budget_tokens,
            "budget_stopped": run.budget_stopped,
            "estimate": run.estimate,
            "consent": run.consent,
            # Lineage: the run this one re-runs or forks (None), and the turn it was forked at ("" for a re-run).
            "parent": run.parent_id,
            "forked_at_key": run.forked_at_key,
        },
        "seats": [
            {
                "handle": s.handle,
                "name": s.name,
                "role": s.role,
                "lens": s.lens,
                "human": s.human,
                "backend": s.backend,
                "model": s.model,
                "tokens": seat_tokens.get(s.handle, 0),
                "cost_usd": _money(seat_cost.get(s.handle, Decimal(0))),
            }
            for s in seats
        ],
        "turns": [
            {
                "key": t.key,
                "seat": t.seat.handle,
                "stage": t.stage,
                "task": t.task,
                "status": t.status,
                "attempt": t.attempt,
                "human": t.human,
                "backend": t.backend,
                "model": t.model,
                "schema_version": t.schema_version,
                "payload": t.payload,
                "raw_text": t.raw_text,
                "error": t.error,
                "citations": t.citations,
                "flags": t.flags,
                "usage": {
                    "input_tokens": t.input_tokens,
                    "output_tokens": t.output_tokens,
                    "cache_write_tokens": t.cache_write_tokens,
                    "cache_read_tokens": t.cache_read_tokens,
                    "thinking_tokens": t.thinking_tokens,
                },
                "cost_usd": _money(t.cost_usd),
                # A turn copied into a fork: the parent run it was copied from (its usage stays there).
                "copied_from_run": t.copied_from.run_id if t.copied_from else None,
                "timings": {
                    "queued_at": _iso(t.queued_at),
                    "started_at": _iso(t.started_at),
                    "first_token_at": _iso(t.first_token_at),
                    "finished_at": _iso(t.finished_at),
                },
            }
            for t in turns
        ],
        "events": [
            {"seq": e.seq, "kind": e.kind, "payload": e.payload, "created_at": _iso(e.created_at)}
            for e in run.events.order_by("seq")
        ],
        "human_actions": [
            {
                "client_uuid": str(a.client_uuid),
                "kind": a.kind,
                "step_key": a.step_key,
                "payload": a.payload,
                "user": a.user.get_username() if a.user else None,
                "created_at": _iso(a.created_at),
            }
            for a in run.human_actions.select_related("user").order_by("created_at", "id")
        ],
        "outcome": run.outcome,
        # Filled by the protocols that keep them (kb-debate, comparative, ...); empty for cross-examination.
        "ledger": own.get("ledger", []),
        "revisions": own.get("revisions", []),
        "proposed_mutations": own.get("proposed_mutations", []),
        "scorecard": None,
        "decision": _decision_json(run),
        "usage": {
            "input_tokens": run.input_tokens,
            "output_tokens": run.output_tokens,
            "cache_write_tokens": run.cache_write_tokens,
            "cache_read_tokens": run.cache_read_tokens,
            "thinking_tokens": run.thinking_tokens,
            "cost_usd": _money(run.cost_usd),
            # Cost not attributable to one seat: cache warm-ups before parallel stages.
            "shared_cost_usd": _money(run.cost_usd - sum((t.cost_usd for t in turns), start=Decimal(0))),
            "prices_read_on": settings.DISPUTA_PRICES.get("read_on", ""),
        },
    }


def _decision_json(run: Run) -> dict[str, Any]:
    """The human's pick after the judge's verdict (None values when nobody picked; `judge_pick` is None when the
    protocol has no pick or the judge gave no verdict), with every pick made, oldest first (the last one stands)."""

    picked = bool(run.human_pick)
    return {
        "options": [list(option) for option in run.pick_options],
        "judge_pick": run.judge_pick or None,
        "judge_label": run.judge_pick_label or None,
        "human_pick": run.human_pick or None,
        "human_label": run.human_pick_label or None,
        "agrees": (run.human_pick == run.judge_pick) if picked and run.judge_pick else None,
        "reason": run.pick_reason if picked else None,
        "picked_by": run.picked_by.get_username() if picked and run.picked_by else None,
        "picked_at": _iso(run.picked_at) if picked else None,
        "history": [
            {
                "pick": h["pick"],
                "label": h["label"],
                "reason": h["reason"],
                "agrees": h["agrees"],
                "user": h["user"] or None,
                "at": _iso(h["at"]),
            }
            for h in (pick_history(run) if picked else [])
        ],
    }
