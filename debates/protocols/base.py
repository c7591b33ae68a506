"""The protocol contract. A protocol declares its config and seats and plans the next steps as a pure function
of what is persisted; the engine executes, commits and streams. The engine knows nothing protocol-specific."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel


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


@dataclass(frozen=True)
class Steps:
    steps: tuple[Step, ...]


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
class TurnView:
    key: str
    seat: str
    stage: str
    task: str
    status: str
    payload: Mapping[str, Any] | None
    error: str = ""

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
class Stage:
    id: str
    label: str


class Protocol(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    config_model: ClassVar[type[BaseModel]]
    stages: ClassVar[tuple[Stage, ...]]
    # Template holding this protocol's partials: one per task (turn body) and one per human form.
    template: ClassVar[str]

    @abstractmethod
    def seats(self, config: BaseModel) -> list[SeatSpec]: ...

    @abstractmethod
    def plan(self, view: RunView) -> Plan: ...

    def prepare(self, config: dict[str, Any], kb: Any) -> dict[str, Any]:
        """Before the run is created: refuse what this protocol cannot run on, fill in what comes from the KB."""
        return config

    def on_commit(self, step: Step, payload: Mapping[str, Any], *, run_id: int, turn_id: int) -> None:
        """The effects of a committed turn (proposed KB mutations, ...), in the transaction that commits it."""
        return None

    def validate(self, step: Step, payload: BaseModel, view: RunView) -> list[str]:
        """Rules the schema cannot express (counts that depend on other turns, quotes that must match)."""
        return []

    def human_payload(self, step: Step, data: Mapping[str, Any]) -> dict[str, Any]:
        """Turn a human seat's submitted form into the step's output payload (validated by the caller)."""
        raise NotImplementedError(f"{self.name} has no human form for {step.task}")

    def expected_turns(self, view: RunView) -> int:
        """Best estimate of the run's total number of turns, for the progress bar."""
        return len(view.turns)

    def current_stage(self, view: RunView, plan: Plan) -> str:
        if isinstance(plan, Steps) and plan.steps:
            return plan.steps[0].stage
        if isinstance(plan, Done):
            return "done"
        return ""
