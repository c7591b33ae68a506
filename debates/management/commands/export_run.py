"""`manage.py export_run ID --format json|brief|transcript --out FILE` and `manage.py export_run ID --format
run-dir|artifacts --out DIR` (or `--out FILE.zip`: the zip the run page downloads).

`export_file(run, format)` builds every format as one file (bytes, file name, content type); the command and the
run page's downloads both use it, so they give identical files."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from debates.briefs import BriefUnavailable, run_export_brief
from debates.exports import RunDirUnavailable, run_dir_write, run_export_json, run_export_run_dir
from debates.models import Run

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
    from debates.exports import RUN_DIR_PROTOCOLS

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
        from debates.exports_transcript import run_transcript_md, transcript_filename

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
        from debates.exports import run_export_zip

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
    try:
        from debates.exports_consultation import ArtifactsUnavailable, artifacts_write, consultation_artifacts
    except ImportError:
        raise ExportUnavailable("round artifacts are not available in this release") from None
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
    from debates.exports import ZIP_DATE_TIME

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE_TIME)
            info.create_system = 3
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o100644 << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


class Command(BaseCommand):
    help = (
        "Export a run. Formats: json (the whole run, to the file --out); run-dir (the seed-002 run directory of "
        "a kb-debate run — output/, kb/, kb-snapshot-construction/ — into the new or empty directory --out); brief "
        "(the seed-003 decision brief of a comparative run, or the Competitive Review of an adversarial run, as "
        "Markdown to the file --out); artifacts (the seed-001 round artifacts of a consultation run, one JSON "
        "file each plus consultation.json, into the new or empty directory --out); transcript (the run as "
        "Markdown, speaker by speaker, to the file --out). run-dir and artifacts go to one zip file instead — "
        "the run page's download — when --out ends in .zip."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument("--format", default="json", choices=FORMATS)
        parser.add_argument("--out", type=Path, required=True)

    def handle(self, *args: Any, run_id: int, format: str, out: Path, **options: Any) -> None:
        try:
            run = Run.objects.get(pk=run_id)
        except Run.DoesNotExist:
            raise CommandError(f"No run with id {run_id}.") from None
        as_directory = format in DIRECTORY_FORMATS and out.suffix.lower() != ".zip"
        if as_directory and format == "run-dir":
            self._run_dir(run, out)
            return
        if as_directory and format == "artifacts":
            self._artifacts(run, out)
            return
        try:
            export = export_file(run, format)
        except ExportUnavailable as error:
            raise CommandError(f"--format {format}: {error}.") from None
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(export.content)
        self.stdout.write(str(out))

    def _artifacts(self, run: Run, out: Path) -> None:
        from debates.exports_consultation import ArtifactsUnavailable, artifacts_write, consultation_artifacts

        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise CommandError(
                f"--out {out}: exists and is not an empty directory; artifacts go into a new one."
            )
        try:
            files = consultation_artifacts(run)
        except ArtifactsUnavailable as error:
            raise CommandError(f"--format artifacts: {error}.") from None
        artifacts_write(files, out)
        self.stdout.write(str(out))

    def _run_dir(self, run: Run, out: Path) -> None:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise CommandError(
                f"--out {out}: exists and is not an empty directory; a run directory is written into a new one."
            )
        try:
            files = run_export_run_dir(run)
        except RunDirUnavailable as error:
            raise CommandError(f"--format run-dir: {error}.") from None
        run_dir_write(files, out)
        self.stdout.write(str(out))
