"""ASGI entry point: HTTP through Django, WebSockets behind origin validation and session auth."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "debates.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (Django must be set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from debates.platform.tcp_writes import eager_writes_install  # noqa: E402
from debates.platform.ws_prepared import DaphneConnections  # noqa: E402
from debates.startup import ResumeOnStartup  # noqa: E402
from debates.web.origin import SameOriginValidator  # noqa: E402
from debates.web.request_limits import BodySizeLimit, daphne_body_limit_install  # noqa: E402
from debates.web.routing import websocket_urlpatterns  # noqa: E402

# Whatever server imports this application (manage.py serve, the scaled setup, the tests' live server): an
# oversized body is refused when its headers arrive, and a frame is written at once when nothing is buffered.
daphne_body_limit_install()
eager_writes_install()

application = ResumeOnStartup(
    ProtocolTypeRouter(
        {
            "http": BodySizeLimit(django_asgi_app),
            # Host in ALLOWED_HOSTS (channels), then the whole origin, port included, is this site's own. Each
            # socket's Daphne connection in its scope: a frame many viewers get is framed once for all of them.
            "websocket": DaphneConnections(
                AllowedHostsOriginValidator(
                    SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))  # type: ignore[arg-type]
                )
            ),
        }
    )
)
