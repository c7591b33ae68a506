"""Build the RunView a protocol plans from: everything persisted, nothing in memory."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db.models import Max

from debates.contract import KbArgument, KbMutation, KbView, RunView, SeatView, TurnView
from debates.engine import registry
from debates.engine.progress import run_view_noted
from debates.models import HumanAction, HumanActionKind, Run, Seat
from kb.models import KnowledgeBase, ProposedMutation, Snapshot
from kb.services import kb_positions


def run_seats(run: Run) -> tuple[Seat, ...]:
    """The run's seats, in order. Read once per process: seats are written with their run and never change."""
    return _run_seats(run.pk, run.created_at)


@functools.lru_cache(maxsize=512)
def _run_seats(run_id: int, created_at: datetime) -> tuple[Seat, ...]:
    # The creation time too: a test database that rolls back hands out the same run ids again.
    return tuple(Seat.objects.filter(run_id=run_id))


def run_snapshot_arguments(run: Run) -> Mapping[str, Any] | None:
    """The KB's arguments as the run's snapshot recorded them (None: the run took no snapshot). Read once per
    process: a snapshot is written with its run and never changed (kb.discipline refuses). Read it, never change
    it."""
    try:
        return _snapshot_arguments(run.pk, run.created_at)
    except Snapshot.DoesNotExist:  # (not kept: a run being created takes it later)
        return None


@functools.lru_cache(maxsize=256)
def _snapshot_arguments(run_id: int, created_at: datetime) -> Mapping[str, Any]:
    return Snapshot.objects.values_list("arguments", flat=True).get(run_id=run_id)  # type: ignore[no-any-return]


# The reads shared inside the current `run_reads_shared` block, by (run id, what was read).
_shared_reads: ContextVar[dict[tuple[int, str], Any] | None] = ContextVar("run_reads_shared", default=None)


@contextmanager
def run_reads_shared() -> Iterator[None]:
    """Inside the block each read of a run made through `run_read_shared` (its view, its protocol's page context)
    is made once: the widgets of one frame then show one state of the run, read with one set of queries (a frame
    of a debate on a KB read its view three times). Only for code that renders what it read and writes nothing:
    a write inside the block would not be seen by a later read. A block inside another shares the outer one's."""
    if _shared_reads.get() is not None:
        yield
        return
    token = _shared_reads.set({})
    try:
        yield
    finally:
        _shared_reads.reset(token)


def run_read_shared[T](run_id: int, what: str, read: Callable[[], T]) -> T:
    """`read()`, made once per run and `what` inside a `run_reads_shared` block; every call outside one reads."""
    shared = _shared_reads.get()
    if shared is None:
        return read()
    key = (run_id, what)
    if key not in shared:
        shared[key] = read()
    return shared[key]  # type: ignore[no-any-return]


def run_view_load(run: Run) -> RunView:
    """Everything persisted about the run, as a protocol plans from it (`run` as just read). Inside a
    `run_reads_shared` block it is read once, and not at all while the view the run's runner decided on in this
    process is current (engine.progress); outside one, always read (a decision plans from the database)."""
    if _shared_reads.get() is None:
        return _run_view_read(run)
    return run_read_shared(run.pk, "view", lambda: run_view_noted(run) or _run_view_read(run))


def _run_view_read(run: Run) -> RunView:
    protocol = registry.get(run.protocol)
    seats = {
        s.handle: SeatView(handle=s.handle, name=s.name, role=s.role, lens=s.lens, human=s.human)
        for s in run_seats(run)
    }
    turns = {
        t["key"]: TurnView(
            key=t["key"],
            seat=t["seat__handle"],
            stage=t["stage"],
            task=t["task"],
            status=t["status"],
            payload=t["payload"],
            error=t["error"],
            flags=tuple(t["flags"] or ()),
        )
        for t in run.turns.order_by("first_seq", "id").values(
            "key", "seat__handle", "stage", "task", "status", "payload", "error", "flags"
        )
    }
    submitted = (
        frozenset(
            HumanAction.objects.filter(run=run, kind=HumanActionKind.SUBMIT_TURN).values_list(
                "step_key", flat=True
            )
        )
        if any(seat.human for seat in seats.values())
        else frozenset()
    )
    return RunView(
        kb=kb_view_load(run) if run.kb_id else None,
        run_id=run.pk,
        topic=run.topic,
        material=run.material,
        seed=run.seed,
        config=protocol.config_model.model_validate(run.config),
        seats=seats,
        turns=turns,
        submitted_steps=submitted,
        cost_usd=run.cost_usd,
        estimate_usd=run.estimate_usd,
        consent=run.consent,
        state=run_state_last(run),
    )


def run_state_last(run: Run) -> str:
    """The protocol's own state as last recorded (Protocol.states); "" when it has none."""
    if not registry.get(run.protocol).has_states:  # it records none: nothing to read (a query per view)
        return ""
    payload = run.events.filter(kind="state").order_by("-seq").values_list("payload", flat=True).first()
    return str(payload.get("to", "")) if isinstance(payload, dict) else ""


def kb_view_load(run: Run) -> KbView:
    kb = (
        KnowledgeBase.objects.only("pk", "slug", "kind", "created_at")
        .annotate(revision=Max("revisions__pk"))  # its latest revision, in the same query
        .get(pk=run.kb_id or 0)
    )
    contents = _kb_contents(kb.pk, kb.created_at, kb.revision)
    arguments = (
        _arguments_as_rated(run.pk, run.created_at, kb.pk, kb.created_at, kb.revision)
        if run_snapshot_arguments(run) is not None
        else _arguments_rated(contents, {})
    )
    # Values, not model instances (a proposal with its turn and revision): a view is read with every frame.
    mutations = tuple(
        KbMutation(
            id=pk,
            turn_key=turn_key or "",
            proposed_by=proposed_by,
            kind=kind,
            payload=payload,
            status=status,
            revision=revision or "",
        )
        for pk, turn_key, proposed_by, kind, payload, status, revision in ProposedMutation.objects.filter(
            run=run
        )
        .order_by("pk")
        .values_list("pk", "turn__key", "proposed_by", "kind", "payload", "status", "revision__r_id")
    )
    data = _kb_data(kb.pk, kb.created_at) if kb.kind == kb.DATA else None
    return KbView(
        slug=kb.slug,
        arguments=arguments,
        edges=contents.edges,
        central_questions=contents.central_questions,
        sources=contents.sources,
        positions=contents.positions,
        mutations=mutations,
        data=data,
    )


@functools.lru_cache(maxsize=256)
def _arguments_as_rated(
    run_id: int, created_at: datetime, kb_id: int, kb_created_at: datetime, revision: int | None
) -> dict[str, KbArgument]:
    """The KB's arguments at a revision, each with the status the run's snapshot gave it: made once per process,
    run and revision (neither part ever changes), not per view (about a twentieth of a market panel's KB read).
    Shared by every view: read it, never change it."""
    return _arguments_rated(
        _kb_contents(kb_id, kb_created_at, revision), _snapshot_arguments(run_id, created_at)
    )


def _arguments_rated(contents: _KbContents, snapshot: Mapping[str, Any]) -> dict[str, KbArgument]:
    rated = {arg_id: data.get("status", "") for arg_id, data in snapshot.items()}
    return {
        arg_id: replace(argument, snapshot_status=rated.get(arg_id, argument.status))
        for arg_id, argument in contents.arguments.items()
    }


@functools.lru_cache(maxsize=16)
def _kb_data(kb_id: int, created_at: datetime) -> Any:
    """A data KB's tree, read once per process: it is written when the KB is imported and never changed (a new
    import makes a new KB), and reading it again for every view of a market panel was a twentieth of a worker's
    CPU. Every view shares it: read it, never change it."""
    return KnowledgeBase.objects.values_list("data", flat=True).get(pk=kb_id)


@dataclass(frozen=True)
class _KbContents:
    arguments: dict[str, KbArgument]  # snapshot_status: the live status (the run's snapshot is read per load)
    edges: tuple[tuple[str, str, str], ...]
    central_questions: tuple[tuple[int, str, tuple[str, ...]], ...]
    sources: frozenset[str]
    positions: tuple[str, ...]


@functools.lru_cache(maxsize=64)
def _kb_contents(kb_id: int, created_at: datetime, revision: int | None) -> _KbContents:
    """What a KB holds, read once per process and revision: a KB changes only by an applied mutation, which records
    a revision in the same transaction (kb.discipline), and an import makes a new KB. (The creation time too: a
    test database that rolls back hands out the same ids again.)"""
    kb = KnowledgeBase.objects.get(pk=kb_id)
    return _KbContents(
        arguments={
            a.arg_id: KbArgument(
                arg_id=a.arg_id,
                title=a.title,
                position=a.position,
                layer=a.layer,
                scope=a.scope,
                status=a.status,
                snapshot_status=a.status,
            )
            for a in kb.arguments.order_by("arg_id").only(
                "arg_id", "title", "position", "layer", "scope", "status"
            )
        },
        edges=tuple(kb.edges.order_by("order").values_list("src", "type", "target")),
        central_questions=tuple(
            (q.order, q.text, tuple(q.arg_ids)) for q in kb.central_questions.order_by("order")
        ),
        sources=frozenset(kb.sources.values_list("path", flat=True)),
        positions=tuple(kb_positions(kb)),
    )
