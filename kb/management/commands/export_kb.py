"""`manage.py export_kb SLUG --out DIR`: write the KB back in its own format (seed-002 kb/ or the JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from kb.models import KnowledgeBase
from kb.services import kb_export


class Command(BaseCommand):
    help = "Export a knowledge base to a directory."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("slug")
        parser.add_argument("--out", type=Path, required=True)

    def handle(self, *args: Any, slug: str, out: Path, **options: Any) -> None:
        try:
            kb = KnowledgeBase.objects.get(slug=slug)
        except KnowledgeBase.DoesNotExist:
            raise CommandError(f"No knowledge base with the slug {slug!r}.") from None
        written = kb_export(kb, out)
        self.stdout.write(f"{len(written)} files written under {out}")
