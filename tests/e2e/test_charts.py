"""Charts in a real browser under the app's real CSP (no unsafe-inline, no unsafe-eval): static/disputa/charts.js
turns every `canvas[data-chart]` into a Chart.js chart, on page load and for content htmx swaps in later (out-of-band
swaps from the run page's WebSocket included), without a console error or a CSP violation."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.utils import timezone
from playwright.sync_api import Page, expect

from debates.models import Run
from debates.services import runs as services

pytestmark = pytest.mark.e2e

SEE = 10_000
# Recorded from the first script on: a CSP violation is an event, not always a console message.
# (A Playwright screenshot taken before an htmx swap leaves style="" on inputs, which htmx's settle then copies:
# a violation caused by the test, not the app. Take screenshots with caret="initial" to avoid it.)
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const where = e.target && e.target.outerHTML ? e.target.outerHTML.slice(0, 120) : String(e.target);
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber} ${where}`);
});
"""
# True once the canvas has pixels that are not transparent.
DRAWN = """(canvas) => {
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) return true;
  return false;
}"""
LATE_CHART = {
    "type": "bar",
    "data": {"labels": ["agree", "override"], "datasets": [{"label": "runs", "data": [3, 1]}]},
}


def picked_runs(make_run: Callable[..., Run]) -> None:
    """Two decisions, one override: the decisions page then charts a 50% override rate. Made through the services
    in a thread of its own: they publish with async_to_sync, which refuses the thread pytest-playwright's event
    loop runs on."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(_picked_runs, make_run).result()


def _picked_runs(make_run: Callable[..., Run]) -> None:
    moderator = User.objects.get(username="moderator")
    for choice, reason in (("A", ""), ("B", "The judge ignored the migration cost entirely.")):
        run = make_run()
        Run.objects.filter(pk=run.pk).update(
            status="completed",
            outcome={"judge_pick": "A", "pick_options": [["A", "Postgres"], ["B", "MongoDB"]]},
            judge_pick="A",
            finished_at=timezone.now(),
        )
        services.run_pick_record(run_id=run.pk, pick=choice, reason=reason, user=moderator)
    connections.close_all()


def watch_console(page: Page) -> list[str]:
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.add_init_script(RECORD_VIOLATIONS)
    return problems


def test_the_override_chart_is_drawn_under_the_csp_without_errors(
    moderator_page: Page, live_daphne: str, make_run: Callable[..., Run]
) -> None:
    picked_runs(make_run)
    page = moderator_page
    problems = watch_console(page)
    response = page.goto(f"{live_daphne}/decisions/")
    assert response is not None
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp

    expect(page.locator("#override-rate")).to_have_text("50.0%")
    canvas = page.locator("canvas#override-chart")
    expect(canvas).to_have_attribute("data-chart-ready", "1", timeout=SEE)
    assert canvas.evaluate(DRAWN)
    chart: dict[str, Any] = page.evaluate(
        """() => {
          const chart = Chart.getChart(document.getElementById("override-chart"));
          return {type: chart.config.type, labels: chart.data.labels, data: chart.data.datasets[0].data,
                  animation: chart.options.animation};
        }"""
    )
    assert chart == {"type": "bar", "labels": ["cross-examination"], "data": [50], "animation": False}
    assert page.evaluate("window.__cspViolations") == []
    assert problems == []


def test_a_chart_swapped_in_by_htmx_is_drawn_too(
    moderator_page: Page, live_daphne: str, make_run: Callable[..., Run]
) -> None:
    picked_runs(make_run)
    page = moderator_page
    problems = watch_console(page)
    page.goto(f"{live_daphne}/decisions/")
    expect(page.locator("canvas#override-chart")).to_have_attribute("data-chart-ready", "1", timeout=SEE)
    config = json.dumps(LATE_CHART).replace("'", "&#39;")
    # A plain swap, then an out-of-band one replacing an element by id (what the WebSocket frames do).
    page.evaluate(
        """([config]) => {
          htmx.swap("#override-by-protocol",
            `<div class="decisions-chart"><canvas id="late-chart" data-chart='${config}'></canvas></div>` +
            `<div id="oob-target"></div>`, {swapStyle: "beforeend"});
        }""",
        [config],
    )
    expect(page.locator("canvas#late-chart")).to_have_attribute("data-chart-ready", "1", timeout=SEE)
    page.evaluate(
        """([config]) => {
          htmx.swap("#override-summary",
            `<div id="oob-target" hx-swap-oob="outerHTML"><div class="decisions-chart">` +
            `<canvas id="oob-chart" data-chart='${config}'></canvas></div></div>`, {swapStyle: "none"});
        }""",
        [config],
    )
    oob = page.locator("#oob-target canvas#oob-chart")
    expect(oob).to_have_attribute("data-chart-ready", "1", timeout=SEE)
    assert oob.evaluate(DRAWN)
    assert page.evaluate("window.__cspViolations") == []
    assert problems == []
