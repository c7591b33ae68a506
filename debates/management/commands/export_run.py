"""`manage.py export_run ID --format json|brief|transcript --out FILE` and `manage.py export_run ID --format
run-dir|artifacts --out DIR` (or `--out FILE.zip`: the zip the run page downloads).

`debates.exports.files.export_file(run, format)` builds every format as one file; the command and the run page's
downloads both use it, so they give identical files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from debates.exports.files import DIRECTORY_FORMATS, FORMATS, ExportUnavailable, export_file
from debates.models import Run
from debates.protocols.kb_debate.exports import RunDirUnavailable, run_dir_write, run_export_run_dir


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
        from debates.protocols.consultation.exports import (
            ArtifactsUnavailable,
            artifacts_write,
            consultation_artifacts,
        )

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
