"""Reads: what waits for a person ("Needs you"). Every pending human action of every run a moderator may act on —
a human seat's turn, a cost consent, a budget stop, a proposed KB change, a final pick after the judge — one item
each, newest first, with what is asked, since when and where its form is."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Max, Q, QuerySet
from django.urls import reverse

from debates.engine import registry
from debates.models import Run, RunEvent, RunStatus, Seat, turn_dom_id
from debates.selectors.runs import run_awaited_steps, user_can_moderate
from kb.models import MutationStatus, ProposedMutation

CONSENT = "consent"
MUTATION_KINDS = {
    "status-downgrade": "lower the rating of",
    "new-edge": "add a relation from",
    "criticism-append": "add a criticism to",
    "traceback-append": "add a trace-back note to",
    "new-source": "add a new source,",
}


def _mutation_detail(mutation: ProposedMutation) -> str:
    payload = mutation.payload or {}
    subject = payload.get("arg_id") or payload.get("src") or payload.get("source") or ""
    if mutation.kind == "new-source":  # a source not in the KB yet: named by its title
        subject = f"“{payload.get('title') or 'untitled'}”"
    what = MUTATION_KINDS.get(mutation.kind, "record a contradiction among")
    text = f"Proposed by {mutation.proposer}: {what} {subject or 'arguments'}"
    if payload.get("to"):
        text += f" (to {payload['to']})"
    if mutation.justification:
        text += f". Why: {mutation.justification[:240]}"
    return text


@dataclass(frozen=True)
class NeedsItem:
    kind: str  # turn | consent | budget | approval | pick
    asked: str  # what is asked, in plain words
    since: datetime | None
    url: str  # straight to the form
    run: Run | None = None
    detail: str = ""
    mutation: ProposedMutation | None = None
    options: list[dict[str, Any]] = field(default_factory=list)  # a pick's options, for acting in place

    @property
    def dom_id(self) -> str:
        if self.mutation is not None:
            return f"needs-mutation-{self.mutation.pk}"
        anchor = self.url.rpartition("#")[2]
        return f"needs-{self.run.pk if self.run else 0}-{anchor}"


def _waiting_runs() -> QuerySet[Run]:
    return Run.objects.filter(status=RunStatus.AWAITING_HUMAN).exclude(awaiting=[])


def _budget_stopped() -> QuerySet[Run]:
    return Run.objects.filter(status=RunStatus.PAUSED, budget_stopped=True)


def _picks_awaited() -> QuerySet[Run]:
    """Completed runs whose outcome offers options and that no human has decided yet."""
    return Run.objects.filter(
        status=RunStatus.COMPLETED, human_pick="", outcome__has_key="pick_options"
    ).exclude(Q(outcome__pick_options=[]) | Q(outcome__pick_options=None))


def _pending_mutations() -> QuerySet[ProposedMutation]:
    return ProposedMutation.objects.filter(status=MutationStatus.PENDING)


def needs_you_count(user: Any) -> int:
    """How many items wait for this user (0 for a user who may not act): cheap, for the nav on every page."""
    if not user_can_moderate(user):
        return 0
    awaited = sum(len(awaiting) for awaiting in _waiting_runs().values_list("awaiting", flat=True))
    return awaited + _budget_stopped().count() + _picks_awaited().count() + _pending_mutations().count()


def _status_since(run_ids: list[int]) -> dict[int, datetime]:
    """When each run last changed status (what it waits for began then)."""
    rows = (
        RunEvent.objects.filter(run_id__in=run_ids, kind="run_status")
        .values("run_id")
        .annotate(at=Max("created_at"))
    )
    return {row["run_id"]: row["at"] for row in rows}


def _run_url(run: Run, anchor: str) -> str:
    return f"{reverse('run-detail', args=[run.pk])}#{anchor}"


def needs_you(user: Any) -> list[NeedsItem]:
    """Every item waiting for this user, newest first; empty for a user who may not act."""
    if not user_can_moderate(user):
        return []
    items: list[NeedsItem] = []
    waiting = list(_waiting_runs())
    stopped = list(_budget_stopped())
    since = _status_since([run.pk for run in waiting + stopped])
    for run in waiting:
        protocol = registry.get(run.protocol)
        if CONSENT in run.awaiting:
            estimate = run.estimate or {}
            items.append(
                NeedsItem(
                    kind="consent",
                    asked="Approve the estimated cost before any model is called",
                    detail=f"about ${estimate.get('cost_usd', run.estimate_usd)} for ~{estimate.get('calls', '?')} calls",
                    since=since.get(run.pk, run.created_at),
                    url=_run_url(run, "consent"),
                    run=run,
                )
            )
            continue
        names = dict(Seat.objects.filter(run=run).values_list("handle", "name"))
        for step in run_awaited_steps(run):
            items.append(
                NeedsItem(
                    kind="turn",
                    asked=f"{protocol.task_label(step.task)}, as {names.get(step.seat, 'the human seat')}",
                    since=since.get(run.pk, run.created_at),
                    url=_run_url(run, "human-form-" + turn_dom_id(step.key).removeprefix("turn-")),
                    run=run,
                )
            )
    for run in stopped:
        items.append(
            NeedsItem(
                kind="budget",
                asked="Raise the budget to let the run go on, or cancel it",
                detail=run.status_reason,
                since=since.get(run.pk, run.created_at),
                url=_run_url(run, "budget-form"),
                run=run,
            )
        )
    for run in _picks_awaited():
        items.append(
            NeedsItem(
                kind="pick",
                asked="Record your decision after the judge's verdict",
                detail=f"The judge picked {run.judge_pick_label}."
                if run.judge_pick
                else "The judge gave no verdict.",
                since=run.finished_at,
                url=_run_url(run, "pick-form"),
                run=run,
                options=[
                    {"value": value, "label": label, "judge": value == run.judge_pick}
                    for value, label in run.pick_options
                ],
            )
        )
    for mutation in _pending_mutations().select_related("kb", "run", "turn__seat"):
        items.append(
            NeedsItem(
                kind="approval",
                asked=f"Approve or reject a proposed change to the knowledge base {mutation.kb.title}",
                detail=_mutation_detail(mutation),
                since=mutation.created_at,
                url=_run_url(mutation.run, "approvals")
                if mutation.run
                else f"{reverse('kb-inbox')}#mutation-{mutation.pk}",
                run=mutation.run,
                mutation=mutation,
            )
        )
    items.sort(key=lambda item: item.since.timestamp() if item.since else 0.0, reverse=True)
    return items
