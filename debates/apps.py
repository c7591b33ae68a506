from __future__ import annotations

from django.apps import AppConfig


class DebatesConfig(AppConfig):
    name = "debates"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from debates import checks  # noqa: F401  (registers system checks)
        from debates.protocols import registry

        registry.autodiscover()
