"""kb-debate exports: the ledger, revisions and proposals in the run's JSON, and the seed-002 run directory (as
{path: text}, as a deterministic zip, or written to disk)."""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debates.contract import ExportFile, ExportUnavailable, KbView, RunView
from debates.engine.view import run_view_load
from debates.platform.markdown import one_line
from debates.protocols.kb_debate.ledger import (
    Entry,
    Ledger,
    TurnInfo,
    debater_handle,
    ledger_build,
    left_open,
    mutation_payload,
    turn_cap,
)
from kb.discipline import new_source_path
from kb.formats.seed002 import revisions_text
from kb.models import ProposedMutation, Revision, Snapshot
from kb.services import kb_files

if TYPE_CHECKING:
    from debates.models import Run


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


# --- kb-debate: ledger, revisions and proposals for the json export ------------------------------------------------


def kb_debate_json(run: Run) -> dict[str, Any]:
    """The json export's `ledger` / `revisions` / `proposed_mutations` for a kb-debate run."""

    if run.kb_id is None:
        return {}
    view = run_view_load(run)
    ledger = ledger_build(view)
    return {
        "ledger": [e.as_dict(view.kb) for e in ledger.entries.values()],
        "revisions": [_revision_json(r) for r in _run_revisions(run)],
        "proposed_mutations": [_mutation_json(m) for m in _run_mutations(run)],
    }


def _run_revisions(run: Run) -> list[Revision]:

    return list(Revision.objects.filter(run=run).select_related("turn").order_by("r_id", "pk"))


def _run_mutations(run: Run) -> list[ProposedMutation]:

    return list(
        ProposedMutation.objects.filter(run=run)
        .select_related("turn", "revision", "decided_by")
        .order_by("pk")
    )


def _revision_json(revision: Revision) -> dict[str, Any]:
    return {
        "id": revision.r_id,
        "heading": revision.heading,
        "type": revision.type,
        "target": revision.target,
        "change": revision.change,
        "justification": revision.justification,
        "triggered_by": revision.triggered_by,
        "turn": revision.turn.key if revision.turn else None,
        "created_at": _iso(revision.created_at),
    }


def _mutation_json(mutation: ProposedMutation) -> dict[str, Any]:
    return {
        "id": mutation.pk,
        "turn": mutation.turn.key if mutation.turn else None,
        "proposed_by": mutation.proposed_by,
        "kind": mutation.kind,
        "payload": mutation.payload,
        "justification": mutation.justification,
        "status": mutation.status,
        "reason": mutation.reason,
        "revision": mutation.revision.r_id if mutation.revision else None,
        "decided_by": mutation.decided_by.get_username() if mutation.decided_by else None,
        "decided_at": _iso(mutation.decided_at),
        "created_at": _iso(mutation.created_at),
    }


# --- kb-debate: the seed-002 run directory ---------------------------------------------------------------------------

# Protocols whose runs have a seed-002 run directory.
RUN_DIR_PROTOCOLS = ("kb-debate",)
# Why a run of another protocol has none (ExportFormat.refusal).
RUN_DIR_REFUSAL = (
    "run {pk} is a {protocol} run; only " + ", ".join(RUN_DIR_PROTOCOLS) + " runs have a run directory — use "
    "--format json"
)
# Directories of the layout that may hold no file. A {path: text} dict cannot hold an empty directory, and the
# layout does not call for a marker file in it, so none is invented: the writers create these directories
# themselves (run_dir_write makes them on disk, run_export_zip adds a directory entry), which keeps the
# command's tree and the zip identical.
RUN_DIR_EMPTY_DIRS = ("kb/sources/agents/",)
SNAPSHOT_DIR = "kb-snapshot-construction/"
# 1980-01-01, the earliest time a zip can record: every entry carries it, so two exports of the same state are
# the same bytes.
ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)


class RunDirUnavailable(ExportUnavailable, ValueError):
    """This run has no run directory (another protocol, no KB, no snapshot); the message says why."""


def _turns_text(numbers: Sequence[int]) -> str:
    return ("turn " if len(numbers) == 1 else "turns ") + ", ".join(str(n) for n in numbers)


# A text that cites debate turns by number ("turn 3", "Debate turns 2, 4").
TURN_REFERENCE = re.compile(r"\bturns?\s+\d", re.IGNORECASE)
# A closure ruling written out in a turn's text: its argument and what it was closed as.
RULING_LINE = re.compile(
    r"^\W*ruling\W*\s*claim\b.*\((arg-\d+)\)\s+is\s+closed\s+as\s+([a-z-]+)", re.IGNORECASE
)
# What is left of a line whose repeated item was taken out: nothing, or only a label ("Press on L-002:").
LEFTOVER = re.compile(r"^[\W_]*([\w“”\"'() -]{0,40}:)?[\W_]*$")
# Items shorter than this are not looked for in a turn's text (a "No." would match anywhere).
REPEAT_MIN_CHARS = 12


def _unrepeated(text: str, items: Sequence[str], rulings: Sequence[tuple[str, str]] = ()) -> str:
    """A turn's free text without what repeats the structured items rendered after it: every occurrence of an
    item's text (whitespace aside), and the ruling lines ("Ruling: claim … (arg-NNN) is CLOSED as …") of the
    `rulings` (arg id, closed as) it carries. A line left with nothing but a label goes too; the rest of the text is
    kept as it was written."""
    patterns = [
        re.compile(r"\s+".join(re.escape(word) for word in item.split()))
        for item in sorted({one_line(i) for i in items}, key=len, reverse=True)
        if len(item) >= REPEAT_MIN_CHARS
    ]
    ruled = {(arg, closed_as.lower()) for arg, closed_as in rulings}
    for pattern in patterns:
        text = pattern.sub("\0", text)
    lines = []
    for line in text.split("\n"):
        ruling = RULING_LINE.match(line)
        if ruling and (ruling[1], ruling[2].lower().rstrip(".")) in ruled:
            continue
        if "\0" in line:
            line = re.sub(r"(?<=\S) {2,}", " ", line.replace("\0", "")).rstrip()
            if LEFTOVER.match(line):
                continue
        lines.append(line)
    return "\n".join(lines).strip()


@dataclass
class _RunDoc:
    """What the Markdown files of a kb-debate run are rendered from: read once, rendered many times."""

    run: Run
    view: RunView
    ledger: Ledger
    kb: KbView
    mutations: list[ProposedMutation]
    numbers: dict[str, int] = field(default_factory=dict)  # turn key -> debate turn number

    def __post_init__(self) -> None:
        self.numbers = {t.key: t.number for t in self.ledger.turns}

    def role(self, handle: str) -> str:
        seat = self.view.seats.get(handle)
        return seat.role if seat else ""

    def mutations_of(self, key: str) -> list[ProposedMutation]:
        return [m for m in self.mutations if m.turn is not None and m.turn.key == key]

    def status_at(self, arg_id: str, number: int) -> str:
        """The argument's rating when turn `number` was spoken: its snapshot rating, lowered by this run's applied
        downgrades proposed in earlier turns."""
        argument = self.kb.arguments.get(arg_id)
        if argument is None:
            return "unknown"
        status = argument.snapshot_status
        for m in self.kb.mutations:
            if (
                m.kind == "status-downgrade"
                and m.status == "applied"
                and m.payload.get("arg_id") == arg_id
                and self.numbers.get(m.turn_key, number) < number
            ):
                status = str(m.payload.get("to", status))
        return status

    def arg_text(self, arg_id: str, number: int, *, status: bool) -> str:
        argument = self.kb.arguments.get(arg_id)
        if argument is None:
            return f"{arg_id} (not in the KB)"
        rated = f", status: {self.status_at(arg_id, number)}" if status else ""
        return f"{arg_id} (layer: {argument.layer}, scope: {one_line(argument.scope)}{rated})"

    def claim_of(self, entry_id: str) -> str:
        entry = self.ledger.entries.get(entry_id)
        return one_line(entry.claim) if entry else ""


def _citations(args: Sequence[str], sources: Sequence[str]) -> str:
    cited = [*args, *sources]
    return ", ".join(cited) if cited else "no argument or source (untraced)"


def _claims_md(doc: _RunDoc, number: int, claims: Sequence[Mapping[str, Any]], heading: str) -> list[str]:
    if not claims:
        return []
    ids = [e.id for e in doc.ledger.entries.values() if e.turn == number]
    lines = [f"**{heading}**", ""]
    for index, claim in enumerate(claims):
        label = f"{ids[index]}: " if index < len(ids) else ""
        lines.append(
            f"- {label}{one_line(claim['text'])} — presented as {claim.get('presented_as', '')}; cites "
            f"{_citations(claim.get('args', []), claim.get('sources', []))}"
        )
    return [*lines, ""]


def _mutation_what(m: Mapping[str, Any], seat: str) -> str:
    kind = m.get("kind", "")
    if kind == "new-source":
        path = new_source_path(mutation_payload(m), seat)
        bears = f", on {m['arg_id']}" if m.get("arg_id") else ""
        disputes = f", disputing {m['disputes']}" if m.get("disputes") else ""
        return f"{path} “{one_line(m.get('title', ''))}”{bears}{disputes}"
    if kind == "status-downgrade":
        return f"{m.get('arg_id', '')} → {m.get('to', '')}"
    if kind == "new-edge":
        return f"{m.get('src', '')} {m.get('edge_type', '')} {m.get('target', '')}"
    if kind == "criticism-append":
        return f"{m.get('source', '')}: {one_line(m.get('text', ''))}"
    if kind == "traceback-append":
        return f"{m.get('arg_id', '')}: {one_line(m.get('text', ''))}"
    arguments = ", ".join(m.get("arguments", []))
    return f"“{one_line(m.get('title', ''))}” ({m.get('contradiction_type', '')}; {arguments})"


def _mutation_outcome(row: ProposedMutation | None) -> str:
    if row is None:
        return "the same change was already waiting for approval"
    if row.status == "applied":
        return f"applied as {row.revision.r_id}" if row.revision else "applied"
    if row.status == "pending":
        return "pending approval"
    if row.status in ("refused", "rejected"):
        return f"{row.status}: {one_line(row.reason)}" if row.reason else str(row.status)
    return str(row.status)


def _mutations_md(doc: _RunDoc, key: str, payload: Mapping[str, Any]) -> list[str]:
    proposed = payload.get("mutations") or []
    if not proposed:
        return []

    rows = doc.mutations_of(key)
    lines = ["**Proposed KB mutations**", ""]
    for m in proposed:
        row = next(
            (r for r in rows if r.kind == m.get("kind") and r.payload == mutation_payload(m)),
            None,
        )
        lines.append(
            f"- {m.get('kind', '')}: {_mutation_what(m, key.rsplit('/', 1)[-1])} — {_mutation_outcome(row)}. "
            f"Justification: {one_line(m.get('justification', ''))}"
        )
    return [*lines, ""]


def _after_paren(text: str, start: int) -> int:
    """The index just past the parenthesis group opening at text[start] (nested groups included), or `start`
    when there is none."""
    if start >= len(text) or text[start] != "(":
        return start
    depth = 0
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index + 1
    return start


def _deflection_said(text: str, target: str) -> tuple[bool, str]:
    """(whether the moderator wrote the callout in its shape itself, what its text adds to the shape's opening
    sentence). A text in the shape ("Deflection: Position X has cited ... to address arg-B (layer, scope). ...")
    keeps only what follows the opening sentence, which the export writes from the turn's fields."""
    text = one_line(text)
    if not text.lower().startswith("deflection:"):
        return False, text
    found = re.search(rf"\bto address {re.escape(target)}\b\s*", text)
    if found is None:
        return True, text
    end = _after_paren(text, found.end())
    return True, text[end:].lstrip(" .")


def _deflection_md(doc: _RunDoc, number: int, d: Mapping[str, Any]) -> str:
    cited = ", ".join(doc.arg_text(a, number, status=True) for a in d["cited_args"])
    target = d["target_arg"]
    head = (
        f"Deflection: Position {d['position']} has cited {cited} across {_turns_text(d['turns'])} "
        f"to address {doc.arg_text(target, number, status=False)}."
    )
    shaped, text = _deflection_said(d.get("text", ""), target)
    if shaped and text.lower().startswith("deflection:"):  # its own shape, not parsable: written as it is
        return text
    if not text:
        relations = {
            "layer-shift-from": "layer-shifts from",
            "scope-mismatch-with": "scope-mismatches",
            "tangential-to": "is tangential to",
        }
        shifted = [
            f"{src} {relations[kind]} {target}"
            for src, kind, tgt in doc.kb.edges
            if src in d["cited_args"] and tgt == target and kind in relations
        ]
        text = (f"{'; '.join(shifted)}. " if shifted else "") + (
            f"Position {d['position']} has not engaged {target} at its actual layer."
        )
    return f"{head} {text}"


def _ruling_md(doc: _RunDoc, r: Mapping[str, Any]) -> list[str]:
    justification = one_line(r["justification"]).rstrip(".")
    # The turns the ruling rests on, unless the justification cites them already.
    turns = "" if TURN_REFERENCE.search(justification) else f" (debate {_turns_text(r['turns'])})"
    return [
        f'Ruling: claim "{doc.claim_of(r["entry"])}" ({r["arg_id"]}) is CLOSED as {r["closed_as"]}.',
        f"Justification: {justification}{turns}.",
    ]


def _opening_md(doc: _RunDoc, number: int, p: Mapping[str, Any]) -> list[str]:
    return [str(p.get("summary", "")).strip(), "", *_claims_md(doc, number, p.get("claims", []), "Claims")]


def _debater_md(doc: _RunDoc, number: int, p: Mapping[str, Any]) -> list[str]:
    answered = p["responds_to"]
    entry = doc.ledger.entries.get(answered["entry"])
    whose = f" ({entry.position})" if entry else ""
    lines = [
        f"- **Answers**: {answered['entry']} from turn {answered['turn']} — “{doc.claim_of(answered['entry'])}”{whose}",
        f"- **Move**: {p['move']}",
        "",
        _unrepeated(str(p.get("text", "")), [(p.get("objection") or {}).get("text", "")]),
        "",
        *_claims_md(doc, number, p.get("claims", []), "New claims"),
    ]
    objection = p.get("objection")
    if objection:
        evidence = _citations(objection.get("new_args", []), objection.get("new_sources", []))
        lines += [
            f"**Objection** to the closure of {objection['entry']} — “{doc.claim_of(objection['entry'])}”:",
            "",
            str(objection.get("text", "")).strip(),
            "",
            f"New evidence: {evidence}",
            "",
        ]
    return lines


def _moderator_md(doc: _RunDoc, number: int, p: Mapping[str, Any]) -> list[str]:
    """The moderator's text, then its moves in the seed's shapes: the text is left without what repeats them."""
    repeated = [
        *(x["text"] for x in p.get("presses", [])),
        *(c["text"] for c in p.get("callouts", [])),
        *(d.get("text", "") for d in p.get("deflections", [])),
        *(r["justification"] for r in p.get("rulings", [])),
        *(o["text"] for o in p.get("objection_decisions", [])),
    ]
    rulings = [(r["arg_id"], r["closed_as"]) for r in p.get("rulings", [])]
    lines = [_unrepeated(str(p.get("text", "")), repeated, rulings), ""]
    if p.get("presses"):
        lines += ["**Presses**", ""]
        lines += [
            f"- {x['entry']} (“{doc.claim_of(x['entry'])}”): {one_line(x['text'])}" for x in p["presses"]
        ]
        lines.append("")
    if p.get("callouts"):
        lines += ["**Callouts**", ""]
        lines += [
            f"- {c['type']} — {c['position']}, turn {c['turn']}: {one_line(c['text'])}" for c in p["callouts"]
        ]
        lines.append("")
    for d in p.get("deflections", []):
        lines += [_deflection_md(doc, number, d), ""]
    for r in p.get("rulings", []):
        lines += [*_ruling_md(doc, r), ""]
    decisions = p.get("objection_decisions", [])
    if decisions:
        lines += ["**Objection decisions**", ""]
        for o in decisions:
            effect = (
                "the closure stands"
                if o["decision"] == "reaffirm"
                else "the closure is lifted; the claim reopens"
            )
            lines.append(f"- {o['entry']}: {o['decision']} — {effect}. {one_line(o['text'])}")
        lines.append("")
    return lines


def _verdict_lines(verdict: Mapping[str, Any]) -> list[str]:
    lines = [f"- **Verdict**: {verdict.get('label', '')}"]
    if verdict.get("position"):
        lines.append(f"- **Position**: {verdict['position']}")
    return [
        *lines,
        f"- **Evidentiary strength of central claims**: {one_line(verdict.get('evidence', ''))}",
        f"- **Engagement with central questions**: {one_line(verdict.get('engagement', ''))}",
    ]


# A heading of the synthesis's own verdict section ("## Verdict", "### Final verdict"; not "Verdict review").
VERDICT_HEADING = re.compile(
    r"^(#{1,6})\s*(?:the\s+|final\s+|overall\s+)?verdict\b(?!\s+review)", re.IGNORECASE
)
HEADING = re.compile(r"^(#{1,6})\s")
# A list marker, emphasis and a leading "Label:" around a value ("- **Evidence**: …").
DECORATION = re.compile(r"^[\s>*_+-]*(?:\d+[.)]\s*)?(?:[*_]*[A-Za-z][\w /-]{0,40}[*_]*\s*:[*_]*\s*)?")


def _restates(line: str, values: Sequence[str]) -> bool:
    """Whether a line of the synthesis's own verdict section only restates one of the verdict's fields."""
    said = one_line(DECORATION.sub("", line)).strip("*_ .").lower()
    return bool(said) and any(said == v or (len(said) >= 20 and said in v) for v in values)


def synthesis_account(text: str, verdict: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The synthesis's text as the export writes it under its own title and verdict: (the account without a title
    of its own, the lines of the text's own verdict section that say more than the verdict's fields). Any other
    top-level heading becomes a section (##) of the one document."""
    label, position = str(verdict.get("label", "")), str(verdict.get("position", ""))
    values = [
        one_line(v).strip("*_ .").lower()
        for v in (
            label,
            position,
            f"{label}:{position}",
            f"{label} ({position})",
            f"{label} — {position}",
            verdict.get("evidence", ""),
            verdict.get("engagement", ""),
        )
        if one_line(v)
    ]
    account: list[str] = []
    extra: list[str] = []
    level = 0  # the level of the verdict section being read; 0: outside it
    titled = False
    for line in str(text).strip().split("\n"):
        heading = HEADING.match(line)
        if level and heading and len(heading[1]) <= level:
            level = 0
        if level:
            if not line.strip() or not _restates(line, values):
                extra.append(line)
            continue
        if (found := VERDICT_HEADING.match(line)) is not None:
            level = len(found[1])
            continue
        if heading and len(heading[1]) == 1:
            if not titled and not any(x.strip() for x in account):
                titled = True  # its own title: the document has one already
                continue
            line = "#" + line
        account.append(line)
    return "\n".join(account).strip(), "\n".join(extra).strip().split("\n") if any(extra) else []


def _synthesis_md(p: Mapping[str, Any]) -> list[str]:
    verdict = p.get("verdict", {})
    account, extra = synthesis_account(str(p.get("text", "")), verdict)
    return [account, "", "**Verdict**", "", *_verdict_lines(verdict), "", *extra, ""]


def _review_md(p: Mapping[str, Any]) -> list[str]:
    lines = [f"- **Decision**: {p.get('decision', '')}"]
    if str(p.get("text", "")).strip():
        lines += ["", str(p["text"]).strip()]
    return [*lines, ""]


def _turn_md(doc: _RunDoc, info: TurnInfo) -> list[str]:
    lines = [f"## Turn {info.number} — {info.seat} ({doc.role(info.seat)}, {info.task})", ""]
    turn = doc.view.turns[info.key]
    if turn.failed:
        return [*lines, f"**Failed**: {one_line(turn.error) or 'no error recorded'}", ""]
    if not turn.committed or turn.payload is None:
        return [*lines, "_In progress when exported: not committed._", ""]
    payload = turn.payload
    if info.task == "opening":
        lines += _opening_md(doc, info.number, payload)
    elif info.task == "turn":
        lines += _debater_md(doc, info.number, payload)
    elif info.task == "moderator":
        lines += _moderator_md(doc, info.number, payload)
    elif info.task == "synthesis":
        lines += _synthesis_md(payload)
    elif info.task == "verdict-review":
        lines += _review_md(payload)
    else:
        lines += [f"```json\n{json.dumps(dict(payload), indent=2, ensure_ascii=False)}\n```", ""]
    return lines + _mutations_md(doc, info.key, payload)


def _md(lines: list[str]) -> str:
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip("\n") + "\n"


def _transcript_md(doc: _RunDoc, seat: str | None) -> str:

    run, kb = doc.run, doc.run.kb
    assert kb is not None
    positions = ", ".join(f"{p} ({debater_handle(p)})" for p in getattr(doc.view.config, "positions", []))
    if seat is None:
        lines = [
            "# Transcript",
            "",
            f"- **Topic**: {one_line(run.topic)}",
            f"- **Knowledge base**: {kb.title} ({kb.slug})",
            f"- **Positions**: {positions}",
            f"- **Run**: {run.pk} ({run.protocol}, {run.status})",
            "",
        ]
    else:
        view_seat = doc.view.seats.get(seat)
        name = view_seat.name if view_seat else seat
        lines = [
            f"# Transcript — {seat}",
            "",
            f"- **Seat**: {name} ({doc.role(seat)})",
            f"- **Topic**: {one_line(run.topic)}",
            f"- **Run**: {run.pk} ({run.protocol}, {run.status})",
            "",
            "Only this seat's turns; the numbers are the debate's turn numbers (see ../../transcript.md).",
            "",
        ]
    shown = [t for t in doc.ledger.turns if seat is None or t.seat == seat]
    if not shown:
        lines.append("_No turn yet._")
    for info in shown:
        lines += _turn_md(doc, info)
    return _md(lines)


def _ledger_md(doc: _RunDoc) -> str:
    lines = ["# Claim Ledger", ""]
    if not doc.ledger.entries:
        lines.append("_No claims yet: no opening has been committed._")
    for entry in doc.ledger.entries.values():
        data = entry.as_dict(doc.kb)
        asserter = doc.ledger.turns[entry.turn - 1].seat
        references = [f"{r['arg']} (KB-rated {r['status']})" for r in data["references"]] + entry.sources
        lines += [
            f"## {entry.id}: {one_line(entry.claim)}",
            "",
            f"- **Asserted by**: {asserter} (debate turn {entry.turn})",
            f"- **References**: {', '.join(references) or 'none (untraced)'}",
            f"- **Status**: {entry.status}",
        ]
        if entry.closed and entry.closure:
            lines.append(f"- **Closure**: {_closure_text(entry)}")
        lines += [
            f"- **Thread**: turns {' → '.join(str(n) for n in entry.thread)}",
            f"- **Notes**: {_notes_text(doc, entry)}",
            "",
        ]
    return _md(lines)


def _closure_text(entry: Entry) -> str:
    closure = entry.closure or {}
    justification = one_line(closure.get("justification", "")).rstrip(".")
    text = (
        f"ruled by moderator at turn {closure.get('turn')} as {closure.get('as')}; "
        f"“{closure.get('ruling', '')}” Justification: {justification} "
        f"(debate {_turns_text(closure.get('turns', []))})."
    )
    objection = entry.objection
    if not objection:
        return f"{text} No objection."
    evidence = _citations(objection.get("new_args", []), objection.get("new_sources", []))
    said = f"{text} Objected once at turn {objection['turn']} with new evidence ({evidence})"
    if objection.get("pending"):
        return f"{said}; the moderator has not ruled on it yet."
    return f"{said}; the moderator reaffirmed at turn {objection.get('at')} — the closure stands."


def _notes_text(doc: _RunDoc, entry: Entry) -> str:
    notes = [f"presented as {entry.presented_as}"] if entry.presented_as else []
    for arg_id in entry.args:
        argument = doc.kb.arguments.get(arg_id)
        if argument is not None and argument.status != argument.snapshot_status:
            notes.append(
                f"{arg_id} downgraded during the debate: {argument.snapshot_status} → {argument.status}"
            )
    notes += [one_line(n) for n in entry.notes]
    closure = entry.closure or {}
    if "reversed_at" in closure and entry.objection:
        notes.append(
            f"closure of turn {closure.get('turn')} reversed at turn {closure['reversed_at']} after the objection "
            f"of turn {entry.objection.get('turn')}"
        )
    return "; ".join(notes) or "—"


def _left_open_md(doc: _RunDoc) -> list[str]:
    """The claims still live when the debate ended, each with why (ledger.left_open): the synthesis names them,
    whatever its account says."""
    found = left_open(doc.ledger, turn_cap(doc.view, doc.ledger))
    lines = ["## Claims left open", ""]
    lines += [
        f"- {c['entry']} ({c['position']}): “{one_line(c['claim'])}” — {c['status']}; {c['reason']}."
        for c in found
    ] or ["- None: every claim was rebutted, conceded, closed or found unclaimable before the debate ended."]
    return [*lines, ""]


def _synthesis_file_md(doc: _RunDoc) -> str:
    synthesis = next(
        (t for t in doc.view.turns.values() if t.task == "synthesis" and t.committed and t.payload), None
    )
    review = next(
        (t for t in doc.view.turns.values() if t.task == "verdict-review" and t.committed and t.payload),
        None,
    )
    lines = ["# Synthesis", "", f"- **Topic**: {one_line(doc.run.topic)}", ""]
    if synthesis is None or synthesis.payload is None:
        reason = f": {one_line(doc.run.status_reason)}" if doc.run.status_reason else ""
        lines += [f"_No synthesis has been committed (run {doc.run.status}{reason})._", ""]
    else:
        verdict = synthesis.payload.get("verdict", {})
        account, extra = synthesis_account(str(synthesis.payload.get("text", "")), verdict)
        lines += [
            account,
            "",
            *_left_open_md(doc),
            "## Verdict",
            "",
            *_verdict_lines(verdict),
            "",
            *extra,
            "",
        ]
    if review is not None and review.payload is not None:
        decision = review.payload.get("decision", "")
        said = {"accept": "the moderator accepts the verdict", "dissent": "the moderator dissents"}
        lines += [
            "## Verdict review",
            "",
            f"- **Decision**: {decision} — {said.get(str(decision), str(decision))}",
        ]
        if str(review.payload.get("text", "")).strip():
            lines.append(f"- **Text**: {one_line(review.payload['text'])}")
        lines.append("")
    revisions = sorted({m.revision.r_id for m in doc.mutations if m.revision is not None})
    logged = (
        f"this debate's changes are {', '.join(revisions)}" if revisions else "this debate changed nothing"
    )
    lines += [
        "## Audit trail",
        "",
        "- The KB as it stood when the debate began: `kb-snapshot-construction/` (never written after it was "
        "taken).",
        f"- Every change to the live `kb/`, with the debate turn that triggered it: `kb/revisions.md` ({logged}).",
        "",
    ]
    return _md(lines)


def _safe_path(path: str) -> str:
    parts = path.split("/")
    if path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise RunDirUnavailable(f"unsafe path in the export: {path!r}")
    return path


def run_export_run_dir(run: Run) -> dict[str, str]:
    """The seed-002 run directory of a kb-debate run as {relative path: file text}, sorted by path: `output/`
    (transcript, per-seat transcripts, claims ledger, synthesis), the live `kb/` (with `kb/revisions.md`) and the
    snapshot taken when the run was created as `kb-snapshot-construction/`. See RUN_DIR_EMPTY_DIRS for the
    directories that may be empty and so are not in the dict."""

    if run.protocol not in RUN_DIR_PROTOCOLS:
        raise RunDirUnavailable(RUN_DIR_REFUSAL.format(pk=run.pk, protocol=run.protocol))
    kb = run.kb
    if kb is None:
        raise RunDirUnavailable(f"run {run.pk} has no knowledge base")
    snapshot = Snapshot.objects.filter(run=run).first()
    if snapshot is None:
        raise RunDirUnavailable(f"run {run.pk} has no KB snapshot (kb-snapshot-construction/)")
    view = run_view_load(run)
    assert view.kb is not None
    doc = _RunDoc(run=run, view=view, ledger=ledger_build(view), kb=view.kb, mutations=_run_mutations(run))

    files: dict[str, str] = {
        "output/transcript.md": _transcript_md(doc, None),
        "output/claims-ledger.md": _ledger_md(doc),
        "output/synthesis.md": _synthesis_file_md(doc),
    }
    for handle in dict.fromkeys(t.seat for t in doc.ledger.turns):  # every seat that spoke, in turn order
        files[f"output/agents/{handle}/transcript.md"] = _transcript_md(doc, handle)
    live = {(p if p.startswith("kb/") else f"kb/{p}"): text for p, text in kb_files(kb).items()}
    live.setdefault("kb/revisions.md", revisions_text([]))  # created empty when the debate starts
    files.update(live)
    for path, text in dict(snapshot.files).items():
        files[SNAPSHOT_DIR + str(path).removeprefix("kb/")] = str(text)
    return {_safe_path(p): files[p] for p in sorted(files)}


def _empty_dirs(files: Mapping[str, str]) -> list[str]:
    return [d for d in RUN_DIR_EMPTY_DIRS if not any(p.startswith(d) for p in files)]


def run_dir_zip(files: Mapping[str, str]) -> bytes:
    """A deterministic zip of {relative path: text}: sorted names, fixed timestamps and modes, deflated."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted([*files, *_empty_dirs(files)]):
            info = zipfile.ZipInfo(_safe_path(name.rstrip("/")) + ("/" if name.endswith("/") else ""))
            info.date_time = ZIP_DATE_TIME
            info.create_system = 3  # unix, whatever the platform
            if name.endswith("/"):
                info.external_attr = (0o40755 << 16) | 0x10
                info.file_size = info.compress_size = info.CRC = 0
                archive.mkdir(info)
            else:
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o100644 << 16
                archive.writestr(info, files[name].encode("utf-8"))
    return buffer.getvalue()


def run_export_zip(run: Run) -> bytes:
    """The run directory of run_export_run_dir as a zip; the same bytes for the same state."""
    return run_dir_zip(run_export_run_dir(run))


def run_dir_write(files: Mapping[str, str], out: Path) -> list[Path]:
    """Write a run directory under `out`: each file as UTF-8 bytes (exactly the zip's content), and the
    directories of the layout that hold no file."""
    root = out.resolve()
    written = []
    for name in sorted(files):
        target = (root / _safe_path(name)).resolve()
        if not target.is_relative_to(root):
            raise RunDirUnavailable(f"unsafe path in the export: {name!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[name].encode("utf-8"))
        written.append(target)
    for directory in _empty_dirs(files):
        (root / directory).mkdir(parents=True, exist_ok=True)
    return written


def run_dir_file(run: Run) -> ExportFile:
    """`--format run-dir` as one file: the run directory's zip."""
    return ExportFile(f"disputa-run-{run.pk}.zip", "application/zip", run_export_zip(run))


def run_dir_to(run: Run, out: Path) -> list[Path]:
    """`--format run-dir --out DIR`: the run directory written into `out`."""
    return run_dir_write(run_export_run_dir(run), out)
