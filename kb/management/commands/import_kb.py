"""`manage.py import_kb PATH [--slug S]`: a seed-002 kb/ directory (or a zip of one) or a seed-004 JSON data KB.
Prints the slug; on bad input (including anything over the bounds in kb/limits.py, or a slug that is not a slug)
prints every problem as file:line: message and exits 1, importing nothing. A folder that holds no KB file at all is
refused in one line that says what a KB folder holds and where it was looked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from kb.formats.problems import ImportRefused, NotAKnowledgeBase
from kb.services import kb_import_path


class Command(BaseCommand):
    help = "Import a knowledge base; prints its slug."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--slug")
        parser.add_argument("--title")

    def handle(self, *args: Any, path: Path, slug: str | None, title: str | None, **options: Any) -> None:
        if not path.exists():
            raise CommandError(f"{path}: no such file or directory")
        try:
            kb = kb_import_path(path, slug=slug, title=title)
        except NotAKnowledgeBase as refused:
            raise CommandError(f"{refused.path}: {refused.message}; nothing was imported.") from None
        except ImportRefused as refused:
            for problem in refused.problems:
                self.stderr.write(str(problem))
            raise CommandError(f"{len(refused.problems)} problem(s); nothing was imported.") from None
        except OSError as error:
            raise CommandError(f"{error.filename or path}: {error.strerror}; nothing was imported.") from None
        self.stdout.write(kb.slug)
