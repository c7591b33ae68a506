"""`manage.py export_run ID --format json --out FILE`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from debates.exports import run_export_json
from debates.models import Run

FORMATS = ["json", "run-dir", "brief", "artifacts"]


class Command(BaseCommand):
    help = "Export a run. Formats: json (the whole run)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument("--format", default="json", choices=FORMATS)
        parser.add_argument("--out", type=Path, required=True)

    def handle(self, *args: Any, run_id: int, format: str, out: Path, **options: Any) -> None:
        try:
            run = Run.objects.get(pk=run_id)
        except Run.DoesNotExist:
            raise CommandError(f"No run with id {run_id}.") from None
        if format != "json":
            raise CommandError(
                f"--format {format}: not available for {run.protocol} runs in this release; use json."
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps(run_export_json(run), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        self.stdout.write(str(out))
