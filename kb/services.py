"""Import and export of knowledge bases. Import is all or nothing: every problem is reported with its file and
line, and a KB with any problem is not imported at all."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from kb.formats import seed002, seed004
from kb.formats.problems import ImportRefused, Problem
from kb.models import (
    ARGUMENT_SECTIONS,
    Argument,
    CentralQuestion,
    Contradiction,
    Edge,
    Entity,
    KnowledgeBase,
    Revision,
    Source,
)

ARGUMENT_ORDER = seed002.ARGUMENT_FIELDS


def _unique_slug(base: str) -> str:
    slug = slugify(base)[:90] or "kb"
    candidate, n = slug, 2
    while KnowledgeBase.objects.filter(slug=candidate).exists():
        candidate, n = f"{slug}-{n}", n + 1
    return candidate


def _title_from(parsed: seed002.ParsedKB, fallback: str) -> str:
    for line in parsed.quality_summary.split("\n"):
        if line.startswith("# "):
            title = re.sub(
                r"^(kb\s+)?quality\s+summary\s*[:—–-]?\s*", "", line[2:].strip(), flags=re.IGNORECASE
            )
            return title or fallback
    return fallback


def kb_import_path(path: Path, *, slug: str | None = None, title: str | None = None) -> KnowledgeBase:
    """Import a seed-002 kb/ directory (or run directory), a zip of one, or a seed-004 JSON file."""
    if path.is_dir():
        return kb_import_seed002(seed002.parse_directory(path), slug=slug, title=title, origin=str(path.name))
    if path.suffix.lower() == ".zip":
        return kb_import_zip(path.read_bytes(), name=path.name, slug=slug, title=title)
    if path.suffix.lower() == ".json":
        return kb_import_json(path.read_text(encoding="utf-8"), name=path.name, slug=slug, title=title)
    raise ImportRefused(
        [Problem(str(path), 1, "expected a kb/ directory, a .zip of one, or a .json data KB")]
    )


def kb_import_zip(
    content: bytes, *, name: str, slug: str | None = None, title: str | None = None
) -> KnowledgeBase:
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except zipfile.BadZipFile:
        raise ImportRefused([Problem(name, 1, "not a zip archive")]) from None
    with TemporaryDirectory() as tmp, archive:
        root = Path(tmp).resolve()
        for member in archive.namelist():
            target = (root / member).resolve()
            if not target.is_relative_to(root):
                raise ImportRefused([Problem(name, 1, f"unsafe path in archive: {member}")])
        archive.extractall(root)
        candidates = [p.parent for p in root.rglob("quality-summary.md")] or [
            p.parent for p in root.rglob("arguments") if p.is_dir()
        ]
        base = candidates[0] if candidates else root
        stem = Path(name).stem
        return kb_import_seed002(
            seed002.parse_directory(base), slug=slug, title=title, origin=name, fallback_title=stem
        )


def kb_import_json(
    text: str, *, name: str, slug: str | None = None, title: str | None = None
) -> KnowledgeBase:
    data, problems = seed004.parse_json(text, name)
    if problems or data is None:
        raise ImportRefused(problems)
    meta = data.get("meta", {})
    with transaction.atomic():
        return KnowledgeBase.objects.create(
            slug=slug or _unique_slug(Path(name).stem),
            title=title or str(meta.get("title") or Path(name).stem.replace("-", " ").capitalize()),
            kind=KnowledgeBase.DATA,
            data=data,
            stable_detected=True,
            stable_statement="Data KBs are snapshots of data; there is no graph to stabilise.",
            imported_from=name,
        )


def kb_import_seed002(
    parsed: seed002.ParsedKB,
    *,
    slug: str | None,
    title: str | None,
    origin: str,
    fallback_title: str | None = None,
) -> KnowledgeBase:
    if parsed.problems:
        raise ImportRefused(parsed.problems)
    if slug and KnowledgeBase.objects.filter(slug=slug).exists():
        raise ImportRefused([Problem(origin, 1, f"a knowledge base with the slug '{slug}' exists already")])
    with transaction.atomic():
        kb = KnowledgeBase.objects.create(
            slug=slug or _unique_slug(title or _title_from(parsed, fallback_title or origin)),
            title=title or _title_from(parsed, fallback_title or origin),
            kind=KnowledgeBase.GRAPH,
            quality_summary=parsed.quality_summary,
            stable_detected=bool(parsed.stable_statement),
            stable_statement=parsed.stable_statement,
            log=parsed.log,
            imported_from=origin,
        )
        Argument.objects.bulk_create(
            Argument(
                kb=kb,
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
            for a in parsed.arguments
        )
        Source.objects.bulk_create(
            Source(
                kb=kb,
                path=s.path,
                frontmatter=s.frontmatter,
                frontmatter_order=list(s.frontmatter),
                title=s.title,
                fields=s.fields,
                body=s.body,
            )
            for s in parsed.sources
        )
        Entity.objects.bulk_create(
            Entity(
                kb=kb,
                path=e.path,
                frontmatter=e.frontmatter,
                frontmatter_order=list(e.frontmatter),
                body=e.body,
            )
            for e in parsed.entities
        )
        Edge.objects.bulk_create(
            Edge(kb=kb, order=n, src=e.src, type=e.type, target=e.target, comment=e.comment)
            for n, e in enumerate(parsed.edges)
        )
        Contradiction.objects.bulk_create(
            Contradiction(
                kb=kb,
                c_id=c.c_id,
                title=c.title,
                type=dict(c.fields).get("Type", ""),
                status=dict(c.fields).get("Status", ""),
                fields=c.fields,
            )
            for c in parsed.contradictions
        )
        CentralQuestion.objects.bulk_create(
            CentralQuestion(kb=kb, order=n, text=text, arg_ids=ids)
            for n, (text, ids) in enumerate(parsed.central_questions)
        )
        Revision.objects.bulk_create(
            Revision(
                kb=kb,
                r_id=r.r_id,
                heading=r.heading,
                type=r.fields.get("Type", ""),
                target=r.fields.get("Target", ""),
                change=r.fields.get("Change", ""),
                justification=r.fields.get("Justification", ""),
                triggered_by=r.fields.get("Triggered by", ""),
            )
            for r in parsed.revisions
        )
    return kb


# --- export --------------------------------------------------------------------------------------------------


def _ordered(frontmatter: dict[str, Any], order: list[str]) -> dict[str, Any]:
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


def kb_files(kb: KnowledgeBase) -> dict[str, str]:
    """The KB as seed-002 files, {relative path: text}; index files rebuilt from the nodes."""
    if kb.kind == KnowledgeBase.DATA:
        return {f"{kb.slug}.json": json.dumps(kb.data, indent=2, ensure_ascii=False) + "\n"}
    files: dict[str, str] = {}
    arguments = list(kb.arguments.all())
    for argument in arguments:
        files[f"kb/arguments/{argument.filename}"] = argument_file(argument)
    files["kb/arguments/index.md"] = seed002.index_table(
        "Arguments",
        ["id", "status", "position", "layer", "summary"],
        [[a.arg_id, a.status, a.position, a.layer, a.summary] for a in arguments],
    )
    sources = list(kb.sources.all())
    for source in sources:
        files[source.path] = seed002.source_text(
            _ordered(source.frontmatter, source.frontmatter_order), source.title, source.fields, source.body
        )
    files["kb/sources/index.md"] = seed002.index_table(
        "Sources",
        ["path", "type", "key finding"],
        [
            [s.path, str(s.frontmatter.get("source_type", "")), str(s.frontmatter.get("key_finding", ""))]
            for s in sources
        ],
    )
    entities = list(kb.entities.all())
    for entity in entities:
        files[entity.path] = seed002.entity_text(
            _ordered(entity.frontmatter, entity.frontmatter_order), entity.body
        )
    if entities:
        files["kb/entities/index.md"] = seed002.index_table(
            "Entities",
            ["id", "name", "type", "summary"],
            [[str(e.frontmatter.get(k, "")) for k in ("id", "name", "type", "summary")] for e in entities],
        )
    files["kb/edges.md"] = seed002.edges_text([(e.src, e.type, e.target, e.comment) for e in kb.edges.all()])
    files["kb/contradictions.md"] = seed002.contradictions_text(
        [(c.c_id, c.title, c.fields) for c in kb.contradictions.all()]
    )
    files["kb/quality-summary.md"] = kb.quality_summary + "\n"
    if kb.log:
        files["kb/log.md"] = kb.log + "\n"
    revisions = list(kb.revisions.all())
    if revisions:
        files["kb/revisions.md"] = seed002.revisions_text(
            [
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
                for r in revisions
            ]
        )
    return files


def kb_export(kb: KnowledgeBase, out: Path) -> list[Path]:
    written = []
    for rel, text in kb_files(kb).items():
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
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
