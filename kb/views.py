"""KB pages: list and upload, the browser (arguments, graph, sources, contradictions, central questions,
revisions, diff against the snapshot) and one argument. The approval inbox acts on runs too, so it lives with
the runs' pages (debates.web.views.moderation)."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from kb import limits, selectors
from kb.formats.problems import ImportRefused, Problem
from kb.models import KnowledgeBase
from kb.services import kb_import_json, kb_import_zip

# A snapshot id from the query string fits the database's id column, or it is no snapshot.
SNAPSHOT_ID = re.compile(r"[0-9]{1,18}")


def user_can_moderate(user: Any) -> bool:
    """The moderate permission (granted by the debates app, named here as data: this app imports nothing of it)."""
    return bool(getattr(user, "is_authenticated", False) and user.has_perm("debates.moderate"))


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
        found = SNAPSHOT_ID.fullmatch(snapshot_id.strip())
        snapshot = kb.snapshots.filter(pk=int(found.group())).first() if found else None
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
