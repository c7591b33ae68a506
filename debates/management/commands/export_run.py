"""`manage.py export_run ID --format json|brief --out FILE` and `manage.py export_run ID --format run-dir --out DIR`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from debates.briefs import BriefUnavailable, run_export_brief
from debates.exports import RunDirUnavailable, run_dir_write, run_export_json, run_export_run_dir
from debates.models import Run

FORMATS = ["json", "run-dir", "brief", "artifacts"]


class Command(BaseCommand):
    help = (
        "Export a run. Formats: json (the whole run, to the file --out); run-dir (the seed-002 run directory of "
        "a kb-debate run — output/, kb/, kb-snapshot-construction/ — into the new or empty directory --out); brief "
        "(the seed-003 decision brief of a comparative run, or the Competitive Review of an adversarial run, as "
        "Markdown to the file --out)."
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
        if format == "run-dir":
            self._run_dir(run, out)
            return
        if format == "brief":
            try:
                text = run_export_brief(run)
            except BriefUnavailable as error:
                raise CommandError(f"--format brief: {error}.") from None
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            self.stdout.write(str(out))
            return
        if format != "json":
            raise CommandError(
                f"--format {format}: not available for {run.protocol} runs in this release; use json."
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps(run_export_json(run), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
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
