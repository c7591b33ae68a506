"""Every `export_run` format as one file (bytes, file name, content type): the command and the run page's
downloads both use `export_file`, so they give identical files."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from debates.briefs import BriefUnavailable, run_export_brief
from debates.exports.run_json import run_export_json
from debates.models import Run
from debates.protocols.kb_debate.exports import (
    RUN_DIR_PROTOCOLS,
    ZIP_DATE_TIME,
    RunDirUnavailable,
    run_export_zip,
)

FORMATS = ["json", "run-dir", "brief", "artifacts", "transcript"]
# Written as a directory unless --out ends in .zip; as one file (a zip), they are what the page downloads.
DIRECTORY_FORMATS = ("run-dir", "artifacts")


class ExportUnavailable(Exception):
    """This run has no export in this format; the message says why."""


@dataclass(frozen=True)
class ExportFile:
    filename: str
    content_type: str
    content: bytes


def export_formats(run: Run) -> list[str]:
    """The formats this run offers, in FORMATS order (a cheap check: building one may still refuse)."""
    offered = {"json", "transcript"}
    if run.protocol in RUN_DIR_PROTOCOLS and run.kb_id is not None:
        offered.add("run-dir")
    if run.protocol in ("comparative", "adversarial") and run.outcome:
        offered.add("brief")
    if run.protocol == "consultation":
        offered.add("artifacts")
    return [name for name in FORMATS if name in offered]


def export_file(run: Run, format: str) -> ExportFile:
    """The run exported in `format` as one file; ExportUnavailable (with the reason) when it has none."""
    pk = run.pk
    if format == "json":
        text = json.dumps(run_export_json(run), indent=2, ensure_ascii=False) + "\n"
        return ExportFile(f"disputa-run-{pk}.json", "application/json; charset=utf-8", text.encode())
    if format == "transcript":
        from debates.exports.transcript import run_transcript_md, transcript_filename

        return ExportFile(
            transcript_filename(run), "text/markdown; charset=utf-8", run_transcript_md(run).encode()
        )
    if format == "brief":
        from debates.briefs import brief_filename

        try:
            text = run_export_brief(run)
        except BriefUnavailable as error:
            raise ExportUnavailable(str(error)) from None
        return ExportFile(brief_filename(run), "text/markdown; charset=utf-8", text.encode())
    if format == "run-dir":
        try:
            content = run_export_zip(run)
        except RunDirUnavailable as error:
            raise ExportUnavailable(str(error)) from None
        return ExportFile(f"disputa-run-{pk}.zip", "application/zip", content)
    if format == "artifacts":
        return ExportFile(f"disputa-run-{pk}-artifacts.zip", "application/zip", _artifacts_zip(run))
    raise ExportUnavailable(f"unknown format {format!r} (formats: {', '.join(FORMATS)})")


def _artifacts_zip(run: Run) -> bytes:
    """The files `--format artifacts` writes into a directory, written by the same writer, as a zip."""
    from debates.protocols.consultation.exports import (
        ArtifactsUnavailable,
        artifacts_write,
        consultation_artifacts,
    )

    try:
        documents = consultation_artifacts(run)
    except ArtifactsUnavailable as error:
        raise ExportUnavailable(str(error)) from None
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        artifacts_write(documents, root)
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return files_zip(files)


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
