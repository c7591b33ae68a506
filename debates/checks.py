"""System checks that enforce the deployment rules of DESIGN §3."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

IN_PROCESS_BACKENDS = {
    "debates.platform.task_backends.InProcessBackend",
    "django.tasks.backends.immediate.ImmediateBackend",
    "django.tasks.backends.dummy.DummyBackend",
}
IN_MEMORY_LAYERS = {
    "channels.layers.InMemoryChannelLayer",
    "debates.platform.channel_layers.InMemoryChannelLayer",
}


@checks.register(checks.Tags.compatibility)
def check_task_backend_and_channel_layer(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    backend = settings.TASKS["default"]["BACKEND"]
    layer = settings.CHANNEL_LAYERS["default"]["BACKEND"]
    if backend not in IN_PROCESS_BACKENDS and layer in IN_MEMORY_LAYERS:
        return [
            checks.Error(
                f"The task backend {backend} runs debates in other processes, but the in-memory channel layer "
                "cannot reach browsers connected to this one: live pages would never update.",
                hint="Set REDIS_URL (channels-redis) or use DISPUTA_TASKS_BACKEND=inprocess.",
                id="debates.E001",
            )
        ]
    return []


LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


@checks.register(checks.Tags.security, deploy=True)
def check_tls_allowed_hosts(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """With TLS on, the site is public: its host names must be listed, not the local defaults."""
    if getattr(settings, "TLS", False) and set(settings.ALLOWED_HOSTS) <= LOCAL_HOSTS:
        return [
            checks.Warning(
                "DISPUTA_TLS is on but DJANGO_ALLOWED_HOSTS names only local hosts "
                f"({', '.join(settings.ALLOWED_HOSTS) or 'none'}).",
                hint="Set DJANGO_ALLOWED_HOSTS to the public host name(s), comma-separated (README: Deploying).",
                id="debates.W001",
            )
        ]
    return []
