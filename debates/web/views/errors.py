"""The pages a person sees for 403 and 404, in the site's layout and in plain words: what happened, and where to go;
and for an error that reached no view's handling (a middleware's, or a 403/404 page's own) because the database is
unreachable, the same 503 a view's gets (debates.web.middleware.DatabaseUnavailable).

Django renders these only with DEBUG off (with it on, its technical pages). The address, resolved again, says which
run the request was about, so the page can point back to it."""

from __future__ import annotations

import sys
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.views import defaults

from debates.models import Run
from debates.platform.db_retry import db_error_is_transient
from debates.web.middleware import database_unavailable_response

# The message of a PermissionDenied raised without one (permission_required(raise_exception=True)).
NEEDS_MODERATE = "Only users with the moderate permission can do this."


def _run_of(request: HttpRequest) -> tuple[int | None, Run | None]:
    """The run id in the address (e.g. /runs/12/pick/), and the run if there is one with it."""
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return None, None
    run_id = match.kwargs.get("run_id")
    if not isinstance(run_id, int):
        return None, None
    return run_id, Run.objects.filter(pk=run_id).only("pk", "topic", "protocol").first()


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """403: a viewer asked to act (start, steer, decide), or any other refusal."""
    _, run = _run_of(request)
    reason = str(exception).strip() if exception is not None else ""
    context: dict[str, Any] = {"reason": reason or NEEDS_MODERATE, "run": run}
    return render(request, "403.html", context, status=403)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404: no page at this address, or no run, KB or argument with this id."""
    run_id, run = _run_of(request)
    context: dict[str, Any] = {"request_path": request.path, "missing_run": run_id if run is None else None}
    return render(request, "404.html", context, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """500, unless the error is the database's connection: then 503 with Retry-After, as from a view."""
    error = sys.exc_info()[1]
    if error is not None and db_error_is_transient(error):
        return database_unavailable_response(request, error)
    return defaults.server_error(request)
