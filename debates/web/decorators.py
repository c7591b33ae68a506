"""The request type of views behind django-htmx's middleware, and the decorator of a moderator's POST endpoints."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Concatenate, ParamSpec

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST
from django_htmx.middleware import HtmxDetails

from debates.selectors.runs import user_can_moderate
from debates.services.runs import ActionRefused

P = ParamSpec("P")


class HtmxHttpRequest(HttpRequest):
    """A request that went through HtmxMiddleware: `request.htmx` is truthy for an htmx request."""

    htmx: HtmxDetails


View = Callable[Concatenate[HtmxHttpRequest, P], HttpResponse]


def moderator_action(
    what: str, *, refused: Callable[..., HttpResponse] | None = None
) -> Callable[[View[P]], View[P]]:
    """A moderator's POST endpoint: 405 for any other method, the login page for a visitor, 403 ("You need the
    moderate permission to <what>.") for a user without the moderate permission. `refused`, if given, answers an
    ActionRefused the view lets through: called as refused(request, error, *the view's arguments)."""

    def decorate(view: View[P]) -> View[P]:
        @wraps(view)
        def wrapper(request: HtmxHttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
            if not user_can_moderate(request.user):
                raise PermissionDenied(f"You need the moderate permission to {what}.")
            if refused is None:
                return view(request, *args, **kwargs)
            try:
                return view(request, *args, **kwargs)
            except ActionRefused as error:
                return refused(request, error, *args, **kwargs)

        return require_POST(login_required(wrapper))

    return decorate
