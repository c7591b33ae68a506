"""Import and export of knowledge bases. Import is all or nothing: every problem is reported with its file and
line, and a KB with any problem is not imported at all."""

from __future__ import annotations

import io
import json
import lzma
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from tempfile import TemporaryDirectory
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import slug_re, validate_slug
from django.db import IntegrityError, models, transaction
from django.utils.text import slugify

from kb import limits
from kb.formats import seed002, seed002_edit, seed004
from kb.formats.problems import ImportRefused, NotAKnowledgeBase, Problem
from kb.models import (
    ARGUMENT_SECTIONS,
    Argument,
    CentralQuestion,
    Contradiction,
    Edge,
    Entity,
    KnowledgeBase,
    OriginalFile,
    Revision,
    Source,
)

ARGUMENT_ORDER = seed002.ARGUMENT_FIELDS


def _unique_slug(base: str) -> str:
    """A free slug made from `base`: always a valid slug within limits.SLUG_MAX_LENGTH."""
    slug = slugify(base)[: limits.SLUG_AUTO_MAX_LENGTH].strip("-_") or "kb"
    candidate, n = slug, 2
    while KnowledgeBase.objects.filter(slug=candidate).exists():
        candidate, n = f"{slug}-{n}", n + 1
    if (
        not slug_re.match(candidate) or len(candidate) > limits.SLUG_MAX_LENGTH
    ):  # slugify makes this unreachable
        raise ImportRefused(
            [Problem(base[:100], 1, f"no valid slug can be made from this title: {candidate!r}")]
        )
    return candidate


def _slug_problems(slug: str, origin: str) -> list[Problem]:
    """Why `slug` cannot name a new KB: not a slug (it is part of every KB URL), too long, or taken."""
    try:
        validate_slug(slug)
    except ValidationError:
        return [
            Problem(
                origin, 1, f"the slug {slug!r} is not a slug: use only ASCII letters, digits, '-' and '_'"
            )
        ]
    if len(slug) > limits.SLUG_MAX_LENGTH:
        return [
            Problem(
                origin, 1, f"the slug is {len(slug)} characters long; the limit is {limits.SLUG_MAX_LENGTH}"
            )
        ]
    if KnowledgeBase.objects.filter(slug=slug).exists():
        return [Problem(origin, 1, f"a knowledge base with the slug '{slug}' exists already")]
    return []


def _title_problems(title: str | None, origin: str) -> list[Problem]:
    if title is not None and len(title) > limits.TITLE_MAX_LENGTH:
        return [
            Problem(
                origin,
                1,
                f"the title is {len(title)} characters long; the limit is {limits.TITLE_MAX_LENGTH}",
            )
        ]
    return []


def _kb_create(origin: str, slug: str | None, fill: Callable[[], KnowledgeBase]) -> KnowledgeBase:
    """Run `fill` (which creates the KB and its rows) in one transaction; a slug taken meanwhile is a problem."""
    try:
        with transaction.atomic():
            return fill()
    except IntegrityError:
        if slug and KnowledgeBase.objects.filter(slug=slug).exists():
            raise ImportRefused(
                [Problem(origin, 1, f"a knowledge base with the slug '{slug}' exists already")]
            ) from None
        raise


def _column_problems(rows: Iterable[tuple[models.Model, str, int]]) -> list[Problem]:
    """Values longer than their database column (PostgreSQL refuses them): (row, file, line) each."""
    problems = []
    for row, path, line in rows:
        for column in row._meta.concrete_fields:
            if isinstance(column, models.CharField) and column.max_length:
                value = getattr(row, column.attname)
                if isinstance(value, str) and len(value) > column.max_length:
                    problems.append(
                        Problem(
                            path,
                            line,
                            f"{column.name} {value[:40]!r}… is {len(value)} characters long; "
                            f"the limit is {column.max_length}",
                        )
                    )
    return problems


def _title_from(parsed: seed002.ParsedKB, fallback: str) -> str:
    for line in parsed.quality_summary.split("\n"):
        if line.startswith("# "):
            title = re.sub(
                r"^(kb\s+)?quality\s+summary\s*[:—–-]?\s*", "", line[2:].strip(), flags=re.IGNORECASE
            )
            return (title or fallback)[: limits.TITLE_MAX_LENGTH]
    return fallback[: limits.TITLE_MAX_LENGTH]


def _refused(path: str, message: str) -> ImportRefused:
    return ImportRefused([Problem(path, 1, message)])


def _read_capped(path: Path, cap: int) -> bytes:
    """The file's bytes, refused by its size before reading (and by what was read, should it have grown)."""
    if not path.is_file():
        raise _refused(path.name, "not a regular file")
    try:
        size = path.stat().st_size
        if size <= cap:
            with path.open("rb") as file:
                content = file.read(cap + 1)
            size = len(content)
    except OSError as error:
        raise _refused(path.name, f"cannot be read: {error.strerror}") from None
    if size > cap:
        raise _refused(path.name, f"the file is {size} bytes; the limit is {cap} bytes")
    return content


def kb_import_path(path: Path, *, slug: str | None = None, title: str | None = None) -> KnowledgeBase:
    """Import a seed-002 kb/ directory (or run directory), a zip of one, or a seed-004 JSON file."""
    if path.is_dir():
        if missing := seed002.kb_folder_missing(path):
            raise NotAKnowledgeBase(str(path), missing)
        return kb_import_seed002(seed002.parse_directory(path), slug=slug, title=title, origin=str(path.name))
    if path.suffix.lower() == ".zip":
        content = _read_capped(path, limits.MAX_UPLOAD_BYTES)
        return kb_import_zip(content, name=path.name, slug=slug, title=title)
    if path.suffix.lower() == ".json":
        content = _read_capped(path, limits.JSON_MAX_BYTES)
        return kb_import_json(content, name=path.name, slug=slug, title=title)
    raise _refused(str(path), "expected a kb/ directory, a .zip of one, or a .json data KB")


# What zipfile raises on a damaged or unsupported archive (found by fuzzing: bad offsets raise ValueError, a bad
# version NotImplementedError, a name with a bad UTF-8 flag UnicodeDecodeError, a password RuntimeError).
_ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    OSError,
    ValueError,
    struct.error,
    zlib.error,
    lzma.LZMAError,
    NotImplementedError,
    RuntimeError,
)


def _member_problem(info: zipfile.ZipInfo, seen: set[str]) -> str | None:
    """Why an archive member must not be written (checked on every member before anything is written)."""
    name = info.filename
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "a symbolic link; the archive must hold plain files"
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "an absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "a path outside the archive"
    if info.flag_bits & 0x1:
        return "encrypted"
    if name in seen:
        return "a second entry of the same name"
    seen.add(name)
    return None


def _member_read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, archive_size: int, total: int) -> bytes:
    """The member's bytes, decompressed piece by piece and counted as they come (the sizes the archive declares
    are not trusted): refused as soon as the entry, the archive total or the compression ratio passes its cap."""
    name = info.filename
    compressed = max(1, min(info.compress_size, archive_size))
    pieces, size = [], 0
    try:
        with archive.open(info) as member:
            while piece := member.read(limits.ZIP_READ_CHUNK_BYTES):
                size += len(piece)
                if size > limits.ZIP_MAX_ENTRY_BYTES:
                    raise _refused(
                        name,
                        f"expands to more than {limits.ZIP_MAX_ENTRY_BYTES} bytes, the limit for one file",
                    )
                if total + size > limits.ZIP_MAX_TOTAL_BYTES:
                    raise _refused(
                        name,
                        f"the archive expands to more than {limits.ZIP_MAX_TOTAL_BYTES} bytes, "
                        "the limit for a whole KB",
                    )
                if size > limits.ZIP_RATIO_MIN_BYTES and size / compressed > limits.ZIP_MAX_COMPRESSION_RATIO:
                    raise _refused(
                        name,
                        f"compressed more than {limits.ZIP_MAX_COMPRESSION_RATIO} to 1 "
                        f"({compressed} bytes expand past {size}): refused as a zip bomb",
                    )
                pieces.append(piece)
    except _ARCHIVE_ERRORS as error:
        raise _refused(name, f"cannot be decompressed: {error}") from None
    return b"".join(pieces)


def kb_import_zip(
    content: bytes, *, name: str, slug: str | None = None, title: str | None = None
) -> KnowledgeBase:
    """Import a zip of a seed-002 kb/ directory. Every member is checked by name first, then decompressed and
    counted against kb.limits before it is written; nothing of a refused member reaches the disk."""
    if len(content) > limits.MAX_UPLOAD_BYTES:
        raise _refused(
            name, f"the file is {len(content)} bytes; the limit is {limits.MAX_UPLOAD_BYTES} bytes"
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except _ARCHIVE_ERRORS:
        raise _refused(name, "not a zip archive") from None
    with TemporaryDirectory() as tmp, archive:
        root = Path(tmp).resolve()
        members = archive.infolist()
        if len(members) > limits.ZIP_MAX_ENTRIES:
            raise _refused(
                name, f"the archive holds {len(members)} entries; the limit is {limits.ZIP_MAX_ENTRIES}"
            )
        problems, seen = [], set[str]()
        for info in members:
            why = _member_problem(info, seen)
            if why is None and not (root / info.filename).resolve().is_relative_to(root):
                why = "a path outside the archive"
            if why:
                problems.append(Problem(name, 1, f"unsafe path in archive: {info.filename} is {why}"))
        if problems:
            raise ImportRefused(problems)
        total = 0
        for info in members:
            target = root / info.filename
            try:
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                data = _member_read(archive, info, len(content), total)
                total += len(data)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            except OSError as error:
                raise _refused(info.filename, f"cannot be written: {error.strerror}") from None
        candidates = [p.parent for p in root.rglob("quality-summary.md")] or [
            p.parent for p in root.rglob("arguments") if p.is_dir()
        ]
        base = candidates[0] if candidates else root
        if seed002.kb_folder_missing(base):
            raise NotAKnowledgeBase(
                name,
                "not a seed-002 KB: the archive holds none of "
                f"{', '.join(seed002.KB_MARKERS)}, at its top or in a kb/ folder",
            )
        stem = Path(name).stem
        return kb_import_seed002(
            seed002.parse_directory(base), slug=slug, title=title, origin=name, fallback_title=stem
        )


def kb_import_json(
    text: str | bytes, *, name: str, slug: str | None = None, title: str | None = None
) -> KnowledgeBase:
    """Import a seed-004 data KB from its JSON text, or its bytes (decoded as strict UTF-8)."""
    data, problems = seed004.parse_json(text, name)
    problems += _slug_problems(slug, name) if slug else []
    problems += _title_problems(title, name)
    if problems or data is None:
        raise ImportRefused(problems)
    meta = data.get("meta", {})
    meta_title = str(meta.get("title") or Path(name).stem.replace("-", " ").capitalize())

    def fill() -> KnowledgeBase:
        return KnowledgeBase.objects.create(
            slug=slug or _unique_slug(Path(name).stem),
            title=title or meta_title[: limits.TITLE_MAX_LENGTH],
            kind=KnowledgeBase.DATA,
            data=data,
            stable_detected=True,
            stable_statement="Data KBs are snapshots of data; there is no graph to stabilise.",
            imported_from=name[:500],
        )

    return _kb_create(name, slug, fill)


def _argument_row(a: seed002.ParsedArgument) -> Argument:
    return Argument(
        arg_id=str(a.frontmatter["id"]),
        slug=str(a.frontmatter["slug"]),
        position=str(a.frontmatter["position"]),
        layer=str(a.frontmatter["layer"]),
        scope=str(a.frontmatter["scope"]),
        basis_type=str(a.frontmatter["basis_type"]),
        status=str(a.frontmatter["status"]),
        asserter=str(a.frontmatter["asserter"]),
        summary=str(a.frontmatter["summary"]),
        extra_frontmatter={k: v for k, v in a.frontmatter.items() if k not in ARGUMENT_ORDER},
        title=a.title,
        extra_sections=a.extra_sections,
        **a.sections,
    )


def _source_row(s: seed002.ParsedSource) -> Source:
    return Source(
        path=s.path,
        frontmatter=s.frontmatter,
        frontmatter_order=list(s.frontmatter),
        title=s.title,
        fields=s.fields,
        body=s.body,
    )


def _entity_row(e: seed002.ParsedEntity) -> Entity:
    return Entity(path=e.path, frontmatter=e.frontmatter, frontmatter_order=list(e.frontmatter), body=e.body)


def _contradiction_row(c: seed002.ParsedContradiction) -> Contradiction:
    fields = dict(c.fields)
    return Contradiction(
        c_id=c.c_id,
        title=c.title,
        type=fields.get("Type", ""),
        status=fields.get("Status", ""),
        fields=c.fields,
    )


def _revision_row(r: seed002.ParsedRevision) -> Revision:
    return Revision(
        r_id=r.r_id,
        heading=r.heading,
        type=r.fields.get("Type", ""),
        target=r.fields.get("Target", ""),
        change=r.fields.get("Change", ""),
        justification=r.fields.get("Justification", ""),
        triggered_by=r.fields.get("Triggered by", ""),
    )


def kb_import_seed002(
    parsed: seed002.ParsedKB,
    *,
    slug: str | None,
    title: str | None,
    origin: str,
    fallback_title: str | None = None,
) -> KnowledgeBase:
    """Create the KB from a parse; the text of every file parsed is kept (OriginalFile) for kb_files."""
    problems = list(parsed.problems)
    problems += _slug_problems(slug, origin) if slug else []
    problems += _title_problems(title, origin)
    if problems:
        raise ImportRefused(problems)
    arguments = [(_argument_row(a), a.path, a.id_line) for a in parsed.arguments]
    sources = [(_source_row(s), s.path, 1) for s in parsed.sources]
    entities = [(_entity_row(e), e.path, 1) for e in parsed.entities]
    edges = [
        (Edge(order=n, src=e.src, type=e.type, target=e.target, comment=e.comment), "kb/edges.md", e.line)
        for n, e in enumerate(parsed.edges)
    ]
    contradictions = [(_contradiction_row(c), "kb/contradictions.md", c.line) for c in parsed.contradictions]
    questions = [
        (CentralQuestion(order=n, text=text, arg_ids=ids), "kb/quality-summary.md", 1)
        for n, (text, ids) in enumerate(parsed.central_questions)
    ]
    revisions = [(_revision_row(r), "kb/revisions.md", r.line) for r in parsed.revisions]
    originals = [(OriginalFile(path=rel, text=text), rel, 1) for rel, text in parsed.files.items()]
    groups: list[list[Any]] = [
        arguments,
        sources,
        entities,
        edges,
        contradictions,
        questions,
        revisions,
        originals,
    ]
    problems = _column_problems(row for group in groups for row in group)
    if problems:
        raise ImportRefused(problems)
    kb_title = title or _title_from(parsed, fallback_title or origin)

    def fill() -> KnowledgeBase:
        kb = KnowledgeBase.objects.create(
            slug=slug or _unique_slug(kb_title),
            title=kb_title,
            kind=KnowledgeBase.GRAPH,
            quality_summary=parsed.quality_summary,
            stable_detected=bool(parsed.stable_statement),
            stable_statement=parsed.stable_statement,
            log=parsed.log,
            imported_from=origin[:500],
        )
        for group in groups:
            rows = [row for row, _, _ in group]
            for row in rows:
                row.kb = kb
            if rows:
                type(rows[0]).objects.bulk_create(rows)
        return kb

    return _kb_create(origin, slug, fill)


# --- export --------------------------------------------------------------------------------------------------
#
# A KB imported from files keeps their text (OriginalFile). Its export is that text for everything a debate did not
# change, and the text with the change edited in where it did (kb/formats/seed002_edit.py): an argument's status
# line and its index row, an appended edge line, a criticism, a revisions entry. What changed is found by parsing
# the kept text again and comparing with the rows now. A KB made otherwise (a data KB, a KB built in code) and any
# file a KB did not have (a new node) are generated by the writers of kb/formats/seed002.py.


def _ordered(frontmatter: dict[str, Any], order: list[str]) -> dict[str, Any]:
    # the order the file had: a jsonb column (PostgreSQL) gives keys back in its own order
    keys = [k for k in order if k in frontmatter] + [k for k in frontmatter if k not in order]
    return {k: frontmatter[k] for k in keys}


def argument_frontmatter(argument: Argument) -> dict[str, Any]:
    data = {key: getattr(argument, "arg_id" if key == "id" else key) for key in ARGUMENT_ORDER}
    return {**data, **argument.extra_frontmatter}


def argument_file(argument: Argument) -> str:
    sections = {name: getattr(argument, name) for name, _ in ARGUMENT_SECTIONS}
    return seed002.argument_text(
        argument_frontmatter(argument), argument.title, sections, argument.extra_sections
    )


def _source_file(source: Source) -> str:
    return seed002.source_text(
        _ordered(source.frontmatter, source.frontmatter_order), source.title, source.fields, source.body
    )


def _entity_file(entity: Entity) -> str:
    return seed002.entity_text(_ordered(entity.frontmatter, entity.frontmatter_order), entity.body)


def _edge_rows(kb: KnowledgeBase) -> list[tuple[str, str, str, str]]:
    return [(e.src, e.type, e.target, e.comment) for e in kb.edges.all()]


def _contradiction_items(rows: Iterable[Contradiction]) -> list[tuple[str, str, list[list[str]]]]:
    return [(c.c_id, c.title, [list(f) for f in c.fields]) for c in rows]


def _revision_items(rows: Iterable[Revision]) -> list[tuple[str, str, list[list[str]]]]:
    return [
        (
            r.r_id,
            r.heading,
            [
                ["Type", r.type],
                ["Target", r.target],
                ["Change", r.change],
                ["Justification", r.justification],
                ["Triggered by", r.triggered_by],
            ],
        )
        for r in rows
    ]


def _argument_index(arguments: list[Argument]) -> str:
    return seed002.index_table(
        "Arguments",
        ["id", "status", "position", "layer", "summary"],
        [[a.arg_id, a.status, a.position, a.layer, a.summary] for a in arguments],
    )


def _source_index(sources: list[Source]) -> str:
    return seed002.index_table(
        "Sources",
        ["path", "type", "key finding"],
        [
            [s.path, str(s.frontmatter.get("source_type", "")), str(s.frontmatter.get("key_finding", ""))]
            for s in sources
        ],
    )


def _entity_index(entities: list[Entity]) -> str:
    return seed002.index_table(
        "Entities",
        ["id", "name", "type", "summary"],
        [[str(e.frontmatter.get(k, "")) for k in ("id", "name", "type", "summary")] for e in entities],
    )


def _files_generated(kb: KnowledgeBase) -> dict[str, str]:
    """The files of a KB that was not imported from files: everything written from the rows, indexes rebuilt."""
    files: dict[str, str] = {}
    arguments = list(kb.arguments.all())
    for argument in arguments:
        files[f"kb/arguments/{argument.filename}"] = argument_file(argument)
    files["kb/arguments/index.md"] = _argument_index(arguments)
    sources = list(kb.sources.all())
    for source in sources:
        files[source.path] = _source_file(source)
    files["kb/sources/index.md"] = _source_index(sources)
    entities = list(kb.entities.all())
    for entity in entities:
        files[entity.path] = _entity_file(entity)
    if entities:
        files["kb/entities/index.md"] = _entity_index(entities)
    files["kb/edges.md"] = seed002.edges_text(_edge_rows(kb))
    files["kb/contradictions.md"] = seed002.contradictions_text(_contradiction_items(kb.contradictions.all()))
    files["kb/quality-summary.md"] = kb.quality_summary + "\n"
    if kb.log:
        files["kb/log.md"] = kb.log + "\n"
    revisions = list(kb.revisions.all())
    if revisions:
        files["kb/revisions.md"] = seed002.revisions_text(_revision_items(revisions))
    return files


def _json_same(value: Any) -> Any:
    """A value as a JSON column gives it back (integer keys become strings, tuples lists)."""
    return json.loads(json.dumps(value))


def _row_value(row: models.Model, name: str) -> Any:
    if isinstance(row, (Source, Entity)) and name == "frontmatter_order":
        return list(_ordered(row.frontmatter, row.frontmatter_order))  # the order written: unnamed keys last
    return _json_same(getattr(row, name))


def _row_same(before: models.Model, now: models.Model, names: Iterable[str]) -> bool:
    return all(_row_value(before, name) == _row_value(now, name) for name in names)


ARGUMENT_COMPARED = [
    "arg_id",
    *(key for key in ARGUMENT_ORDER if key != "id"),
    "extra_frontmatter",
    "title",
    *(name for name, _ in ARGUMENT_SECTIONS),
    "extra_sections",
]
SOURCE_COMPARED = ["path", "frontmatter", "frontmatter_order", "title", "fields", "body"]
ENTITY_COMPARED = ["path", "frontmatter", "frontmatter_order", "body"]


def _argument_parts(argument: Argument) -> seed002_edit.ArgumentParts:
    return seed002_edit.ArgumentParts(
        frontmatter=_json_same(argument_frontmatter(argument)),
        title=argument.title,
        sections={name: getattr(argument, name) for name, _ in ARGUMENT_SECTIONS},
        extra=_json_same(argument.extra_sections),
    )


def _edited(
    rel: str, raw: str, edit: Callable[[str], str | None], check: Callable[[Any], bool], fallback: str
) -> str:
    """The file `rel` (its kept text `raw`) with a change edited in, if the edited text parses back to the rows
    now (`check`); else `fallback`, the file regenerated. Line endings as the kept file's."""
    text, crlf = seed002_edit.normalized(raw)
    edited = edit(text)
    if edited is not None:
        node, problems = seed002.parse_file(rel, edited)
        if node is not None and not problems and check(node):
            return seed002_edit.restored(edited, crlf)
    return seed002_edit.restored(fallback, crlf)


def _argument_edited(rel: str, raw: str, before: Argument, now: Argument) -> str:
    return _edited(
        rel,
        raw,
        lambda text: seed002_edit.argument_edit(text, _argument_parts(before), _argument_parts(now)),
        lambda node: _row_same(_argument_row(node), now, ARGUMENT_COMPARED),
        argument_file(now),
    )


def _source_edited(raw: str, before: Source, now: Source) -> str:
    return _edited(
        now.path,
        raw,
        lambda text: seed002_edit.source_edit(
            text,
            _json_same(_ordered(before.frontmatter, before.frontmatter_order)),
            _json_same(_ordered(now.frontmatter, now.frontmatter_order)),
            (before.title, _json_same(before.fields), before.body),
            (now.title, _json_same(now.fields), now.body),
        ),
        lambda node: _row_same(_source_row(node), now, SOURCE_COMPARED),
        _source_file(now),
    )


def _entity_edited(raw: str, before: Entity, now: Entity) -> str:
    return _edited(
        now.path,
        raw,
        lambda text: seed002_edit.entity_edit(
            text,
            _json_same(_ordered(before.frontmatter, before.frontmatter_order)),
            _json_same(_ordered(now.frontmatter, now.frontmatter_order)),
            before.body,
            now.body,
        ),
        lambda node: _row_same(_entity_row(node), now, ENTITY_COMPARED),
        _entity_file(now),
    )


def _index_value(value: Any) -> str:
    return "" if value is None else str(value)


def _argument_record(argument: Argument, name: str) -> seed002_edit.IndexRecord:
    values = {key: str(getattr(argument, key)) for key in ARGUMENT_ORDER if key != "id"}
    values.update(key=argument.arg_id, file=name, title=argument.title)
    return seed002_edit.IndexRecord({argument.arg_id}, values)


def _source_record(source: Source) -> seed002_edit.IndexRecord:
    rel = source.path.removeprefix("kb/sources/")
    keys = ["title", "source_type", "year", "key_finding", "doi", "url", "journal_or_source", "date_accessed"]
    values = {key: _index_value(source.frontmatter.get(key)) for key in keys}
    values.update(key=rel, file=rel)
    return seed002_edit.IndexRecord({rel, f"sources/{rel}", source.path}, values)


def _entity_record(entity: Entity) -> seed002_edit.IndexRecord:
    name = entity.path.rsplit("/", 1)[-1]
    values = {key: _index_value(entity.frontmatter.get(key)) for key in ["name", "type", "summary", "slug"]}
    entity_id = _index_value(entity.frontmatter.get("id"))
    values.update(key=entity_id, file=name)
    return seed002_edit.IndexRecord({entity_id, name, f"entities/{name}", entity.path}, values)


def _index_file(
    raw: str,
    kind: seed002_edit.IndexKind,
    records: list[tuple[seed002_edit.IndexRecord | None, seed002_edit.IndexRecord]],
    fallback: Callable[[], str],
) -> str:
    """A kept index file with the rows of changed nodes updated and rows for new nodes added; regenerated by
    `fallback` when that cannot be done in place. `records` pairs each node as it was (None: new) with now."""
    changed = [(before, now) for before, now in records if before is not None and before.values != now.values]
    added = [now for before, now in records if before is None]
    if not changed and not added:
        return raw
    text, crlf = seed002_edit.normalized(raw)
    existing = [before for before, _ in records if before is not None]
    edited = seed002_edit.index_edit(text, kind, existing, changed, added)
    return seed002_edit.restored(edited if edited is not None else fallback(), crlf)


def _log_file(
    originals: dict[str, str],
    rel: str,
    before: list[Any],
    now: list[Any],
    edit: Callable[[str], str | None],
    reparse: Callable[[seed002.ParsedKB], list[Any]],
    generate: Callable[[], str],
) -> str | None:
    """edges.md, contradictions.md or revisions.md: kept as it was, edited (checked by parsing it again), or
    generated; None when the KB has none and never had."""
    if rel not in originals:
        return generate() if now else None
    if before == now:
        return originals[rel]
    text, crlf = seed002_edit.normalized(originals[rel])
    edited = edit(text) if text.strip() else None
    if edited is not None and reparse(seed002.parse_texts({rel: edited})) == now:
        return seed002_edit.restored(edited, crlf)
    return seed002_edit.restored(generate(), crlf)


def _files_kept(kb: KnowledgeBase, originals: dict[str, str]) -> dict[str, str]:
    """The files of a KB imported from files: the kept text, with what changed since edited in."""
    baseline = seed002.parse_texts(originals)
    files = dict(originals)

    arguments = list(kb.arguments.all())
    parsed_arguments = {str(a.frontmatter["id"]): a for a in baseline.arguments}
    argument_records: list[tuple[seed002_edit.IndexRecord | None, seed002_edit.IndexRecord]] = []
    for argument in arguments:
        parsed = parsed_arguments.get(argument.arg_id)
        if parsed is None:
            files[f"kb/arguments/{argument.filename}"] = argument_file(argument)
            argument_records.append((None, _argument_record(argument, argument.filename)))
            continue
        before, name = _argument_row(parsed), parsed.path.rsplit("/", 1)[-1]
        argument_records.append((_argument_record(before, name), _argument_record(argument, name)))
        if not _row_same(before, argument, ARGUMENT_COMPARED):
            files[parsed.path] = _argument_edited(parsed.path, originals[parsed.path], before, argument)
    if "kb/arguments/index.md" in originals:
        files["kb/arguments/index.md"] = _index_file(
            originals["kb/arguments/index.md"],
            seed002_edit.ARGUMENT_INDEX,
            argument_records,
            lambda: _argument_index(arguments),
        )

    sources = list(kb.sources.all())
    parsed_sources = {s.path: s for s in baseline.sources}
    source_records: list[tuple[seed002_edit.IndexRecord | None, seed002_edit.IndexRecord]] = []
    for source in sources:
        parsed_source = parsed_sources.get(source.path)
        if parsed_source is None:
            files[source.path] = _source_file(source)
            source_records.append((None, _source_record(source)))
            continue
        had_source = _source_row(parsed_source)
        source_records.append((_source_record(had_source), _source_record(source)))
        if not _row_same(had_source, source, SOURCE_COMPARED):
            files[source.path] = _source_edited(originals[source.path], had_source, source)
    if "kb/sources/index.md" in originals:
        files["kb/sources/index.md"] = _index_file(
            originals["kb/sources/index.md"],
            seed002_edit.SOURCE_INDEX,
            source_records,
            lambda: _source_index(sources),
        )

    entities = list(kb.entities.all())
    parsed_entities = {e.path: e for e in baseline.entities}
    entity_records: list[tuple[seed002_edit.IndexRecord | None, seed002_edit.IndexRecord]] = []
    for entity in entities:
        parsed_entity = parsed_entities.get(entity.path)
        if parsed_entity is None:
            files[entity.path] = _entity_file(entity)
            entity_records.append((None, _entity_record(entity)))
            continue
        had_entity = _entity_row(parsed_entity)
        entity_records.append((_entity_record(had_entity), _entity_record(entity)))
        if not _row_same(had_entity, entity, ENTITY_COMPARED):
            files[entity.path] = _entity_edited(originals[entity.path], had_entity, entity)
    if "kb/entities/index.md" in originals:
        files["kb/entities/index.md"] = _index_file(
            originals["kb/entities/index.md"],
            seed002_edit.ENTITY_INDEX,
            entity_records,
            lambda: _entity_index(entities),
        )

    edges_before = [(e.src, e.type, e.target, e.comment) for e in baseline.edges]
    edges_now = _edge_rows(kb)
    logs: list[tuple[str, str | None]] = [
        (
            "kb/edges.md",
            _log_file(
                originals,
                "kb/edges.md",
                edges_before,
                edges_now,
                lambda text: seed002_edit.edges_append(text, baseline.edges, edges_now),
                lambda parsed: [(e.src, e.type, e.target, e.comment) for e in parsed.edges],
                lambda: seed002.edges_text(edges_now),
            ),
        )
    ]
    contradictions_before = _contradiction_items(_contradiction_row(c) for c in baseline.contradictions)
    contradictions_now = _contradiction_items(kb.contradictions.all())
    logs.append(
        (
            "kb/contradictions.md",
            _log_file(
                originals,
                "kb/contradictions.md",
                sorted(contradictions_before),
                sorted(contradictions_now),
                lambda text: seed002_edit.contradictions_edit(
                    text, contradictions_before, contradictions_now
                ),
                lambda parsed: sorted(
                    _contradiction_items(_contradiction_row(c) for c in parsed.contradictions)
                ),
                lambda: seed002.contradictions_text(contradictions_now),
            ),
        )
    )
    revisions_before = _revision_items(_revision_row(r) for r in baseline.revisions)
    revisions_now = _revision_items(kb.revisions.all())

    def revisions_append(text: str) -> str | None:
        had = {item[0]: item for item in revisions_before}
        now = {item[0]: item for item in revisions_now}
        if any(now.get(r_id) != item for r_id, item in had.items()):
            return None  # the log is append-only: an entry that changed is regenerated with the file
        added = [seed002_edit.revision_block(*item) for item in revisions_now if item[0] not in had]
        return seed002_edit.blocks_append(text, added)

    logs.append(
        (
            "kb/revisions.md",
            _log_file(
                originals,
                "kb/revisions.md",
                sorted(revisions_before),
                sorted(revisions_now),
                revisions_append,
                lambda parsed: sorted(_revision_items(_revision_row(r) for r in parsed.revisions)),
                lambda: seed002.revisions_text(revisions_now),
            ),
        )
    )
    for rel, text in logs:
        if text is not None:
            files[rel] = text
    for rel, current, imported in [
        ("kb/quality-summary.md", kb.quality_summary, baseline.quality_summary),
        ("kb/log.md", kb.log, baseline.log),
    ]:
        if current != imported and (current or rel in originals):
            crlf = seed002_edit.normalized(originals.get(rel, ""))[1]
            files[rel] = seed002_edit.restored(current + "\n", crlf)
    return files


def kb_files(kb: KnowledgeBase) -> dict[str, str]:
    """The KB as seed-002 files, {relative path: text}. A KB imported from files gives back their text, byte for
    byte, with what a debate changed edited into it; any other KB is written out, its index files rebuilt."""
    if kb.kind == KnowledgeBase.DATA:
        return {f"{kb.slug}.json": json.dumps(kb.data, indent=2, ensure_ascii=False) + "\n"}
    originals = dict(kb.original_files.values_list("path", "text"))
    if not originals:
        return _files_generated(kb)
    return _files_kept(kb, originals)


def kb_export(kb: KnowledgeBase, out: Path) -> list[Path]:
    """Write kb_files under `out`, as UTF-8 bytes exactly (no newline translation)."""
    written = []
    for rel, text in kb_files(kb).items():
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
        written.append(target)
    return written


def kb_positions(kb: KnowledgeBase) -> list[str]:
    """The debating positions: pro-X / con-X labels found on arguments (usually two)."""
    labels = kb.arguments.values_list("position", flat=True).distinct()
    return sorted({p for p in labels if re.match(r"^(pro|con)-", p)})


def kb_material_text(kb: KnowledgeBase) -> str:
    """The KB as material for agents: one sentence per argument with its id and rating, or the data tree."""
    if kb.kind == KnowledgeBase.DATA:
        return json.dumps(kb.data, indent=1, ensure_ascii=False)
    lines = [
        f"{a.arg_id} ({a.status}, {a.position}, {a.layer}): {a.statement.strip().rstrip('.')}."
        for a in kb.arguments.all()
    ]
    return "\n".join(lines)


def kb_graph_material_text(kb: KnowledgeBase) -> str:
    """An argument graph as material for the agents that argue over it, what seed 002's debaters read before their
    first turn: the argument index (kb_material_text), the typed edges, the contradictions and the quality summary
    (central questions, engagement asymmetries, the shape of the graph). A data KB is its tree."""
    if kb.kind == KnowledgeBase.DATA:
        return kb_material_text(kb)
    edges = [
        f"{e.src} {e.type} {e.target}" + (f" — {' '.join(e.comment.split())}" if e.comment.strip() else "")
        for e in kb.edges.all()
    ]
    contradictions = []
    for c in kb.contradictions.all():
        contradictions.append(f"{c.c_id}: {' '.join(c.title.split())}")
        contradictions += [f"  {label}: {' '.join(str(value).split())}" for label, value in c.fields]
    parts = [
        ("Arguments (kb/arguments/index.md): id (rating, position, layer): statement", kb_material_text(kb)),
        ("Edges (kb/edges.md): source, edge type, target — comment", "\n".join(edges)),
        ("Contradictions (kb/contradictions.md)", "\n".join(contradictions)),
        ("Quality summary (kb/quality-summary.md)", kb.quality_summary.strip()),
    ]
    return "\n\n".join(f"## {title}\n{text or '(none)'}" for title, text in parts)
