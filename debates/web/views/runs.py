"""Thin views: parse, call a service or selector, render the page or its partial."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseNotFound
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from pydantic import ValidationError

from debates.engine import registry
from debates.models import Run
from debates.platform.conf import conf
from debates.selectors import runs as selectors
from debates.selectors.archive import VERDICT_LABELS, archive_page
from debates.selectors.cards import run_round_turn_cards, run_transcript
from debates.selectors.decisions import override_stats, pick_form_context, verdict_reviews
from debates.selectors.panels import moderator_context, run_panels, run_protocol_context
from debates.services import mutations, quotas, turns
from debates.services import runs as services
from debates.web.decorators import HtmxHttpRequest, moderator_action
from debates.web.forms import BudgetForm, RunForm
from debates.web.views.exports import export_response

RUN_TEMPLATE = "debates/run_detail.html"


@require_GET
@login_required
def run_list(request: HtmxHttpRequest) -> HttpResponse:
    """The home page: what Disputa does and the protocols as cards (each starts its demo run: views.home.run_demo),
    then the archive: every run, filtered by GET parameters and paginated (debates.selectors.archive); htmx requests
    (the filters, the pages, the 2 s live-status poll) get the table alone."""

    archive = archive_page(request.GET, request.GET.get("page") or 1)
    template = "debates/run_list.html#archive-table" if request.htmx else "debates/run_list.html"
    context = {
        "archive": archive,
        "verdict_labels": VERDICT_LABELS,
        "can_moderate": selectors.user_can_moderate(request.user),
        "protocols": [] if request.htmx else registry.all_protocols(),
    }
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
@login_required
@permission_required("debates.moderate", raise_exception=True)
def run_new(request: HttpRequest) -> HttpResponse:
    """The new-run form; `?protocol=<name>` chooses the protocol (the home page's cards link here). A resubmit of
    a form whose run was created (same client_uuid) goes to that run: nothing is started twice."""
    submitted = services.run_find_submitted(_client_uuid(request)) if request.method == "POST" else None
    if submitted is not None:
        return redirect("run-detail", run_id=submitted.pk)
    form = RunForm(request.POST or None, initial=RunForm.initial_for(request.GET))
    error = ""
    refusal = quotas.run_start_refusal(request.user) if request.method == "POST" else None
    if refusal:
        error = f"The run was not started: {refusal.reason}"
    elif request.method == "POST" and form.is_valid():
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
    response = render(
        request, "debates/run_new.html", context, status=429 if refusal else 400 if error else 200
    )
    if refusal:
        response["Retry-After"] = str(refusal.retry_after_seconds)
    return response


@require_GET
@login_required
@permission_required("debates.moderate", raise_exception=True)
def run_new_criteria(request: HttpRequest) -> HttpResponse:
    """A field of the new-run form that depends on another (the comparative criteria on the decision type),
    refreshed by the protocol section that has it."""
    form = RunForm()
    refreshed = next(
        (r for section in form.sections if (r := section.field_refresh("criteria", request.GET)) is not None),
        None,
    )
    if refreshed is None:
        raise Http404("No protocol has a criteria field.")
    form.initial["criteria"], note = refreshed
    return render(request, "debates/run_new.html#criteria-field", {"form": form, "criteria_note": note})


# What each control did, said where the moderator's focus goes after the click.
CONTROL_DONE = {
    "pause": "Pause requested: the run stops once the turns in flight are done.",
    "resume": "Resumed: the run goes on.",
    "step": "One turn runs, then the run pauses again.",
    "cancel": "Cancelled: the turns in flight stop, and the run ends here.",
}


@require_GET
@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    kb = run_protocol_context(run)
    context = {
        **selectors.cost_context(run),
        **selectors.run_status_context(run),
        "rounds": run_transcript(run, kb=kb),
        **moderator_context(run, request.user, kb=kb),
        "extra_panels": run_panels(run, request.user, kb=kb),
    }
    return render(request, RUN_TEMPLATE, context)


@require_GET
@login_required
def run_turns(request: HttpRequest, run_id: int) -> HttpResponse:
    """The turns a long transcript left out of the page (one group's, between two seqs), as the reader reaches
    them: the cards that replace the `deferred` entry standing for them."""
    run = get_object_or_404(Run, pk=run_id)
    try:
        round_id = request.GET["round"]
        from_seq, to_seq = int(request.GET["from"]), int(request.GET["to"])
    except (KeyError, ValueError):
        return HttpResponseBadRequest(
            "Give the part of the transcript as ?round=<group id>&from=<seq>&to=<seq> (whole numbers).",
            content_type="text/plain",
        )
    kb = run_protocol_context(run)
    cards = run_round_turn_cards(run, round_id=round_id, from_seq=from_seq, to_seq=to_seq, kb=kb)
    return render(request, f"{RUN_TEMPLATE}#turn-list", {"cards": cards, "run": run})


def _moderator_response(
    request: HtmxHttpRequest,
    run_id: int,
    *,
    message: str = "",
    status: int = 200,
    errors: dict[str, list[str]] | None = None,
    pick_error: str = "",
) -> HttpResponse:
    """The moderator panel as the action left the run (htmx), or back to the run page."""
    run = Run.objects.get(pk=run_id)
    context = {
        **moderator_context(run, request.user, errors=errors, values=request.POST, pick_error=pick_error),
        "message": message,
    }
    if request.htmx:
        response = render(request, f"{RUN_TEMPLATE}#moderator", context, status=status)
        # The confirmation, out of band: it stays when the next live frame replaces the panel.
        response.content += render_to_string(
            f"{RUN_TEMPLATE}#confirmation", {"message": message, "oob": True}, request=request
        ).encode()
        return response
    return redirect("run-detail", run_id=run.pk)


def _refused(
    request: HtmxHttpRequest, refused: services.ActionRefused, run_id: int, **_: str
) -> HttpResponse:
    """The moderator panel saying why (200: htmx swaps only successful answers)."""
    return _moderator_response(request, run_id, message=str(refused))


def _pick_response(
    request: HtmxHttpRequest, run_id: int, *, message: str = "", error: str = ""
) -> HttpResponse:
    """The decision slot above the outcome as the pick left it (htmx): what was recorded, or the form again saying
    what went wrong with what was posted; or back to the run page."""
    if not request.htmx:
        return redirect("run-detail", run_id=run_id)
    run = Run.objects.get(pk=run_id)
    context = {
        "run": run,
        "pick_form": pick_form_context(run, values=request.POST if error else None, error=error),
        "pick_message": message,
    }
    return render(request, f"{RUN_TEMPLATE}#pick", context)


def _pick_refused(request: HtmxHttpRequest, refused: services.ActionRefused, run_id: int) -> HttpResponse:
    """200: htmx swaps only successful answers, and the pick form says what went wrong."""
    return _pick_response(request, run_id, error=str(refused))


def _client_uuid(request: HttpRequest) -> uuid.UUID | None:
    """The action's idempotency key (debates.services.runs): None when absent or not a UUID."""
    value = request.POST.get("client_uuid")
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


@moderator_action("steer a run", refused=_refused)
def run_control(request: HtmxHttpRequest, run_id: int, action: str) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    services.run_control(run_id=run.pk, action=action, user=request.user, client_uuid=_client_uuid(request))
    return _moderator_response(request, run.pk, message=CONTROL_DONE.get(action, ""))


@moderator_action("take a seat in a run", refused=_refused)
def human_turn_submit(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    step_key = request.POST.get("step_key", "")
    try:
        turns.human_turn_submit(
            run_id=run.pk,
            step_key=step_key,
            data=request.POST,
            user=request.user,
            client_uuid=_client_uuid(request),
        )
    except services.SubmissionInvalid as invalid:
        return _moderator_response(request, run.pk, errors={step_key: invalid.errors})
    return _moderator_response(request, run.pk, message="Submitted. The debate continues.")


@moderator_action("approve a run's cost", refused=_refused)
def run_consent(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    approve = request.POST.get("approve") == "yes"
    services.run_consent(run_id=run.pk, approve=approve, user=request.user, client_uuid=_client_uuid(request))
    message = "Approved: the run starts." if approve else "Declined: the run is cancelled."
    return _moderator_response(request, run.pk, message=message)


@moderator_action("record a decision", refused=_pick_refused)
def run_pick(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """The human's decision after the judge's verdict: agree, override (with a reason) or adjudicate."""
    run = get_object_or_404(Run, pk=run_id)
    applied = services.run_pick_record(
        run_id=run.pk,
        pick=request.POST.get("pick", ""),
        reason=request.POST.get("reason", ""),
        user=request.user,
        client_uuid=_client_uuid(request),
    )
    if not applied:
        return _pick_response(request, run.pk, message="This decision was recorded already.")
    run.refresh_from_db()
    pick = run.human_pick_label
    if run.pick_overrides:
        message = f"Recorded: you override the judge and pick {pick}."
    elif run.judge_pick:
        message = f"Recorded: you agree with the judge ({pick})."
    else:
        message = f"Recorded: you adjudicated for {pick}."
    return _pick_response(request, run.pk, message=message)


@require_GET
@login_required
def decisions(request: HttpRequest) -> HttpResponse:
    """How often humans overrode the judge, overall and per protocol, with the decisions and their reasons."""
    return render(request, "debates/decisions.html", {**override_stats(), "reviews": verdict_reviews()})


@moderator_action("change a run's budget", refused=_refused)
def run_budget(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    form = BudgetForm(request.POST)
    if not form.is_valid():
        return _moderator_response(
            request, run.pk, message="The budget was not changed: " + "; ".join(form.error_list()), status=400
        )
    services.run_budget_set(
        run_id=run.pk,
        budget_usd=form.cleaned_data["budget_usd"],
        budget_tokens=form.cleaned_data["budget_tokens"],
        user=request.user,
        client_uuid=_client_uuid(request),
    )
    return _moderator_response(request, run.pk, message="Budget saved.")


@require_GET
@login_required
def run_export(request: HttpRequest, run_id: int) -> HttpResponse:
    """The whole run as JSON: the file `export_run --format json` writes."""

    return export_response(get_object_or_404(Run, pk=run_id), "json")


@moderator_action("decide on KB changes")
def run_mutation_decide(request: HtmxHttpRequest, run_id: int, mutation_id: int) -> HttpResponse:
    """Approve or reject (with a reason) a KB change the run proposed, from the run page's approvals panel."""
    run = get_object_or_404(Run, pk=run_id)
    decision = request.POST.get("decision", "")
    message, error_for = "", None
    if decision not in {"approve", "reject"}:
        message, error_for = "Choose Approve or Reject.", mutation_id
    else:
        try:
            mutation = mutations.run_mutation_decide(
                run.pk,
                mutation_id,
                decision == "approve",
                request.POST.get("reason", ""),
                request.user,
                client_uuid=_client_uuid(request),
            )
        except services.ActionRefused as refused:
            message, error_for = str(refused), mutation_id
        else:
            what = {"applied": "Approved and applied", "rejected": "Rejected", "refused": "Refused by the KB"}
            message = f"{what.get(mutation.status, mutation.status.capitalize())}: {mutation.kind}"
            if mutation.revision:
                message += f", logged as {mutation.revision.r_id}"
            if mutation.status == "refused":
                message += f" ({mutation.reason})"
            message += "."
    if not request.htmx:
        return redirect(f"{reverse('run-detail', args=[run.pk])}#approvals")
    run.refresh_from_db()
    panel = run_panels(run, request.user, per_user=True, message=message, error_for=error_for)
    approvals = next((p for p in panel if p["id"] == "approvals"), None)
    if approvals is None:  # a protocol that proposes no KB changes: the service refused, there is no panel
        return HttpResponseNotFound(message, content_type="text/plain; charset=utf-8")
    # 200 even when refused: htmx swaps only successful answers, and the panel says what went wrong.
    return render(request, approvals["template"], {"panel": approvals, "kb": approvals["kb"]})


@require_GET
@login_required
def run_export_dir(request: HttpRequest, run_id: int) -> HttpResponse:
    """The seed-002 run directory (transcript, claims ledger, synthesis, revisions, snapshot) as a zip: the file
    `export_run --format run-dir --out FILE.zip` writes."""

    return export_response(get_object_or_404(Run, pk=run_id), "run-dir")


@require_GET
@login_required
def run_export_brief_md(request: HttpRequest, run_id: int) -> HttpResponse:
    """The decision brief (comparative) or Competitive Review (adversarial): the file `export_run --format brief`
    writes."""

    return export_response(get_object_or_404(Run, pk=run_id), "brief")
