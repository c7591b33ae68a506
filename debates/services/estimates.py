"""The cost estimate shown before a paid run starts (and gated by consent above a threshold).

An estimate, not a quote: the number of calls comes from the protocol, each call reads the shared prompt plus
the transcript so far, and writes about ESTIMATE_OUTPUT_TOKENS. It assumes no cache hits, so with prompt caching
the real cost is usually lower; the run's budget is what caps it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from debates.agents.pricing import price_get, price_table, tokens_estimate, usage_cost
from debates.agents.prompts import SHARED_RULES
from debates.agents.usage import Usage
from debates.contract import RunView
from debates.engine import registry
from debates.engine.view import run_view_load
from debates.models import Run

ESTIMATE_OUTPUT_TOKENS = 1200
PROMPT_OVERHEAD_TOKENS = 1000  # rules, persona, task and context around the material


def run_estimate(run: Run, view: RunView | None = None) -> dict[str, Any] | None:
    """None for backends that cost nothing (simulated) or models without a price (local servers). A protocol
    that `estimates_simulated` gets a nominal estimate for a simulated run, priced as the first model of the
    price table, so its consent gate can be shown without a key. `view`: the run's view, if the caller has it."""
    nominal = ""
    if run.backend == "simulated":
        if not registry.get(run.protocol).estimates_simulated or not price_table()["models"]:
            return None
        nominal = next(iter(price_table()["models"]))
    models = sorted({seat.model for seat in run.seats.all() if not seat.human})
    priced = [nominal] if nominal else [model for model in models if price_get(model) is not None]
    if not priced:
        return None
    view = view if view is not None else run_view_load(run)
    calls = max(registry.get(run.protocol).expected_turns(view), len(view.seats))
    prefix = tokens_estimate(SHARED_RULES + run.topic + run.material) + PROMPT_OVERHEAD_TOKENS
    input_tokens = calls * prefix + ESTIMATE_OUTPUT_TOKENS * calls * (calls - 1) // 2
    output_tokens = calls * ESTIMATE_OUTPUT_TOKENS
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    # Seats may use different models: price every call at the dearest, so the estimate errs high.
    cost = max(usage_cost(model, usage) for model in priced)
    return {
        "calls": calls,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost_usd": str(cost.quantize(Decimal("0.0001"))),
        "models": models,
        "unpriced_models": [] if nominal else [model for model in models if model not in priced],
        "assumes": f"no cache hits and about {ESTIMATE_OUTPUT_TOKENS:,} output tokens per call"
        + (f"; nominal: priced as {nominal}, the simulated agents cost nothing" if nominal else ""),
        **({"nominal_model": nominal} if nominal else {}),
    }
