"""Seed-004 JSON data KBs (the market-debate knowledge base): a JSON object keeping its tree; seats get slices
of it by dotted path (e.g. `indices`, `macro.CPI`, `sentiment.sector_breadth`)."""

from __future__ import annotations

import json
from typing import Any

from kb.formats.problems import Problem

KNOWN_SECTIONS = [
    "meta",
    "indices",
    "technicals",
    "sectors",
    "fundamentals",
    "macro",
    "sentiment",
    "global_markets",
]


def parse_json(text: str, name: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return None, [Problem(name, error.lineno, f"not valid JSON: {error.msg} (column {error.colno})")]
    if not isinstance(data, dict):
        return None, [Problem(name, 1, f"a data KB must be a JSON object, not a {type(data).__name__}")]
    problems = []
    if not isinstance(data.get("meta"), dict):
        problems.append(Problem(name, 1, "missing 'meta' object (generated_at, data_sources, warnings)"))
    if not any(key in data for key in KNOWN_SECTIONS[1:]) and len(data) < 2:
        problems.append(
            Problem(name, 1, f"no data sections: expected some of {', '.join(KNOWN_SECTIONS[1:])}")
        )
    return (None if problems else data), problems


def path_get(data: Any, path: str) -> Any:
    """The value at a dotted path; KeyError names the first missing part."""
    node = data
    walked = []
    for part in path.split("."):
        walked.append(part)
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(".".join(walked))
    return node


def slice_for(data: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """The sub-tree holding only `paths` (each kept at its place in the tree)."""
    result: dict[str, Any] = {}
    for path in paths:
        value = path_get(data, path)
        parts = path.split(".")
        node = result
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return result


def leaf_paths(data: Any, prefix: str = "") -> list[str]:
    if isinstance(data, dict):
        paths: list[str] = []
        for key, value in data.items():
            paths += leaf_paths(value, f"{prefix}.{key}" if prefix else str(key))
        return paths
    return [prefix]
