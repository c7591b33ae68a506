"""The human's pick after a judge's verdict, for partials rendered with only the run in their context (the run
page's shared #outcome partial is re-rendered in a frame for every non-turn event, from the run alone)."""

from __future__ import annotations

from typing import Any

from django import template

from debates.models import Run
from debates.selectors.decisions import pick_context

register = template.Library()


@register.simple_tag
def run_decision(run: Run) -> dict[str, Any]:
    """`{% run_decision run as decision %}`: selectors.decisions.pick_context(run)."""

    return pick_context(run)
