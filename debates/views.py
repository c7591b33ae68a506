"""Thin views: parse, call a service or selector, render the page or its partial."""

from __future__ import annotations

import json
import uuid

from django.conf import settings
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from pydantic import ValidationError

from debates import selectors, services
from debates.conf import conf
from debates.exports import run_export_json
from debates.forms import BudgetForm, RunForm
from debates.models import Run

RUN_TEMPLATE = "debates/run_detail.html"


def _uuid(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


@require_GET
@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    runs = selectors.run_list()[:200]
    template = (
        "debates/run_list.html#runs-table" if getattr(request, "htmx", False) else "debates/run_list.html"
    )
    return render(
        request, template, {"runs": runs, "can_moderate": selectors.user_can_moderate(request.user)}
    )


@require_http_methods(["GET", "POST"])
@login_required
@permission_required("debates.moderate", raise_exception=True)
def run_new(request: HttpRequest) -> HttpResponse:
    form = RunForm(request.POST or None)
    error = ""
    if request.method == "POST" and form.is_valid():
        try:
            run = services.run_create(**form.run_kwargs(), user=request.user)
        except (ValidationError, ValueError, LookupError) as exc:
            error = f"The run could not be started: {exc}"
        else:
            return redirect("run-detail", run_id=run.pk)
    context = {
        "form": form,
        "error": error,
        "consent_threshold": conf("CONSENT_THRESHOLD_USD"),
        "prices_read_on": settings.DISPUTA_PRICES.get("read_on", ""),
    }
    return render(request, "debates/run_new.html", context, status=400 if error else 200)


@require_GET
@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    context = {
        **selectors.cost_context(run),
        **selectors.run_status_context(run),
        "cards": selectors.run_turn_cards(run),
        **selectors.moderator_context(run, request.user),
    }
    return render(request, RUN_TEMPLATE, context)


def _moderator_response(
    request: HttpRequest,
    run: Run,
    *,
    message: str = "",
    status: int = 200,
    errors: dict[str, list[str]] | None = None,
) -> HttpResponse:
    run.refresh_from_db()
    context = {
        **selectors.moderator_context(run, request.user, errors=errors, values=request.POST),
        "message": message,
    }
    if getattr(request, "htmx", False):
        return render(request, f"{RUN_TEMPLATE}#moderator", context, status=status)
    return redirect("run-detail", run_id=run.pk)


@require_POST
@login_required
def run_control(request: HttpRequest, run_id: int, action: str) -> HttpResponse:
    if not selectors.user_can_moderate(request.user):
        raise PermissionDenied("You need the moderate permission to steer a run.")
    run = get_object_or_404(Run, pk=run_id)
    try:
        services.run_control(
            run_id=run.pk,
            action=action,
            user=request.user,
            client_uuid=_uuid(request.POST.get("client_uuid")),
        )
    except services.ActionRefused as refused:
        return _moderator_response(request, run, message=str(refused))
    return _moderator_response(request, run)


@require_POST
@login_required
def human_turn_submit(request: HttpRequest, run_id: int) -> HttpResponse:
    if not selectors.user_can_moderate(request.user):
        raise PermissionDenied("You need the moderate permission to take a seat in a run.")
    run = get_object_or_404(Run, pk=run_id)
    step_key = request.POST.get("step_key", "")
    try:
        services.human_turn_submit(
            run_id=run.pk,
            step_key=step_key,
            data=request.POST,
            user=request.user,
            client_uuid=_uuid(request.POST.get("client_uuid")),
        )
    except services.SubmissionInvalid as invalid:
        return _moderator_response(request, run, errors={step_key: invalid.errors})
    except services.ActionRefused as refused:
        return _moderator_response(request, run, message=str(refused))
    return _moderator_response(request, run, message="Submitted. The debate continues.")


@require_POST
@login_required
def run_consent(request: HttpRequest, run_id: int) -> HttpResponse:
    if not selectors.user_can_moderate(request.user):
        raise PermissionDenied("You need the moderate permission to approve a run's cost.")
    run = get_object_or_404(Run, pk=run_id)
    approve = request.POST.get("approve") == "yes"
    try:
        services.run_consent(
            run_id=run.pk,
            approve=approve,
            user=request.user,
            client_uuid=_uuid(request.POST.get("client_uuid")),
        )
    except services.ActionRefused as refused:
        return _moderator_response(request, run, message=str(refused))
    message = "Approved: the run starts." if approve else "Declined: the run is cancelled."
    return _moderator_response(request, run, message=message)


@require_POST
@login_required
def run_budget(request: HttpRequest, run_id: int) -> HttpResponse:
    if not selectors.user_can_moderate(request.user):
        raise PermissionDenied("You need the moderate permission to change a run's budget.")
    run = get_object_or_404(Run, pk=run_id)
    form = BudgetForm(request.POST)
    if not form.is_valid():
        return _moderator_response(
            request, run, message="The budget was not changed: " + "; ".join(form.error_list()), status=400
        )
    try:
        services.run_budget_set(
            run_id=run.pk,
            budget_usd=form.cleaned_data["budget_usd"],
            budget_tokens=form.cleaned_data["budget_tokens"],
            user=request.user,
            client_uuid=_uuid(request.POST.get("client_uuid")),
        )
    except services.ActionRefused as refused:
        return _moderator_response(request, run, message=str(refused))
    return _moderator_response(request, run, message="Budget saved.")


@require_GET
@login_required
def run_export(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    body = json.dumps(run_export_json(run), indent=2, ensure_ascii=False)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="disputa-run-{run.pk}.json"'
    return response
