"""Markdown helpers of the exports: model and user text written as inert Markdown (one line that cannot open a
heading, a list, a quote or a comment of its own), table cells and bullet lists of such lines."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Any

from django.utils.text import slugify

# What opens a block when it starts a line: a heading, a quote, a rule, a comment, a list item, a setext underline.
BLOCK_START = re.compile(r"^(#|>|---|<!--|[-*+] |\d+[.)] |=)")
# The same, and a code fence or a table row (a transcript's values sit among both).
BLOCK_OR_FENCE_START = re.compile(r"^(#|>|---|<!--|[-*+] |\d+[.)] |=|`{3}|~{3}|\|)")


def one_line(value: Any) -> str:
    """The text with its whitespace (newlines included) collapsed to single spaces."""
    return " ".join(str(value).split())


def md_line(value: Any) -> str:
    """Model or user text as one inert line: newlines collapsed (so it cannot open a heading or a list of its
    own), a leading block marker escaped, and no `-->` to close a comment early. None is "—"."""
    text = one_line(value if value is not None else "—").replace("-->", "--\\>")
    return "\\" + text if BLOCK_START.match(text) else text


def inline(value: Any) -> str:
    """Any value as one inert line: whitespace collapsed, a leading block, fence or table marker escaped; a
    boolean is yes / no and None is "—"."""
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif value is None:
        text = "—"
    else:
        text = one_line(value)
    return "\\" + text if BLOCK_OR_FENCE_START.match(text) else text


def table_cell(value: Any) -> str:
    """md_line for a table cell: its pipes escaped."""
    return md_line(value).replace("|", "\\|")


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A Markdown table: the header as given, every cell through table_cell."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(table_cell(c) for c in row) + " |" for row in rows]


def bullets(items: Sequence[Any], empty: str = "None.") -> list[str]:
    """One `- item` line per item (md_line), or `- <empty>` when there is none."""
    return [f"- {md_line(i)}" for i in items] or [f"- {empty}"]


def yaml_str(value: Any) -> str:
    """A double-quoted YAML scalar (frontmatter)."""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def dated_filename(day: date, kind: str, title: str, fallback: Any) -> str:
    """A seed artifact's file name: `YYYY-MM-DD-<kind>-<slug of the title, about 40 characters>.md` (the fallback
    where the title has no slug)."""
    return f"{day.isoformat()}-{kind}-{slugify(title)[:40].strip('-') or fallback}.md"
