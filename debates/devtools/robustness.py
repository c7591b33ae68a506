"""One protocol run against a model that honours the JSON schema and nothing else (the fake LLM server's
schema-only mode), through a real backend's SDK: what `bench robustness` tabulates and the schema-only tests
assert (issue 22: every protocol completes, no failed turn, no step down, repairs and flags counted)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.test.utils import override_settings

from debates.devtools.fake_llm import FakeLLMServer, Mode
from debates.engine.runner import RECONSIDER_REASON, run_execute
from debates.models import RunEvent
from debates.platform.conf import conf
from debates.services.demos import run_headless_demo_create

ROBUSTNESS_BACKENDS = ("anthropic", "openai")
ROBUSTNESS_RUN_SECONDS = 120.0  # a run that takes longer is reported as stuck
REPAIR_REASON = "Asked the model to repair it."  # an invalid answer (runner._run_step)
TARGET_REPAIR_SHARE = 0.05


@contextlib.contextmanager
def backend_at(backend: str, server: FakeLLMServer) -> Iterator[None]:
    """The backend pointed at the fake server, as tests/conftest.py's anthropic_api / openai_api fixtures do: a key
    only in the environment (never a real one), the OpenAI base URL and model in the settings, fast retries."""
    names = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY")
    saved = {name: os.environ.get(name) for name in names}
    overrides: dict[str, Any] = {"RETRY_BACKOFF_SECONDS": 0.01, "FLUSH_SECONDS": 0.02}
    if backend == "anthropic":
        os.environ["ANTHROPIC_API_KEY"] = "bench-fake-key"
        os.environ["ANTHROPIC_BASE_URL"] = server.url
    else:
        os.environ["OPENAI_API_KEY"] = "bench-fake-key"
        overrides |= {"OPENAI_BASE_URL": server.openai_url, "OPENAI_MODELS": ["local-model"]}
    try:
        with override_settings(DISPUTA={**settings.DISPUTA, **overrides}):
            assert conf("RETRY_BACKOFF_SECONDS") == 0.01
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def measure_robustness(*, protocol: str, backend: str, mode: Mode, seed: int) -> dict[str, Any]:
    """One run of `protocol` (its headless demo) on `backend` against a fresh fake server in `mode`: its final
    status, turns, failed turns, repair calls, flagged items, steps down the fallback chain and calls made."""
    with FakeLLMServer(mode=mode, seed=seed) as server, backend_at(backend, server):
        run = run_headless_demo_create(
            protocol=protocol, backend=backend, model="local-model" if backend == "openai" else "", seed=seed
        )
        started = time.monotonic()
        try:
            outcome = asyncio.run(asyncio.wait_for(run_execute(run.pk), ROBUSTNESS_RUN_SECONDS)).value
        except TimeoutError:
            outcome = f"stuck after {ROBUSTNESS_RUN_SECONDS:.0f}s"
        wall = time.monotonic() - started
        requests = list(server.requests)
    run.refresh_from_db()
    turns = list(run.turns.all())
    restarts = RunEvent.objects.filter(run=run, kind="turn_restarted").values_list("payload", flat=True)
    degradations = (run.outcome or {}).get("degradations") if isinstance(run.outcome, dict) else None
    return {
        "run_id": run.pk,
        "protocol": protocol,
        "outcome": outcome,
        "status": run.status,
        "reason": run.status_reason,
        "turns": len(turns),
        "failed": sum(1 for t in turns if t.status == "failed"),
        "failed_keys": [(t.key, t.error) for t in turns if t.status == "failed"],
        "repairs": sum(1 for p in restarts if REPAIR_REASON in str(p.get("reason", ""))),
        "reconsiders": sum(1 for p in restarts if RECONSIDER_REASON in str(p.get("reason", ""))),
        "repair_reasons": [
            str(p.get("reason", ""))
            for p in restarts
            if REPAIR_REASON in str(p.get("reason", "")) or RECONSIDER_REASON in str(p.get("reason", ""))
        ],
        "flags": sum(len(t.flags or []) for t in turns),
        "step_downs": len(degradations) if isinstance(degradations, list) else 0,
        "calls": len(requests),
        "warmups": sum(1 for r in requests if r.body.get("max_tokens") == 0),
        # The calls that asked for an answer (not the cache warm-ups): what `measure_obeying` counts too.
        "answer_calls": sum(1 for r in requests if r.body.get("max_tokens") != 0),
        "wall": wall,
    }


def measure_obeying(*, protocol: str, seed: int) -> dict[str, Any]:
    """The same headless demo answered by the protocol's own simulated agents, a model that obeys everything the
    prompt asks (the fake server's simulated mode cannot stand in: it sees the prompt, not the run's KB and
    seats): its status and the answer calls it took (every attempt of an agent's turn)."""
    run = run_headless_demo_create(protocol=protocol, backend="simulated", model="", seed=seed)
    asyncio.run(asyncio.wait_for(run_execute(run.pk), ROBUSTNESS_RUN_SECONDS))
    run.refresh_from_db()
    turns = list(run.turns.filter(human=False))
    return {"status": run.status, "answer_calls": sum(t.attempt for t in turns), "turns": len(turns)}
