"""The consultation in the web app: the new-run fieldset (agents, mode, threshold, auto-approve amount, simulation
branches) and its errors, the consent gate on the run page, the state machine's progress strip and history, the
verdict, consensus and tension tables and the dropped-tension warnings, the live frames that refresh them, the
explore menu the human picks from, and escaping of untrusted text."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.test import Client

from debates.models import Run, RunStatus
from debates.services import runs as services
from debates.web.frames import event_frame
from tests.conftest import MATERIAL, run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Should the city charge cars entering the centre?"


def form_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "protocol": "consultation",
        "topic": QUESTION,
        "material": MATERIAL,
        "cons_agents": "Ada: economics\nBo: equity\nCy: evidence",
        "cons_mode": "converge",
        "cons_threshold": "0.9",
        "cons_rounds": "4",
        "cons_auto_approve": "",
        "sim_cons_consensus": "mixed",
        "backend": "simulated",
        "model": "simulated",
        "seed": "4",
        "sim_answers": "mixed",
        "sim_cps": "0",
        "examiner": "agent",
        "questions_per_analyst": "3",
    }
    data.update(overrides)
    return data


def consult(**overrides: Any) -> Run:
    run = services.run_create(
        protocol="consultation",
        topic=overrides.pop("topic", QUESTION),
        material=MATERIAL,
        config=overrides.pop("config", {}),
        seed=4,
        backend_options={"cps": 0, **overrides.pop("backend_options", {})},
        enqueue=False,
    )
    return run


def strip(html: str) -> dict[str, str]:
    """The progress strip: {state: status}."""
    section = re.search(r'<ol id="consultation-states".*?</ol>', html, re.S)
    assert section, "no progress strip"
    return dict(re.findall(r'data-state="([a-z_]+)" data-status="([a-z]+)"', section.group(0)))


def test_the_new_run_form_has_a_consultation_fieldset(moderator_client: Client) -> None:
    html = moderator_client.get("/runs/new/").content.decode()
    assert 'data-protocol="consultation"' in html
    assert 'name="cons_agents"' in html and "Security Expert: security" in html
    assert 'value="consultation"' in html  # in the protocol select


def test_starting_a_consultation_creates_the_run_with_its_config(moderator_client: Client) -> None:
    response = moderator_client.post(
        "/runs/new/",
        form_data(
            cons_mode="explore", cons_threshold="0.8", sim_cons_consensus="strong", sim_cons_fail_agent="on"
        ),
    )
    run = Run.objects.get()
    assert response.status_code == 302 and response.url == f"/runs/{run.pk}/"
    assert run.protocol == "consultation"
    assert run.config["agents"] == [
        {"name": "Ada", "lens": "economics"},
        {"name": "Bo", "lens": "equity"},
        {"name": "Cy", "lens": "evidence"},
    ]
    assert (run.config["mode"], run.config["consensus_threshold"], run.config["max_rounds"]) == (
        "explore",
        0.8,
        4,
    )
    assert run.config["auto_approve_under_usd"] is None
    assert run.backend_options["consensus"] == "strong"
    assert run.backend_options["fail"] == ["r1/independent/agent-cy"]
    assert sorted(run.seats.values_list("handle", flat=True)) == [
        "agent-ada",
        "agent-bo",
        "agent-cy",
        "judge",
    ]


@pytest.mark.parametrize(
    ("agents", "error"),
    [
        ("Ada: economics", "1 agents: a consultation takes 2 to 5."),
        ("A\nB\nC\nD\nE\nF", "6 agents: a consultation takes 2 to 5."),
        ("Ada: x\n: no name", "Line 2: write the agent as &#x27;Name: lens&#x27;."),
        ("Ada\nada", "have the same name"),
    ],
)
def test_the_panel_must_have_two_to_five_named_agents(
    moderator_client: Client, agents: str, error: str
) -> None:
    response = moderator_client.post("/runs/new/", form_data(cons_agents=agents))
    assert response.status_code == 200
    assert error in response.content.decode()
    assert not Run.objects.exists()


def test_an_auto_approve_amount_of_zero_holds_the_run_at_the_consent_gate(moderator_client: Client) -> None:
    moderator_client.post("/runs/new/", form_data(cons_auto_approve="0"))
    run = Run.objects.get()
    assert (run.status, run.consent) == (RunStatus.AWAITING_HUMAN, "required")
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="consent-approve"' in html
    assert "nominal: priced as" in html  # the estimate says what it is
    states = strip(html)
    assert states["awaiting_consent"] == "current"
    assert (states["idle"], states["estimating"], states["independent"]) == ("done", "done", "pending")
    assert "aborted" not in states
    assert "aborts above $" in html  # the 150 % limit is shown

    assert 'data-consent="required">waiting for a moderator<' in html

    moderator_client.post(f"/runs/{run.pk}/consent/", {"approve": "yes", "client_uuid": ""})
    run.refresh_from_db()
    assert (run.status, run.consent) == (RunStatus.QUEUED, "approved")
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert strip(html)["independent"] == "current"
    assert "A moderator approved the estimated $" in html


def test_a_run_under_the_threshold_shows_it_was_approved_automatically(moderator_client: Client) -> None:
    moderator_client.post("/runs/new/", form_data())
    run = Run.objects.get()
    assert run.consent == "auto"
    html = unescape(moderator_client.get(f"/runs/{run.pk}/").content.decode())
    assert (
        'data-consent="auto">approved automatically: the estimate is not above $0.50, no one was asked<'
        in html
    )
    assert (
        f"Approved automatically: the estimate ${run.estimate_usd:.4f} is under the threshold $0.50." in html
    )
    assert "moderator approved" not in html


def test_a_finished_consultation_shows_the_strip_verdict_tables_and_warnings(
    moderator_client: Client,
) -> None:
    run = consult()
    run_to_stop(run)
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    states = strip(html)
    assert states["complete"] == "current"
    assert all(
        states[s] == "done" for s in ("idle", "estimating", "awaiting_consent", "synthesis", "verdict")
    )
    verdict = re.search(r'<section id="consultation-verdict".*?</section>', html, re.S).group(0)  # type: ignore[union-attr]
    assert unescape(run.outcome["verdict"]["recommendation"]) in unescape(verdict)
    assert 'class="cons-dissent"' in verdict and 'data-severity="high"' in verdict
    assert 'id="consultation-consensus"' in html and 'id="consultation-tensions"' in html
    warnings = re.search(r'<div id="consultation-warnings".*?</div>', html, re.S).group(0)  # type: ignore[union-attr]
    assert "dropped: it has 1 viewpoint" in unescape(warnings)
    history = re.search(r'<details id="consultation-transitions".*?</details>', html, re.S).group(0)  # type: ignore[union-attr]
    assert history.count("<li ") == 7 and "verdict → complete" in unescape(history)
    assert 'id="pick-form"' not in html  # converge mode: nothing to pick
    artifacts = re.search(r'<p class="muted" id="consultation-artifacts">.*?</p>', html, re.S).group(0)  # type: ignore[union-attr]
    assert (
        "R3 cross-examination" in artifacts and "cross_exam" not in artifacts
    )  # in words, not the file type


def test_an_early_stop_shows_the_rounds_it_skipped(moderator_client: Client) -> None:
    run = consult(backend_options={"consensus": "strong"})
    run_to_stop(run)
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    states = strip(html)
    assert (states["synthesis"], states["cross_exam"], states["verdict"], states["complete"]) == (
        "done",
        "skipped",
        "skipped",
        "current",
    )
    assert 'id="consultation-early"' in html
    assert 'data-terminated="yes"' in html and 'data-rubber-stamp="no"' in html
    assert "No verdict round was needed" in html


def test_a_rubber_stamp_is_called_out_on_the_page(moderator_client: Client) -> None:
    run = consult(backend_options={"consensus": "rubber_stamp"})
    run_to_stop(run)
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'data-terminated="no" data-rubber-stamp="yes"' in html
    assert "Rubber-stamp detected: the early stop was blocked." in html


def test_explore_mode_lets_the_human_pick_an_option(moderator_client: Client) -> None:
    run = consult(config={"mode": "explore"})
    run_to_stop(run)
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    options = run.outcome["pick_options"]
    assert 'id="consultation-options"' in html and 'id="pick-form"' in html
    for value, label in options:
        assert f'value="{value}"' in html and label in html
    response = moderator_client.post(
        f"/runs/{run.pk}/pick/",
        {
            "pick": options[-1][0],
            "reason": "Waiting costs us little and the fairness question is real.",
            "client_uuid": "",
        },
    )
    assert response.status_code == 302
    run.refresh_from_db()
    assert (run.judge_pick, run.human_pick) == ("o1", options[-1][0])


def test_a_state_event_refreshes_the_panel_in_the_live_frame() -> None:
    run = consult()
    run_to_stop(run)
    event = run.events.filter(kind="state").last()
    assert event is not None
    html, _ = event_frame(event)
    assert '<section id="consultation-panel"' in html and 'hx-swap-oob="outerHTML"' in html
    assert 'data-state="complete" data-status="current"' in html


def test_untrusted_text_is_escaped(moderator_client: Client) -> None:
    run = consult(topic='Charge cars? <script>alert("x")</script>')
    run_to_stop(run)
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert" in html  # the rationale quotes the question, escaped
