"""Import problems: every one names its file and line, and all of them are reported together."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class ImportRefused(Exception):
    """The input has problems; nothing was imported."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class NotAKnowledgeBase(ImportRefused):
    """The input is not a KB at all (a folder without any KB file): one problem, which says what a KB holds."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__([Problem(path, 1, message)])
        self.path, self.message = path, message


def text_defect(value: str) -> str | None:
    """Why a string read from a KB cannot be stored as text (PostgreSQL refuses NUL characters and unpaired UTF-16
    surrogates, in text columns and in JSON alike), or None."""
    if "\x00" in value:
        return "holds a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "holds an unpaired surrogate (not Unicode text)"
    return None
