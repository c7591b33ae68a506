"""SQLite's own full-text search (FTS5) for the archive: one external-content index over run topics and one over
turn text, kept in step with their tables by triggers.

They are (re)created after every migrate rather than in a migration because Django's SQLite schema editor rebuilds a
table to alter it (create a copy, drop the original) and a dropped table takes its triggers with it; ensuring them
after each migrate survives any later migration of Run or Turn. Rowids are the tables' ids, which such a rebuild
keeps, so an index whose triggers went missing only needs a rebuild, done here whenever one was missing."""

from __future__ import annotations

import re
from typing import Any

# (index table, content table, indexed column). Porter stemming on unicode61 words, like PostgreSQL's "english".
FTS_TABLES = [
    ("debates_run_fts", "debates_run", "topic"),
    ("debates_turn_fts", "debates_turn", "raw_text"),
]

_TRIGGERS = {
    "ai": "AFTER INSERT ON {content} BEGIN "
    "INSERT INTO {fts}(rowid, {column}) VALUES (new.id, new.{column}); END",
    "ad": "AFTER DELETE ON {content} BEGIN "
    "INSERT INTO {fts}({fts}, rowid, {column}) VALUES ('delete', old.id, old.{column}); END",
    # Only when the column itself is written: streaming rewrites raw_text, other saves may not.
    "au": "AFTER UPDATE OF {column} ON {content} BEGIN "
    "INSERT INTO {fts}({fts}, rowid, {column}) VALUES ('delete', old.id, old.{column}); "
    "INSERT INTO {fts}(rowid, {column}) VALUES (new.id, new.{column}); END",
}


def sqlite_fts_ensure(connection: Any) -> None:
    """Create the FTS5 indexes and their triggers where missing; rebuild an index that was created or lost a
    trigger (its rows may have changed unseen). Idempotent and cheap when all is in place."""
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        existing = {
            name
            for (name,) in cursor.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger') AND name LIKE 'debates_%_fts%'"
            ).fetchall()
        }
        for fts, content, column in FTS_TABLES:
            stale = fts not in existing
            if stale:
                cursor.execute(
                    f"CREATE VIRTUAL TABLE {fts} USING fts5({column}, content='{content}', content_rowid='id', "
                    "tokenize='porter unicode61')"
                )
            for suffix, body in _TRIGGERS.items():
                name = f"{fts}_{suffix}"
                if name not in existing:
                    stale = True
                    cursor.execute(
                        f"CREATE TRIGGER {name} " + body.format(fts=fts, content=content, column=column)
                    )
            if stale:
                cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")


_PHRASE_OR_WORD = re.compile(r'"([^"]*)"|(\S+)')
_WORD = re.compile(r"\w+")


def fts5_query(text: str) -> str:
    """The user's search as an FTS5 query that cannot be a syntax error: every word must match (stemmed) and a
    "quoted phrase" must match as a phrase; operators and punctuation are not interpreted. Empty when the text
    holds no word."""
    parts = []
    for phrase, word in _PHRASE_OR_WORD.findall(text):
        words = _WORD.findall(phrase or word)
        if phrase and words:
            parts.append('"' + " ".join(words) + '"')
        else:
            parts.extend(f'"{w}"' for w in words)
    return " ".join(parts)
