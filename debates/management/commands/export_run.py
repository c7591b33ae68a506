"""`manage.py export_run ID --format json|brief|transcript --out FILE` and `manage.py export_run ID --format
run-dir|artifacts --out DIR` (or `--out FILE.zip`: the zip the run page downloads).

`debates.exports.files.export_file(run, format)` builds every format as one file; the command and the run page's
downloads both use it, so they give identical files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from debates.exports.files import (
    ExportUnavailable,
    directory_formats,
    directory_note,
    export_file,
    export_write,
    formats,
)
from debates.models import Run


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
        parser.add_argument("--format", default="json", choices=formats())
        parser.add_argument("--out", type=Path, required=True)

    def handle(self, *args: Any, run_id: int, format: str, out: Path, **options: Any) -> None:
        try:
            run = Run.objects.get(pk=run_id)
        except Run.DoesNotExist:
            raise CommandError(f"No run with id {run_id}.") from None
        if format in directory_formats() and out.suffix.lower() != ".zip":
            self._directory(run, format, out)
            return
        try:
            export = export_file(run, format)
        except ExportUnavailable as error:
            raise CommandError(f"--format {format}: {error}.") from None
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(export.content)
        self.stdout.write(str(out))

    def _directory(self, run: Run, format: str, out: Path) -> None:
        """A directory format written into the new or empty directory `out`."""
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise CommandError(
                f"--out {out}: exists and is not an empty directory; {directory_note(format)}."
            )
        try:
            export_write(run, format, out)
        except ExportUnavailable as error:
            raise CommandError(f"--format {format}: {error}.") from None
        self.stdout.write(str(out))
