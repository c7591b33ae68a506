"""The run page's integrity panel computes its signals from the run alone (debates.selectors.integrity.run_signals), so the
run page's view and its live partials need not know about it."""

from __future__ import annotations

from typing import Any

from django import template

from debates.models import Run
from debates.selectors.integrity import run_signals

register = template.Library()


@register.simple_tag
def run_integrity(run: Run) -> dict[str, Any]:
    """`{% run_integrity run as integrity %}`: debates.selectors.integrity.run_signals(run)."""

    return run_signals(run)
