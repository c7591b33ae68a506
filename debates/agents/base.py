"""The agent backend contract: `stream(request)` yields text deltas, then exactly one Result."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from debates.protocols.base import RunView, Step


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    thinking_tokens: int = 0
    cost_usd: Decimal = Decimal(0)


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class Result:
    text: str
    payload: Mapping[str, Any]
    usage: Usage = field(default_factory=Usage)
    model: str = ""


@dataclass(frozen=True)
class AgentRequest:
    step: Step
    view: RunView
    protocol: str
    options: Mapping[str, Any]
    attempt: int
    model: str = ""


class BackendError(Exception):
    """A failure the engine may retry (mid-stream error, overload). `cause` is shown to the user."""

    def __init__(self, cause: str, *, retryable: bool = True) -> None:
        super().__init__(cause)
        self.cause = cause
        self.retryable = retryable


class AgentBackend(Protocol):
    name: str
    label: str

    def stream(self, request: AgentRequest) -> AsyncIterator[Delta | Result]: ...


def backend_get(name: str) -> AgentBackend:
    from debates.agents.simulated import SimulatedBackend

    backends: dict[str, AgentBackend] = {"simulated": SimulatedBackend()}
    if name not in backends:
        raise BackendError(
            f"Backend {name!r} is not available in this installation. Use the simulated backend.",
            retryable=False,
        )
    return backends[name]


def backend_choices() -> list[dict[str, Any]]:
    """Backends for the new-run form, with the reason a backend cannot be chosen."""
    from django.conf import settings

    anthropic_reason = (
        "ANTHROPIC_API_KEY is not set in the server's environment."
        if not settings.ANTHROPIC_API_KEY_PRESENT
        else "The Anthropic backend is not installed in this release yet."
    )
    return [
        {"name": "simulated", "label": "Simulated agents (deterministic, free)", "disabled_reason": ""},
        {"name": "anthropic", "label": "Anthropic", "disabled_reason": anthropic_reason},
    ]
