"""System checks that enforce the deployment rules of DESIGN §3."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

IN_PROCESS_BACKENDS = {
    "debates.task_backends.InProcessBackend",
    "django.tasks.backends.immediate.ImmediateBackend",
    "django.tasks.backends.dummy.DummyBackend",
}
IN_MEMORY_LAYERS = {"channels.layers.InMemoryChannelLayer", "debates.channel_layers.InMemoryChannelLayer"}


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
