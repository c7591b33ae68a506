"""The run page's downloads beyond JSON and the transcript: the formats the run's protocol declares
(Protocol.export_formats) that this run offers, for partials rendered with only the run in their context (the
shared #outcome partial is re-rendered in a frame for every non-turn event, from the run alone)."""

from __future__ import annotations

from django import template

from debates.contract import ExportFormat
from debates.exports.files import offered_formats
from debates.models import Run

register = template.Library()


@register.filter
def run_downloads(run: Run) -> list[ExportFormat]:
    """`run|run_downloads`: debates.exports.files.offered_formats(run)."""

    return offered_formats(run)
