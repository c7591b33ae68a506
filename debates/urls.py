from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from debates.web import converters
from debates.web.views import exports as views_exports
from debates.web.views import home as views_home
from debates.web.views import inbox as views_inbox
from debates.web.views import moderation
from debates.web.views import review as views_review
from debates.web.views import runs as views

# Ids in paths are `<id:...>`: digits that fit the database's id column (a longer number is a 404, not a 500).
converters.register()

urlpatterns = [
    path("", views.run_list, name="run-list"),
    path("runs/new/", views.run_new, name="run-new"),
    path("runs/new/criteria/", views.run_new_criteria, name="run-new-criteria"),
    path("runs/demo/<slug:protocol>/", views_home.run_demo, name="run-demo"),
    path("runs/<id:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<id:run_id>/turns/", views.run_turns, name="run-turns"),
    path("runs/<id:run_id>/read/", views_review.run_read, name="run-read"),
    path("runs/compare/", views_review.run_compare, name="run-compare"),
    path("runs/<id:run_id>/control/<str:action>/", views.run_control, name="run-control"),
    path("runs/<id:run_id>/human/", views.human_turn_submit, name="human-turn-submit"),
    path("runs/<id:run_id>/consent/", views.run_consent, name="run-consent"),
    path("runs/<id:run_id>/budget/", views.run_budget, name="run-budget"),
    path("runs/<id:run_id>/pick/", views.run_pick, name="run-pick"),
    path("decisions/", views.decisions, name="decisions"),
    path("inbox/", views_inbox.needs_you_page, name="needs-you"),
    path("inbox/runs/<id:run_id>/consent/", views_inbox.needs_you_consent, name="needs-you-consent"),
    path("inbox/runs/<id:run_id>/agree/", views_inbox.needs_you_agree, name="needs-you-agree"),
    path("inbox/mutations/<id:mutation_id>/", views_inbox.needs_you_mutation, name="needs-you-mutation"),
    path("runs/<id:run_id>/export.json", views.run_export, name="run-export-json"),
    path("runs/<id:run_id>/run-dir.zip", views.run_export_dir, name="run-export-zip"),
    path("runs/<id:run_id>/brief.md", views.run_export_brief_md, name="run-export-brief"),
    path("runs/<id:run_id>/transcript.md", views_exports.run_export_transcript, name="run-export-transcript"),
    path("runs/<id:run_id>/artifacts.zip", views_exports.run_export_artifacts, name="run-export-artifacts"),
    path("runs/<id:run_id>/lineage/", views_exports.run_lineage_panel, name="run-lineage"),
    path("runs/<id:run_id>/rerun/", views_exports.run_rerun, name="run-rerun"),
    path("runs/<id:run_id>/fork/", views_exports.run_fork, name="run-fork"),
    path(
        "runs/<id:run_id>/mutations/<id:mutation_id>/decide/",
        views.run_mutation_decide,
        name="run-mutation-decide",
    ),
    # The KB approval inbox decides on runs' proposals: it belongs to this app's pages, under the KB's address.
    path("kb/inbox/", moderation.inbox, name="kb-inbox"),
    path("kb/inbox/<id:mutation_id>/decide/", moderation.mutation_decide_view, name="kb-mutation-decide"),
    path("kb/", include("kb.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
]

# Viewer-facing error pages in the site's layout (with DEBUG off; templates/403.html and 404.html).
handler403 = "debates.web.views.errors.permission_denied"
handler404 = "debates.web.views.errors.page_not_found"
handler500 = "debates.web.views.errors.server_error"
