"""The protocol contract. A protocol declares its config and seats and plans the next steps as a pure function
of what is persisted; the engine executes, commits and streams. The engine knows nothing protocol-specific."""

from __future__ import annotations

import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pydantic import BaseModel

from kb.services import kb_material_text

if TYPE_CHECKING:
    from debates.models import Run


@dataclass(frozen=True)
class SeatSpec:
    handle: str
    name: str
    role: str
    lens: str = ""
    human: bool = False


@dataclass(frozen=True)
class Step:
    """One turn to produce. `key` is stable across attempts and processes (e.g. r1/analysis/analyst-ada)."""

    key: str
    seat: str
    stage: str
    task: str
    schema: type[BaseModel]
    context: Mapping[str, Any] = field(default_factory=dict)
    # Key prefixes of the committed turns this step may read: () none, None all. Required, so every step says what
    # it may see: an independent round's turn never reads a sibling that happened to commit first (in step mode,
    # after a crash), whatever order its turns commit in.
    sees: tuple[str, ...] | None = field(kw_only=True)

    def may_see(self, key: str) -> bool:
        return self.sees is None or key.startswith(self.sees)


@dataclass(frozen=True)
class Steps:
    steps: tuple[Step, ...]
    # Standing notices the run page shows while these steps run (e.g. why the protocol stepped down a mode).
    notices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Wait:
    """Nothing can run until a human acts; `kind` names the action the page offers."""

    kind: str
    reason: str


@dataclass(frozen=True)
class Done:
    outcome: dict[str, Any]
    failed: bool = False
    reason: str = ""


Plan = Steps | Wait | Done


@dataclass(frozen=True)
class SeatView:
    handle: str
    name: str
    role: str
    lens: str
    human: bool


@dataclass(frozen=True)
class Flag:
    """Something in an accepted answer that no schema can check and code found wrong (a quote that is not the
    source's words, a figure that does not match the KB, a concession without a revised position): the turn is
    kept and the item is marked on the page, in the exports, to the seats that read it later (the judge) and in
    the integrity signals. `where` is the item's path in the payload ("concerns.2.quote"; "": the whole turn)."""

    kind: str
    where: str
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "detail": self.detail}


@dataclass(frozen=True)
class Accepted:
    """A step's answer as committed: the payload with what code knows filled in, and its flags."""

    payload: dict[str, Any]
    flags: tuple[Flag, ...] = ()


@dataclass(frozen=True)
class TurnView:
    key: str
    seat: str
    stage: str
    task: str
    status: str
    payload: Mapping[str, Any] | None
    error: str = ""
    flags: tuple[Mapping[str, str], ...] = ()

    @property
    def committed(self) -> bool:
        return self.status == "committed"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def finished(self) -> bool:
        return self.status in {"committed", "failed"}


@dataclass(frozen=True)
class KbArgument:
    arg_id: str
    title: str
    position: str
    layer: str
    scope: str
    status: str  # live: only ever moves down during a debate
    snapshot_status: str  # as rated when the run started


@dataclass(frozen=True)
class KbMutation:
    id: int
    turn_key: str
    proposed_by: str
    kind: str
    payload: Mapping[str, Any]
    status: str  # pending | applied | rejected | refused
    revision: str = ""


@dataclass(frozen=True)
class KbView:
    """The run's knowledge base as a plan sees it: arguments with live and snapshot ratings, edges, central
    questions, sources and the mutations proposed by this run."""

    slug: str
    arguments: Mapping[str, KbArgument]
    edges: tuple[tuple[str, str, str], ...]  # (src, type, target)
    central_questions: tuple[tuple[int, str, tuple[str, ...]], ...]  # (number, text, addressing arg ids)
    sources: frozenset[str]
    positions: tuple[str, ...]
    mutations: tuple[KbMutation, ...] = ()
    data: Mapping[str, Any] | None = None  # the JSON tree of a data KB (seed 004); None for an argument graph


@dataclass(frozen=True)
class RunView:
    """Everything a plan may depend on, read from the database in one go."""

    run_id: int
    topic: str
    material: str
    seed: int
    config: BaseModel
    seats: Mapping[str, SeatView]
    turns: Mapping[str, TurnView]
    submitted_steps: frozenset[str] = frozenset()
    kb: KbView | None = None
    # What the run has spent and what was estimated before it started (None: no estimate, e.g. simulated).
    cost_usd: Decimal = Decimal(0)
    estimate_usd: Decimal | None = None
    # The cost gate's answer ("", required, auto, approved, declined) and the protocol's own state as last
    # recorded by a `state` event ("" before any; see Protocol.states).
    consent: str = ""
    state: str = ""

    def turn(self, key: str) -> TurnView | None:
        return self.turns.get(key)

    def finished(self, key: str) -> bool:
        turn = self.turns.get(key)
        return turn is not None and turn.finished

    def payload(self, key: str) -> Mapping[str, Any] | None:
        turn = self.turns.get(key)
        return turn.payload if turn is not None and turn.committed else None

    def seats_with_role(self, role: str) -> list[SeatView]:
        return [seat for seat in self.seats.values() if seat.role == role]


@dataclass(frozen=True)
class Transition:
    """One change of a protocol's own state machine, recorded by the engine as a `state` event."""

    src: str
    dst: str
    reason: str = ""


@dataclass(frozen=True)
class Stage:
    id: str
    label: str


@dataclass(frozen=True)
class Panel:
    """A panel of the run page beyond the generic ones, rendered from `<protocol template>#panel-<id>` on page
    load, in the snapshot and after the events in `refresh_on`. `per_user` panels hold controls (rendered for
    each viewer with the moderator panel); the others are rendered once per event for every viewer."""

    id: str
    per_user: bool = False
    refresh_on: frozenset[str] = frozenset({"turn_committed", "mutation_decided"})


@dataclass(frozen=True)
class ExportFile:
    """One export of a run as one file: what `export_run` writes and the run page downloads."""

    filename: str
    content_type: str
    content: bytes


class ExportUnavailable(Exception):
    """This run has no export in this format; the message says why."""


@dataclass(frozen=True)
class ExportFormat:
    """An `export_run --format <name>` a protocol's runs offer beyond the generic `json` and `transcript`, with
    what builds it and how the run page offers it (a button `#export-<name>` among the exports, and one
    `#<name>-download` beside the outcome when `outcome_label` is set)."""

    name: str
    # The run as one file (a directory format: its zip); raises ExportUnavailable with the reason.
    build: Callable[[Run], ExportFile]
    # Why a run of a protocol without this format has none: formatted with the run's `pk` and `protocol`.
    refusal: str
    label: str
    url_name: str  # the download's URL name (it takes the run id)
    label_id: str = ""  # the id of a span around the label, where the page has one
    outcome_label: str = ""
    needs_kb: bool = False  # offered only when the run has a knowledge base
    needs_outcome: bool = False  # offered only once the run has an outcome
    # A directory format: written into the new or empty directory --out (unless it ends in .zip) by `write`,
    # which raises ExportUnavailable with the reason; `directory_note` ends the refusal of any other --out.
    write: Callable[[Run, Path], object] | None = None
    directory_note: str = ""

    def offered(self, run: Run) -> bool:
        return (not self.needs_kb or run.kb_id is not None) and (not self.needs_outcome or bool(run.outcome))


@dataclass(frozen=True)
class DemoStart:
    """The run a protocol's card on the home page starts with one click: simulated agents on demo values (the
    topic, the material or a bundled demo KB, the config and the simulated backend's options)."""

    topic: str
    config: Mapping[str, Any] = field(default_factory=dict)
    material: str = ""
    kb: str = ""  # the slug of a bundled demo KB (kb.demo.DEMO_KBS) the run debates over; "": none
    options: Mapping[str, Any] = field(default_factory=dict)  # the simulated backend's, beyond the pace


# A protocol's integrity signals of a finished run (debates.selectors.integrity): the per-seat rates, why there are
# none, and the rounds in which both sides only conceded (None: not applicable).
SeatSignals = tuple[list[dict[str, Any]], str, dict[str, Any] | None]


# The event a proposal of a KB change appends (Effects.mutation_propose): what shows proposals refreshes on it.
MUTATION_PROPOSED_EVENT = "mutation_proposed"


class Effects(typing.Protocol):
    """What a protocol may do to the world when one of its turns commits, handed in by the engine and applied in
    the committing transaction: a protocol imports neither the engine nor the KB discipline."""

    @property
    def run_id(self) -> int:
        """The run whose turn commits."""
        ...

    @property
    def run_config(self) -> Mapping[str, Any]:
        """The run's config as stored."""
        ...

    def event_append(self, kind: str, payload: dict[str, Any]) -> int:
        """Record an event of the run (published after commit)."""
        ...

    def mutation_propose(
        self,
        *,
        kind: str,
        payload: Mapping[str, Any],
        proposed_by: str,
        justification: str,
        auto_approve: bool,
    ) -> None:
        """Propose a change to the run's KB (through the discipline; an identical pending proposal of the run is
        not proposed twice), recorded as a MUTATION_PROPOSED_EVENT {mutation, kind, status}."""
        ...


class Protocol[ConfigT: BaseModel](ABC):
    """A protocol, generic over its config model (`class KbDebate(Protocol[KbDebateConfig])`)."""

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    config_model: ClassVar[type[BaseModel]]
    stages: ClassVar[tuple[Stage, ...]]
    # Template holding this protocol's partials: one per task (turn body) and one per human form.
    template: ClassVar[str]
    # Panels of the run page beyond the generic ones (DOM id `#<id>`).
    panels: ClassVar[tuple[Panel, ...]] = ()
    # The new-run form's section for this protocol: the dotted path of a debates.protocols.form.FormSection
    # subclass (in the package's form.py, which imports this module, hence a path); "": none.
    form: ClassVar[str] = ""
    # The protocol the new-run form starts on.
    form_default: ClassVar[bool] = False
    # The home page's card, in plain words: what the protocol is for and when to choose it, and the demo run its
    # "Start a demo" button starts (None: the card offers only the new-run form).
    purpose: ClassVar[str] = ""
    when_to_use: ClassVar[str] = ""
    demo: ClassVar[DemoStart | None] = None
    # `manage.py run_debate`: the config a headless run starts from (--config is merged over it).
    headless_config: ClassVar[Mapping[str, Any]] = {}
    # The exports this protocol's runs offer beyond `json` and `transcript`.
    export_formats: ClassVar[tuple[ExportFormat, ...]] = ()
    # The committed turns (by task) that `seat_signals` reads; only these are fetched.
    signal_tasks: ClassVar[tuple[str, ...]] = ()
    # What each task asks, in plain words, for the pages ("Ask the analysts questions"); the task key stays in
    # exports and data- attributes.
    task_labels: ClassVar[Mapping[str, str]] = {}

    def task_label(self, task: str) -> str:
        return self.task_labels.get(task) or task.replace("_", " ").replace("-", " ").capitalize()

    @abstractmethod
    def seats(self, config: ConfigT) -> list[SeatSpec]: ...

    @abstractmethod
    def plan(self, view: RunView) -> Plan: ...

    def view_config(self, view: RunView) -> ConfigT:
        """The run's config as this protocol's model (the engine loads it with `config_model`)."""
        config = view.config
        assert isinstance(config, self.config_model)
        return cast(ConfigT, config)

    def kb_material(self, kb: Any) -> str:
        """The run's material when a KB is given and no material was: by default the KB as text, which every
        seat's shared prompt carries. A protocol that slices its KB per seat returns a note instead."""

        return kb_material_text(kb)

    def prepare(self, config: dict[str, Any], kb: Any) -> dict[str, Any]:
        """Before the run is created: refuse what this protocol cannot run on, fill in what comes from the KB."""
        return config

    def on_commit(self, step: Step, payload: Mapping[str, Any], effects: Effects) -> None:
        """The effects of a committed turn (proposed KB mutations, ...), in the transaction that commits it."""
        return None

    def validate(self, step: Step, payload: BaseModel, view: RunView) -> list[str]:
        """What makes an answer unusable beyond its schema (asked to repair once, then the turn fails). Keep it
        for structure no schema can carry: what a step's schema can say (enums of what exists, one property per
        item) it should say, and what is merely doubtful is flagged by `accept` instead."""
        return []

    def repair_asks(self, step: Step, payload: BaseModel, view: RunView) -> list[str]:
        """A rule of the protocol's seed that no schema can count (market-panel: challenge at least half of the
        opponent's arguments): what a valid first answer is sent back once to reconsider. The second answer is
        committed whatever it says, `accept` flagging what still breaks the rule: asked, never refused."""
        return []

    def accept(self, step: Step, payload: BaseModel, view: RunView) -> Accepted:
        """A valid answer as it is committed: fill in what code knows (the seat's name, argument ids, the round,
        the text of a claim picked by id) and flag what no schema can check (Flag). Must not raise for any
        answer valid against the step's schema that `validate` passed."""
        return Accepted(payload.model_dump(mode="json"))

    def human_payload(self, step: Step, data: Mapping[str, Any]) -> dict[str, Any]:
        """Turn a human seat's submitted form into the step's output payload (validated by the caller)."""
        raise NotImplementedError(f"{self.name} has no human form for {step.task}")

    def expected_turns(self, view: RunView) -> int:
        """Best estimate of the run's total number of turns, for the progress bar."""
        return len(view.turns)

    # A protocol whose cost gate is part of its own flow (seed 001) estimates simulated runs too, at a nominal
    # price, so the gate can be shown without a key (the simulated run itself still costs nothing).
    estimates_simulated: ClassVar[bool] = False

    def consent_threshold(self, config: ConfigT) -> Decimal | None:
        """The estimated cost up to which a run starts without a moderator's consent; None: the
        CONSENT_THRESHOLD_USD setting."""
        return None

    def states(self, view: RunView, plan: Plan | None) -> list[Transition]:
        """A protocol with its own state machine (seed 001): the transitions, in order, that take it from
        `view.state` (the last recorded) to where the run now is. `plan` is None outside the runner (at creation,
        at the consent answer); a Done plan also stands for a cancel or a fatal failure. The engine records each
        as a `state` event {from, to, reason} in the same transaction. Default: no state machine."""
        return []

    @property
    def has_states(self) -> bool:
        """Whether the protocol has a state machine of its own (overrides `states`)."""
        return type(self).states is not Protocol.states

    def current_stage(self, view: RunView, plan: Plan) -> str:
        if isinstance(plan, Steps) and plan.steps:
            return plan.steps[0].stage
        if isinstance(plan, Done):
            return "done"
        return ""

    def page_context(self, run: Run) -> dict[str, Any] | None:
        """What this protocol's turn bodies and panels look up beyond a turn's own data (its `kb` in their
        context); None: nothing."""
        return None

    def export_json(self, run: Run) -> Mapping[str, Any]:
        """This protocol's part of the `json` export: its `ledger`, `revisions` and `proposed_mutations` (each
        absent: empty)."""
        return {}

    def transcript_sections(self, run: Run) -> list[str]:
        """The Markdown transcript's part in this protocol's own layout (its seed's output: a Q / A / assessment
        per question, a trace table, ...), as lines placed after the outcome, each section under a `## ` heading
        of its own. Untrusted text goes through `debates.platform.markdown.inline`. Default: none."""
        return []

    def seat_signals(
        self,
        outcome: Mapping[str, Any],
        config: Mapping[str, Any],
        names: Mapping[str, str],
        turns: Sequence[tuple[str, str, Any]],
    ) -> SeatSignals | None:
        """The integrity panel's per-seat rates and handshakes of a completed run, from its outcome, its config,
        its seats (handle -> name, in seat order) and its committed turns of the tasks in `signal_tasks` as
        (seat handle, task, payload). None: the protocol has no notion of conceding or defending."""
        return None

    def arithmetic_mismatches(self, outcome: Mapping[str, Any]) -> list[Any] | None:
        """The judge's figures that code recomputed and found different; None: no judge's figures."""
        mismatches = outcome.get("arithmetic_mismatches")
        return list(mismatches) if isinstance(mismatches, list) else None
