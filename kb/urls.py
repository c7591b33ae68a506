from __future__ import annotations

from django.urls import path

from kb import views

urlpatterns = [
    path("", views.kb_list, name="kb-list"),
    path("<slug:slug>/", views.kb_detail, name="kb-detail"),
    path("<slug:slug>/graph.json", views.kb_graph_json, name="kb-graph-json"),
    path("<slug:slug>/confirm-stable/", views.kb_confirm_stable, name="kb-confirm-stable"),
    path("<slug:slug>/arguments/<str:arg_id>/", views.argument_detail, name="kb-argument"),
]
