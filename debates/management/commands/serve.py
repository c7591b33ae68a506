"""Start Daphne serving Disputa (HTTP, WebSockets and static files) in this one process, and resume runs whose
runner died with a previous process. The one-laptop server; the scaled setup runs `daphne` + `db_worker`s."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve Disputa with Daphne on HOST:PORT and resume interrupted runs."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server, twisted_loop
        from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

        # Built on demand: `manage.py help` and the other commands must not build the ASGI application.
        from debates.asgi import application
        from debates.platform.gc_tuning import gc_settle

        def ready() -> None:
            # Daphne has no ASGI lifespan: start the in-process task loop and the resumer once listening.
            twisted_loop.call_soon_threadsafe(application.start)
            gc_settle()
            self.stdout.write(f"Disputa is listening on http://{host}:{port}/", ending="\n")
            self.stdout.flush()

        Server(
            application=ASGIStaticFilesHandler(application),  # type: ignore[arg-type]
            endpoints=build_endpoint_description_strings(host=host, port=port),
            ready_callable=ready,
            signal_handlers=True,
            action_logger=None,
            websocket_timeout=86400,
            **proxy_header_options(),
        ).run()


def proxy_header_options() -> dict[str, str]:
    """Behind a TLS-terminating proxy (DJANGO_PROXY_SSL_HEADER set, README "Deploying"), the client's address and
    scheme are the ones the proxy forwards: otherwise every request would come from the proxy's address, and
    login throttling by address would lock every user out after five wrong passwords from anyone. Without a proxy
    these headers are not trusted (any client could forge them)."""
    if not os.environ.get("DJANGO_PROXY_SSL_HEADER"):
        return {}
    return {
        "proxy_forwarded_address_header": "X-Forwarded-For",
        "proxy_forwarded_port_header": "X-Forwarded-Port",
        "proxy_forwarded_proto_header": "X-Forwarded-Proto",
    }
