from __future__ import annotations

from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge bases"
    default_auto_field = "django.db.models.BigAutoField"
