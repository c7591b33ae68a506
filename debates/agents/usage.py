"""What a model call used: tokens by kind and their cost. Below the backends, the pricing and the catalog, which
all speak of it."""

from __future__ import annotations

from dataclasses import dataclass, fields
from decimal import Decimal


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    thinking_tokens: int = 0
    cost_usd: Decimal = Decimal(0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    @property
    def total_tokens(self) -> int:
        """Everything billed: prompt (uncached, cache writes, cache reads) and output (thinking included)."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens + self.output_tokens
