from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class DebatesConfig(AppConfig):
    name = "debates"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from debates import checks  # noqa: F401  (registers system checks)
        from debates.engine import registry

        registry.autodiscover()
        # The engine announces events; the web layer renders them (the publish port's renderers).
        from debates.engine import publish
        from debates.web import frames

        publish.renderers_register(events=frames.event_messages_render, live=frames.turn_live_frame)
        post_migrate.connect(_ensure_full_text_search, sender=self)


def _ensure_full_text_search(sender: AppConfig, using: str, **kwargs: Any) -> None:
    from django.db import connections

    from debates.platform.search_sqlite import sqlite_fts_ensure

    sqlite_fts_ensure(connections[using])
