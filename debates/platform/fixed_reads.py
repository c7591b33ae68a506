"""Model instances from a fixed statement, for the few reads made with every burst of every live debate.

The ORM builds and compiles a query each time it runs one: for a burst's events with their run (select_related,
a deferred column, an ordering) that was over a millisecond of a worker's CPU, several times the statement's own
cost, and the turns a burst shows as much again (py-spy, bench fanout). A fixed statement names the columns of
each model once per process; the values go through the converters the ORM applies (the backend's, then the
field's), and the instances are made by `Model.from_db`, as the ORM makes them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model

Converter = Callable[[Any, Any, Any], Any]


@functools.cache
def _attnames(model: type[Model], leave_out: frozenset[str]) -> tuple[str, ...]:
    return tuple(f.attname for f in model._meta.concrete_fields if f.attname not in leave_out)


def model_columns(model: type[Model], alias: str, leave_out: Sequence[str] = ()) -> str:
    """`alias."column", …` for the model's concrete fields but `leave_out` (attnames), in the order
    `model_from_row` reads them."""
    names = _attnames(model, frozenset(leave_out))
    return ", ".join(f'{alias}."{model._meta.get_field(n).column}"' for n in names)  # type: ignore[union-attr]


def _converters(model: type[Model], leave_out: frozenset[str]) -> list[tuple[int, Any, list[Converter]]]:
    """The columns that have converters on this thread's connection: (index, the column as the ORM selects it,
    its converters). Kept on the connection's wrapper (one per thread, for the thread's life): the backend's
    converters are bound to it."""
    connection = connections[DEFAULT_DB_ALIAS]
    cache: dict[tuple[type[Model], frozenset[str]], Any] = connection.__dict__.setdefault("_fixed_reads", {})
    key = (model, leave_out)
    if key not in cache:
        found = []
        for index, name in enumerate(_attnames(model, leave_out)):
            column = model._meta.get_field(name).get_col(model._meta.db_table)  # type: ignore[union-attr]
            converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
            if converters:
                found.append((index, column, converters))
        cache[key] = found
    return cache[key]  # type: ignore[no-any-return]


def model_from_row(model: type[Model], row: Sequence[Any], leave_out: Sequence[str] = ()) -> Model | None:
    """The instance from its columns' values, as `model_columns` named them; None when the row holds none (a
    LEFT JOIN that found none: its primary key is NULL)."""
    connection = connections[DEFAULT_DB_ALIAS]
    left_out = frozenset(leave_out)
    names = _attnames(model, left_out)
    values = list(row)
    if len(values) != len(names):
        raise ValueError(f"{model.__name__}: {len(values)} values for {len(names)} columns")
    for index, column, converters in _converters(model, left_out):
        for convert in converters:
            values[index] = convert(values[index], column, connection)
    if values[names.index(model._meta.pk.attname)] is None:
        return None
    return model.from_db(connection.alias, list(names), values)


def placeholders(count: int) -> str:
    """`%s, %s, …`: the parameters of an IN list of `count` values."""
    return ", ".join(["%s"] * count)


def statement_rows(statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows of a fixed statement, on this thread's connection."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(statement, params)
        return list(cursor.fetchall())


def columns_count(model: type[Model], leave_out: Sequence[str] = ()) -> int:
    return len(_attnames(model, frozenset(leave_out)))


def related_cache(instance: Model, field_name: str, related: Model | None) -> None:
    """Set a foreign key's object on an instance, as select_related does: reading it makes no query."""
    instance._meta.get_field(field_name).set_cached_value(instance, related)  # type: ignore[union-attr]
