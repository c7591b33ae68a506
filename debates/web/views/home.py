"""The home page's cards (debates.web.views.runs.run_list renders the page): each protocol's "Start a demo" button
posts here."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST
from pydantic import ValidationError

from debates.engine import registry
from debates.services import quotas
from debates.services.demos import run_demo_start


@require_POST
@login_required
@permission_required("debates.moderate", raise_exception=True)
def run_demo(request: HttpRequest, protocol: str) -> HttpResponse:
    """A card's "Start a demo" button: the protocol's demo run on simulated agents, then its page. Refused (back
    to the home page, which says why): past the user's run limits, or when the demo cannot start."""

    try:
        registry.get(protocol)
    except LookupError:
        raise Http404("No such protocol.") from None
    refusal = quotas.run_start_refusal(request.user)
    if refusal is not None:
        messages.error(request, f"The demo was not started: {refusal.reason}")
        return redirect("run-list")
    try:
        run = run_demo_start(protocol=protocol, user=request.user)
    except (ValidationError, ValueError, LookupError) as exc:
        messages.error(request, f"The demo could not be started: {exc}")
        return redirect("run-list")
    return redirect("run-detail", run_id=run.pk)
