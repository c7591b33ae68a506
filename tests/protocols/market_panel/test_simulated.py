"""The simulated market panel, run end to end by the runner over the demo data KB: it plays every branch the seed
describes (a handshake round flagged, a misquoted figure caught by the opponent and abandoned, concessions, a mix of
UPHELD / WEAKENED / REFUTED), deterministically, and each switch of the backend options turns its branch off."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from debates.agents.prompts import prompt_render
from debates.contract import Steps
from debates.engine import registry
from debates.engine.view import run_view_load
from debates.models import Run
from debates.protocols.market_panel.protocol import MATERIAL_NOTE
from debates.services import runs as services
from kb.demo import demo_kbs_load
from kb.models import KnowledgeBase
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads


def market_kb() -> KnowledgeBase:
    return next(kb for kb in demo_kbs_load() if kb.slug == "market-2026-q4")


def panel(**options: Any) -> Run:
    run = services.run_create(
        protocol="market-panel",
        topic="One-month outlook for the S&P 500",
        material=MATERIAL_NOTE,
        config=options.pop("config", {}),
        seed=5,
        kb=market_kb(),
        backend_options={"cps": 0, **options},
        enqueue=False,
    )
    run_to_stop(run)
    return run


def test_a_simulated_panel_plays_every_branch_of_the_seed() -> None:
    run = panel()
    assert run.status == "completed", run.status_reason
    assert run.turns.filter(status="committed").count() == 25
    outcome = run.outcome
    # The last lens's pair shakes hands: both sides flagged, no other pair.
    assert {(h["lens"], h["kind"]) for h in outcome["handshakes"]} == {("sentiment", "handshake")}
    # The second lens's bull misquotes one figure; its opponent refutes it with the KB's value; it abandons it.
    (mismatch,) = outcome["mismatches"]
    assert mismatch["seat"] == "fund_bull" and mismatch["where"] == "fund_bull_arg_0"
    row = next(r for r in outcome["rows"] if r["id"] == "fund_bull_arg_0")
    assert [c["challenge_type"] for c in row["challenges"]] == ["refute"]
    assert str(mismatch["kb_value"]) in row["challenges"][0]["reasoning"]
    assert row["closing"]["state"] == "abandoned" and row["score"]["status"] == "REFUTED"
    assert any("correction" in c for c in outcome["closings"]["fund_bull"]["concessions"])
    # Code flags the misquote, on the data point that quotes it, and the handshake pair's two short sides; nothing
    # else in the whole run.
    flagged = {t.key: t.flags for t in run.turns.all() if t.flags}
    assert sorted(flagged) == ["r1/opening/fund_bull", "r2/cross/senti/1", "r2/cross/senti/2"]
    assert all([f["kind"] for f in flagged[f"r2/cross/senti/{n}"]] == ["too_few_challenges"] for n in (1, 2))
    (flag,) = flagged["r1/opening/fund_bull"]
    assert (flag["kind"], flag["where"]) == ("number_mismatch", "arguments.0.evidence.0")
    assert f"the knowledge base has {mismatch['kb_value']}" in flag["detail"]
    # A mix of verdicts, and every judge figure agrees with the recomputed one.
    assert all(outcome["verdicts"][v] > 0 for v in ("UPHELD", "WEAKENED", "REFUTED"))
    assert outcome["score_mismatches"] == [] and outcome["flags"] == []
    assert run.judge_pick in {"bull", "bear"}
    # Both evidence variants are played: every other lens's bear writes a string.
    openings = {t.seat.handle: t.payload for t in run.turns.filter(key__startswith="r1/")}
    assert isinstance(openings["fund_bear"]["arguments"][0]["evidence"], str)
    assert isinstance(openings["fund_bull"]["arguments"][0]["evidence"], list)


def test_the_same_seed_plays_the_same_panel() -> None:
    first, second = panel(), panel()
    assert first.outcome["rows"] == second.outcome["rows"]


def test_within_a_pair_the_second_challenge_starts_after_the_first_commits_and_pairs_overlap() -> None:
    run = panel()
    events = {e.payload.get("key"): e.seq for e in run.events.filter(kind="turn_started")}
    committed = {e.payload.get("key"): e.seq for e in run.events.filter(kind="turn_committed")}
    for lens in ("tech", "fund", "macro", "senti"):
        assert events[f"r2/cross/{lens}/2"] > committed[f"r2/cross/{lens}/1"]
    # The four pairs' first challenges were started together, before any of them committed.
    firsts = [events[f"r2/cross/{lens}/1"] for lens in ("tech", "fund", "macro", "senti")]
    assert max(firsts) < min(committed[f"r2/cross/{lens}/1"] for lens in ("tech", "fund", "macro", "senti"))


def test_the_switches_turn_the_handshake_and_the_misquote_off_and_the_judge_slip_on() -> None:
    run = panel(handshake="", misquote="", judge_slip=True)
    outcome = run.outcome
    assert outcome["handshakes"] == [] and outcome["mismatches"] == []
    assert len(outcome["score_mismatches"]) == 1
    first = outcome["rows"][0]
    assert (
        first["score"]["weighted_mismatch"] and first["score"]["judge_weighted"] != first["score"]["weighted"]
    )


def panel_created(config: dict[str, Any], kb: KnowledgeBase | None = None) -> Run:
    """A panel created, not started."""
    return services.run_create(
        protocol="market-panel",
        topic="One-month outlook",
        material=MATERIAL_NOTE,
        config=config,
        seed=5,
        kb=kb or market_kb(),
        backend_options={"cps": 0},
        enqueue=False,
    )


def test_a_seat_prompt_in_a_real_run_holds_only_its_slice() -> None:
    run = panel_created({"lenses": ["technical", "sentiment"]})
    view = run_view_load(run)
    plan = registry.get("market-panel").plan(view)
    assert isinstance(plan, Steps)
    prompts = {s.seat: prompt_render(protocol="market-panel", step=s, view=view).text for s in plan.steps}
    assert '"vix_level"' in prompts["senti_bull"] and '"rsi_14"' not in prompts["senti_bull"]
    assert '"rsi_14"' in prompts["tech_bear"] and '"vix_level"' not in prompts["tech_bear"]
    assert (
        '"FEDFUNDS"' not in prompts["tech_bear"] + prompts["senti_bull"]
    )  # no lens of this panel reads macro


def test_the_data_tree_is_read_once_per_process_and_a_new_import_is_read_anew() -> None:
    """A data KB's tree is written by its import and never changed: views share one read of it."""
    kb = market_kb()
    run = panel_created({}, kb)
    first = run_view_load(run)
    with CaptureQueriesContext(connection) as queries:
        second = run_view_load(run)
    assert first.kb is not None and second.kb is not None
    assert second.kb.data is first.kb.data and second.kb.data == kb.data
    assert not any('"data"' in q["sql"] for q in queries.captured_queries)
    # The same id handed out again (a test database rolled back) with other data is read anew.
    KnowledgeBase.objects.filter(pk=kb.pk).update(
        data={"meta": {"title": "other"}}, created_at=timezone.now()
    )
    run.refresh_from_db()
    third = run_view_load(run)
    assert third.kb is not None and third.kb.data == {"meta": {"title": "other"}}
