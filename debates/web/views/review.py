"""Reviewing runs: the transcript reader of a run and the comparison of two runs. Read-only; viewers may use both."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from debates.models import Run
from debates.selectors import review
from debates.web.converters import parse_id


@require_GET
@login_required
def run_read(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("kb"), pk=run_id)
    thread = request.GET.get("thread", "")[:40]
    return render(request, "debates/run_read.html", review.reader_context(run, thread=thread))


@require_GET
@login_required
def run_compare(request: HttpRequest) -> HttpResponse:
    """`?a=<id>&b=<id>`: the two runs side by side. With `a` alone (or nothing), the picker of runs to compare."""
    raw_a, raw_b = request.GET.get("a", ""), request.GET.get("b", "")
    a_id, b_id = parse_id(raw_a), parse_id(raw_b)  # not an id (too long, not digits): 'No run …'
    runs = {r.pk: r for r in Run.objects.select_related("kb").filter(pk__in=[i for i in (a_id, b_id) if i])}
    a, b = runs.get(a_id) if a_id else None, runs.get(b_id) if b_id else None
    error, status = "", 200
    missing = [raw for raw, run in ((raw_a, a), (raw_b, b)) if raw and run is None]
    if missing:
        error = (
            "No run " + " and no run ".join(repr(m) for m in missing) + ": pick runs from the lists below."
        )
        status = 404
    elif a is not None and b is not None and a.pk == b.pk:
        error = f"Run {a.pk} cannot be compared with itself: pick another run."
        status = 400
    context = {
        "a": a,
        "b": b,
        "error": error,
        "candidates_a": review.compare_candidates(None),
        "candidates_b": review.compare_candidates(a) if a is not None else review.compare_candidates(None),
    }
    if a is not None and b is not None and not error:
        context.update(review.compare_context(a, b))
    return render(request, "debates/run_compare.html", context, status=status)
