"""Request guards that hold for every view."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.loader import render_to_string

from debates.platform.db_retry import db_error_is_transient

log = logging.getLogger("debates.web")


def _has_nul(pairs: Iterable[tuple[str, list[str]]]) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in pairs)


class RefuseNulCharacters:
    """400 for a request with a NUL character (0x00) in its path, query or form fields. PostgreSQL text cannot
    hold one, so it would end in a database error wherever the value reaches a query (a lookup, a login attempt
    recorded by django-axes), and no field or address of this site has a use for it. Uploaded files are not
    fields: their bytes are the importer's to judge."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        fields = request.POST.lists() if request.method == "POST" else ()
        if "\x00" in request.path or _has_nul(request.GET.lists()) or _has_nul(fields):
            return HttpResponseBadRequest(
                "This request carries a NUL character (0x00), which no address or field of this site accepts.",
                content_type="text/plain; charset=utf-8",
            )
        return self.get_response(request)


# django-axes's AccessAttempt.username column.
AXES_USERNAME_MAX_LENGTH = 255


def axes_username(request: HttpRequest, credentials: dict[str, object] | None) -> str:
    """The username of a login attempt, as django-axes records it: what was typed, cut to the column's length
    (the login form refuses anything over 150 characters anyway; axes records the attempt before that)."""
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    return str(username)[:AXES_USERNAME_MAX_LENGTH]


# Seconds a browser or client is asked to wait before trying again while the database is unreachable.
DATABASE_RETRY_AFTER_SECONDS = 10


class DatabaseUnavailable:
    """503 with Retry-After and a plain page, instead of a 500, when a view meets a lost or refused database
    connection (a PostgreSQL restart; the pool's wait for a connection is bounded in settings, so the page comes
    quickly). An error of the query itself is still a 500. The page is rendered without the site's layout and its
    context processors, which read the database."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not db_error_is_transient(exception):
            return None
        return database_unavailable_response(request, exception)


def database_unavailable_response(request: HttpRequest, exception: BaseException) -> HttpResponse:
    log.warning("%s %s: database unavailable (%s); answered 503", request.method, request.path, exception)
    page = render_to_string("503.html", {"retry_after": DATABASE_RETRY_AFTER_SECONDS})
    response = HttpResponse(page, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response
