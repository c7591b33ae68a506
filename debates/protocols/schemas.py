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

import hashlib
import re
from collections.abc import Mapping, Sequence
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


PROPERTY_KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")


def property_key(key: str, taken: set[str]) -> str:
    """`key` as a property name Anthropic accepts (^[a-zA-Z0-9_.-]{1,64}$: a criterion named "Team familiarity"
    would be refused with a 400), unique among `taken`."""
    safe = key if PROPERTY_KEY.match(key) else re.sub(r"[^a-zA-Z0-9_.-]+", "_", key).strip("_") or "item"
    if len(safe) > 64:
        safe = f"{safe[:55]}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
    unique, n = safe, 2
    while unique in taken:
        unique = f"{safe[: 64 - len(str(n)) - 1]}_{n}"
        n += 1
    taken.add(unique)
    return unique


def property_names(keys: Sequence[str]) -> dict[str, str]:
    """{key: its property name} as `one_per` names them (the same keys in the same order give the same names):
    how a simulated agent writes an answer keyed by criteria."""
    taken: set[str] = set()
    return {key: property_key(key, taken) for key in keys}


def one_per(name: str, keys: Sequence[str], item: Any, *, description: str = "") -> type[BaseModel]:
    """An object with one required property per key, each of type `item`: "one per criterion" by construction.
    A property is named by its key where the key is a valid property name, else by a safe form of it
    (`property_key`) titled with the key; read the answer with `per_key`, which gives the keys back."""
    names = property_names(keys)
    fields: dict[str, Any] = {
        f"k{index}": (item, Field(alias=names[key], title=key, description=description or None))
        for index, key in enumerate(names)
    }
    return create_model(name, __config__=STRICT, **fields)


def per_key(model: BaseModel) -> dict[str, Any]:
    """A `one_per` answer as {key: value}, by the original keys (values that are models stay models)."""
    return {
        (info.title or info.alias or field): getattr(model, field)
        for field, info in type(model).model_fields.items()
    }


def by_property(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """{key: value} by original keys (what `per_key` gives) as the properties of the `one_per` model: how a
    simulated agent or a human form writes an answer the model's schema accepts."""
    names = {
        (info.title or info.alias or field): (info.alias or field)
        for field, info in model.model_fields.items()
    }
    return {names.get(key, key): value for key, value in values.items()}


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


def flags_at(flags: Any, where: str, *, inside: bool = True) -> list[Mapping[str, Any]]:
    """A turn's stored flags (Turn.flags, as a body template receives them) on the item at the payload path
    `where` ("arguments.0"), or also inside it ("arguments.0.claim") when `inside`: what the turn bodies mark."""
    if isinstance(flags, str) or not isinstance(flags, Sequence):  # a body rendered without its flags
        return []
    return [
        flag
        for flag in flags
        if isinstance(flag, Mapping)
        and (
            str(flag.get("where", "")) == where
            or (inside and str(flag.get("where", "")).startswith(f"{where}."))
        )
    ]


def at_most[T](items: Sequence[T], limit: int, where: str, flags: list[Flag], what: str = "items") -> list[T]:
    """The first `limit` items; the rest are dropped and flagged."""
    if len(items) <= limit:
        return list(items)
    flags.append(
        Flag("too_many", where, f"{len(items)} {what} given, {limit} at most: the first {limit} kept.")
    )
    return list(items[:limit])
