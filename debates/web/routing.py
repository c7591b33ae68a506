from __future__ import annotations

from django.urls import path

from debates.web import converters
from debates.web.consumers import NeedsYouConsumer, RunConsumer

converters.register()  # the asgi app may load this before debates/urls.py

websocket_urlpatterns = [
    path("ws/runs/<id:run_id>/", RunConsumer.as_asgi()),  # type: ignore[arg-type]
    path("ws/needs-you/", NeedsYouConsumer.as_asgi()),  # type: ignore[arg-type]
]
