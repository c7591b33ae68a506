"""The system check refuses an out-of-process task backend with the in-memory channel layer."""

from __future__ import annotations

import pytest

from debates.checks import check_task_backend_and_channel_layer


@pytest.mark.parametrize(
    "layer", ["channels.layers.InMemoryChannelLayer", "debates.platform.channel_layers.InMemoryChannelLayer"]
)
def test_an_out_of_process_backend_needs_a_shared_channel_layer(settings, layer):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": layer}}
    (error,) = check_task_backend_and_channel_layer()
    assert error.id == "debates.E001"


def test_the_default_setup_passes(settings):
    settings.TASKS = {"default": {"BACKEND": "debates.platform.task_backends.InProcessBackend"}}
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    assert check_task_backend_and_channel_layer() == []


def test_workers_with_redis_pass(settings):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer"}}
    assert check_task_backend_and_channel_layer() == []
