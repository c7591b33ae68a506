"""The seed-002 `kb/` directory (adversarial-research plugin): parse into plain data, with every problem named by
file and line, and write it. Index files are derived: ignored on import. The text of every file is kept as read
(ParsedKB.files), so that an export changes only what a debate changed (kb/formats/seed002_edit.py); the writers
here make the files a KB did not have (new nodes, a KB not imported from files)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import yaml

from kb import limits
from kb.formats.problems import Problem, text_defect
from kb.models import ARGUMENT_SECTIONS, BASIS_TYPES, CONTRADICTION_TYPES, EDGE_TYPES, LAYERS, STATUSES

ARGUMENT_FIELDS = ["id", "slug", "position", "layer", "scope", "basis_type", "status", "asserter", "summary"]
ENTITY_FIELDS = ["id", "slug", "name", "type", "summary"]
ENTITY_TYPES = ["person", "organization", "study", "concept", "other"]
ARG_ID = re.compile(r"^arg-\d{3,}$")
ARG_FILE = re.compile(r"^(arg-\d{3,})-(.+)\.md$")
POSITION = re.compile(r"^(pro-[a-z0-9-]+|con-[a-z0-9-]+|neutral|factual|meta)$")
CONTRADICTION_STATUS = re.compile(r"^(open|resolved-by-arg-\d{3,}|unresolvable-given-current-corpus)$")
BOLD_FIELD = re.compile(r"^- \*\*(?P<label>[^*]+?):?\*\*:?[ \t]?(?P<value>.*)$")
SINGLE_FILES = {"edges.md", "contradictions.md", "quality-summary.md", "log.md", "revisions.md"}
# What a KB folder holds at least one of (kb_folder_missing); a folder with none of them is not a KB.
KB_MARKERS = ["quality-summary.md", "arguments/", "sources/", "edges.md", "contradictions.md"]
# Directories whose files are never kept (version control), should a kb/ folder be a repository itself.
NOT_KEPT_DIRS = {".git", ".hg", ".svn"}
STABLE_LINE = re.compile(r"stable", re.IGNORECASE)
UNSTABLE = re.compile(
    r"\b(unstable|not (yet )?(reached )?(a )?stable|still churning|not stable)\b", re.IGNORECASE
)


class _Refused(yaml.MarkedYAMLError):
    """Frontmatter refused by a rule of kb.limits (not a syntax error); reported as its problem text."""


class _Loader(yaml.SafeLoader):
    """YAML without implicit timestamps: dates stay the strings the file wrote (JSON-storable, lossless).

    Anchors and aliases are refused while composing, before any node is shared (so an alias chain is never
    expanded), and so is nesting deeper than limits.FRONTMATTER_MAX_DEPTH (before the recursive composer goes
    deeper)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            found = f"{'*' if isinstance(event, yaml.AliasEvent) else '&'}{event.anchor}"
            raise _Refused(
                problem=f"YAML anchors and aliases are not allowed (found {found})",
                problem_mark=event.start_mark,
            )
        container = isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
        if container:
            self._depth += 1
            if self._depth > limits.FRONTMATTER_MAX_DEPTH:
                raise _Refused(
                    problem=f"the YAML frontmatter nests deeper than {limits.FRONTMATTER_MAX_DEPTH} levels",
                    problem_mark=event.start_mark,
                )
        try:
            return super().compose_node(parent, index)
        finally:
            if container:
                self._depth -= 1

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(str(node.value)) > limits.MAX_NUMBER_CHARS:
            raise _Refused(
                problem=f"the number is {len(node.value)} characters long; the limit is {limits.MAX_NUMBER_CHARS}",
                problem_mark=node.start_mark,
            )
        return super().construct_yaml_int(node)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # PyYAML's constructors raise plain Python errors on an explicit tag that does not fit its value
        # (`!!float abc`, `!!bool maybe`, `!!int ''`): report them like syntax errors, with the line.
        try:
            return super().construct_object(node, deep)
        except (ValueError, KeyError, IndexError, TypeError, OverflowError, AttributeError) as error:
            value = node.value if isinstance(node, yaml.ScalarNode) else node.tag
            raise _Refused(
                problem=f"the value {str(value)[:40]!r} does not fit its YAML tag {node.tag} "
                f"({type(error).__name__})",
                problem_mark=node.start_mark,
            ) from None


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
# The loader of frontmatter, for code that edits it (kb/formats/seed002_edit.py).
FrontmatterLoader = _Loader


@dataclass
class ParsedArgument:
    path: str
    frontmatter: dict[str, Any]
    title: str
    sections: dict[str, str]
    extra_sections: list[list[str]]
    id_line: int = 2


@dataclass
class ParsedSource:
    path: str
    frontmatter: dict[str, Any]
    title: str
    fields: list[list[str]]
    body: str


@dataclass
class ParsedEntity:
    path: str
    frontmatter: dict[str, Any]
    body: str


@dataclass
class ParsedEdge:
    line: int
    src: str
    type: str
    target: str
    comment: str


@dataclass
class ParsedContradiction:
    line: int
    c_id: str
    title: str
    fields: list[list[str]]


@dataclass
class ParsedRevision:
    r_id: str
    heading: str
    fields: dict[str, str]
    line: int = 1


@dataclass
class ParsedKB:
    arguments: list[ParsedArgument] = field(default_factory=list)
    sources: list[ParsedSource] = field(default_factory=list)
    entities: list[ParsedEntity] = field(default_factory=list)
    edges: list[ParsedEdge] = field(default_factory=list)
    contradictions: list[ParsedContradiction] = field(default_factory=list)
    revisions: list[ParsedRevision] = field(default_factory=list)
    quality_summary: str = ""
    stable_statement: str = ""
    central_questions: list[tuple[str, list[str]]] = field(default_factory=list)
    log: str = ""
    problems: list[Problem] = field(default_factory=list)
    # Every file kept, {`kb/...` path: text as read (line endings kept)}: what an export writes back unchanged.
    files: dict[str, str] = field(default_factory=dict)
    # Ids of argument files that had problems: edges to them are not reported again as "missing".
    flawed_ids: set[str] = field(default_factory=set)


# --- reading -------------------------------------------------------------------------------------------------


def kb_root(path: Path) -> Path:
    """Accept the run directory (holding kb/) or the kb/ directory itself."""
    if (path / "kb").is_dir():
        return path / "kb"
    return path


def _split_frontmatter(
    text: str, rel: str, problems: list[Problem]
) -> tuple[dict[str, Any] | None, list[str], int]:
    """(frontmatter, body lines, line number of the first body line)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        problems.append(Problem(rel, 1, "no YAML frontmatter: the file must start with a '---' line"))
        return None, lines, 1
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        problems.append(Problem(rel, 1, "the YAML frontmatter is not closed by a '---' line"))
        return None, lines, 1
    raw = "\n".join(lines[1:end])
    if len(raw) > limits.FRONTMATTER_MAX_CHARS:
        problems.append(
            Problem(
                rel,
                2,
                f"the YAML frontmatter is {len(raw)} characters long; "
                f"the limit is {limits.FRONTMATTER_MAX_CHARS}",
            )
        )
        return None, lines[end + 1 :], end + 2
    try:
        data = yaml.load(raw, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except _Refused as refused:
        line = refused.problem_mark.line + 2 if refused.problem_mark is not None else 2
        problems.append(Problem(rel, line, str(refused.problem)))
        return None, lines[end + 1 :], end + 2
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        problems.append(Problem(rel, line, f"unparsable YAML frontmatter: {problem}"))
        return None, lines[end + 1 :], end + 2
    if not isinstance(data, dict):
        problems.append(Problem(rel, 2, "the YAML frontmatter must be a mapping of fields"))
        return None, lines[end + 1 :], end + 2
    before = len(problems)
    fm_text = "\n".join(lines[: end + 1])
    for key, value in data.items():
        defect = _value_defect({key: value})
        if defect:
            problems.append(Problem(rel, _key_line(fm_text, str(key)), f"field '{key}' {defect}"))
    if len(problems) > before:
        return None, lines[end + 1 :], end + 2
    return data, lines[end + 1 :], end + 2


def _value_defect(value: Any) -> str | None:
    """Why a frontmatter value cannot be stored (too long a string at any depth, a NUL, a non-finite number, a
    type JSON has no place for such as !!binary or !!set), or None. Depth is bounded by the loader."""
    if isinstance(value, str):
        if len(value) > limits.FRONTMATTER_FIELD_MAX_CHARS:
            return (
                f"is {len(value)} characters long; the limit is {limits.FRONTMATTER_FIELD_MAX_CHARS} "
                f"(it starts {value[:40]!r})"
            )
        return text_defect(value)
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"holds {value}, which is not a finite number"
    if isinstance(value, list):
        return next((d for item in value if (d := _value_defect(item))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                return f"has a key of type {type(key).__name__}, which a KB cannot store"
            if defect := (_value_defect(key) if isinstance(key, str) else None) or _value_defect(item):
                return defect
        return None
    return f"holds a value of type {type(value).__name__} (a YAML tag), which a KB cannot store"


def _key_line(text: str, key: str) -> int:
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith(f"{key}:"):
            return number
    return 1


def _sections(body: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """(H1 title, [(H2 heading, text)]) with each text trimmed of surrounding blank lines."""
    title = ""
    sections: list[tuple[str, list[str]]] = []
    for line in body:
        if line.startswith("# ") and not sections and not title:
            title = line[2:].strip()
        elif line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
    return title, [(heading, "\n".join(lines).strip("\n")) for heading, lines in sections]


def _bold_fields(lines: list[str]) -> tuple[list[list[str]], list[str]]:
    """Bold-labelled bullets (with continuation lines) up to the first H2; returns (fields, remaining lines)."""
    fields: list[list[str]] = []
    for index, line in enumerate(lines):
        if line.startswith("## "):
            return fields, lines[index:]
        match = BOLD_FIELD.match(line)
        if match:
            fields.append([match["label"].strip(), match["value"]])
        elif fields and (line.strip() or fields[-1][1]):
            fields[-1][1] += "\n" + line
    return fields, []


def _trim_fields(fields: list[list[str]]) -> list[list[str]]:
    return [[label, value.strip("\n").rstrip()] for label, value in fields]


def _parse_argument(
    rel: str, text: str, problems: list[Problem], flawed_ids: set[str]
) -> ParsedArgument | None:
    before = len(problems)
    data, body, _ = _split_frontmatter(text, rel, problems)
    if data is None:
        return None
    fm_text = text.split("\n---", 1)[0]
    for key in ARGUMENT_FIELDS:
        if key not in data or data[key] in (None, ""):
            problems.append(Problem(rel, 1, f"missing frontmatter field '{key}'"))
    checks = [("status", STATUSES), ("layer", LAYERS), ("basis_type", BASIS_TYPES)]
    for key, allowed in checks:
        value = data.get(key)
        if value not in (None, "") and value not in allowed:
            problems.append(
                Problem(
                    rel, _key_line(fm_text, key), f"unknown {key} '{value}' (allowed: {', '.join(allowed)})"
                )
            )
    position = data.get("position")
    if position not in (None, "") and not POSITION.match(str(position)):
        problems.append(
            Problem(
                rel,
                _key_line(fm_text, "position"),
                f"unknown position '{position}' (pro-X, con-X, neutral, factual, meta)",
            )
        )
    arg_id = str(data.get("id", ""))
    if arg_id and not ARG_ID.match(arg_id):
        problems.append(Problem(rel, _key_line(fm_text, "id"), f"id '{arg_id}' is not of the form arg-NNN"))
    match = ARG_FILE.match(Path(rel).name)
    if not match:
        problems.append(Problem(rel, 1, "argument file name must be arg-NNN-<slug>.md"))
    elif arg_id and match[1] != arg_id:
        problems.append(
            Problem(
                rel,
                _key_line(fm_text, "id"),
                f"id '{arg_id}' does not match the file name prefix '{match[1]}'",
            )
        )
    if len(problems) > before:
        flawed_ids.add(arg_id)
        return None
    title, sections = _sections(body)
    title = title.removeprefix("Argument:").strip()
    known = {heading: name for name, heading in ARGUMENT_SECTIONS}
    values: dict[str, str] = {}
    extra: list[list[str]] = []
    for heading, content in sections:
        if heading in known and known[heading] not in values:
            values[known[heading]] = content
        else:
            extra.append([heading, content])
    return ParsedArgument(
        rel,
        {k: ("" if v is None else v) for k, v in data.items()},
        title,
        values,
        extra,
        _key_line(fm_text, "id"),
    )


def _parse_source(rel: str, text: str, problems: list[Problem]) -> ParsedSource | None:
    data, body, _ = _split_frontmatter(text, rel, problems)
    if data is None:
        return None
    title = ""
    rest = list(body)
    while rest and not rest[0].strip():
        rest.pop(0)
    if rest and rest[0].startswith("# "):
        title = rest.pop(0)[2:].strip()
    fields, after = _bold_fields(rest)
    if not title:
        title = str(data.get("title", ""))
    if not title:
        problems.append(Problem(rel, 1, "a source needs a title (frontmatter 'title' or an H1)"))
        return None
    return ParsedSource(rel, data, title, _trim_fields(fields), "\n".join(after).strip("\n"))


def _parse_entity(rel: str, text: str, problems: list[Problem]) -> ParsedEntity | None:
    before = len(problems)
    data, body, _ = _split_frontmatter(text, rel, problems)
    if data is None:
        return None
    for key in ENTITY_FIELDS:
        if key not in data or data[key] in (None, ""):
            problems.append(Problem(rel, 1, f"missing frontmatter field '{key}'"))
    if data.get("type") and data["type"] not in ENTITY_TYPES:
        problems.append(Problem(rel, _key_line(text, "type"), f"unknown entity type '{data['type']}'"))
    if len(problems) > before:
        return None
    return ParsedEntity(rel, data, "\n".join(body).strip("\n"))


def _parse_edges(rel: str, text: str, problems: list[Problem]) -> list[ParsedEdge]:
    edges = []
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if (
            not stripped
            or stripped.startswith("#")
            or stripped.startswith("<!--")
            or not stripped.startswith("arg-")
        ):
            continue
        parts = stripped.split(None, 3)
        if len(parts) < 3:
            problems.append(
                Problem(rel, number, f"an edge needs 'source type target \"comment\"': {stripped!r}")
            )
            continue
        src, kind, target = parts[:3]
        comment = parts[3].strip() if len(parts) > 3 else ""
        if len(comment) >= 2 and comment[0] == comment[-1] == '"':
            comment = comment[1:-1]
        if kind not in EDGE_TYPES:
            problems.append(
                Problem(rel, number, f"unknown edge type '{kind}' (allowed: {', '.join(EDGE_TYPES)})")
            )
            continue
        edges.append(ParsedEdge(number, src, kind, target, comment))
    return edges


def _parse_contradictions(rel: str, text: str, problems: list[Problem]) -> list[ParsedContradiction]:
    items: list[ParsedContradiction] = []
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        heading = lines[start][3:].strip()
        match = re.match(r"^(C-\d{3,}):\s*(.*)$", heading)
        if not match:
            problems.append(
                Problem(rel, start + 1, f"a contradiction heading must be '## C-NNN: <title>': {heading!r}")
            )
            continue
        fields, _ = _bold_fields(lines[start + 1 : end])
        fields = _trim_fields(fields)
        values = dict(fields)
        kind = values.get("Type", "")
        if kind not in CONTRADICTION_TYPES:
            problems.append(Problem(rel, start + 1, f"{match[1]}: unknown contradiction type '{kind}'"))
        status = values.get("Status", "")
        if not CONTRADICTION_STATUS.match(status):
            problems.append(Problem(rel, start + 1, f"{match[1]}: unknown contradiction status '{status}'"))
        items.append(ParsedContradiction(start + 1, match[1], match[2].strip(), fields))
    return items


def _parse_revisions(text: str) -> list[ParsedRevision]:
    revisions = []
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if re.match(r"^## R-\d{3,}", line)]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        heading = lines[start][3:].strip()
        r_id, _, rest = heading.partition(" ")
        fields, _ = _bold_fields(lines[start + 1 : end])
        revisions.append(
            ParsedRevision(r_id, rest.strip().lstrip("—").strip(), dict(_trim_fields(fields)), start + 1)
        )
    return revisions


def central_questions_parse(summary: str) -> list[tuple[str, list[str]]]:
    """The items under a 'Central questions' heading, each with the arg ids it names."""
    lines = summary.split("\n")
    start = next(
        (i for i, line in enumerate(lines) if line.startswith("#") and "central question" in line.lower()),
        None,
    )
    if start is None:
        return []
    level = len(lines[start]) - len(lines[start].lstrip("#"))
    items: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("#") and len(line) - len(line.lstrip("#")) <= level:
            break
        item = re.match(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+(.*)$", line)
        if item:
            items.append([item[1]])
        elif items and line.strip():
            items[-1].append(line.strip())
    questions = []
    for parts in items:
        text = " ".join(parts).strip()
        ids = list(dict.fromkeys(re.findall(r"arg-\d{3,}", text)))
        questions.append((text, ids))
    return questions


def stable_statement_find(summary: str) -> str:
    """The line that says the graph reached a stable state ('' when none does, or it says the opposite)."""
    for line in summary.split("\n"):
        if (
            STABLE_LINE.search(line)
            and re.search(r"graph|pass", line, re.IGNORECASE)
            and not UNSTABLE.search(line)
        ):
            return line.strip()
    return ""


def kb_folder_missing(path: Path) -> str | None:
    """Why `path` is not a seed-002 KB folder (neither it nor its kb/ holds any KB file), or None."""
    root = kb_root(path)
    if any((root / name).exists() for name in KB_MARKERS):
        return None
    return (
        f"not a seed-002 KB folder: looked in {path / 'kb'}/ and in {path}/ for {', '.join(KB_MARKERS)} and "
        "found none; give the kb/ folder (quality-summary.md, arguments/arg-NNN-<slug>.md, "
        "sources/<subdir>/<slug>.md, edges.md) or the run directory that holds it"
    )


def _kind(rel: str) -> str | None:
    """Which part of the KB the file `kb/...` is, as the importer reads it ('argument', 'source', 'entity', or the
    name of a single file), or None for a file kept as it is (index files, machine files, anything else)."""
    parts = rel.split("/")[1:]
    if len(parts) == 1:
        return parts[0] if parts[0] in SINGLE_FILES else None
    if not parts[-1].endswith(".md") or parts[-1] == "index.md":
        return None
    if parts[0] == "arguments" and len(parts) == 2:
        return "argument"
    if parts[0] == "entities" and len(parts) == 2:
        return "entity"
    return "source" if parts[0] == "sources" else None


def parse_directory(path: Path) -> ParsedKB:
    """Parse a kb/ directory (or the run directory holding it). `ParsedKB.files` keeps the text of every file as it
    was read (line endings too), for an export that writes back what the debate did not change: the files the KB is
    made of, and any other UTF-8 text file within limits.MAX_FILE_BYTES (index files, machine files, notes)."""
    root = kb_root(path)
    parsed = ParsedKB()
    problems = parsed.problems
    if not root.is_dir():
        problems.append(Problem(str(path), 1, "not a directory holding a seed-002 kb/"))
        return parsed
    if sum(1 for _ in islice(root.rglob("*"), limits.MAX_FILES + 1)) > limits.MAX_FILES:
        problems.append(
            Problem(str(path), 1, f"the KB holds more than {limits.MAX_FILES} files and directories")
        )
        return parsed
    if missing := kb_folder_missing(path):
        problems.append(Problem(str(path), 1, missing))
        return parsed

    def read(file: Path, rel: str) -> str | None:
        size = file.stat().st_size
        if size > limits.MAX_FILE_BYTES:
            problems.append(
                Problem(rel, 1, f"the file is {size} bytes; the limit is {limits.MAX_FILE_BYTES} bytes")
            )
            return None
        content = file.read_bytes()
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as error:
            line = content.count(b"\n", 0, error.start) + 1
            problems.append(Problem(rel, line, f"not UTF-8 text ({error.reason} at byte {error.start})"))
            return None
        if "\x00" in text:
            line = text.count("\n", 0, text.index("\x00")) + 1
            problems.append(Problem(rel, line, "holds a NUL character: not a text file"))
            return None
        return text

    def kept(file: Path) -> str | None:
        """Another file's text, or None when it is not UTF-8 text within the size limit, is a symbolic link or has
        a backslash in its name (then it is not kept, and not exported)."""
        try:
            if file.is_symlink() or "\\" in file.name or file.stat().st_size > limits.MAX_FILE_BYTES:
                return None
            text = file.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        return None if "\x00" in text else text

    texts: dict[str, str] = {}
    for file in sorted(root.rglob("*"), key=lambda f: f.relative_to(root).parts):
        relative = file.relative_to(root)
        if not file.is_file() or set(relative.parts) & NOT_KEPT_DIRS:
            continue
        rel = "kb/" + relative.as_posix()
        text = read(file, rel) if _kind(rel) else kept(file)
        if text is not None:
            parsed.files[rel] = text
            texts[rel] = text.replace("\r\n", "\n")
    _parse_texts(parsed, texts, unreadable={p.path for p in problems})
    return parsed


def parse_texts(texts: dict[str, str]) -> ParsedKB:
    """Parse a KB given as {`kb/...` path: text}, as parse_directory parses the files of a directory."""
    parsed = ParsedKB(files=dict(texts))
    _parse_texts(parsed, {rel: text.replace("\r\n", "\n") for rel, text in texts.items()}, unreadable=set())
    return parsed


def parse_file(rel: str, text: str) -> tuple[Any, list[Problem]]:
    """One argument, source or entity file (by its `kb/...` path) parsed alone: (the parsed node or None, problems)."""
    problems: list[Problem] = []
    text = text.replace("\r\n", "\n")
    kind = _kind(rel)
    if kind == "argument":
        return _parse_argument(rel, text, problems, set()), problems
    if kind == "source":
        return _parse_source(rel, text, problems), problems
    if kind == "entity":
        return _parse_entity(rel, text, problems), problems
    return None, [Problem(rel, 1, "not an argument, source or entity file")]


def _parse_texts(parsed: ParsedKB, texts: dict[str, str], unreadable: set[str]) -> None:
    problems = parsed.problems
    ordered = sorted(texts, key=lambda rel: rel.split("/"))
    for rel in ordered:
        if _kind(rel) == "argument" and (
            argument := _parse_argument(rel, texts[rel], problems, parsed.flawed_ids)
        ):
            parsed.arguments.append(argument)
    for rel in ordered:
        if _kind(rel) == "source" and (source := _parse_source(rel, texts[rel], problems)):
            parsed.sources.append(source)
    for rel in ordered:
        if _kind(rel) == "entity" and (entity := _parse_entity(rel, texts[rel], problems)):
            parsed.entities.append(entity)
    if (text := texts.get("kb/edges.md")) is not None:
        parsed.edges = _parse_edges("kb/edges.md", text, problems)
    if (text := texts.get("kb/contradictions.md")) is not None:
        parsed.contradictions = _parse_contradictions("kb/contradictions.md", text, problems)
    if (text := texts.get("kb/quality-summary.md")) is not None:
        parsed.quality_summary = text.strip("\n")
        parsed.stable_statement = stable_statement_find(text)
        parsed.central_questions = central_questions_parse(text)
    elif "kb/quality-summary.md" not in unreadable:
        problems.append(
            Problem(
                "kb/quality-summary.md",
                1,
                "missing quality summary: the debate needs its central questions and the stable-state statement",
            )
        )
    if (text := texts.get("kb/log.md")) is not None:
        parsed.log = text.strip("\n")
    if (text := texts.get("kb/revisions.md")) is not None:
        parsed.revisions = _parse_revisions(text)
    _check_references(parsed)


def _check_references(parsed: ParsedKB) -> None:
    problems = parsed.problems
    seen: dict[str, str] = {}
    for argument in parsed.arguments:
        arg_id = str(argument.frontmatter["id"])
        if arg_id in seen:
            problems.append(
                Problem(argument.path, argument.id_line, f"duplicate id {arg_id} (also in {seen[arg_id]})")
            )
        seen.setdefault(arg_id, argument.path)
    sources = {s.path for s in parsed.sources}
    known = set(seen) | parsed.flawed_ids
    for edge in parsed.edges:
        if edge.src not in known:
            problems.append(Problem("kb/edges.md", edge.line, f"edge from missing argument {edge.src}"))
        if edge.type == "derived-from-source":
            if edge.target not in sources:
                problems.append(Problem("kb/edges.md", edge.line, f"edge to missing source {edge.target}"))
        elif edge.target not in known:
            problems.append(Problem("kb/edges.md", edge.line, f"edge to missing argument {edge.target}"))
    for item in parsed.contradictions:
        fields = dict(item.fields)
        for arg_id in re.findall(r"arg-\d{3,}", fields.get("Involved arguments", "")):
            if arg_id not in known:
                problems.append(
                    Problem(
                        "kb/contradictions.md", item.line, f"{item.c_id} involves missing argument {arg_id}"
                    )
                )
    # The database holds one contradiction per C-NNN and one revision per R-NNN: a second one is bad input.
    entries: list[tuple[str, str, int]] = [
        ("kb/contradictions.md", c.c_id, c.line) for c in parsed.contradictions
    ]
    entries += [("kb/revisions.md", r.r_id, r.line) for r in parsed.revisions]
    first: dict[tuple[str, str], int] = {}
    for rel, entry_id, line in entries:
        if (rel, entry_id) in first:
            problems.append(
                Problem(rel, line, f"duplicate id {entry_id} (also at line {first[rel, entry_id]})")
            )
        first.setdefault((rel, entry_id), line)


# --- writing -------------------------------------------------------------------------------------------------


def _frontmatter(data: dict[str, Any]) -> str:
    dumped = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10_000)
    return f"---\n{dumped}---\n"


def argument_text(
    frontmatter: dict[str, Any], title: str, sections: dict[str, str], extra: list[list[str]]
) -> str:
    parts = [_frontmatter(frontmatter), f"# Argument: {title}\n"]
    for name, heading in ARGUMENT_SECTIONS:
        parts.append(f"## {heading}\n\n{sections.get(name, '')}\n".replace("\n\n\n", "\n\n"))
    for heading, text in extra:
        parts.append(f"## {heading}\n\n{text}\n".replace("\n\n\n", "\n\n"))
    return "\n".join(parts)


def fields_text(fields: list[list[str]]) -> str:
    return "\n".join(f"- **{label}**: {value}" for label, value in fields)


def source_text(frontmatter: dict[str, Any], title: str, fields: list[list[str]], body: str) -> str:
    text = f"{_frontmatter(frontmatter)}\n# {title}\n\n{fields_text(fields)}\n"
    if body:
        text += f"\n{body}\n"
    return text


def entity_text(frontmatter: dict[str, Any], body: str) -> str:
    return f"{_frontmatter(frontmatter)}\n{body}\n"


def edges_text(edges: list[tuple[str, str, str, str]]) -> str:
    width_src = max((len(e[0]) for e in edges), default=7)
    width_type = max(len(t) for t in EDGE_TYPES)
    width_target = max((len(e[2]) for e in edges), default=7)
    lines = [
        f'{src.ljust(width_src)}  {kind.ljust(width_type)}  {target.ljust(width_target)}  "{comment}"'
        for src, kind, target, comment in edges
    ]
    return "# Edges\n\n" + "\n".join(lines) + "\n"


def contradictions_text(items: list[tuple[str, str, list[list[str]]]]) -> str:
    blocks = [f"## {c_id}: {title}\n\n{fields_text(fields)}\n" for c_id, title, fields in items]
    return "# Contradictions\n\n" + "\n".join(blocks)


def revisions_text(items: list[tuple[str, str, list[list[str]]]]) -> str:
    blocks = [f"## {r_id} — {heading}\n\n{fields_text(fields)}\n" for r_id, heading, fields in items]
    return "# KB Revisions Log\n\n" + "\n".join(blocks)


def index_table(title: str, header: list[str], rows: list[list[str]]) -> str:
    def cell(value: str) -> str:
        return value.replace("|", "\\|").replace("\n", " ")

    lines = [
        f"# {title}",
        "",
        "<!-- Derived from the node files by Disputa; edits here are overwritten. -->",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
