"""Prices per model (settings.DISPUTA_PRICES, USD per million tokens) and the cost of a call's usage."""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import ROUND_CEILING, Decimal
from typing import Any

from django.conf import settings

from debates.agents.usage import Usage

MILLION = Decimal(1_000_000)
CENT_FRACTION = Decimal("0.000001")  # costs are stored with 6 decimals


@dataclass(frozen=True)
class Price:
    input: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal
    output: Decimal


def _price(entry: dict[str, Any]) -> Price:
    return Price(
        input=Decimal(str(entry["input"])),
        cache_write_5m=Decimal(str(entry.get("cache_write_5m", entry["input"]))),
        cache_write_1h=Decimal(str(entry.get("cache_write_1h", entry["input"]))),
        cache_read=Decimal(str(entry.get("cache_read", entry["input"]))),
        output=Decimal(str(entry["output"])),
    )


def price_table() -> dict[str, Any]:
    return settings.DISPUTA_PRICES


def price_get(model: str, *, prompt_tokens: int = 0) -> Price | None:
    """The model's price, at its long-prompt tier when the prompt is above the tier's threshold; None when the
    table has no price for the model (local servers: the call is recorded at $0 and shown as unpriced)."""
    entry = price_table()["models"].get(model)
    if entry is None:
        return None
    over = entry.get("over")
    if over and prompt_tokens > int(over["tokens"]):
        return _price(over)
    return _price(entry)


def model_accepts_temperature(model: str) -> bool:
    """Whether a call may set a temperature: the price table's `temperature: false` marks models that refuse a
    non-default one; a model the table does not know (a local server) accepts it."""
    entry = price_table()["models"].get(model) or {}
    return entry.get("temperature", True) is not False


def usage_cost(model: str, usage: Usage, *, cache_write_1h_tokens: int = 0) -> Decimal:
    """Exact cost of one call: uncached input, 5-minute and 1-hour cache writes, cache reads and output
    (thinking is part of output_tokens and billed as output, so it is not added again)."""
    prompt = usage.input_tokens + usage.cache_write_tokens + usage.cache_read_tokens
    price = price_get(model, prompt_tokens=prompt)
    if price is None:
        return Decimal(0)
    write_5m = usage.cache_write_tokens - cache_write_1h_tokens
    total = (
        usage.input_tokens * price.input
        + write_5m * price.cache_write_5m
        + cache_write_1h_tokens * price.cache_write_1h
        + usage.cache_read_tokens * price.cache_read
        + usage.output_tokens * price.output
    ) / MILLION
    return total.quantize(CENT_FRACTION)


def usage_priced(model: str, usage: Usage, *, cache_write_1h_tokens: int = 0) -> Usage:
    cost = usage_cost(model, usage, cache_write_1h_tokens=cache_write_1h_tokens)
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        thinking_tokens=usage.thinking_tokens,
        cost_usd=cost,
    )


def tokens_estimate(text: str) -> int:
    """An upper-leaning token count without a network call: newer tokenizers give up to ~1.35x more tokens
    than the old 4-characters rule, so count 3 characters per token."""
    return len(text) // 3 + 1


def call_estimate(model: str, prompt_text: str, max_tokens: int) -> Usage:
    """The most a call can cost: the whole prompt at the dearer of the uncached and the (5-minute) cache-write
    rate, since a call may write its prefix, and `max_tokens` of output. Rounded up, never down."""
    prompt = tokens_estimate(prompt_text)
    usage = Usage(input_tokens=prompt, output_tokens=max_tokens)
    price = price_get(model, prompt_tokens=prompt)
    if price is None:
        return usage
    dearest = max(price.input, price.cache_write_5m)
    cost = (prompt * dearest + max_tokens * price.output) / MILLION
    return replace(usage, cost_usd=cost.quantize(CENT_FRACTION, rounding=ROUND_CEILING))
