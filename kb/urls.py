from __future__ import annotations

from django.urls import path

from debates.web import converters
from kb import views

converters.register()  # <id:...>: a bounded database id (debates.web.converters)

urlpatterns = [
    path("", views.kb_list, name="kb-list"),
    path("inbox/", views.inbox, name="kb-inbox"),
    path("inbox/<id:mutation_id>/decide/", views.mutation_decide_view, name="kb-mutation-decide"),
    path("<slug:slug>/", views.kb_detail, name="kb-detail"),
    path("<slug:slug>/graph.json", views.kb_graph_json, name="kb-graph-json"),
    path("<slug:slug>/confirm-stable/", views.kb_confirm_stable, name="kb-confirm-stable"),
    path("<slug:slug>/arguments/<str:arg_id>/", views.argument_detail, name="kb-argument"),
]
