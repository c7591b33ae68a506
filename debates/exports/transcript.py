"""`export_run --format transcript`: the run as one Markdown document a person reads — a header with the run's
metadata and seats, then the turns in the page's order grouped under each stage (`## <stage>`), each turn as

    ### <speaker> (<role>) — <task>

with its key, status, backend and model, its output rendered from the stored payload (field by field; the raw
text when there is no payload), and its citations with their verification status. A human seat's turn names the
user who submitted it (`### mod as Examiner (examiner, human) — questions`); a turn copied into a fork says so.
A finished run ends with its outcome and the protocol's own sections (`Protocol.transcript_sections`: the seed's
output layout, e.g. the argument trace table).

Model and user text is rendered inert: every value is one line after a label, so it cannot open a heading of its
own, and raw text goes in a code fence longer than any backtick run it holds. Nothing in the file depends on when
it is exported, so the page and the command give the same bytes for the same run."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from debates.engine import registry
from debates.models import HumanAction, HumanActionKind, Run, Turn, TurnStatus
from debates.platform.markdown import inline

SCALARS = (str, int, float, bool, type(None))


def transcript_filename(run: Run) -> str:
    return f"disputa-run-{run.pk}-transcript.md"


def _label(key: str) -> str:
    text = str(key).replace("_", " ").replace("-", " ").strip()
    return text[:1].upper() + text[1:]


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value else "—"


def _value_lines(value: Any, depth: int = 0) -> list[str]:
    """A JSON value as nested bullets: scalars inline after their label, lists and objects one level deeper."""
    pad = "  " * depth
    lines: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(item, SCALARS):
                lines.append(f"{pad}- **{inline(_label(key))}:** {inline(item)}")
            elif not item:
                lines.append(f"{pad}- **{inline(_label(key))}:** —")
            else:
                lines.append(f"{pad}- **{inline(_label(key))}:**")
                lines += _value_lines(item, depth + 1)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for number, item in enumerate(value, start=1):
            if isinstance(item, SCALARS):
                lines.append(f"{pad}- {inline(item)}")
            elif isinstance(item, Mapping) and all(isinstance(v, SCALARS) for v in item.values()):
                fields = " · ".join(f"**{inline(_label(k))}:** {inline(v)}" for k, v in item.items())
                lines.append(f"{pad}- {fields or '—'}")
            else:
                lines.append(f"{pad}- ({number})")
                lines += _value_lines(item, depth + 1)
    else:
        lines.append(f"{pad}- {inline(value)}")
    return lines


def _fenced(text: str) -> list[str]:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text.rstrip("\n"), fence]


def _citation(citation: Mapping[str, Any]) -> str:
    ref, status = inline(citation.get("ref", "?")), inline(citation.get("status", "unchecked"))
    detail = citation.get("detail")
    return f"`{ref.replace('`', '')}` {status}" + (f" ({inline(detail)})" if detail else "")


def _speaker(turn: Turn, humans: Mapping[str, str]) -> str:
    seat = turn.seat
    if turn.human:
        who = humans.get(turn.key) or "a human"
        return f"{inline(who)} as {inline(seat.name)} ({inline(seat.role)}, human)"
    return f"{inline(seat.name)} ({inline(seat.role)})"


def _turn_lines(run: Run, turn: Turn, humans: Mapping[str, str], number: int) -> list[str]:
    lines = [f"### {_speaker(turn, humans)} — {inline(turn.task)}", ""]
    meta = [f"Turn {number}", f"`{turn.key}`", turn.status]
    if not turn.human:
        meta.append(
            "simulated" if turn.backend == "simulated" else f"{turn.backend} {turn.model}".strip() or "—"
        )
    if turn.attempt > 1:
        meta.append(f"attempt {turn.attempt}")
    if turn.copied_from_id:
        source = turn.copied_from.run_id if turn.copied_from else run.parent_id
        meta.append(f"from parent run {source}")
    lines += ["_" + " · ".join(inline(m) for m in meta) + "_", ""]
    if turn.status == TurnStatus.FAILED:
        lines += [f"**This turn failed:** {inline(turn.error)}", ""]
    elif turn.status == TurnStatus.STREAMING:
        lines += ["_Still being written._", ""]
    elif isinstance(turn.payload, Mapping) and turn.payload:
        lines += [*_value_lines(turn.payload), ""]
    elif turn.raw_text.strip():
        lines += [*_fenced(turn.raw_text), ""]
    else:
        lines += ["_No output._", ""]
    if turn.flags:
        lines += ["Flagged (kept, but not verified):", ""]
        lines += [
            f"- {inline(str(f.get('detail', '')))}" + (f" (`{f.get('where')}`)" if f.get("where") else "")
            for f in turn.flags
            if isinstance(f, Mapping)
        ]
        lines.append("")
    if turn.citations:
        lines += ["Citations:", ""]
        lines += [f"- {_citation(c)}" for c in turn.citations if isinstance(c, Mapping)]
        lines.append("")
    return lines


def _header_lines(run: Run) -> list[str]:
    backend = (
        "simulated (deterministic agents; no model was called)"
        if run.backend == "simulated"
        else f"{run.backend} {run.model}"
    )
    lines = [
        f"# Transcript of run {run.pk}: {inline(run.topic)}",
        "",
        f"- **Protocol:** {run.protocol}",
        f"- **Status:** {run.status}" + (f" — {inline(run.status_reason)}" if run.status_reason else ""),
        f"- **Backend:** {inline(backend)}",
        f"- **Seed:** {run.seed}",
    ]
    if run.kb is not None:
        lines.append(f"- **Knowledge base:** {inline(run.kb.title)} (`{run.kb.slug}`)")
    if run.parent_id:
        lines.append(
            f"- **Parent:** forked from run {run.parent_id} at `{inline(run.forked_at_key)}` (its turns up to "
            "that one are copied; the rest was generated anew)"
            if run.forked_at_key
            else f"- **Parent:** re-run of run {run.parent_id}"
        )
    lines += [
        f"- **Created:** {_iso(run.created_at)} · **finished:** {_iso(run.finished_at)}",
        f"- **Usage:** {run.total_tokens} tokens, ${run.cost_usd:.4f}",
        "",
        "## Seats",
        "",
        "| Handle | Name | Role | Lens | Backend / model |",
        "|---|---|---|---|---|",
    ]
    for seat in run.seats.all():
        model = "" if seat.model in ("", seat.backend) else seat.model
        backend = "human" if seat.human else f"{seat.backend} {model}".strip()
        cells = [seat.handle, seat.name, seat.role, seat.lens or "—", backend]
        lines.append("| " + " | ".join(inline(c).replace("|", "\\|") for c in cells) + " |")
    return [*lines, ""]


def _outcome_lines(run: Run) -> list[str]:
    if not run.is_terminal:
        return []
    lines = ["## Outcome", "", f"- **Status:** {run.status}"]
    if run.status_reason:
        lines.append(f"- **Reason:** {inline(run.status_reason)}")
    if run.judge_pick:
        lines.append(f"- **Judge's pick:** {inline(run.judge_pick_label)}")
    if run.human_pick:
        by = run.picked_by.get_username() if run.picked_by else "someone"
        reason = f" — {inline(run.pick_reason)}" if run.pick_reason else ""
        lines.append(f"- **Human's pick:** {inline(run.human_pick_label)} (by {inline(by)}){reason}")
    return [*lines, ""]


def run_transcript_md(run: Run) -> str:
    """The run's transcript as Markdown (see the module's docstring)."""
    labels = {stage.id: stage.label for stage in registry.get(run.protocol).stages}
    humans = {
        action.step_key: action.user.get_username() if action.user else ""
        for action in HumanAction.objects.filter(run=run, kind=HumanActionKind.SUBMIT_TURN).select_related(
            "user"
        )
    }
    turns = run.turns.select_related("seat", "copied_from").order_by("first_seq", "id")
    lines = _header_lines(run)
    stage = None
    for number, turn in enumerate(turns, start=1):
        if turn.stage != stage:
            stage = turn.stage
            lines += [f"## {inline(labels.get(stage, stage) or 'Turns')}", ""]
        lines += _turn_lines(run, turn, humans, number)
    if stage is None:
        lines += ["_No turns yet._", ""]
    lines += _outcome_lines(run)
    if run.is_terminal:
        sections = registry.get(run.protocol).transcript_sections(run)
        lines += [*sections, ""] if sections else []
    return "\n".join(lines).rstrip("\n") + "\n"
