"""Seed-004 JSON data KBs (the market-debate knowledge base): a JSON object keeping its tree; seats get slices
of it by dotted path (e.g. `indices`, `macro.CPI`, `sentiment.sector_breadth`)."""

from __future__ import annotations

import codecs
import json
import math
import re
from itertools import accumulate
from typing import Any

from kb import limits
from kb.formats.problems import Problem, text_defect

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


# A JSON string (escapes included), and the tokens that open or close a level of nesting.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRINGS = re.compile(_STRING)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_BRACKET_TOKENS = re.compile(_STRING + r"|[\[\]{}]")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# \u0000, or a \uD800-\uDFFF escape that is not half of a surrogate pair.
_BAD_ESCAPE = re.compile(
    r"\\u0000|\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


class _Refused(Exception):
    """A literal JSON allows syntactically but a KB cannot hold (NaN, 1e999, a number of thousands of digits)."""

    def __init__(self, literal: str, message: str) -> None:
        super().__init__(message)
        self.literal = literal
        self.message = message


def _constant(literal: str) -> Any:
    raise _Refused(literal, f"{literal} is not a number JSON allows (the standard has no NaN or Infinity)")


def _number(literal: str, convert: Any) -> Any:
    if len(literal) > limits.MAX_NUMBER_CHARS:
        raise _Refused(
            literal,
            f"the number {literal[:20]}… is {len(literal)} characters long; "
            f"the limit is {limits.MAX_NUMBER_CHARS}",
        )
    value = convert(literal)
    if isinstance(value, float) and not math.isfinite(value):
        raise _Refused(literal, f"the number {literal} is too large: it overflows to infinity")
    return value


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, max(position, 0)) + 1


def _literal_line(text: str, literal: str) -> int:
    """The line of the first `literal` outside a string (a number or NaN the parser refused)."""
    token = re.compile(_STRING + r"|(?<![\w.+-])(" + re.escape(literal) + r")(?![\w.])")
    for match in token.finditer(text):
        if match.group(1):
            return _line_of(text, match.start(1))
    return 1


def _too_deep_at(text: str) -> int | None:
    """The offset of the first bracket nested deeper than limits.JSON_MAX_DEPTH, or None; without recursion."""
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    if max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0) <= limits.JSON_MAX_DEPTH:
        return None
    depth = 0
    for match in _BRACKET_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limits.JSON_MAX_DEPTH:
                return match.start()
        elif token in "]}":
            depth -= 1
    return 0


def _string_defect(data: Any) -> tuple[str, str] | None:
    """(dotted path, defect) of the first string (key or value) that cannot be stored, or None; iterative."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, node = stack.pop()
        items: Any = (
            node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        )
        for key, value in items:
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and (defect := text_defect(key)):
                return where, f"key {defect}"
            if isinstance(value, str) and (defect := text_defect(value)):
                return where, defect
            if isinstance(value, (dict, list)):
                stack.append((where, value))
    return None


def decode(content: bytes, name: str) -> tuple[str | None, list[Problem]]:
    """UTF-8 text (an optional byte-order mark dropped), decoded strictly: a bad byte is named by offset and line."""
    start = len(codecs.BOM_UTF8) if content.startswith(codecs.BOM_UTF8) else 0
    try:
        return content[start:].decode("utf-8"), []
    except UnicodeDecodeError as error:
        offset = start + error.start
        line = content.count(b"\n", 0, offset) + 1
        return None, [Problem(name, line, f"not UTF-8 text: {error.reason} at byte {offset}")]


def parse_json(text: str | bytes, name: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    """A seed-004 data KB from JSON text or bytes, refusing what kb.limits bounds (size, nesting, numbers)."""
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > limits.JSON_MAX_BYTES:
        return None, [
            Problem(name, 1, f"the file is {size} bytes; the limit is {limits.JSON_MAX_BYTES} bytes")
        ]
    if isinstance(text, bytes):
        decoded, problems = decode(text, name)
        if decoded is None:
            return None, problems
        text = decoded
    if (deep := _too_deep_at(text)) is not None:
        return None, [
            Problem(
                name,
                _line_of(text, deep),
                f"the JSON nests deeper than {limits.JSON_MAX_DEPTH} levels of objects and arrays",
            )
        ]
    try:
        data = json.loads(
            text,
            parse_constant=_constant,
            parse_float=lambda literal: _number(literal, float),
            parse_int=lambda literal: _number(literal, int),
        )
    except json.JSONDecodeError as error:
        return None, [Problem(name, error.lineno, f"not valid JSON: {error.msg} (column {error.colno})")]
    except _Refused as refused:
        return None, [Problem(name, _literal_line(text, refused.literal), refused.message)]
    except RecursionError:  # not reached past the depth check; kept so no input can raise out of here
        return None, [Problem(name, 1, f"the JSON nests deeper than {limits.JSON_MAX_DEPTH} levels")]
    if ("\\u" in text or text_defect(text)) and (found := _string_defect(data)):
        where, defect = found
        match = _BAD_ESCAPE.search(text)
        line = _line_of(text, match.start()) if match else 1
        return None, [Problem(name, line, f"the string at {where} {defect}, which a KB cannot store")]
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
    """The value at a dotted path; KeyError names the first missing part. A key that itself holds dots (a ticker
    such as `BRK.B`) is found too: at each level the longest run of parts that is a key wins."""
    node = data
    parts = path.split(".")
    index = 0
    while index < len(parts):
        part = parts[index]
        if isinstance(node, dict):
            ends = range(len(parts), index, -1)
            end = next((e for e in ends if ".".join(parts[index:e]) in node), None)
            if end is None:
                raise KeyError(".".join(parts[: index + 1]))
            node, index = node[".".join(parts[index:end])], end
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node, index = node[int(part)], index + 1
        else:
            raise KeyError(".".join(parts[: index + 1]))
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
