"""KB pages: list and upload, the browser (arguments, graph, sources, contradictions, central questions,
revisions, diff against the snapshot), one argument, and the approval inbox."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from debates.selectors.runs import user_can_moderate
from debates.services.runs import ActionRefused, run_mutation_decide
from debates.web.converters import parse_id
from kb import limits, selectors
from kb.discipline import DisciplineViolation, mutation_decide
from kb.formats.problems import ImportRefused, Problem
from kb.models import KnowledgeBase, ProposedMutation
from kb.services import kb_import_json, kb_import_zip


def _require_moderator(request: HttpRequest) -> None:
    if not user_can_moderate(request.user):
        raise PermissionDenied("You need the moderate permission for this.")


@require_http_methods(["GET", "POST"])
@login_required
def kb_list(request: HttpRequest) -> HttpResponse:
    problems: list[Problem] = []
    if request.method == "POST":
        _require_moderator(request)
        upload = request.FILES.get("file")
        if upload is None:
            problems = [Problem("(upload)", 1, "choose a .zip of a kb/ directory or a .json data KB")]
        elif upload.size and upload.size > limits.MAX_UPLOAD_BYTES:
            problems = [
                Problem(
                    upload.name or "(upload)",
                    1,
                    f"larger than {limits.MAX_UPLOAD_BYTES // limits.MiB} MB "
                    f"({upload.size} bytes; the limit is {limits.MAX_UPLOAD_BYTES})",
                )
            ]
        else:
            name = upload.name or "upload"
            content = upload.read(limits.MAX_UPLOAD_BYTES + 1)
            try:
                if name.lower().endswith(".json"):
                    kb = kb_import_json(content, name=name)  # bytes: decoded strictly, bad bytes reported
                else:
                    kb = kb_import_zip(content, name=name)
            except ImportRefused as refused:
                problems = refused.problems
            else:
                return redirect("kb-detail", slug=kb.slug)
    return render(
        request,
        "kb/kb_list.html",
        {"kbs": selectors.kb_list(), "problems": problems, "can_moderate": user_can_moderate(request.user)},
        status=400 if problems else 200,
    )


@require_GET
@login_required
def kb_detail(request: HttpRequest, slug: str) -> HttpResponse:
    kb = get_object_or_404(KnowledgeBase, slug=slug)
    filters = {k: request.GET.get(k, "") for k in ("position", "status", "layer")}
    context = {"kb": kb, "filters": filters, "can_moderate": user_can_moderate(request.user)}
    if kb.kind == KnowledgeBase.DATA:
        prefix = request.GET.get("path", "")
        return render(
            request, "kb/kb_data.html", {**context, "rows": selectors.data_rows(kb, prefix), "prefix": prefix}
        )
    context["arguments"] = selectors.kb_arguments(kb, **filters)
    if getattr(request, "htmx", False):
        return render(request, "kb/kb_detail.html#arguments-table", context)
    snapshot_id = request.GET.get("snapshot")
    if not snapshot_id:
        snapshot = kb.snapshots.first()
    else:  # a value that is not an id (letters, too long for the column) is no snapshot, like an unknown id
        number = parse_id(snapshot_id)
        snapshot = kb.snapshots.filter(pk=number).first() if number is not None else None
    context.update(
        {
            **selectors.kb_filter_choices(kb),
            "graph": selectors.kb_graph(kb),
            "diff": selectors.kb_diff(kb, snapshot),
            "snapshots": kb.snapshots.all()[:20],
            "inbox": selectors.inbox(kb),
        }
    )
    return render(request, "kb/kb_detail.html", context)


@require_GET
@login_required
def argument_detail(request: HttpRequest, slug: str, arg_id: str) -> HttpResponse:
    kb = get_object_or_404(KnowledgeBase, slug=slug)
    argument = get_object_or_404(kb.arguments, arg_id=arg_id)
    outgoing = kb.edges.filter(src=arg_id)
    incoming = kb.edges.filter(target=arg_id)
    return render(
        request,
        "kb/argument_detail.html",
        {"kb": kb, "argument": argument, "outgoing": outgoing, "incoming": incoming},
    )


@require_GET
@login_required
def kb_graph_json(request: HttpRequest, slug: str) -> JsonResponse:
    kb = get_object_or_404(KnowledgeBase, slug=slug)
    return JsonResponse(selectors.kb_graph(kb))


@require_POST
@login_required
def kb_confirm_stable(request: HttpRequest, slug: str) -> HttpResponse:
    _require_moderator(request)
    kb = get_object_or_404(KnowledgeBase, slug=slug)
    kb.stable_confirmed_by = request.user  # type: ignore[assignment]
    kb.save(update_fields=["stable_confirmed_by"])
    return redirect("kb-detail", slug=kb.slug)


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


@require_POST
@login_required
def mutation_decide_view(request: HttpRequest, mutation_id: int) -> HttpResponse:
    _require_moderator(request)
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
    if getattr(request, "htmx", False):
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
