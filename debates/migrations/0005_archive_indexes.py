# Indexes for the archive (issue 8): its filters, its newest-first order, the run page's turn order, and, on
# PostgreSQL only, GIN indexes over the full-text vectors the archive's text search queries.

from django.db import migrations, models

# The expressions must match debates.selectors.archive's SearchVector(...) exactly for PostgreSQL to use the indexes.
FULL_TEXT_CONFIG = "english"
FULL_TEXT_INDEXES = [("run", "topic", "run_topic_fts"), ("turn", "raw_text", "turn_raw_text_fts")]


def _full_text_indexes(apps, schema_editor, *, add: bool) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite has its own FTS5 indexes (debates.platform.search_sqlite)
    from django.contrib.postgres.indexes import GinIndex
    from django.contrib.postgres.search import SearchVector

    for model_name, field, name in FULL_TEXT_INDEXES:
        model = apps.get_model("debates", model_name)
        index = GinIndex(SearchVector(field, config=FULL_TEXT_CONFIG), name=name)
        if add:
            schema_editor.add_index(model, index)
        else:
            schema_editor.remove_index(model, index)


def add_full_text_indexes(apps, schema_editor):
    _full_text_indexes(apps, schema_editor, add=True)


def remove_full_text_indexes(apps, schema_editor):
    _full_text_indexes(apps, schema_editor, add=False)


class Migration(migrations.Migration):
    dependencies = [
        ("debates", "0004_run_pick"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["-created_at", "-id"], name="run_archive_order"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["protocol", "-created_at"], name="run_protocol_created"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["status", "-created_at"], name="run_status_created"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["backend", "model"], name="run_backend_model"),
        ),
        migrations.AddIndex(
            model_name="turn",
            index=models.Index(fields=["run", "first_seq", "id"], name="turn_run_order"),
        ),
        migrations.RunPython(add_full_text_indexes, remove_full_text_indexes, elidable=False),
    ]
