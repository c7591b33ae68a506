from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate

from debates.platform.search_sqlite import sqlite_fts_ensure


class DebatesConfig(AppConfig):
    name = "debates"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: apps.py is imported before any model is loaded, and these all import
        # models (Django's documented place for start-up wiring is ready()).
        from debates import checks  # noqa: F401  (registers system checks)
        from debates.engine import publish, registry
        from debates.web import frames

        registry.autodiscover()
        # The engine announces events; the web layer renders them (the publish port's renderers).

        publish.renderers_register(events=frames.event_messages_render, live=frames.turn_live_frame)
        post_migrate.connect(_ensure_full_text_search, sender=self)


def _ensure_full_text_search(sender: AppConfig, using: str, **kwargs: Any) -> None:
    sqlite_fts_ensure(connections[using])
