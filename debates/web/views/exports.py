"""Downloads of a run in every `export_run` format, and its lineage: re-run, fork, and the panel offering both."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotFound
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from debates.agents.base import backend_choices
from debates.exports.files import ExportUnavailable, export_file
from debates.models import Run
from debates.services import lineage, quotas
from debates.web.decorators import HtmxHttpRequest
from debates.web.forms import SEED_MAX

RUN_TEMPLATE = "debates/run_detail.html"


def export_response(run: Run, format: str) -> HttpResponse:
    """The file `manage.py export_run ID --format <format>` writes (the zip, for a directory format), as a
    download; 404 with the reason when the run has no such export."""
    try:
        export = export_file(run, format)
    except ExportUnavailable as error:
        return HttpResponseNotFound(
            f"Run {run.pk} has no {format} export: {error}.", content_type="text/plain; charset=utf-8"
        )
    response = HttpResponse(export.content, content_type=export.content_type)
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    return response


@require_GET
@login_required
def run_export_transcript(request: HttpRequest, run_id: int) -> HttpResponse:
    """The Markdown transcript, speaker by speaker."""
    return export_response(get_object_or_404(Run, pk=run_id), "transcript")


@require_GET
@login_required
def run_export_artifacts(request: HttpRequest, run_id: int) -> HttpResponse:
    """A consultation's round artifacts, as a zip of the files `--format artifacts` writes."""
    return export_response(get_object_or_404(Run, pk=run_id), "artifacts")


# --- lineage -------------------------------------------------------------------------------------------------------


@require_GET
@login_required
@permission_required("debates.moderate", raise_exception=True)
def run_lineage_panel(request: HttpRequest, run_id: int) -> HttpResponse:
    """The re-run and fork forms of a finished run (loaded into the run page's moderator panel)."""
    return _panel(request, get_object_or_404(Run, pk=run_id))


def _panel(request: HttpRequest, run: Run, error: str = "") -> HttpResponse:

    context = {
        "run": run,
        "backends": backend_choices(),
        "fork_points": lineage.fork_points(run) if run.is_terminal else [],
        "lineage_error": error,
        "values": request.POST,
    }
    return render(request, f"{RUN_TEMPLATE}#lineage", context)


def _overrides(request: HttpRequest) -> tuple[str | None, str | None, int | None]:
    """The backend, model and seed asked for (None: the parent's)."""
    seed_text = request.POST.get("seed", "").strip()
    try:
        seed = int(seed_text) if seed_text else None
    except ValueError:
        raise lineage.LineageRefused(f"Seed: {seed_text[:40]!r} is not a whole number.") from None
    if seed is not None and not 0 <= seed <= SEED_MAX:  # the new-run form's range; the column's is wider
        raise lineage.LineageRefused(f"Seed: use a whole number from 0 to {SEED_MAX}.")
    backend = request.POST.get("backend", "").strip() or None
    return backend, request.POST.get("model", "").strip() or None, seed


def _refused(request: HtmxHttpRequest, run: Run, refused: lineage.LineageRefused) -> HttpResponse:
    """The panel again with the reason (200: htmx swaps only successful answers); without htmx, back to the
    run page, where the panel shows the reason once."""
    if request.htmx:
        return _panel(request, run, str(refused))
    messages.error(request, str(refused), extra_tags="lineage")
    return redirect(f"{reverse('run-detail', args=[run.pk])}#lineage")


def _over_quota(request: HttpRequest, run: Run, refusal: quotas.Refusal) -> HttpResponse:
    """429 with Retry-After; the panel shows the reason (htmx swaps 429s, see base.html's htmx-config)."""
    response = _panel(request, run, refusal.reason)
    response.status_code = 429
    response["Retry-After"] = str(refusal.retry_after_seconds)
    return response


def _to_child(request: HtmxHttpRequest, child: Run) -> HttpResponse:
    url = reverse("run-detail", args=[child.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_POST
@login_required
@permission_required("debates.moderate", raise_exception=True)
def run_rerun(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    if refusal := quotas.run_start_refusal(request.user):
        return _over_quota(request, run, refusal)
    try:
        backend, model, seed = _overrides(request)
        child = lineage.run_rerun(run.pk, user=request.user, backend=backend, model=model, seed=seed)
    except lineage.LineageRefused as refused:
        return _refused(request, run, refused)
    return _to_child(request, child)


@require_POST
@login_required
@permission_required("debates.moderate", raise_exception=True)
def run_fork(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    if refusal := quotas.run_start_refusal(request.user):
        return _over_quota(request, run, refusal)
    try:
        backend, model, seed = _overrides(request)
        child = lineage.run_fork(
            run.pk,
            upto_key=request.POST.get("upto_key", ""),
            user=request.user,
            backend=backend,
            model=model,
            seed=seed,
        )
    except lineage.LineageRefused as refused:
        return _refused(request, run, refused)
    return _to_child(request, child)
