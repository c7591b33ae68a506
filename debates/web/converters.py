"""Database ids from URLs and query strings, bounded so they fit a signed 64-bit column: a longer number is no id
(404 or a form error), never an OverflowError from the database driver."""

from __future__ import annotations

import re

from django.urls import register_converter
from django.urls.converters import get_converters

MAX_ID = 2**63 - 1
_ID = re.compile(r"[0-9]{1,19}")


def parse_id(value: object) -> int | None:
    """A query-string or form id (surrounding spaces allowed); None when it is not one that could exist."""
    text = str(value).strip() if value is not None else ""
    if not _ID.fullmatch(text):
        return None
    number = int(text)
    return number if number <= MAX_ID else None


class IdConverter:
    """`<id:run_id>`: like `<int:...>`, but a number too large for the database is no match (404)."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = parse_id(value)
        if number is None:
            raise ValueError(f"{value!r} is not a database id")  # Django answers: no match
        return number

    def to_url(self, value: int | str) -> str:
        return str(value)


def register() -> None:
    """Register `id` once: debates/urls.py and the websocket routing both use it, and either may load first."""
    if "id" not in get_converters():
        register_converter(IdConverter, "id")
