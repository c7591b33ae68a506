"""The adversarial review on the run page: each turn's body, the Competitive Review outcome in every mode
(full, one-sided, single, raw), streaming bodies from partial JSON, and untrusted text (the artifact, the topic,
model output) kept inert everywhere."""

from __future__ import annotations

from typing import Any

import pytest
from django.template.loader import render_to_string
from django.test import Client

from debates.engine import registry
from debates.models import Run, turn_dom_id
from debates.selectors.cards import live_card
from debates.services import runs as services
from tests.conftest import run_to_stop
from tests.platform.test_rendering import XSS_CORPUS, executable_parts
from tests.protocols.adversarial.test_protocol import (
    KEY_CASE,
    KEY_CONCERNS,
    KEY_JUDGEMENT,
    KEY_REVIEW,
    RFC,
    TOPIC,
    case,
    concerns,
    judgement,
    review,
    view,
)

PROTOCOL = registry.get("adversarial")
TEMPLATE = "debates/protocols/adversarial.html"
# The outcome's own wrappers, inert, which the fragment checker does not list.
OWN_TAGS = {"<section>", "<small>"}


def adversarial_run(material: str = RFC, topic: str = TOPIC, **backend_options: Any) -> Run:
    run = services.run_create(
        protocol="adversarial",
        topic=topic,
        material=material,
        config={"artifact_type": "RFC"},
        seed=7,
        backend_options={"cps": 0, **backend_options},
        enqueue=False,
    )
    run_to_stop(run)
    return run


def page(client: Client, run: Run) -> str:
    response = client.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def poisoned(value: Any, payload: str) -> Any:
    """Every string of a payload replaced by the attack, ids and enumerations kept so the shape stays valid."""
    keep = {"id", "strength_id", "severity", "genuine", "verdict"}
    if isinstance(value, dict):
        return {k: (v if k in keep else poisoned(v, payload)) for k, v in value.items()}
    if isinstance(value, list):
        return [poisoned(item, payload) for item in value]
    return payload if isinstance(value, str) else value


@pytest.mark.django_db(transaction=True)
class RunPageTests:
    def test_the_page_shows_each_turn_and_the_competitive_review(self, viewer_client):
        run = adversarial_run()
        html = page(viewer_client, run)
        for key in (KEY_CASE, KEY_CONCERNS, KEY_JUDGEMENT):
            assert f'id="{turn_dom_id(key)}"' in html
        assert 'id="adversarial-verdict"' in html
        verdict = run.outcome["verdict"]
        assert f'data-verdict="{verdict}"' in html and f">{verdict.upper()}</span>" in html
        for heading in ("Competitive Review", "Advocate Position", "Challenger Position", "Judge Synthesis"):
            assert f"{heading}</h" in html
        assert 'id="adversarial-concern-table"' in html and html.count('<tr data-rank="') >= 5
        assert 'id="adversarial-narratives"' in html
        assert 'id="adversarial-agreement"' in html and 'id="adversarial-contested"' in html
        assert executable_parts(html, page=True) == []

    def test_the_softened_concern_is_flagged_on_the_page(self, viewer_client):
        html = page(viewer_client, adversarial_run(softeners=True))
        assert 'class="notice degraded adv-softeners" data-side="challenger"' in html
        assert "“minor nitpick” in concern 5" in html

    def test_a_failed_judge_shows_both_outputs_side_by_side_and_no_verdict(self, viewer_client):
        html = page(viewer_client, adversarial_run(fail=[KEY_JUDGEMENT]))
        assert 'id="adversarial-raw"' in html
        assert 'data-side="advocate"' in html and 'data-side="challenger"' in html
        assert 'data-verdict="none"' in html and "NO VERDICT" in html
        assert 'data-from="full" data-to="raw"' in html
        assert "Judge Synthesis" not in html

    def test_a_single_agent_review_says_why(self, viewer_client):
        html = page(viewer_client, adversarial_run(fail=["r1/*"]))
        assert f'id="{turn_dom_id(KEY_REVIEW)}"' in html
        assert 'id="adversarial-single"' in html
        assert 'data-from="full" data-to="single"' in html and "Both sides failed" in html

    def test_a_script_in_the_artifact_and_the_topic_is_never_executable(self, viewer_client):
        # Every sentence carries a script, so every quote the sides make carries one too.
        material = "\n".join(
            f"Preview {n} renders <script>alert({n})</script> from user input." for n in range(6)
        )
        run = adversarial_run(material=material, topic="Approve <script>alert(9)</script>?")
        assert all("<script>" in c["quote"] for c in run.outcome["concerns"]["concerns"])
        html = page(viewer_client, run)
        assert "<script>alert(" not in html
        assert executable_parts(html, page=True) == []
        assert (
            html.count("&lt;script&gt;alert(") >= 6 + 5 + 5
        )  # the artifact, the concerns, the concern table


@pytest.mark.parametrize("payload", XSS_CORPUS)
def test_untrusted_text_in_every_body_and_mode_stays_inert(payload):
    history = {
        KEY_CASE: poisoned(case(), payload),
        KEY_CONCERNS: poisoned(concerns(), payload),
        KEY_JUDGEMENT: poisoned(judgement(), payload),
    }
    for task, key in (("case", KEY_CASE), ("concerns", KEY_CONCERNS), ("judgement", KEY_JUDGEMENT)):
        html = render_to_string(f"{TEMPLATE}#{task}", {"data": history[key]})
        assert executable_parts(html) == [], task
    html = render_to_string(f"{TEMPLATE}#review", {"data": poisoned(review(), payload)})
    assert executable_parts(html) == []
    outcomes = [
        PROTOCOL.plan(view(history)).outcome,
        PROTOCOL.plan(view({**history, KEY_JUDGEMENT: None}, errors={KEY_JUDGEMENT: payload})).outcome,
        PROTOCOL.plan(
            view({KEY_CASE: None, KEY_CONCERNS: None, KEY_REVIEW: poisoned(review(), payload)})
        ).outcome,
    ]
    for outcome in outcomes:
        outcome["question"] = payload
        html = render_to_string(f"{TEMPLATE}#outcome", {"outcome": outcome})
        assert [p for p in executable_parts(html) if p not in OWN_TAGS] == [], outcome["mode"]


def test_a_streaming_turn_renders_what_has_arrived():
    # What streams is the model's shape: one concern per rank, keyed by the rank.
    text = '{"acknowledged_strengths": ["The rollback flag works."], "concerns": {"1": {"severity": "critical", "title": "AOF loses da'
    html = render_to_string(
        "debates/run_detail.html#turn-live",
        {"card": live_card(key=KEY_CONCERNS, task="concerns", protocol="adversarial", text=text)},
    )
    assert "The rollback flag works." in html
    assert 'data-rank="1"' in html and "adv-severity-critical" in html and "AOF loses da" in html


def test_a_judgement_streaming_without_its_verdict_yet_renders_no_badge():
    text = '{"advocate_strengths": {"s1": {"survived": true, "why": "Meas'
    html = render_to_string(
        "debates/run_detail.html#turn-live",
        {"card": live_card(key=KEY_JUDGEMENT, task="judgement", protocol="adversarial", text=text)},
    )
    assert "Meas" in html and "adv-verdict-" not in html
    assert ">s1</span>" in html and ">survived</span>" in html


def test_a_judgement_streaming_its_assessments_shows_them_by_rank():
    text = '{"concern_assessments": {"1": {"addressed_by_advocate": false, "score": 5, "note": "Real"}, "2": {"sco'
    html = render_to_string(
        "debates/run_detail.html#turn-live",
        {"card": live_card(key=KEY_JUDGEMENT, task="judgement", protocol="adversarial", text=text)},
    )
    assert '<tr data-rank="1"><td>#1</td>' in html and "5/5" in html and '<tr data-rank="2">' in html


def test_a_flagged_quote_is_marked_beside_the_quote_it_concerns():
    flags = [
        {
            "kind": "unverified_quote",
            "where": "strengths.1.quote",
            "detail": "Strength s2: not the words of the RFC.",
        },
        {
            "kind": "unverified_quote",
            "where": "concerns.2.quote",
            "detail": "Concern #3: not the words of the RFC.",
        },
        {
            "kind": "severity_order",
            "where": "concerns.1.severity",
            "detail": "Concern #2 is more severe than #1.",
        },
    ]
    html = render_to_string(f"{TEMPLATE}#case", {"data": case(), "flags": flags})
    strengths = html.split('class="adv-strength"')[1:]
    assert ["flag-mark" in strength for strength in strengths] == [False, True]
    assert 'title="Strength s2: not the words of the RFC.">unverified</span>' in strengths[1]
    html = render_to_string(f"{TEMPLATE}#concerns", {"data": concerns(), "flags": flags})
    marked = [c.split("</li>")[0] for c in html.split('class="adv-concern"')[1:]]
    assert [("unverified" in c, "out of order" in c) for c in marked] == [
        (False, False),
        (False, True),
        (True, False),
        (False, False),
        (False, False),
    ]
    review_strength = {**review(), "strengths": [{"point": "Reversible.", "quote": "Not in the RFC."}]}
    flags = [
        {"kind": "unverified_quote", "where": "strengths.0.quote", "detail": "Strength 1: not the words."}
    ]
    assert ">unverified</span>" in render_to_string(
        f"{TEMPLATE}#review", {"data": review_strength, "flags": flags}
    )


@pytest.mark.django_db
def test_the_new_run_form_starts_a_review_of_the_material(moderator_client: Client) -> None:
    response = moderator_client.post(
        "/runs/new/",
        {
            "protocol": "adversarial",
            "topic": TOPIC,
            "material": RFC,
            "artifact_type": "RFC",
            "framework": "Rollback plan exists\n\nCapacity is sized",
            "backend": "simulated",
            "model": "simulated",
            "seed": "3",
            "sim_answers": "mixed",
            "sim_adv_concerns": "severe",
            "sim_adv_softeners": "on",
            "sim_cps": "0",
            "examiner": "agent",
            "questions_per_analyst": "3",
        },
    )
    run = Run.objects.get()
    assert response.status_code == 302 and run.protocol == "adversarial"
    assert run.config == {"artifact_type": "RFC", "framework": ["Rollback plan exists", "Capacity is sized"]}
    assert run.backend_options == {"cps": 0, "concerns": "severe", "softeners": True}
    assert [s.handle for s in run.seats.all()] == ["advocate", "challenger", "judge"]
