"""The KB discipline of seed 002 — the only code that changes a knowledge base after import.

Status only moves down robust > strong > contested > weak > refuted|baseless; nothing is deleted; a Statement is
never rewritten (a refinement is a new node plus a `refines` edge); new nodes enter at contested or lower with
`asserter: derived-during-debate-by-<handle>`; a new source is filed under kb/sources/agents/<handle>/, never over
a source the KB holds, and always waits for a person's approval; the snapshot taken when a debate starts is never
written; every applied change writes an R-NNN revision naming the turn that triggered it and quoting its words. A
forbidden proposal is refused with the rule it breaks and kept as a finding."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.db.models.signals import pre_delete, pre_save
from django.dispatch import receiver
from django.utils import timezone
from django.utils.text import slugify

from kb.models import (
    BASIS_TYPES,
    CONTRADICTION_TYPES,
    EDGE_TYPES,
    LAYERS,
    SOURCE_TYPES,
    STATUS_RANK,
    STATUSES,
    Argument,
    Contradiction,
    Edge,
    Entity,
    KnowledgeBase,
    MutationKind,
    MutationStatus,
    OriginalFile,
    ProposedMutation,
    Revision,
    Snapshot,
    Source,
)
from kb.services import kb_files

NEW_NODE_MAX_RANK = STATUS_RANK["contested"]
# The revision each applied kind writes (a traceback is logged as a criticism).
REVISION_TYPES: dict[str, str] = {
    MutationKind.STATUS_DOWNGRADE: "status-downgrade",
    MutationKind.NEW_EDGE: "new-edge",
    MutationKind.NEW_NODE: "new-node",
    MutationKind.NEW_SOURCE: "new-source",
    MutationKind.CRITICISM_APPEND: "criticism-append",
    MutationKind.TRACEBACK_APPEND: "criticism-append",
    MutationKind.CONTRADICTION_ADDED: "contradiction-added",
}


# The changes that wait for a person even in a run that applies proposals without the inbox: the app fetches
# nothing, so someone checks a new source against the original (that it exists, says what is claimed) first.
NEEDS_A_PERSON = frozenset({MutationKind.NEW_SOURCE})
# Where the sources a debater brings are filed: kb/sources/agents/<handle>/<slug>.md (seed 002).
AGENT_SOURCES = "kb/sources/agents"
HANDLE = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")
SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SLUG_MAX = 80
# Words a source's file name leaves out of its brief topic.
TOPIC_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "as",
        "at",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "of",
        "on",
        "or",
        "the",
        "to",
        "with",
    ]
)


class DisciplineViolation(Exception):
    """A change the discipline forbids; the message names the rule."""


# --- guards below the services: the ORM refuses deletes, statement rewrites and snapshot writes -------------------


@receiver(pre_delete, sender=Argument)
@receiver(pre_delete, sender=Source)
@receiver(pre_delete, sender=Edge)
@receiver(pre_delete, sender=Entity)
@receiver(pre_delete, sender=Contradiction)
@receiver(pre_delete, sender=Revision)
@receiver(pre_delete, sender=Snapshot)
@receiver(pre_delete, sender=OriginalFile)
@receiver(pre_delete, sender=KnowledgeBase)
def _refuse_delete(sender: type, instance: Any, **kwargs: Any) -> None:
    raise DisciplineViolation(f"Nothing in a knowledge base is ever deleted ({sender.__name__} {instance}).")


@receiver(pre_save, sender=Argument)
def _refuse_statement_rewrite(sender: type, instance: Argument, **kwargs: Any) -> None:
    if instance.pk is None or kwargs.get("raw"):
        return
    stored = Argument.objects.filter(pk=instance.pk).values_list("statement", flat=True).first()
    if stored is not None and stored != instance.statement:
        raise DisciplineViolation(
            f"The Statement of {instance.arg_id} is never rewritten: propose a new node with a refines edge."
        )


@receiver(pre_save, sender=Snapshot)
def _refuse_snapshot_write(sender: type, instance: Snapshot, **kwargs: Any) -> None:
    if instance.pk is not None and Snapshot.objects.filter(pk=instance.pk).exists():
        stored = Snapshot.objects.filter(pk=instance.pk).values("files", "arguments").get()
        if stored["files"] != instance.files or stored["arguments"] != instance.arguments:
            raise DisciplineViolation("A snapshot is never written after it is taken.")


@receiver(pre_save, sender=OriginalFile)
def _refuse_original_write(sender: type, instance: OriginalFile, **kwargs: Any) -> None:
    if instance.pk is None or kwargs.get("raw"):
        return
    stored = OriginalFile.objects.filter(pk=instance.pk).values_list("path", "text").first()
    if stored is not None and stored != (instance.path, instance.text):
        raise DisciplineViolation(
            f"The imported text of {stored[0]} is never rewritten: an export edits the changes into it."
        )


# --- snapshot ------------------------------------------------------------------------------------------------------


def kb_snapshot_take(*, kb: KnowledgeBase, run: Any = None) -> Snapshot:

    arguments = {
        a.arg_id: {
            "status": a.status,
            "position": a.position,
            "layer": a.layer,
            "scope": a.scope,
            "summary": a.summary,
        }
        for a in kb.arguments.all()
    }
    return Snapshot.objects.create(kb=kb, run=run, files=kb_files(kb), arguments=arguments)


# --- checking proposals --------------------------------------------------------------------------------------------


def new_source_path(payload: dict[str, Any], proposed_by: str) -> str:
    """Where a proposed new source is filed: kb/sources/agents/<handle>/<slug>.md, the slug given or made as the
    construction template names sources, <first-author-or-org>-<year>-<brief-topic>."""
    slug = str(payload.get("slug") or "").strip()
    if not slug:
        authors = [str(a).split() for a in payload.get("authors") or [] if str(a).split()]
        who = authors[0][-1] if authors else " ".join(str(payload.get("journal_or_source") or "").split()[:3])
        words = re.findall(r"\w+", str(payload.get("title", "")).lower())
        topic = [w for w in words if w not in TOPIC_STOP_WORDS][:4]
        slug = slugify(" ".join([who or "source", str(payload.get("year") or ""), *topic]))
        slug = slug.replace("_", "-")[:SLUG_MAX].strip("-") or "source"
    return f"{AGENT_SOURCES}/{proposed_by}/{slug}.md"


def _same_source(kb: KnowledgeBase, doi: str, url: str) -> str:
    """The path of a source the KB holds already with this DOI, or else this URL ("" when none)."""
    doi, url = doi.strip().lower(), url.strip().rstrip("/")
    for source in kb.sources.all():
        held_doi = str(source.frontmatter.get("doi") or "").strip().lower()
        held_url = str(source.frontmatter.get("url") or "").strip().rstrip("/")
        if (doi and held_doi == doi) or (url and held_url == url):
            return source.path
    return ""


def _new_source_violations(kb: KnowledgeBase, payload: dict[str, Any], proposed_by: str) -> list[str]:
    errors = []
    if not HANDLE.match(proposed_by):
        errors.append(f"a new source is filed under {AGENT_SOURCES}/<handle>/: {proposed_by!r} is no handle")
    if not str(payload.get("title", "")).strip():
        errors.append("a new source needs its title")
    if not str(payload.get("key_finding", "")).strip():
        errors.append("a new source needs its key finding")
    if payload.get("source_type") not in SOURCE_TYPES:
        errors.append(
            f"unknown source_type {payload.get('source_type')!r} (allowed: {', '.join(SOURCE_TYPES)})"
        )
    url, doi = str(payload.get("url") or "").strip(), str(payload.get("doi") or "").strip()
    if not url and not doi:
        errors.append("a new source needs the URL it was read at or its DOI")
    if url and not re.match(r"^https?://[^\s/]+\S*$", url):
        errors.append(f"url {url!r} is not an http(s) URL")
    if doi and not re.match(r"^10\.\d{4,9}/\S+$", doi):
        errors.append(f"doi {doi!r} is not a DOI (10.NNNN/...)")
    year = payload.get("year")
    if year not in (None, "") and not re.fullmatch(r"\d{4}", str(year)):
        errors.append(f"year {year!r} is not a year")
    authors = payload.get("authors", [])
    if not isinstance(authors, list) or not all(isinstance(a, str) for a in authors):
        errors.append("authors is a list of names")
    if payload.get("slug") and not SLUG.match(str(payload["slug"])):
        errors.append(f"slug {payload['slug']!r} is not a kebab-case slug")
    if errors:
        return errors
    path = new_source_path(payload, proposed_by)
    if kb.sources.filter(path=path).exists():
        errors.append(f"a source at {path} exists already: nothing is overwritten; cite it instead")
    elif held := _same_source(kb, doi, url):
        errors.append(f"the KB holds this source already ({held}, the same DOI or URL): cite it instead")
    arg_id, note = payload.get("arg_id"), str(payload.get("note") or "").strip()
    if arg_id and _argument(kb, arg_id) is None:
        errors.append(f"no argument {arg_id!r} in this KB")
    if note and not arg_id:
        errors.append("a traceback note needs the argument it is about (arg_id)")
    disputes, criticism = payload.get("disputes"), str(payload.get("criticism") or "").strip()
    if disputes and not kb.sources.filter(path=str(disputes)).exists():
        errors.append(f"no source {disputes!r} in this KB to dispute")
    if criticism and not disputes:
        errors.append("a criticism needs the disputed source it is about (disputes)")
    return errors


def _argument(kb: KnowledgeBase, arg_id: Any) -> Argument | None:
    return kb.arguments.filter(arg_id=str(arg_id)).first()


def mutation_violations(
    *, kb: KnowledgeBase, kind: str, payload: dict[str, Any], proposed_by: str
) -> list[str]:
    """The rules a proposal breaks (empty when it may be applied)."""
    if kind not in MutationKind:
        return [f"unknown kind of change {kind!r}"]
    if kind == MutationKind.DELETE:
        return ["nothing is ever deleted: refuted and baseless nodes stay as a permanent record"]
    if kind == MutationKind.STATEMENT_REWRITE:
        return ["a Statement is never rewritten: propose a new node with a refines edge instead"]
    if kb.kind != KnowledgeBase.GRAPH:
        return ["data KBs are not changed by debates"]
    if kind == MutationKind.STATUS_DOWNGRADE:
        argument = _argument(kb, payload.get("arg_id"))
        new = payload.get("to")
        if argument is None:
            return [f"no argument {payload.get('arg_id')!r} in this KB"]
        if new not in STATUSES:
            return [f"unknown status {new!r}"]
        if new == argument.status:
            return [f"{argument.arg_id} is already {new}"]
        if STATUS_RANK[new] > STATUS_RANK[argument.status]:
            return [
                f"status only moves down: {argument.arg_id} {argument.status} → {new} would be a promotion; "
                "re-run construction instead"
            ]
        return []
    if kind == MutationKind.NEW_EDGE:
        errors = []
        if _argument(kb, payload.get("src")) is None:
            errors.append(f"edge from missing argument {payload.get('src')!r}")
        if payload.get("type") not in EDGE_TYPES:
            errors.append(f"unknown edge type {payload.get('type')!r}")
        target = str(payload.get("target", ""))
        if payload.get("type") == "derived-from-source":
            if not kb.sources.filter(path=target).exists():
                errors.append(f"edge to missing source {target!r}")
        elif _argument(kb, target) is None:
            errors.append(f"edge to missing argument {target!r}")
        return errors
    if kind == MutationKind.NEW_NODE:
        errors = []
        status = payload.get("status", "contested")
        if status not in STATUSES:
            errors.append(f"unknown status {status!r}")
        elif STATUS_RANK[status] > NEW_NODE_MAX_RANK:
            errors.append(f"a new node enters at contested or lower, not {status}")
        refines = payload.get("refines")
        if refines:
            base = _argument(kb, refines)
            if base is None:
                errors.append(f"refines missing argument {refines!r}")
            elif status in STATUS_RANK and STATUS_RANK[status] > STATUS_RANK[base.status]:
                errors.append(f"a refinement may not rank above {base.arg_id} ({base.status})")
        if payload.get("layer") not in LAYERS:
            errors.append(f"unknown layer {payload.get('layer')!r}")
        if payload.get("basis_type", "reasoning") not in BASIS_TYPES:
            errors.append(f"unknown basis_type {payload.get('basis_type')!r}")
        if not str(payload.get("statement", "")).strip():
            errors.append("a new node needs a Statement")
        if not re.match(
            r"^(pro-|con-)[a-z0-9-]+$|^(neutral|factual|meta)$", str(payload.get("position", ""))
        ):
            errors.append(f"unknown position {payload.get('position')!r}")
        asserter = payload.get("asserter")
        if asserter and asserter != f"derived-during-debate-by-{proposed_by}":
            errors.append(f"a debate node's asserter is derived-during-debate-by-{proposed_by}")
        return errors
    if kind == MutationKind.NEW_SOURCE:
        return _new_source_violations(kb, payload, proposed_by)
    if kind == MutationKind.CRITICISM_APPEND:
        if not kb.sources.filter(path=str(payload.get("source", ""))).exists():
            return [f"no source {payload.get('source')!r} in this KB"]
        return [] if str(payload.get("text", "")).strip() else ["nothing to append"]
    if kind == MutationKind.TRACEBACK_APPEND:
        if _argument(kb, payload.get("arg_id")) is None:
            return [f"no argument {payload.get('arg_id')!r} in this KB"]
        return [] if str(payload.get("text", "")).strip() else ["nothing to append"]
    # contradiction-added
    errors = []
    if payload.get("type") not in CONTRADICTION_TYPES:
        errors.append(f"unknown contradiction type {payload.get('type')!r}")
    for arg_id in payload.get("arguments", []):
        if _argument(kb, arg_id) is None:
            errors.append(f"contradiction involves missing argument {arg_id!r}")
    if not str(payload.get("title", "")).strip():
        errors.append("a contradiction needs a title")
    return errors


# --- proposing, deciding, applying -----------------------------------------------------------------------------------


def mutation_propose(
    *,
    kb: KnowledgeBase,
    kind: str,
    payload: dict[str, Any],
    proposed_by: str,
    justification: str = "",
    run: Any = None,
    turn: Any = None,
    auto_approve: bool = False,
) -> ProposedMutation:
    """Queue a proposed change (pending), or refuse it now with the rule it breaks (kept as a finding). With
    `auto_approve` it is applied at once, unless it is of a kind that needs a person (NEEDS_A_PERSON)."""
    violations = mutation_violations(kb=kb, kind=kind, payload=payload, proposed_by=proposed_by)
    mutation = ProposedMutation.objects.create(
        kb=kb,
        run=run,
        turn=turn,
        proposed_by=proposed_by,
        kind=kind,
        payload=payload,
        justification=justification,
        status=MutationStatus.REFUSED if violations else MutationStatus.PENDING,
        reason="; ".join(violations),
    )
    if auto_approve and not violations and kind not in NEEDS_A_PERSON:
        mutation_decide(
            mutation=mutation, approve=True, user=None, reason="auto-approved by the run's settings"
        )
        mutation.refresh_from_db()
    return mutation


def mutation_decide(
    *, mutation: ProposedMutation, approve: bool, user: Any, reason: str = ""
) -> ProposedMutation:
    """A moderator's decision: approve (then apply through the discipline) or reject with a reason."""
    with transaction.atomic():
        mutation = ProposedMutation.objects.select_for_update().get(pk=mutation.pk)
        if mutation.status != MutationStatus.PENDING:
            raise DisciplineViolation(f"This proposal is {mutation.status} already.")
        mutation.decided_by = user if getattr(user, "is_authenticated", False) else None
        mutation.decided_at = timezone.now()
        if not approve:
            if not reason.strip():
                raise DisciplineViolation("Say why the proposal is rejected.")
            mutation.status = MutationStatus.REJECTED
            mutation.reason = reason.strip()
            mutation.save()
            return mutation
        violations = mutation_violations(
            kb=mutation.kb, kind=mutation.kind, payload=mutation.payload, proposed_by=mutation.proposed_by
        )
        if violations:  # the KB changed since it was proposed
            mutation.status = MutationStatus.REFUSED
            mutation.reason = "; ".join(violations)
            mutation.save()
            return mutation
        mutation.revision = _apply(mutation)
        mutation.status = MutationStatus.APPLIED
        mutation.reason = reason.strip()
        mutation.save()
        return mutation


def _next_id(existing: list[str], prefix: str) -> str:
    numbers = [int(m[1]) for value in existing if (m := re.match(rf"^{prefix}-(\d+)$", value))]
    return f"{prefix}-{max(numbers, default=0) + 1:03d}"


# How much of a turn's words "Triggered by" quotes.
TRIGGER_QUOTE_CHARS = 240


def _referents(kind: str, payload: dict[str, Any]) -> list[str]:
    """What a change is about, as a turn's text would name it: argument ids, source paths, a title."""
    keys = ("arg_id", "src", "target", "source", "disputes", "refines", "url", "doi", "title")
    named = [str(payload[key]) for key in keys if payload.get(key)]
    return named + [str(a) for a in payload.get("arguments", []) if a]


def _quote(text: str, referents: list[str]) -> str:
    """The words of `text` that triggered a change: from the first sentence naming one of its referents (else
    from the start), whole sentences while they fit TRIGGER_QUOTE_CHARS, cut at a word with an ellipsis past it."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]
    words = [" ".join(s.split()) for s in sentences]
    start = next((i for i, s in enumerate(words) if any(r in s for r in referents)), 0)
    quote = ""
    for sentence in words[start:]:
        joined = f"{quote} {sentence}".strip()
        if len(joined) > TRIGGER_QUOTE_CHARS:
            if not quote:  # one long sentence: cut at a word
                quote = joined[:TRIGGER_QUOTE_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + " …"
            else:
                quote += " …"
            break
        quote = joined
    return ("… " if start else "") + quote


def _turn_words(turn: Any) -> str:
    """What a turn said: its payload's text (an opening's summary)."""
    payload = turn.payload if isinstance(turn.payload, dict) else {}
    for key in ("text", "summary"):
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def _turn_label(mutation: ProposedMutation) -> tuple[str, str]:
    """('debate turn N' or 'outside a debate', what triggered it: who said what at that turn, quoted)."""
    turn = mutation.turn
    if turn is None:
        return "outside a debate", f"proposal #{mutation.pk} by {mutation.proposed_by}"
    number = turn.run.turns.filter(first_seq__lte=turn.first_seq).count()
    label = f"debate turn {number}"
    words = _turn_words(turn)
    if not words.strip():
        return label, f"{mutation.proposed_by} at {label} (run {turn.run_id}, turn {turn.key})"
    quote = _quote(words, _referents(mutation.kind, dict(mutation.payload)))
    return label, f"{mutation.proposed_by} at {label}: “{quote}”"


def _criticism_add(source: Source, entry: str) -> None:
    """Append `entry` to the source's Criticism field (made when it has none)."""
    fields = [list(f) for f in source.fields]
    for field in fields:
        if field[0] == "Criticism":
            field[1] = (field[1] + "\n  - " + entry) if field[1].strip() else entry
            break
    else:
        fields.append(["Criticism", entry])
    source.fields = fields
    source.save(update_fields=["fields"])


def _new_source_apply(kb: KnowledgeBase, mutation: ProposedMutation, turn_label: str) -> tuple[str, str]:
    """The source-dispute sub-flow of seed 002: the source a debater read is filed under its handle with the
    construction template's fields; the disputed source's Criticism and the new one's record the criticism (both
    ways); the argument whose traceback hinged on it gets a traceback note. (target, change) for the revision."""
    payload, handle = mutation.payload, mutation.proposed_by
    path = new_source_path(payload, handle)
    title = " ".join(str(payload["title"]).split())
    authors = [" ".join(str(a).split()) for a in payload.get("authors") or [] if str(a).strip()]
    year_text = str(payload.get("year") or "").strip()
    year: int | str = int(year_text) if year_text.isdigit() else ""
    journal = " ".join(str(payload.get("journal_or_source") or "").split())
    doi, url = str(payload.get("doi") or "").strip(), str(payload.get("url") or "").strip()
    accessed = timezone.now().date().isoformat()
    disputes, criticism = (
        str(payload.get("disputes") or ""),
        " ".join(str(payload.get("criticism") or "").split()),
    )
    frontmatter: dict[str, Any] = {"title": title}
    if authors:
        frontmatter["authors"] = authors
    if journal:
        frontmatter["journal_or_source"] = journal
    if year:
        frontmatter["year"] = year
    if doi:
        frontmatter["doi"] = doi
    if url:
        frontmatter["url"] = url
    frontmatter |= {
        "date_accessed": accessed,
        "source_type": payload["source_type"],
        "quality_flags": ["debate-proposed"],
        "key_finding": " ".join(str(payload["key_finding"]).split()),
    }
    link = f"https://doi.org/{doi}" if doi else url
    citation = f"{', '.join(authors) or journal or 'Unknown'} ({year or 'n.d.'}). {title}." + (
        f" {journal}." if journal and authors else ""
    )
    fields = [
        ["Authors", ", ".join(authors) or "not given"],
        ["Journal/Source", journal or "not given"],
        ["Year", str(year or "not given")],
        ["DOI", doi or "none"],
        ["URL", url or "none"],
        ["Date accessed", accessed],
        ["Source type", str(payload["source_type"])],
        [
            "Quality notes",
            f"Brought by {handle} during a debate ({turn_label}) and approved by a moderator. Disputa fetched "
            "nothing: the content below is as the debater reported it; check it against the original.",
        ],
        ["Citations", f"{citation} {link}".strip()],
        ["Cites (primary sources this leans on)", "not traced yet"],
        ["Cited by (sources in our corpus that lean on this)", "none in corpus yet"],
        ["Author network", "not traced yet"],
        [
            "Criticism",
            f"Criticises {disputes}: {criticism} ({turn_label}, {handle})"
            if disputes and criticism
            else "none yet",
        ],
    ]
    content = str(payload.get("content") or "").strip()
    Source.objects.create(
        kb=kb,
        path=path,
        frontmatter=frontmatter,
        frontmatter_order=list(frontmatter),
        title=title,
        fields=fields,
        body="## Content\n\n" + (content or "_The debater reported the key finding only._"),
    )
    changes = ["new source"]
    if disputes and criticism:
        _criticism_add(kb.sources.get(path=disputes), f"{criticism} (see {path}; {turn_label}, {handle})")
        changes.append(f"criticism appended to {disputes}")
    note, arg_id = " ".join(str(payload.get("note") or "").split()), payload.get("arg_id")
    if arg_id and note:
        argument = kb.arguments.get(arg_id=arg_id)
        argument.traceback_notes = (
            argument.traceback_notes + f"\n\n- ({turn_label}, {handle}) Source dispute: {note} [{path}]"
        ).strip("\n")
        argument.save(update_fields=["traceback_notes"])
        changes.append(f"traceback note on {arg_id}")
    return path, "; ".join(changes)


def _apply(mutation: ProposedMutation) -> Revision:
    kb = KnowledgeBase.objects.select_for_update().get(pk=mutation.kb_id)
    payload = mutation.payload
    handle = mutation.proposed_by
    turn_label, triggered = _turn_label(mutation)
    target, change = "", ""
    if mutation.kind == MutationKind.STATUS_DOWNGRADE:
        argument = kb.arguments.get(arg_id=payload["arg_id"])
        target, change = argument.arg_id, f"status {argument.status} → {payload['to']}"
        note = f"\n\n- Downgraded {argument.status} → {payload['to']} during debate ({turn_label}): {mutation.justification}"
        argument.status = payload["to"]
        argument.strength_assessment = (argument.strength_assessment + note).strip("\n")
        argument.save(update_fields=["status", "strength_assessment"])
    elif mutation.kind == MutationKind.NEW_EDGE:
        order = (kb.edges.order_by("-order").values_list("order", flat=True).first() or 0) + 1
        Edge.objects.create(
            kb=kb,
            order=order,
            src=payload["src"],
            type=payload["type"],
            target=payload["target"],
            comment=payload.get("comment", ""),
            created_during_run=mutation.run,
        )
        target, change = "kb/edges.md", f"{payload['src']} {payload['type']} {payload['target']}"
    elif mutation.kind == MutationKind.NEW_NODE:
        arg_id = _next_id(list(kb.arguments.values_list("arg_id", flat=True)), "arg")
        statement = str(payload["statement"]).strip()
        Argument.objects.create(
            kb=kb,
            arg_id=arg_id,
            slug=re.sub(r"[^a-z0-9]+", "-", str(payload.get("slug") or statement.lower()))[:60].strip("-"),
            position=payload["position"],
            layer=payload["layer"],
            scope=payload.get("scope", "as stated in the debate"),
            basis_type=payload.get("basis_type", "reasoning"),
            status=payload.get("status", "contested"),
            asserter=f"derived-during-debate-by-{handle}",
            summary=payload.get("summary") or statement[:200],
            title=statement,
            statement=statement,
            evidentiary_basis=payload.get("evidentiary_basis", ""),
            traceback_notes=f"Created during a debate ({turn_label}).",
            created_during_run=mutation.run,
        )
        if payload.get("refines"):
            order = (kb.edges.order_by("-order").values_list("order", flat=True).first() or 0) + 1
            Edge.objects.create(
                kb=kb,
                order=order,
                src=arg_id,
                type="refines",
                target=payload["refines"],
                created_during_run=mutation.run,
            )
        target, change = arg_id, f"new node {arg_id} at {payload.get('status', 'contested')}"
    elif mutation.kind == MutationKind.NEW_SOURCE:
        target, change = _new_source_apply(kb, mutation, turn_label)
    elif mutation.kind == MutationKind.CRITICISM_APPEND:
        source = kb.sources.get(path=payload["source"])
        _criticism_add(source, f"{payload['text']} ({turn_label}, {handle})")
        target, change = source.path, "criticism appended"
    elif mutation.kind == MutationKind.TRACEBACK_APPEND:
        argument = kb.arguments.get(arg_id=payload["arg_id"])
        argument.traceback_notes = (
            argument.traceback_notes + f"\n\n- ({turn_label}, {handle}) {payload['text']}"
        ).strip("\n")
        argument.save(update_fields=["traceback_notes"])
        target, change = argument.arg_id, "traceback notes appended"
    else:  # contradiction-added
        c_id = _next_id(list(kb.contradictions.values_list("c_id", flat=True)), "C")
        Contradiction.objects.create(
            kb=kb,
            c_id=c_id,
            title=payload["title"],
            type=payload["type"],
            status="open",
            fields=[
                ["Type", payload["type"]],
                ["Involved arguments", ", ".join(payload.get("arguments", []))],
                ["Involved sources", ", ".join(payload.get("sources", []))],
                ["Description", payload.get("description", "")],
                ["What would resolve it", payload.get("resolve", "")],
                ["Status", "open"],
            ],
        )
        target, change = "kb/contradictions.md", f"{c_id} added"
    r_id = _next_id(list(kb.revisions.values_list("r_id", flat=True)), "R")
    return Revision.objects.create(
        kb=kb,
        r_id=r_id,
        heading=f"{timezone.now():%Y-%m-%d} — {handle}, {turn_label}",
        type=REVISION_TYPES[mutation.kind],
        target=target,
        change=change,
        justification=mutation.justification or "(none given)",
        triggered_by=triggered,
        run=mutation.run,
        turn=mutation.turn,
    )
