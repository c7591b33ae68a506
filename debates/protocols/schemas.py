"""Building a step's schema from the run's state (issue 22): what a model can honour by construction.

A model held to a JSON schema (Anthropic's structured outputs, an OpenAI-compatible `json_schema` response format)
can still write anything the schema allows. So the contract goes into the schema where a schema can carry it:

- references to what exists (seats, claims, KB argument ids, source paths, criteria, data paths) are enums of the
  values that exist (`choice`);
- "one per X" is an object with one required property per X (`one_per`), not a list to be matched;
- what code knows (the seat's own name, its argument ids, the round, the text of a claim picked by id) is not asked
  at all: the protocol fills it in `Protocol.accept`.

Anthropic's decoder does not enforce `minLength`, `maxLength`, `minimum`, `maximum` or `maxItems` (the SDK moves
them into the description; reference/anchors-perf-reliability.md §1.4). The schema still states them, for the
models that honour them (`stated`), but validation does not depend on them: `accept` clamps a number into its
range and flags it, flags an empty text, keeps the first items of a list that is too long and flags the rest.
Enums, `required`, `additionalProperties: false`, `minItems` of 0 or 1 and types are enforced by both decoders.

Keep a parallel stage's seats on one schema (the same enums for all of them): the schema is part of the prompt
cache's key, so seats that share a schema share a cached prefix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from debates.contract import Flag

STRICT = ConfigDict(extra="forbid", populate_by_name=True)


def choice(values: Sequence[str | int]) -> Any:
    """The type of a reference to one of `values` (an enum in the JSON schema). At least one value: a protocol
    with nothing to refer to asks no such field."""
    distinct = tuple(dict.fromkeys(values))
    if not distinct:
        raise ValueError("a choice needs at least one value")
    return Literal[distinct]


def one_per(name: str, keys: Sequence[str], item: Any, *, description: str = "") -> type[BaseModel]:
    """An object with one required property per key, each of type `item`: "one per criterion" by construction.
    Properties are named by the keys themselves (field aliases), so read the answer with `by_alias`
    (`model_dump(by_alias=True)` or `per_key`)."""
    fields: dict[str, Any] = {
        f"k{index}": (item, Field(alias=key, description=description or None))
        for index, key in enumerate(keys)
    }
    return create_model(name, __config__=STRICT, **fields)


def per_key(model: BaseModel) -> dict[str, Any]:
    """A `one_per` answer as {key: value} (values that are models stay models)."""
    return {(info.alias or field): getattr(model, field) for field, info in type(model).model_fields.items()}


def stated(**constraints: Any) -> Any:
    """A constraint the schema states for models that honour it, which validation does not enforce (see the
    module docstring): `confidence: float = stated(minimum=0, maximum=1)`; `text: str = stated(minLength=1)`."""
    return Field(json_schema_extra=constraints)


def clamped(value: float, low: float, high: float, where: str, flags: list[Flag]) -> float:
    """`value` within [low, high]; a value outside is clamped and flagged."""
    if low <= value <= high:
        return value
    kept = min(max(value, low), high)
    flags.append(Flag("out_of_range", where, f"{value:g} is outside {low:g}–{high:g}; read as {kept:g}."))
    return kept


def said(text: str, where: str, flags: list[Flag], what: str = "text") -> str:
    """`text` stripped; an empty one is kept and flagged."""
    stripped = text.strip()
    if not stripped:
        flags.append(Flag("empty", where, f"The {what} is empty."))
    return stripped


def at_most[T](items: Sequence[T], limit: int, where: str, flags: list[Flag], what: str = "items") -> list[T]:
    """The first `limit` items; the rest are dropped and flagged."""
    if len(items) <= limit:
        return list(items)
    flags.append(
        Flag("too_many", where, f"{len(items)} {what} given, {limit} at most: the first {limit} kept.")
    )
    return list(items[:limit])
