"""Request guards that hold for every view."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


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
