"""Surgical edits of seed-002 files: a debate's change written into the text the KB was imported from, touching only
the lines that change (a frontmatter value, a section's or a bold field's text, a table cell) and keeping everything
else as it was: quoting, comments, indentation, padding, headers, line endings.

Every function takes the file's text with `\\n` line ends (see `normalized`) and returns the edited text, or None when
the file is not laid out so that the edit can be made in place; the caller then regenerates the file. The caller
also re-parses an edited argument, source or entity file and regenerates it should the edit not read back as the
stored values (kb.services.kb_files), so a heuristic here can cost bytes of diff but never correctness."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from kb.formats.seed002 import BOLD_FIELD, FrontmatterLoader, ParsedEdge, edges_text
from kb.models import ARGUMENT_SECTIONS

# --- line endings ----------------------------------------------------------------------------------------------


def normalized(raw: str) -> tuple[str, bool]:
    """(the text with `\\n` line ends, whether the file used `\\r\\n` throughout)."""
    crlf = "\r\n" in raw and "\n" not in raw.replace("\r\n", "")
    return raw.replace("\r\n", "\n"), crlf


def restored(text: str, crlf: bool) -> str:
    """The text with the line ends of the file it came from."""
    return text.replace("\n", "\r\n") if crlf else text


# --- regions of lines ------------------------------------------------------------------------------------------


def _region_replace(lines: list[str], start: int, stop: int, content: str) -> list[str]:
    """Replace the text held by lines[start:stop] (from its first to its last non-empty line, as the parser strips
    it) with `content`; the empty lines around it stay."""
    filled = [i for i in range(start, stop) if lines[i] != ""]
    new = content.split("\n") if content else []
    if filled:
        return lines[: filled[0]] + new + lines[filled[-1] + 1 :]
    if not new:
        return lines
    blanks = stop - start
    if blanks >= 2:
        return lines[: start + 1] + new + lines[start + 1 :]
    if blanks == 1 or stop < len(lines):
        return lines[:start] + ["", *new, ""] + lines[stop:]
    return lines[:start] + ["", *new]


def _frontmatter_end(lines: list[str]) -> int | None:
    """The index of the line closing the frontmatter (as the parser finds it), or None."""
    if not lines or lines[0].strip() != "---":
        return None
    return next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)


# --- frontmatter -----------------------------------------------------------------------------------------------


def _scalar_text(value: Any, style: str | None) -> str | None:
    """A scalar written in the style of the value it replaces (plain, 'single' or "double" quoted), on one line."""
    if isinstance(value, str) and style is None and value == value.strip() and "\n" not in value:
        try:
            if value and yaml.load(f"k: {value}", Loader=FrontmatterLoader) == {"k": value}:  # noqa: S506
                return value
        except yaml.YAMLError:
            pass
    if value is not None and not isinstance(value, (str, bool, int, float)):
        return None
    if isinstance(value, str) and style in ("'", '"'):
        dumped = yaml.safe_dump(value, default_style=style, allow_unicode=True, width=10**9)
    else:
        dumped = yaml.safe_dump(value, allow_unicode=True, width=10**9)
    text = dumped.removesuffix("...\n").removesuffix("\n")
    return None if "\n" in text else text


def _key_lines(key: str, value: Any) -> list[str]:
    """The lines of `key: value`: one plain line when the value reads back as itself (a date stays unquoted, as the
    frontmatter loader reads dates as text), else as PyYAML writes it."""
    if re.match(r"^[A-Za-z_][\w-]*$", key) and (scalar := _scalar_text(value, None)) is not None:
        return [f"{key}: {scalar}"]
    dumped = yaml.safe_dump(
        {key: value}, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10**9
    )
    return dumped.rstrip("\n").split("\n")


def frontmatter_edit(text: str, old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Set the frontmatter keys whose values differ between `old` and `new`: a one-line scalar is replaced where it
    stands (its quotes and any comment after it kept), anything else as the key's whole lines; added keys go after
    the key before them in `new`, removed keys lose their lines."""
    lines = text.split("\n")
    end = _frontmatter_end(lines)
    if end is None:
        return None
    raw = lines[1:end]
    try:
        root = yaml.compose("\n".join(raw), Loader=FrontmatterLoader)  # noqa: S506
    except yaml.YAMLError:
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    spans: dict[str, tuple[yaml.Node, int, int]] = {}
    for index, (key_node, value_node) in enumerate(root.value):
        first = key_node.start_mark.line
        mark = value_node.end_mark
        last = mark.line - 1 if mark.column == 0 and mark.line > first else mark.line
        if index + 1 < len(root.value):
            last = min(last, root.value[index + 1][0].start_mark.line - 1)
        last = min(last, len(raw) - 1)
        while last > first and (not raw[last].strip() or raw[last].lstrip().startswith("#")):
            last -= 1
        spans[str(key_node.value)] = (value_node, first, last)
    # (first line, last line, new lines, order): applied bottom-up
    edits: list[tuple[int, int, list[str], int]] = []
    order = list(new)
    for number, key in enumerate(order):
        if key in old and old[key] == new[key]:
            continue
        if key in spans:
            node, first, last = spans[key]
            if (
                isinstance(node, yaml.ScalarNode)
                and node.style in (None, "'", '"')
                and node.start_mark.line == node.end_mark.line
                and (scalar := _scalar_text(new[key], node.style)) is not None
            ):
                line = raw[node.start_mark.line]
                replaced = line[: node.start_mark.column] + scalar + line[node.end_mark.column :]
                edits.append((node.start_mark.line, node.start_mark.line, [replaced], number))
            else:
                edits.append((first, last, _key_lines(key, new[key]), number))
            continue
        before = next((spans[k][2] for k in reversed(order[:number]) if k in spans), None)
        at = min((span[1] for span in spans.values()), default=len(raw)) if before is None else before + 1
        edits.append((at, at - 1, _key_lines(key, new[key]), number))
    for key in old:
        if key not in new and key in spans:
            _, first, last = spans[key]
            edits.append((first, last, [], len(order)))
    for first, last, replacement, _ in sorted(edits, key=lambda e: (e[0], e[3]), reverse=True):
        raw[first : last + 1] = replacement
    return "\n".join([lines[0], *raw, *lines[end:]])


# --- argument nodes --------------------------------------------------------------------------------------------


@dataclass
class ArgumentParts:
    """What an argument file holds, as kb.services stores it."""

    frontmatter: dict[str, Any]
    title: str
    sections: dict[str, str]
    extra: list[list[str]] = field(default_factory=list)


def _headings(lines: list[str], start: int) -> list[tuple[str, int]]:
    return [(lines[i][3:].strip(), i) for i in range(start, len(lines)) if lines[i].startswith("## ")]


def _section_stop(lines: list[str], at: int) -> int:
    return next((i for i in range(at + 1, len(lines)) if lines[i].startswith("## ")), len(lines))


def _section_set(text: str, heading: str, content: str) -> str | None:
    """The section's text replaced (the first section of that heading), or the section added where it belongs in the
    order of ARGUMENT_SECTIONS (or at the end)."""
    lines = text.split("\n")
    end = _frontmatter_end(lines)
    if end is None:
        return None
    headings = _headings(lines, end + 1)
    at = next((i for name, i in headings if name == heading), None)
    if at is not None:
        return "\n".join(_region_replace(lines, at + 1, _section_stop(lines, at), content))
    order = [h for _, h in ARGUMENT_SECTIONS]
    later = set(order[order.index(heading) + 1 :]) if heading in order else set()
    block = [f"## {heading}", "", *content.split("\n")]
    following = next((i for name, i in headings if name in later), None)
    if following is not None:
        return "\n".join(lines[:following] + block + [""] + lines[following:])
    kept = len(lines)
    while kept > end + 1 and lines[kept - 1] == "":
        kept -= 1
    return "\n".join(lines[:kept] + ["", *block] + lines[kept:])


def _title_set(text: str, title: str, prefix: str) -> str | None:
    """The H1 (the first one before any H2 of the body) given the new title, keeping a 'Argument:' prefix."""
    lines = text.split("\n")
    end = _frontmatter_end(lines)
    start = 0 if end is None else end + 1
    for index in range(start, len(lines)):
        line = lines[index]
        if line.startswith("## "):
            return None
        if line.startswith("# "):
            keep = prefix and line[2:].strip().startswith(prefix)
            lines[index] = f"# {prefix} {title}" if keep else f"# {title}"
            return "\n".join(lines)
    return None


def argument_edit(text: str, old: ArgumentParts, new: ArgumentParts) -> str | None:
    """An argument file with what differs between `old` (what it held) and `new` edited in."""
    if old.extra != new.extra:
        return None
    edited: str | None = text
    if old.frontmatter != new.frontmatter:
        edited = frontmatter_edit(text, old.frontmatter, new.frontmatter)
    if edited is not None and old.title != new.title:
        edited = _title_set(edited, new.title, "Argument:")
    for name, heading in ARGUMENT_SECTIONS:
        if edited is not None and old.sections.get(name, "") != new.sections.get(name, ""):
            edited = _section_set(edited, heading, new.sections.get(name, ""))
    return edited


# --- bold-labelled fields (sources, contradictions) --------------------------------------------------------------


@dataclass
class _FieldSpan:
    label: str
    line: int  # the line of `- **Label**: value`
    prefix: str  # that line up to the value
    inline: str  # the value on that line
    content: list[int]  # the lines with text (the field line, when it has a value, and its continuation)


def _field_spans(lines: list[str], start: int, stop: int) -> tuple[list[_FieldSpan], int]:
    """The bold fields of lines[start:stop] as the parser reads them (up to the first H2); and where they stop."""
    spans: list[_FieldSpan] = []
    for index in range(start, stop):
        line = lines[index]
        if line.startswith("## "):
            return spans, index
        match = BOLD_FIELD.match(line)
        if match:
            value = match["value"]
            spans.append(_FieldSpan(match["label"].strip(), index, line[: match.start("value")], value, []))
            if value.strip():
                spans[-1].content.append(index)
        elif spans and line.strip():
            spans[-1].content.append(index)
    return spans, stop


def _field_lines(span: _FieldSpan, value: str) -> tuple[int, int, list[str]]:
    """(first, last, lines) replacing the field's value with `value`."""
    new = value.split("\n")
    if span.content and not span.inline.strip():  # the value starts on the next line: keep the label line
        return span.content[0], span.content[-1], new
    prefix = span.prefix if span.prefix.endswith((" ", "\t")) or not value else span.prefix + " "
    last = span.content[-1] if span.content else span.line
    return span.line, last, [prefix + new[0], *new[1:]]


def _fields_set(
    lines: list[str], start: int, stop: int, old: list[list[str]], new: list[list[str]]
) -> list[str] | None:
    """lines with the fields of lines[start:stop] (which hold `old`) changed to `new`: values replaced, fields added
    after the last one. None when a field was removed or relabelled."""
    spans, _ = _field_spans(lines, start, stop)
    if len(spans) != len(old) or len(new) < len(old) or not spans:
        return None
    if any(
        span.label != label or new[i][0] != label
        for i, (span, (label, _)) in enumerate(zip(spans, old, strict=True))
    ):
        return None
    result = list(lines)
    added = [f"- **{label}**: {value}".split("\n") for label, value in new[len(old) :]]
    last = spans[-1]
    after = (last.content[-1] if last.content else last.line) + 1
    result[after:after] = [line for block in added for line in block]
    for span, (_, before), (_, value) in reversed(list(zip(spans, old, new[: len(old)], strict=True))):
        if before != value:
            first, end, replacement = _field_lines(span, value)
            result[first : end + 1] = replacement
    return result


def source_edit(
    text: str,
    old_frontmatter: dict[str, Any],
    new_frontmatter: dict[str, Any],
    old: tuple[str, list[list[str]], str],
    new: tuple[str, list[list[str]], str],
) -> str | None:
    """A source file with a changed frontmatter, title (the H1), bold fields or body edited in; `old` and `new` are
    (title, fields, body)."""
    edited: str | None = text
    if old_frontmatter != new_frontmatter:
        edited = frontmatter_edit(text, old_frontmatter, new_frontmatter)
    if edited is None:
        return None
    if old[0] != new[0]:
        edited = _title_set(edited, new[0], "")
        if edited is None:
            return None
    lines = edited.split("\n")
    end = _frontmatter_end(lines)
    if end is None:
        return None
    start = end + 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start < len(lines) and lines[start].startswith("# "):
        start += 1
    if old[1] != new[1]:
        changed = _fields_set(lines, start, len(lines), old[1], new[1])
        if changed is None:
            return None
        lines = changed
    if old[2] != new[2]:
        _, stop = _field_spans(lines, start, len(lines))
        lines = _region_replace(lines, stop, len(lines), new[2])
    return "\n".join(lines)


def entity_edit(
    text: str, old_frontmatter: dict[str, Any], new_frontmatter: dict[str, Any], old_body: str, new_body: str
) -> str | None:
    edited = (
        text
        if old_frontmatter == new_frontmatter
        else frontmatter_edit(text, old_frontmatter, new_frontmatter)
    )
    if edited is None or old_body == new_body:
        return edited
    lines = edited.split("\n")
    end = _frontmatter_end(lines)
    if end is None:
        return None
    return "\n".join(_region_replace(lines, end + 1, len(lines), new_body))


# --- logs of entries: edges, contradictions, revisions -----------------------------------------------------------


EDGE_COLUMNS = re.compile(r"^(\s*)(\S+)(\s+)(\S+)(\s+)(\S+)(?:(\s+)(\S.*?))?\s*$")


def edges_append(text: str, old: list[ParsedEdge], new: list[tuple[str, str, str, str]]) -> str | None:
    """edges.md with the edges after `old` appended under the last edge, in its columns. None when `new` does not
    begin with the edges the file holds."""
    if [(e.src, e.type, e.target, e.comment) for e in old] != new[: len(old)]:
        return None
    added = new[len(old) :]
    lines = text.split("\n")
    if not old:
        if not text.strip():
            return None
        kept = len(lines)
        while kept > 0 and lines[kept - 1] == "":
            kept -= 1
        rows = edges_text(added).split("\n")[2:-1]
        return "\n".join(lines[:kept] + ["", *rows] + lines[kept:])
    template = EDGE_COLUMNS.match(lines[old[-1].line - 1])
    if template is None:
        return None
    gaps = [len(g) for g in (template[3], template[5], template[7]) if g]
    gap = max(1, min(gaps))
    columns = [template.start(4), template.start(6), template.start(8) if template[8] else -1]

    def row(src: str, kind: str, target: str, comment: str) -> str:
        line = template[1] + src
        for column, token in zip(columns, [kind, target, f'"{comment}"'], strict=True):
            if token == '""' and column < 0:
                break
            line = line.ljust(column) if len(line) + gap <= column else line + " " * gap
            line += token
        return line

    at = old[-1].line
    return "\n".join(lines[:at] + [row(*edge) for edge in added] + lines[at:])


def blocks_append(text: str, blocks: list[str]) -> str:
    """The text with blocks appended after its last line of text, a blank line before each; its ending kept."""
    body = text.rstrip("\n")
    ending = text[len(body) :]
    return body + "".join("\n\n" + block.strip("\n") for block in blocks) + ending


def _bullets(fields: list[list[str]]) -> str:
    """Bold-labelled bullets as fields_text writes them, without a trailing space after an empty value."""
    return "\n".join(f"- **{label}**:" + (f" {value}" if value else "") for label, value in fields)


def contradiction_block(c_id: str, title: str, fields: list[list[str]]) -> str:
    return f"## {c_id}: {title}\n\n{_bullets(fields)}"


def contradictions_edit(
    text: str,
    old: list[tuple[str, str, list[list[str]]]],
    new: list[tuple[str, str, list[list[str]]]],
) -> str | None:
    """contradictions.md with changed entries edited in place (their heading, their fields) and new ones appended."""
    before = {c_id: (title, fields) for c_id, title, fields in old}
    now = {c_id: (title, fields) for c_id, title, fields in new}
    if set(before) - set(now):
        return None
    lines = text.split("\n")
    for c_id, (title, fields) in now.items():
        if c_id not in before or before[c_id] == (title, fields):
            continue
        at = next(
            (i for i, line in enumerate(lines) if re.match(rf"^## {re.escape(c_id)}:", line)),
            None,
        )
        if at is None:
            return None
        if before[c_id][0] != title:
            lines[at] = f"## {c_id}: {title}"
        if before[c_id][1] != fields:
            changed = _fields_set(lines, at + 1, _section_stop(lines, at), before[c_id][1], fields)
            if changed is None:
                return None
            lines = changed
    added = [contradiction_block(c_id, *now[c_id]) for c_id in now if c_id not in before]
    return blocks_append("\n".join(lines), added)


def revision_block(r_id: str, heading: str, fields: list[list[str]]) -> str:
    return f"## {r_id} — {heading}\n\n{_bullets(fields)}"


# --- index files ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexKind:
    """How rows of an index file are recognised: the header names of each field (lower case), and the pattern of
    the token that says which node a row is about (the first such token of the row)."""

    columns: dict[str, str]
    token: re.Pattern[str]


ARGUMENT_INDEX = IndexKind(
    columns={
        **dict.fromkeys(["id", "arg", "arg id", "argument", "node"], "key"),
        **dict.fromkeys(["status", "rating", "strength"], "status"),
        **dict.fromkeys(["position", "side"], "position"),
        "layer": "layer",
        **dict.fromkeys(["summary", "claim"], "summary"),
        "scope": "scope",
        **dict.fromkeys(["basis", "basis type"], "basis_type"),
        **dict.fromkeys(["asserter", "asserted by"], "asserter"),
        "slug": "slug",
        **dict.fromkeys(["title", "statement"], "title"),
        "file": "file",
    },
    token=re.compile(r"arg-\d{3,}(?!\d)"),
)
SOURCE_INDEX = IndexKind(
    columns={
        **dict.fromkeys(["path", "source", "file"], "key"),
        **dict.fromkeys(["type", "source type"], "source_type"),
        "year": "year",
        **dict.fromkeys(["key finding", "finding", "summary"], "key_finding"),
        "title": "title",
        "doi": "doi",
        "url": "url",
        **dict.fromkeys(["journal", "journal or source", "journal/source"], "journal_or_source"),
        **dict.fromkeys(["date accessed", "accessed"], "date_accessed"),
    },
    token=re.compile(r"(?<![\w./-])(?:[\w.-]+/)*[\w.-]+\.md(?![\w/-])"),
)
ENTITY_INDEX = IndexKind(
    columns={
        "id": "key",
        **dict.fromkeys(["name", "entity"], "name"),
        "type": "type",
        "summary": "summary",
        "slug": "slug",
    },
    token=re.compile(r"ent-\d+(?!\d)|(?<![\w./-])(?:[\w.-]+/)*[\w.-]+\.md(?![\w/-])"),
)


@dataclass
class IndexRecord:
    """A node as an index shows it: the tokens that name it (id, file name, paths) and its field values."""

    names: set[str]
    values: dict[str, str]


def _escape(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def _cells(line: str) -> list[str]:
    return re.split(r"(?<!\\)\|", line)


def _header(column: str) -> str:
    return column.strip().strip("*`_ ").replace("_", " ").lower()


def _is_row(line: str) -> bool:
    return line.lstrip().startswith(("|", "-", "*", "+")) or bool(re.match(r"^\s*\d+[.)]\s", line))


def _row_of(lines: list[str], kind: IndexKind, record: IndexRecord) -> int | None:
    for index, line in enumerate(lines):
        if _is_row(line) and (match := kind.token.search(line)) and match[0] in record.names:
            return index
    return None


def _table_columns(lines: list[str], row: int, kind: IndexKind) -> list[str | None]:
    """The field of each cell of a table row (None where the header names no field), from the table's header."""
    top = row
    while top > 0 and lines[top - 1].lstrip().startswith("|"):
        top -= 1
    return [kind.columns.get(_header(cell)) for cell in _cells(lines[top])]


def _set_cell(cell: str, old: str, new: str) -> str:
    """The cell with `old` replaced by `new` (the whole text when `old` is not in it), its width kept if padded."""
    content = cell.strip()
    lead = cell[: len(cell) - len(cell.lstrip())]
    trail = cell[len(cell.rstrip()) :]
    updated = content.replace(old, new, 1) if old and old in content else new
    text = lead + updated
    if len(trail) > 1:
        trail = " " * max(1, len(cell) - len(text))
    return text + trail


def _row_update(line: str, columns: list[str | None], old: dict[str, str], new: dict[str, str]) -> str | None:
    changed = [name for name in new if old.get(name) != new[name] and name != "key"]
    if line.lstrip().startswith("|"):
        cells = _cells(line)
        for name in changed:
            before, after = _escape(old.get(name, "")), _escape(new[name])
            at = next((j for j, column in enumerate(columns) if column == name and j < len(cells)), None)
            if at is None:
                equal = [j for j, cell in enumerate(cells) if before and cell.strip() == before]
                if len(equal) != 1:
                    continue  # not shown in this index
                at = equal[0]
            cells[at] = _set_cell(cells[at], before, after)
        return "|".join(cells)
    for name in changed:
        before = old.get(name, "")
        if not before:
            continue
        found = list(re.finditer(rf"(?<![\w-]){re.escape(before)}(?![\w-])", line))
        if len(found) > 1:
            return None
        if found:
            line = line[: found[0].start()] + new[name].replace("\n", " ") + line[found[0].end() :]
    return line


def _row_new(line: str, columns: list[str | None], template: IndexRecord, record: IndexRecord) -> str:
    """A row for `record` made from the row of `template`: the names and values of the template swapped for the
    record's; table cells the header names are filled from the record, other unknown cells left empty."""
    swaps = {template.values[k]: record.values[k] for k in ("file", "key") if template.values.get(k)}
    swap = re.compile("|".join(re.escape(k) for k in sorted(swaps, key=len, reverse=True)))
    if not line.lstrip().startswith("|"):
        values = {**swaps, **{v: record.values.get(k, "") for k, v in template.values.items() if len(v) > 2}}
        pattern = re.compile(
            "|".join(rf"(?<![\w-]){re.escape(v)}(?![\w-])" for v in sorted(values, key=len, reverse=True))
        )
        return pattern.sub(lambda m: values[m[0]].replace("\n", " "), line)
    cells = _cells(line)
    for j in range(1, len(cells) - 1):
        content, column = cells[j].strip(), columns[j] if j < len(columns) else None
        if swaps and swap.search(content):
            text = swap.sub(lambda m: swaps[m[0]], content)
        elif column and column != "key":
            text = _escape(record.values.get(column, ""))
        else:
            same = [k for k, v in template.values.items() if v and _escape(v) == content and k != "key"]
            text = _escape(record.values.get(same[0], "")) if same else ""
        cells[j] = _set_cell(cells[j], content, text)
    return "|".join(cells)


def index_edit(
    text: str,
    kind: IndexKind,
    existing: list[IndexRecord],
    changed: list[tuple[IndexRecord, IndexRecord]],
    added: list[IndexRecord],
) -> str | None:
    """An index file with the rows of changed nodes updated (the cells of the changed values) and rows for new
    nodes added after the last row of a node, made like it. `existing` is every node the file may list, as it was.
    None when a row cannot be updated or made in place."""
    lines = text.split("\n")
    for before, after in changed:
        row = _row_of(lines, kind, before)
        if row is None:
            continue  # this index does not list the node
        columns = _table_columns(lines, row, kind) if lines[row].lstrip().startswith("|") else []
        updated = _row_update(lines[row], columns, before.values, after.values)
        if updated is None:
            return None
        lines[row] = updated
    if not added:
        return "\n".join(lines)
    rows = [(row, record) for record in existing if (row := _row_of(lines, kind, record)) is not None]
    if not rows:
        return None
    last, template = max(rows, key=lambda pair: pair[0])
    columns = _table_columns(lines, last, kind) if lines[last].lstrip().startswith("|") else []
    made = [_row_new(lines[last], columns, template, record) for record in added]
    return "\n".join(lines[: last + 1] + made + lines[last + 1 :])
