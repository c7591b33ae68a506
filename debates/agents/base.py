"""The agent backend contract: `stream(request)` yields text deltas, then exactly one Result.

A backend also estimates the most a call can cost (`estimate`, checked against the run's budget before every
call) and may warm a prompt cache shared by the parallel calls of a stage (`warm`)."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from debates.agents.catalog import (
    anthropic_models,
    anthropic_unavailable_reason,
    openai_models,
    openai_unavailable_reason,
)
from debates.agents.prompts import Prompt, prompt_render
from debates.agents.usage import Usage
from debates.contract import RunView, Step


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
class Repair:
    """The previous output of this turn was invalid: show it and the errors, ask once for a corrected answer."""

    text: str
    errors: tuple[str, ...]


@dataclass(frozen=True)
class AgentRequest:
    step: Step
    view: RunView
    protocol: str
    options: Mapping[str, Any]
    attempt: int
    model: str = ""
    role: str = ""
    max_tokens: int = 4096
    effort: str = ""
    # Sent only where the model accepts one (pricing.model_accepts_temperature); None: the model's default.
    temperature: float | None = None
    repair: Repair | None = None
    # A call's prompt is rendered once: its estimate, its cache warm-up and the call itself each need it.
    _prompts: dict[bool, Prompt] = field(default_factory=dict, init=False, repr=False, compare=False)

    def prompt(self, *, schema_in_text: bool = False) -> Prompt:
        """The call's prompt (debates.agents.prompts.prompt_render), rendered on first use."""
        if schema_in_text not in self._prompts:
            self._prompts[schema_in_text] = prompt_render(
                protocol=self.protocol, step=self.step, view=self.view, schema_in_text=schema_in_text
            )
        return self._prompts[schema_in_text]

    def again(self, *, attempt: int, repair: Repair | None) -> AgentRequest:
        """The same call made again (a retry, a repair): its prompt is the same, so it is not rendered again."""
        request = replace(self, attempt=attempt, repair=repair)
        request._prompts.update(self._prompts)
        return request


class BackendError(Exception):
    """A failed call. `cause` is shown to the user: it names what went wrong and what to do.

    `retryable`: the engine may run the turn again (mid-stream error, overload, rate limit).
    `fatal`: no turn of this run can succeed (bad key, unknown model): the run fails at once with the cause.
    `usage`: what the failed call consumed before it failed (billed, so it is recorded)."""

    def __init__(
        self,
        cause: str,
        *,
        retryable: bool = True,
        fatal: bool = False,
        kind: str = "error",
        usage: Usage | None = None,
    ) -> None:
        super().__init__(cause)
        self.cause = cause
        self.retryable = retryable
        self.fatal = fatal
        self.kind = kind
        self.usage = usage or Usage()


class InvalidOutput(BackendError):
    """The model answered, but not with valid output for the step: repaired once, then the turn fails."""

    def __init__(self, text: str, errors: Sequence[str], *, usage: Usage | None = None) -> None:
        shown = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
        super().__init__(f"Invalid output: {shown}", retryable=False, kind="invalid_output", usage=usage)
        self.text = text
        self.errors = tuple(errors)


class AgentBackend(Protocol):
    name: str
    label: str

    def stream(self, request: AgentRequest) -> AsyncIterator[Delta | Result]: ...

    def estimate(self, request: AgentRequest) -> Usage:
        """The most this call can cost (prompt at the uncached price, `max_tokens` of output)."""
        ...

    async def warm(self, requests: Sequence[AgentRequest]) -> Usage:
        """Before the parallel calls of a stage: write their shared prompt prefix to the cache once."""
        ...


BACKENDS = {
    "simulated": ("debates.agents.simulated", "SimulatedBackend"),
    "anthropic": ("debates.agents.anthropic_api", "AnthropicBackend"),
    "openai": ("debates.agents.openai_compat", "OpenAICompatibleBackend"),
}


def backend_get(name: str) -> AgentBackend:
    """The backend, imported on first use: only the SDK a run calls is loaded (each takes about a second)."""
    if name not in BACKENDS:
        raise BackendError(
            f"Backend {name!r} is not available in this installation. Choose simulated, anthropic or openai.",
            retryable=False,
            fatal=True,
        )
    if name not in _instances:
        module, cls = BACKENDS[name]
        _instances[name] = getattr(importlib.import_module(module), cls)()
    return _instances[name]


_instances: dict[str, AgentBackend] = {}


def backend_choices() -> list[dict[str, Any]]:
    """Backends for the new-run form: their models, and the reason a backend cannot be chosen."""
    return [
        {
            "name": "simulated",
            "label": "Simulated agents (deterministic, free)",
            "models": [("simulated", "simulated")],
            "disabled_reason": "",
        },
        {
            "name": "anthropic",
            "label": "Anthropic",
            "models": anthropic_models(),
            "disabled_reason": anthropic_unavailable_reason(),
        },
        {
            "name": "openai",
            "label": "OpenAI-compatible (OpenAI, Ollama, vLLM, llama.cpp)",
            "models": openai_models(),
            "disabled_reason": openai_unavailable_reason(),
        },
    ]


def default_model(backend: str) -> str:
    """The model a run uses when none is named: the first the backend offers."""
    choice = next((b for b in backend_choices() if b["name"] == backend), None)
    return choice["models"][0][0] if choice and choice["models"] else ""
