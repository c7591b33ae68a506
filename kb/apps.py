from __future__ import annotations

from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge bases"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from kb import discipline  # noqa: F401  (connects the delete / rewrite guards)
