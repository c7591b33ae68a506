"""The websocket origin check: a socket is accepted only from a page of this very site, scheme, host and port
alike. Channels' AllowedHostsOriginValidator compares the host name alone, so a page served on another port of
the same host (another app, a developer's server) could open a socket with the user's cookie."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_normalise(scheme: str, host: str, port: int | None) -> tuple[str, str, int]:
    scheme = scheme.lower()
    return scheme, host.lower().strip("[]"), port if port is not None else DEFAULT_PORTS.get(scheme, 0)


def origin_parse(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return origin_normalise(parts.scheme, parts.hostname, port)


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _scheme(scope: dict[str, Any]) -> str:
    """The scheme the browser used: the socket's own, or what a trusted TLS proxy says (SECURE_PROXY_SSL_HEADER)."""
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        header = proxy[0].removeprefix("HTTP_").lower().replace("_", "-").encode()
        if _header(scope, header).split(",")[0].strip() == proxy[1]:
            return "https"
    return "https" if scope.get("scheme") in {"wss", "https"} else "http"


def origins_allowed(scope: dict[str, Any]) -> set[tuple[str, str, int]]:
    """The page's own origin (the Host the browser asked for, with the socket's scheme) and the trusted origins."""
    allowed = {o for o in map(origin_parse, settings.CSRF_TRUSTED_ORIGINS) if o is not None}
    host = _header(scope, b"host")
    if host:
        own = origin_parse(f"{_scheme(scope)}://{host}")
        if own is not None:
            allowed.add(own)
    return allowed


class SameOriginValidator:
    """ASGI middleware for websockets: refuse (close before accepting) a socket whose Origin is not this site's."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket":
            origin = origin_parse(_header(scope, b"origin"))
            if origin is None or origin not in origins_allowed(scope):
                denier = WebsocketDenier()
                return await denier(scope, receive, send)  # type: ignore[arg-type]
        return await self.application(scope, receive, send)
