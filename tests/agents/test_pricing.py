"""Prices and the cost of a call. Every expected figure is worked out by hand from the list prices (USD per
million tokens) written below, independently of the settings' table."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from debates.agents.pricing import call_estimate, price_get, price_table, tokens_estimate, usage_cost
from debates.agents.usage import Usage
from tests.conftest import LONG_MATERIAL

SONNET, OPUS, HAIKU = "claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5"
MILLION = 1_000_000


class UsageCostTests:
    @pytest.mark.parametrize(
        ("usage", "write_1h", "dollars"),
        [
            pytest.param(Usage(input_tokens=MILLION), 0, "2", id="input"),
            pytest.param(Usage(cache_write_tokens=MILLION), 0, "2.50", id="5m-cache-write"),
            pytest.param(Usage(cache_write_tokens=MILLION), MILLION, "4", id="1h-cache-write"),
            pytest.param(Usage(cache_read_tokens=MILLION), 0, "0.10", id="cache-read"),
            pytest.param(Usage(output_tokens=MILLION), 0, "10", id="output"),
        ],
    )
    def test_a_million_tokens_of_each_kind_cost_sonnets_list_price(
        self, usage: Usage, write_1h: int, dollars: str
    ):
        assert usage_cost(SONNET, usage, cache_write_1h_tokens=write_1h) == Decimal(dollars)

    def test_sonnet_prices_every_kind_of_token_in_one_call(self):
        usage = Usage(input_tokens=1234, cache_write_tokens=2500, cache_read_tokens=15_000, output_tokens=777)
        # 1234 x 2 + 1800 x 2.50 (5m writes) + 700 x 4 (1h writes) + 15000 x 0.10 + 777 x 10
        # = 2468 + 4500 + 2800 + 1500 + 7770 = 19038 millionths of a dollar
        assert usage_cost(SONNET, usage, cache_write_1h_tokens=700) == Decimal("0.019038")

    def test_opus_prices_every_kind_of_token_and_keeps_six_decimals(self):
        usage = Usage(input_tokens=333, cache_write_tokens=1111, cache_read_tokens=4321, output_tokens=1)
        # 333 x 4 + 1000 x 5 (5m writes) + 111 x 8 (1h writes) + 4321 x 0.20 + 1 x 20
        # = 1332 + 5000 + 888 + 864.2 + 20 = 8104.2 millionths: $0.0081042, stored as $0.008104
        assert usage_cost(OPUS, usage, cache_write_1h_tokens=111) == Decimal("0.008104")

    def test_cache_writes_are_5_minute_unless_said_otherwise(self):
        usage = Usage(cache_write_tokens=10_000)
        assert usage_cost(OPUS, usage) == Decimal("0.050000")  # 10000 x 5
        assert usage_cost(OPUS, usage, cache_write_1h_tokens=10_000) == Decimal("0.080000")  # 10000 x 8

    def test_thinking_is_billed_once_as_part_of_the_output(self):
        with_thinking = Usage(input_tokens=100, output_tokens=1000, thinking_tokens=800)
        # 100 x 2 + 1000 x 10 = 10200 millionths: the 800 thinking tokens are among the 1000 output tokens
        assert usage_cost(SONNET, with_thinking) == Decimal("0.010200")
        assert usage_cost(SONNET, with_thinking) == usage_cost(
            SONNET, Usage(input_tokens=100, output_tokens=1000)
        )


class LongPromptTierTests:
    def test_haiku_at_exactly_100000_prompt_tokens_is_at_the_base_price(self):
        usage = Usage(
            input_tokens=40_000, cache_write_tokens=30_000, cache_read_tokens=30_000, output_tokens=1000
        )
        # 40000 x 0.10 + 30000 x 0.125 + 30000 x 0.01 + 1000 x 0.50 = 4000 + 3750 + 300 + 500 = 8550
        assert usage_cost(HAIKU, usage) == Decimal("0.008550")

    def test_haiku_above_100000_prompt_tokens_prices_the_whole_call_at_the_long_tier(self):
        usage = Usage(
            input_tokens=40_002, cache_write_tokens=30_000, cache_read_tokens=30_000, output_tokens=1000
        )
        # 40002 x 0.50 + 30000 x 0.625 + 30000 x 0.05 + 1000 x 2.50 = 20001 + 18750 + 1500 + 2500 = 42751
        assert usage_cost(HAIKU, usage) == Decimal("0.042751")

    def test_cache_reads_count_towards_the_prompt_length(self):
        at = Usage(input_tokens=10_000, cache_read_tokens=90_000)
        over = Usage(input_tokens=10_000, cache_read_tokens=90_001)
        assert usage_cost(HAIKU, at) == Decimal("0.001900")  # 10000 x 0.10 + 90000 x 0.01
        assert usage_cost(HAIKU, over) == Decimal("0.009500")  # 10000 x 0.50 + 90001 x 0.05 = 9500.05

    def test_1h_cache_writes_have_a_long_tier_price_too(self):
        usage = Usage(input_tokens=2, cache_write_tokens=100_000)
        # 2 x 0.50 + 100000 x 1.00 = 100001 millionths (at the base price it would be 20000.2)
        assert usage_cost(HAIKU, usage, cache_write_1h_tokens=100_000) == Decimal("0.100001")

    def test_price_get_picks_the_tier_by_prompt_length(self):
        base, over = price_get(HAIKU, prompt_tokens=100_000), price_get(HAIKU, prompt_tokens=100_001)
        assert base is not None and over is not None
        assert (base.input, base.output) == (Decimal("0.10"), Decimal("0.50"))
        assert (over.input, over.output) == (Decimal("0.50"), Decimal("2.50"))
        assert price_get(SONNET, prompt_tokens=10 * MILLION) == price_get(SONNET)  # Sonnet has no tier


class UnpricedModelTests:
    def test_an_unknown_model_has_no_price_and_costs_nothing(self):
        usage = Usage(input_tokens=MILLION, cache_read_tokens=MILLION, output_tokens=MILLION)
        assert price_get("local-model") is None
        assert usage_cost("local-model", usage) == Decimal(0)

    def test_its_estimate_counts_tokens_at_no_cost(self):
        estimate = call_estimate("local-model", LONG_MATERIAL, 4096)
        assert estimate.cost_usd == 0
        assert (estimate.input_tokens, estimate.output_tokens) == (tokens_estimate(LONG_MATERIAL), 4096)


# Prompt lengths around Haiku's long-prompt tier: real (4 characters a token) below and estimated above it,
# and both above it.
TEXTS = {
    "short": "Should the city charge cars entering the centre?",
    "material": LONG_MATERIAL,
    "near-tier": "x" * 360_000,  # 90,000 tokens at 4 characters a token; estimated above 100,000
    "over-tier": "x" * 450_000,
}


class CallEstimateTests:
    @pytest.mark.parametrize("model", [SONNET, OPUS, HAIKU])
    @pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
    def test_the_estimate_bounds_the_cost_of_a_call_with_that_prompt(self, model: str, text: str):
        max_tokens = 4096
        estimate = call_estimate(model, text, max_tokens)
        real = Usage(input_tokens=len(text) // 4, output_tokens=max_tokens)
        assert estimate.cost_usd >= usage_cost(model, real) > 0
        assert estimate.total_tokens >= real.total_tokens

    @pytest.mark.parametrize("model", [SONNET, OPUS, HAIKU])
    @pytest.mark.parametrize("cached", [0.0, 0.5, 1.0])
    def test_cache_reads_only_lower_the_cost(self, model: str, cached: float):
        text, max_tokens = LONG_MATERIAL, 6144
        prompt = tokens_estimate(text)  # as many prompt tokens as the estimate counts
        read = int(prompt * cached)
        real = Usage(input_tokens=prompt - read, cache_read_tokens=read, output_tokens=max_tokens)
        assert call_estimate(model, text, max_tokens).cost_usd >= usage_cost(model, real)

    def test_fewer_output_tokens_cost_less_than_estimated(self):
        estimate = call_estimate(SONNET, LONG_MATERIAL, 4096)
        real = Usage(input_tokens=len(LONG_MATERIAL) // 4, output_tokens=1200)
        assert estimate.cost_usd - usage_cost(SONNET, real) >= (4096 - 1200) * Decimal(10) / MILLION

    @pytest.mark.parametrize("model", [SONNET, OPUS])
    def test_a_call_that_writes_its_prompt_to_the_cache_is_bounded_too(self, model: str):
        text, max_tokens = LONG_MATERIAL, 4096
        prompt = len(text) // 3  # fewer tokens than the estimate counts (tokens_estimate: len // 3 + 1)
        real = Usage(cache_write_tokens=prompt, output_tokens=max_tokens)
        assert call_estimate(model, text, max_tokens).cost_usd >= usage_cost(model, real)


class PriceTableTests:
    def test_the_table_says_when_its_prices_were_read(self):
        assert isinstance(date.fromisoformat(price_table()["read_on"]), date)

    def test_every_model_has_an_input_and_an_output_price(self):
        for model, entry in price_table()["models"].items():
            price = price_get(model)
            assert price is not None, model
            assert price.input > 0 and price.output > 0, model
            assert Decimal(str(entry["input"])) == price.input
