"""`export_run --format artifacts`: a consultation's round artifacts (seed 001) as the seed writes them, snake_case
JSON with `artifact_type`, `schema_version` "1.0", `round_number` and `created_at`, one file per artifact:

    round-1-independent-<agent>.json   one per agent that answered in Round 1
    round-2-synthesis.json             the judge's synthesis (invalid tensions dropped)
    round-3-cross_exam.json            the judge's cross-examination synthesis
    round-4-verdict.json               the verdict (converge or explore form)
    consultation.json                  the state machine's snapshot: consultation_id, current_state, current_round,
                                       is_terminal and every transition {from, to, timestamp, reason}, and the
                                       cost gate's answer (user_consent: approved, auto_approved)

The artifacts are the ones validated and stored (in `round_artifact` events) when each round committed; nothing
is rebuilt at export time, so the files are what the run recorded, with one exception: a verdict recorded
without `dissent` (an explore verdict of a run from before it was always written) is exported with an empty one,
since the seed's importer reads `dissent` on every verdict and fails without it."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debates.contract import ExportFile, ExportUnavailable
from debates.protocols.consultation.states import ROUND_OF_STATE, TERMINAL

if TYPE_CHECKING:
    from debates.models import Run

PROTOCOL = "consultation"
# Why a run of another protocol has none (ExportFormat.refusal).
ARTIFACTS_REFUSAL = "only a consultation run has round artifacts (run {pk} is {protocol})"
# 1980-01-01, the earliest time a zip can record: the same state gives the same bytes.
ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)


class ArtifactsUnavailable(ExportUnavailable):
    pass


def consultation_id(run_id: int) -> str:
    """The seed's `consultation_id` of a run: its id, as text (the snapshot and every round artifact event)."""
    return str(run_id)


def artifact_filename(event: dict[str, Any]) -> str:
    round_number, artifact_type = event.get("round_number"), event.get("artifact_type")
    if artifact_type == "independent":
        agent = str(event.get("agent", "")).removeprefix("agent-") or "agent"
        return f"round-{round_number}-independent-{agent}.json"
    return f"round-{round_number}-{artifact_type}.json"


def consultation_snapshot(run: Run) -> dict[str, Any]:
    """The state machine's snapshot in the seed's form (ConsultStateMachine.toJSON, snake_case)."""
    state_events = run.events.filter(kind="state").order_by("seq").values_list("payload", "created_at")
    transitions = [
        {
            "from": str(payload.get("from", "")),
            "to": str(payload.get("to", "")),
            "timestamp": at.isoformat(),
            "reason": payload.get("reason") or None,
        }
        for payload, at in state_events
    ]
    current = str(transitions[-1]["to"]) if transitions else "idle"
    outcome = run.outcome if isinstance(run.outcome, dict) else {}
    return {
        "consultation_id": consultation_id(run.pk),
        "question": run.topic,
        "mode": run.config.get("mode", "converge"),
        "agents": [
            {"name": name, "model": model or run.backend, "provider": backend}
            for name, model, backend in run.seats.filter(role="agent")
            .order_by("position")
            .values_list("name", "model", "backend")
        ],
        "current_state": current,
        "current_round": ROUND_OF_STATE.get(current, 0),
        "is_terminal": current in TERMINAL,
        "transitions": transitions,
        "completed_rounds": outcome.get("completed_rounds", []),
        "early_termination": bool((outcome.get("early_termination") or {}).get("terminate")),
        "abort_reason": outcome.get("reason") if outcome.get("status") == "aborted" else None,
        "warnings": outcome.get("warnings", []),
        "user_consent": user_consent(run),
        "schema_version": "1.0",
    }


def user_consent(run: Run) -> dict[str, Any] | None:
    """The cost gate's answer as the seed's `consultation:user_consent` gives it (approved, auto_approved), with
    the estimate and the threshold it was weighed against; None before an answer (or without an estimate).
    auto_approved: the estimate was not above the threshold, so no one was asked."""
    if run.estimate_usd is None or run.consent not in {"auto", "approved", "declined"}:
        return None
    estimated = (
        run.events.filter(kind="cost_estimated").order_by("-seq").values_list("payload", flat=True).first()
        or {}
    )
    return {
        "approved": run.consent in {"auto", "approved"},
        "auto_approved": run.consent == "auto",
        "estimate_usd": str(run.estimate_usd),
        "threshold_usd": estimated.get("threshold"),
    }


def consultation_artifacts(run: Run) -> dict[str, dict[str, Any]]:
    """{file name: JSON document} for the run's round artifacts and its state snapshot."""
    if run.protocol != PROTOCOL:
        raise ArtifactsUnavailable(ARTIFACTS_REFUSAL.format(pk=run.pk, protocol=run.protocol))
    files: dict[str, dict[str, Any]] = {}
    for payload in run.events.filter(kind="round_artifact").order_by("seq").values_list("payload", flat=True):
        artifact = payload.get("artifact")
        if artifact:
            if artifact.get("artifact_type") == "verdict" and "dissent" not in artifact:
                artifact = {**artifact, "dissent": []}
            files[artifact_filename(payload)] = artifact
    files["consultation.json"] = consultation_snapshot(run)
    return files


def artifacts_write(files: dict[str, dict[str, Any]], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, document in files.items():
        path = out / name
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written


def artifacts_to(run: Run, out: Path) -> list[Path]:
    """`--format artifacts --out DIR`: the round artifacts written into `out`."""
    return artifacts_write(consultation_artifacts(run), out)


def artifacts_file(run: Run) -> ExportFile:
    """`--format artifacts` as one file: the files `artifacts_to` writes, written by it, as a zip."""
    documents = consultation_artifacts(run)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        artifacts_write(documents, root)
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return ExportFile(f"disputa-run-{run.pk}-artifacts.zip", "application/zip", files_zip(files))


def files_zip(files: dict[str, bytes]) -> bytes:
    """A deterministic zip: sorted names, fixed timestamps and modes, deflated."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE_TIME)
            info.create_system = 3
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o100644 << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()
