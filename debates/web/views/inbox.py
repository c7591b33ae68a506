"""The "Needs you" queue: everything waiting for a person, one item each, with a link straight to its form; a
cost consent, a final pick that agrees with the judge and a proposed KB change can be decided in place."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from debates.models import Run
from debates.selectors.inbox import needs_you, needs_you_count
from debates.selectors.runs import user_can_moderate
from debates.services import runs as services
from debates.services.mutations import run_mutation_decide
from debates.services.runs import ActionRefused
from debates.web.decorators import HtmxHttpRequest, moderator_action
from kb.discipline import DisciplineViolation, mutation_decide
from kb.models import ProposedMutation


@require_GET
@login_required
def needs_you_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "debates/inbox.html",
        {"items": needs_you(request.user), "can_moderate": user_can_moderate(request.user)},
    )


def _done(
    request: HtmxHttpRequest, dom_id: str, message: str, *, url: str = "", error: bool = False
) -> HttpResponse:
    """The item replaced by what was recorded (or why not), and the nav count out of band."""
    if not request.htmx:
        return redirect("needs-you")
    return render(
        request,
        "debates/inbox.html#done",
        {
            "dom_id": dom_id,
            "message": message,
            "url": url,
            "error": error,
            "needs_you_count": needs_you_count(request.user),
        },
    )


def _run_refused(request: HtmxHttpRequest, error: ActionRefused, run_id: int) -> HttpResponse:
    """An action the run no longer accepts (decided meanwhile, on another page or by someone else)."""
    return _done(
        request,
        request.POST.get("dom_id", ""),
        str(error),
        url=reverse("run-detail", args=[run_id]),
        error=True,
    )


@moderator_action("act on what waits for you", refused=_run_refused)
def needs_you_consent(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    approve = request.POST.get("approve") == "yes"
    services.run_consent(run_id=run.pk, approve=approve, user=request.user)
    message = "Approved: the run starts." if approve else "Declined: the run is cancelled."
    return _done(request, request.POST.get("dom_id", ""), message, url=reverse("run-detail", args=[run.pk]))


@moderator_action("act on what waits for you", refused=_run_refused)
def needs_you_agree(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """Agree with the judge's pick, in place (overriding needs a reason: that is done on the run page)."""
    run = get_object_or_404(Run, pk=run_id)
    dom_id = request.POST.get("dom_id", "")
    services.run_pick_record(run_id=run.pk, pick=run.judge_pick, reason="", user=request.user)
    run.refresh_from_db()
    return _done(
        request,
        dom_id,
        f"Recorded: you agree with the judge ({run.human_pick_label}).",
        url=reverse("run-detail", args=[run.pk]),
    )


@moderator_action("decide on KB changes")
def needs_you_mutation(request: HtmxHttpRequest, mutation_id: int) -> HttpResponse:
    mutation = get_object_or_404(ProposedMutation, pk=mutation_id)
    approve = request.POST.get("decision") == "approve"
    dom_id = request.POST.get("dom_id", "")
    url = reverse("run-detail", args=[mutation.run_id]) if mutation.run_id else ""
    try:
        if mutation.run_id is not None:  # through the run, so its open pages update live
            mutation = run_mutation_decide(mutation.run_id, mutation.pk, approve, "", request.user)
        else:
            mutation = mutation_decide(mutation=mutation, approve=approve, user=request.user, reason="")
    except (DisciplineViolation, ActionRefused) as violation:
        return _done(request, dom_id, str(violation), url=url, error=True)
    outcome = {
        "applied": "approved and applied to the knowledge base",
        "rejected": "rejected",
        "refused": "refused by the knowledge base's rules",
    }.get(mutation.status, mutation.status)
    return _done(request, dom_id, f"Recorded: the change is {outcome}.", url=url)
