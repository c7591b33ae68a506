"""The market panel in the web app: the new-run form (a data KB required, weights summing to 100, slice paths
checked against the KB, the KB never handed to every seat as shared material), the run page (trace table with a
verdict per row, the chart's data, handshake and mismatch flags, the weights, a judge's arithmetic slip shown
beside the recomputed score), escaping of untrusted KB text, and the headless command."""

from __future__ import annotations

import copy
import json
import re
from html import unescape
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.template.loader import render_to_string
from django.test import Client

from debates.models import Run
from debates.protocols.market_panel.protocol import MATERIAL_NOTE
from debates.selectors.cards import live_card
from debates.services import runs as services
from kb.demo import demo_kbs_load
from kb.models import KnowledgeBase
from kb.services import kb_import_json
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads

TOPIC = "One-month outlook for the S&P 500"


def kbs() -> dict[str, KnowledgeBase]:
    return {kb.slug: kb for kb in demo_kbs_load()}


def form_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "protocol": "market-panel",
        "topic": TOPIC,
        "kb": str(kbs()["market-2026-q4"].pk),
        "material": "",
        "mp_lenses": ["technical", "fundamental", "macro", "sentiment"],
        "mp_weight_logic": "40",
        "mp_weight_evidence": "40",
        "mp_weight_clarity": "5",
        "mp_weight_persuasiveness": "15",
        "mp_arguments": "2-3",
        "mp_slices": "",
        "sim_mp_handshake": "on",
        "sim_mp_misquote": "on",
        "backend": "simulated",
        "model": "simulated",
        "seed": "5",
        "sim_answers": "mixed",
        "sim_cps": "0",
        "examiner": "agent",
        "questions_per_analyst": "3",
    }
    data.update(overrides)
    return data


def field_errors(html: str, name: str) -> str:
    """The text of the form field's container (its errors are rendered inside it)."""
    start = html.index(f'name="{name}"')
    return unescape(html[start : html.index("</div>", start)])


def panel(kb: KnowledgeBase | None = None, **options: Any) -> Run:
    run = services.run_create(
        protocol="market-panel",
        topic=TOPIC,
        material="",  # as an API caller would: the service must not fall back to the whole KB
        config={},
        seed=5,
        kb=kb or kbs()["market-2026-q4"],
        backend_options={"cps": 0, **options},
    )
    run_to_stop(run)
    return run


# --- the new-run form ---------------------------------------------------------------------------------------------


def test_the_form_starts_a_panel_with_its_settings_and_never_shares_the_whole_kb(
    moderator_client: Client,
) -> None:
    response = moderator_client.post("/runs/new/", form_data())
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.config["weights"] == {"logic": 40, "evidence": 40, "clarity": 5, "persuasiveness": 15}
    assert (run.config["arguments_min"], run.config["arguments_max"]) == (2, 3)
    assert run.config["slices"]["macro"] == ["macro", "global_markets"]
    assert run.backend_options == {"cps": 0, "handshake": "sentiment", "misquote": "fund_bull"}
    # Every seat reads the material: it must not be the KB, or each seat would see every slice.
    assert run.material == MATERIAL_NOTE and "vix_level" not in run.material
    assert sorted(run.seats.values_list("handle", flat=True))[:3] == ["fund_bear", "fund_bull", "judge"]


def test_unticked_simulation_boxes_switch_the_branches_off(moderator_client: Client) -> None:
    data = form_data(mp_lenses=["macro"], sim_mp_judge_slip="on")
    del data["sim_mp_handshake"], data["sim_mp_misquote"]
    moderator_client.post("/runs/new/", data)
    run = Run.objects.get()
    assert run.backend_options == {"cps": 0, "handshake": "", "misquote": "", "judge_slip": True}
    assert run.config["lenses"] == ["macro"]


def test_a_data_kb_is_required(moderator_client: Client) -> None:
    html = moderator_client.post("/runs/new/", form_data(kb="")).content.decode()
    assert "The market panel needs a data knowledge base" in field_errors(html, "kb")
    graph = kbs()["congestion-pricing"]
    html = moderator_client.post("/runs/new/", form_data(kb=str(graph.pk))).content.decode()
    assert f"'{graph.title}' is an argument graph" in field_errors(html, "kb")
    assert not Run.objects.exists()


def test_weights_that_do_not_sum_to_100_are_refused_with_the_sum(moderator_client: Client) -> None:
    html = moderator_client.post("/runs/new/", form_data(mp_weight_clarity="20")).content.decode()
    assert "The four weights must sum to 100 (they sum to 115)." in unescape(html)
    assert 'name="mp_weight_clarity" value="20"' in html  # what was typed is kept
    assert not Run.objects.exists()


def test_a_slice_path_the_kb_lacks_is_named(moderator_client: Client) -> None:
    html = moderator_client.post(
        "/runs/new/", form_data(mp_slices="technical: indices.EXI, technicals")
    ).content.decode()
    assert "slices.technical: the knowledge base has no data at 'indices.EXI'" in field_errors(
        html, "mp_slices"
    )
    moderator_client.post("/runs/new/", form_data(mp_slices="technical: technicals.SPX, indices.SPX"))
    assert Run.objects.get().config["slices"]["technical"] == ["technicals.SPX", "indices.SPX"]


# --- the run page ---------------------------------------------------------------------------------------------------


def test_the_page_shows_the_trace_table_chart_flags_and_weights(moderator_client: Client) -> None:
    run = panel()
    assert run.status == "completed"
    outcome = run.outcome
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    table = html[
        html.index('id="market-trace-table"') : html.index("</table>", html.index('id="market-trace-table"'))
    ]
    verdicts = re.findall(r'<tr data-argument="([^"]+)" data-seat="[^"]+" data-verdict="([A-Z]+)"', table)
    assert verdicts == [(r["id"], r["score"]["status"]) for r in outcome["rows"]]
    assert {v for _, v in verdicts} == {"UPHELD", "WEAKENED", "REFUTED"}
    chart = re.search(r'id="market-score-chart" data-chart="([^"]+)"', html)
    assert chart is not None and json.loads(unescape(chart.group(1))) == outcome["chart"]
    handshakes = unescape(html[html.index('id="market-handshakes"') :])
    assert "handshake round" in handshakes[: handshakes.index("</ul>")]
    # Seats by name and challenges in words, not by handle or enum value (those stay in attributes).
    shown = re.sub(r"<[^>]+>", " ", handshakes[: handshakes.index("</ul>")])
    assert "Technical bull challenged" in shown and "tech_bull" not in shown
    visible = re.sub(r"<[^>]+>", " ", unescape(html[html.index('id="scorecard"') :]))
    handle = re.search(r"\b(tech|fund|macro|senti)_(bull|bear)\b(?!_arg)", visible)
    assert "question_evidence" not in visible and handle is None, (
        visible[handle.start() - 200 : handle.end() + 50] if handle else ""
    )
    mismatches = unescape(html[html.index('id="market-mismatches"') :])
    mismatches = mismatches[: mismatches.index("</div>")]
    text = re.sub(r"<[^>]+>", "", mismatches)
    assert (
        "Fundamental bull, argument 1 (fund_bull_arg_0), quotes 4.5 for sectors.XLK.change_20d_pct; the knowledge "
        "base has 3.9." in text
    )
    # Every argument of the trace is named for people (counted from 1), its id beside the name.
    labelled = re.findall(
        r'<span class="claim-id">(Argument \d+)</span> <code class="arg-id">([a-z_0-9]+)</code>', table
    )
    assert labelled == [(f"Argument {int(r['id'].rsplit('_', 1)[1]) + 1}", r["id"]) for r in outcome["rows"]]
    weights = unescape(html[html.index('id="market-weights"') :])
    assert "Logic 30 %" in weights and "Persuasiveness 20 %" in weights
    assert 'class="badge citation-mismatch"' in table
    # The misquoted data point is marked where the opening cites it, beside the turn's list of flags.
    assert html.count('class="flag-mark" data-flag-kind="number_mismatch"') == 1
    assert 'data-flag-kind="number_mismatch" data-flag-where="arguments.0.evidence.0"' in html
    assert f"The judge finds the {run.judge_pick} case stronger" in html


def test_a_judge_arithmetic_slip_is_shown_beside_the_recomputed_score(moderator_client: Client) -> None:
    run = panel(judge_slip=True)
    (slip,) = run.outcome["score_mismatches"]
    html = unescape(moderator_client.get(f"/runs/{run.pk}/").content.decode())
    assert "The judge's weighted scores differ from the recomputed ones" in html and slip in html
    first = run.outcome["rows"][0]["score"]
    assert (
        f'<strong>{first["weighted"]}</strong> <small class="mismatch">judge: {first["judge_weighted"]}</small>'
        in html
    )


def test_untrusted_kb_text_is_escaped(moderator_client: Client) -> None:
    data = copy.deepcopy(kbs()["market-2026-q4"].data)
    data["sectors"]["XLK"]["name"] = "<img src=x onerror=alert(1)>Tech"
    hostile = kb_import_json(json.dumps(data), name="hostile.json", slug="hostile")
    run = panel(kb=hostile, misquote="")
    claims = [r["claim"] for r in run.outcome["rows"]]
    assert any("<img src=x" in c for c in claims)  # the simulated bull argues from that sector
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;Tech" in html


def test_a_streaming_opening_challenge_and_judgement_render_what_has_arrived_in_the_shape_asked() -> None:
    """What streams is the model's shape (one property per argument, one per opponent argument, the judge's scores
    one per argument id): the card shows it as it arrives, numbered as code will number it."""
    text = (
        '{"argument_0": {"claim": "SPX above its MA200", "evidence": [{"data_point": "above", "source": "tec'
    )
    html = render_to_string(
        "debates/run_detail.html#turn-live",
        {"card": live_card(key="r1/opening/tech_bull", task="opening", protocol="market-panel", text=text)},
    )
    assert 'data-argument="tech_bull_arg_0"' in html and "SPX above its MA200" in html
    # Arguments are named for people, counted from 1, with the id agents cite beside the name.
    assert '<span class="claim-id">Argument 1</span> <code class="arg-id">tech_bull_arg_0</code>' in html
    text = '{"on_arg_0": {"challenge_type": "refute", "reasoning": "Lagging"}, "on_arg_1": {"challenge_type": "conc'
    html = render_to_string(
        "debates/run_detail.html#turn-live",
        {"card": live_card(key="r2/cross/tech/1", task="cross", protocol="market-panel", text=text)},
    )
    assert 'data-target="…_arg_0" data-type="refute"' in html and "Lagging" in html
    assert 'data-target="…_arg_1"' in html
    assert 'On <span class="claim-id arg-ref">Argument 2</span> <code class="arg-id">…_arg_1</code>' in html
    text = (
        '{"scores": {"tech_bull_arg_0": {"logic": 7, "evidence": 8, "clarity": 8, "persuasiveness": 6, '
        '"weighted": 7.3, "status": "WEAKENED"}, "tech_bear_arg_0": {"logic": 4'
    )
    html = render_to_string(
        "debates/run_detail.html#turn-live",
        {"card": live_card(key="r4/judgement/judge", task="judgement", protocol="market-panel", text=text)},
    )
    rows = re.findall(
        r'<tr><td><span class="claim-id arg-ref">(.*?)</span> <code class="arg-id">(.*?)</code></td><td>(\d*)',
        html,
    )
    assert rows == [
        ("Technical bull, argument 1", "tech_bull_arg_0", "7"),
        ("Technical bear, argument 1", "tech_bear_arg_0", "4"),
    ]  # a row per argument as its scores come
    assert "WEAKENED" in html


# --- headless ------------------------------------------------------------------------------------------------------


def test_run_debate_runs_a_panel_headless(capsys: pytest.CaptureFixture[str]) -> None:
    kbs()
    call_command("run_debate", "--protocol", "market-panel", "--kb", "market-2026-q4", "--topic", TOPIC,
                 "--no-progress")  # fmt: skip
    run = Run.objects.get(pk=int(capsys.readouterr().out.strip().splitlines()[-1]))
    assert run.status == "completed" and run.material == MATERIAL_NOTE
    assert len(run.outcome["rows"]) >= 16 and run.outcome["chart"] is not None
    with pytest.raises(CommandError, match="needs a data knowledge base"):
        call_command("run_debate", "--protocol", "market-panel", "--topic", TOPIC, "--no-progress")


def test_a_panel_created_without_material_never_gets_the_whole_kb_as_material() -> None:
    run = panel()
    assert run.material == MATERIAL_NOTE
    assert "vix_level" not in run.material and "change_20d_pct" not in run.material
