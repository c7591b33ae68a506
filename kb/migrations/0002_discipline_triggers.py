"""The database itself refuses a rewritten Statement and a written snapshot (DESIGN §5: "enforced ... by the
database where it can be"). Deletes are refused by the ORM guards in kb.discipline, not by triggers: test
databases are flushed with DELETE."""

from __future__ import annotations

from django.db import migrations

SQLITE = [
    """CREATE TRIGGER kb_argument_statement_is_never_rewritten BEFORE UPDATE OF statement ON kb_argument
       WHEN OLD.statement IS NOT NEW.statement
       BEGIN SELECT RAISE(ABORT, 'kb discipline: a Statement is never rewritten'); END""",
    """CREATE TRIGGER kb_snapshot_is_never_written BEFORE UPDATE OF files, arguments ON kb_snapshot
       WHEN OLD.files IS NOT NEW.files OR OLD.arguments IS NOT NEW.arguments
       BEGIN SELECT RAISE(ABORT, 'kb discipline: a snapshot is never written'); END""",
]
SQLITE_DROP = ["DROP TRIGGER kb_argument_statement_is_never_rewritten", "DROP TRIGGER kb_snapshot_is_never_written"]
POSTGRES = [
    """CREATE FUNCTION kb_refuse_rewrite() RETURNS trigger AS $$
       BEGIN RAISE EXCEPTION USING MESSAGE = 'kb discipline: ' || TG_ARGV[0]; END; $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER kb_argument_statement_is_never_rewritten BEFORE UPDATE OF statement ON kb_argument
       FOR EACH ROW WHEN (OLD.statement IS DISTINCT FROM NEW.statement)
       EXECUTE FUNCTION kb_refuse_rewrite('a Statement is never rewritten')""",
    """CREATE TRIGGER kb_snapshot_is_never_written BEFORE UPDATE OF files, arguments ON kb_snapshot
       FOR EACH ROW WHEN (OLD.files::text IS DISTINCT FROM NEW.files::text
                          OR OLD.arguments::text IS DISTINCT FROM NEW.arguments::text)
       EXECUTE FUNCTION kb_refuse_rewrite('a snapshot is never written')""",
]
POSTGRES_DROP = [
    "DROP TRIGGER kb_argument_statement_is_never_rewritten ON kb_argument",
    "DROP TRIGGER kb_snapshot_is_never_written ON kb_snapshot",
    "DROP FUNCTION kb_refuse_rewrite()",
]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor):
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("kb", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE, "postgresql": POSTGRES}), _run({"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP})
        )
    ]
