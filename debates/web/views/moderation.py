"""The KB approval inbox: proposed KB changes of every run wait here for a moderator, who approves (applied through
the discipline) or rejects them; a change a run proposed is decided through its run, so its open pages update."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from debates.selectors.runs import user_can_moderate
from debates.services.mutations import run_mutation_decide
from debates.services.runs import ActionRefused
from debates.web.decorators import HtmxHttpRequest, moderator_action
from kb import selectors
from kb.discipline import DisciplineViolation, mutation_decide
from kb.models import ProposedMutation


@require_GET
@login_required
def inbox(request: HttpRequest) -> HttpResponse:
    mutations = selectors.inbox()
    return render(
        request,
        "kb/inbox.html",
        {
            **mutations,
            "pending_count": mutations["pending"].count(),
            "can_moderate": user_can_moderate(request.user),
        },
    )


@moderator_action("decide on KB changes")
def mutation_decide_view(request: HtmxHttpRequest, mutation_id: int) -> HttpResponse:
    mutation = get_object_or_404(ProposedMutation, pk=mutation_id)
    approve = request.POST.get("decision") == "approve"
    error = ""
    reason = request.POST.get("reason", "")
    try:
        if mutation.run_id is not None:  # through the run, so its open pages update live
            mutation = run_mutation_decide(mutation.run_id, mutation.pk, approve, reason, request.user)
        else:
            mutation = mutation_decide(mutation=mutation, approve=approve, user=request.user, reason=reason)
    except (DisciplineViolation, ActionRefused) as violation:
        error = str(violation)
        mutation.refresh_from_db()
    context = {"mutation": mutation, "error": error, "can_moderate": True}
    if request.htmx:
        # The decided card in place, and the pending count out of band.
        card = render(request, "kb/inbox.html#mutation", context)
        count = render(
            request,
            "kb/inbox.html#pending-count",
            {"pending_count": selectors.inbox()["pending"].count(), "oob": True},
        )
        card.content += count.content
        return card
    return _redirect_back(request, request.POST.get("next", ""), "kb-inbox")


def _redirect_back(request: HttpRequest, target: str, fallback: str) -> HttpResponse:
    """To `target` when it is a path on this site ('/kb/...'), else to the URL named `fallback`: never to another
    host, and never a 500 for a value that is neither a path nor a URL name."""
    if (
        target.startswith("/")
        and not target.startswith("//")
        and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return HttpResponseRedirect(target)
    return redirect(fallback)
