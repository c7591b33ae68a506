"""The simulated market panel stays on its run's topic and knowledge base: every figure a seat quotes is a path of the
run's own KB (verified against it), no seat or judge writes a name or ticker of another KB (the bundled demo's S&P
500 and its sectors) or a fixed label of its own, the seats argue first from what the topic names, and the closings
and the judge's synthesis name the run's topic. A data KB of another shape than the seed's is read by its own keys."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from debates.models import Run
from debates.services import runs as services
from kb.demo import demo_kbs_load
from kb.formats.seed004 import leaf_paths
from kb.models import KnowledgeBase
from kb.services import kb_import_json
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads

# The seed's own synthetic knowledge base (seed 004, "Demo with Synthetic Data"): a fictional ExampleIndex.
EXAMPLE_KB: dict[str, Any] = {
    "meta": {"generated_at": "2026-05-15T12:00:00Z", "market_status": "open", "data_sources": ["synthetic"],
             "warnings": ["This is synthetic demo data — not for real analysis"]},
    "indices": {"EXI": {"ticker": "EXI", "name": "ExampleIndex", "price": 4850.0, "change_pct": 0.8,
                        "returns": {"5d": 2.1, "20d": 4.8, "50d": 12.3, "200d": 28.5}, "vs_52w_high_pct": -3.2,
                        "vs_52w_low_pct": 42.1, "volume_ratio": 1.3}},
    "technicals": {"EXI": {"ticker": "EXI", "ma_status": {"ma20": "above", "ma50": "above", "ma200": "above"},
                           "rsi_14": 62.0, "macd_signal": "bullish", "atr_14": 45.2, "volume_trend": "increasing"}},
    "sectors": {
        "XTECH": {"ticker": "XTECH", "name": "Technology", "price": 520.0, "change_5d_pct": 3.2,
                  "change_20d_pct": 7.5, "relative_strength_vs_spx": 2.7},
        "XFIN": {"ticker": "XFIN", "name": "Financials", "price": 180.0, "change_5d_pct": -0.5,
                 "change_20d_pct": 1.2, "relative_strength_vs_spx": -3.6},
        "XIND": {"ticker": "XIND", "name": "Industrials", "price": 210.0, "change_5d_pct": 1.8,
                 "change_20d_pct": 4.1, "relative_strength_vs_spx": -0.7},
    },
    "fundamentals": {"sp500_pe_approx": {"current_pe_approx": 28.5, "long_term_avg_pe": 24.0},
                     "sp500_earnings_yield_approx": 3.51, "sector_rotation_signal": "cyclical_rotation"},
    "macro": {
        "GDP": {"indicator": "GDP", "trend": "rising", "latest_value": 3.2, "yoy_change_pct": 0.5},
        "CPI": {"indicator": "CPI", "trend": "falling", "latest_value": 3.1, "yoy_change_pct": -0.3},
        "FEDFUNDS": {"indicator": "FEDFUNDS", "trend": "flat", "latest_value": 4.25},
        "UNRATE": {"indicator": "UNRATE", "trend": "flat", "latest_value": 3.8},
        "T10Y2Y": {"indicator": "T10Y2Y", "trend": "flat", "latest_value": -0.35},
    },
    "sentiment": {"vix_level": 18.2, "vix_regime": "normal", "volume_signal": "high_volume_rally",
                  "sector_breadth": {"positive_5d": "7/10", "positive_20d": "7/10", "breadth_regime": "broad_strength"}},
    "global_markets": {
        "HSI": {"ticker": "HSI", "name": "Hang Seng", "price": 21800, "change_pct": 1.2,
                "returns": {"5d": 2.8, "20d": 6.3}},
        "N225": {"ticker": "N225", "name": "Nikkei 225", "price": 39200, "change_pct": 0.5,
                 "returns": {"5d": 1.3, "20d": 3.7}},
    },
}  # fmt: skip
EXAMPLE_TOPIC = "One-month market outlook for ExampleIndex"

# A KB of the user's own shape: housing and rates, two lenses of its own with their slices.
HOUSING_KB: dict[str, Any] = {
    "meta": {"title": "Housing Q1"},
    "housing": {"US": {"name": "US housing", "starts_change_pct": -3.1, "price_yoy_pct": 2.4, "inventory_months": 4.2},
                "CA": {"name": "Canadian housing", "starts_change_pct": 1.7, "price_yoy_pct": -1.2,
                       "inventory_months": 5.6}},
    "rates": {"MORTGAGE30": {"name": "30-year mortgage", "rate_change_pct": 0.35, "level": 6.8},
              "POLICY": {"name": "Policy rate", "rate_change_pct": -0.25, "level": 4.5}},
}  # fmt: skip
HOUSING_TOPIC = "Will US housing starts recover this spring?"
HOUSING_CONFIG = {"lenses": ["housing", "rates"], "slices": {"housing": ["housing"], "rates": ["rates"]}}


def demo_kb() -> KnowledgeBase:
    return next(kb for kb in demo_kbs_load() if kb.slug == "market-2026-q4")


def panel(kb: KnowledgeBase, topic: str, config: dict[str, Any] | None = None) -> Run:
    run = services.run_create(
        protocol="market-panel",
        topic=topic,
        material="",
        config=config or {},
        seed=5,
        kb=kb,
        backend_options={"cps": 0},
        enqueue=False,
    )
    run_to_stop(run)
    run.refresh_from_db()
    assert run.status == "completed", run.status_reason
    return run


def foreign_words(data: dict[str, Any]) -> set[str]:
    """The demo KB's entity keys, tickers and names that `data` does not have (S&P 500, SPX, Nasdaq 100, XLK...)."""
    demo = demo_kb().data
    assert demo is not None

    def words(tree: dict[str, Any]) -> set[str]:
        found = set()
        for children in tree.values():
            if isinstance(children, dict):
                for key, node in children.items():
                    found.add(str(key))
                    if isinstance(node, dict):
                        found |= {str(node[f]) for f in ("ticker", "name") if isinstance(node.get(f), str)}
        return found

    return {w for w in words(demo) - words(data) if len(w) > 2 and not w.islower()}


def cited_paths(run: Run) -> list[str]:
    """Every path a seat cites, in an opening's evidence or a challenge's new evidence (either variant)."""
    paths = []
    for turn in run.turns.filter(key__regex=r"^r[12]/"):
        items = [a.get("evidence") for a in turn.payload.get("arguments", [])]
        items += [c.get("new_evidence") for c in turn.payload.get("challenges", [])]
        for evidence in items:
            if isinstance(evidence, list):
                paths += [e["source"] for e in evidence]
            elif evidence:
                paths += [p.rstrip(".") for p in re.findall(r"\b[A-Za-z_][\w-]*(?:\.[\w-]+)+", evidence)]
    return paths


def test_a_panel_on_the_seeds_example_index_speaks_only_of_that_kb_and_topic() -> None:
    kb = kb_import_json(json.dumps(EXAMPLE_KB), name="example-index.json", slug="example-index")
    run = panel(kb, EXAMPLE_TOPIC)
    outcome = run.outcome
    # Every cited path is the run's own KB's, and every quoted figure but the one deliberate misquote is its value.
    paths = cited_paths(run)
    assert paths and set(paths) <= set(leaf_paths(EXAMPLE_KB))
    assert outcome["unknown_paths"] == [] and [m["seat"] for m in outcome["mismatches"]] == ["fund_bull"]
    # Nothing any seat or the judge wrote names what only another KB has.
    text = json.dumps([t.payload for t in run.turns.all()], ensure_ascii=False)
    foreign = foreign_words(EXAMPLE_KB)
    assert {"S&P 500", "SPX", "Nasdaq 100", "XLK"} <= foreign
    assert [w for w in foreign if re.search(rf"(?<![\w&]){re.escape(w)}(?!\w)", text)] == []
    # The seats argue first from what the topic names (ExampleIndex: indices.EXI, technicals.EXI).
    first = {r["seat"]: r for r in outcome["rows"] if r["id"].endswith("_arg_0")}
    assert all(c["path"].split(".")[1] == "EXI" for c in first["tech_bull"]["citations"])
    # The closings and the judge's synthesis name the run's topic.
    assert all(EXAMPLE_TOPIC in c["final_stance"] for c in outcome["closings"].values())
    assert EXAMPLE_TOPIC in outcome["synthesis"]["key_insight"]
    assert EXAMPLE_TOPIC in outcome["synthesis"]["bull_case_summary"]


def test_the_topic_decides_which_of_the_kbs_entities_the_seats_argue_from_first() -> None:
    """On a topic naming no index, the technical bull opens on the Nasdaq 100 (its strongest reading)."""
    kb = demo_kb()
    topics = {
        "NDX": "How is the market doing?",
        "SPX": "One-month outlook for the S&P 500",
        "RUT": "Where next for the Russell 2000?",
    }
    for ticker, topic in topics.items():
        run = panel(kb, topic)
        first = next(r for r in run.outcome["rows"] if r["id"] == "tech_bull_arg_0")
        assert {c["path"].split(".")[1] for c in first["citations"]} == {ticker}, first["citations"]


def test_a_kb_of_another_shape_is_read_by_its_own_keys_and_nothing_else() -> None:
    kb = kb_import_json(json.dumps(HOUSING_KB), name="housing.json", slug="housing")
    run = panel(kb, HOUSING_TOPIC, HOUSING_CONFIG)
    paths = cited_paths(run)
    assert paths and set(paths) <= set(leaf_paths(HOUSING_KB))
    assert run.outcome["unknown_paths"] == []
    text = json.dumps([t.payload for t in run.turns.all()], ensure_ascii=False)
    foreign = foreign_words(HOUSING_KB) | {"RSI", "MACD", "VIX", "P/E"}
    assert [w for w in foreign if re.search(rf"(?<![\w&]){re.escape(w)}(?!\w)", text)] == []
    # "US housing" is what the topic names: the housing bull and bear open on it.
    for seat in ("housing_bull", "housing_bear"):
        first = next(r for r in run.outcome["rows"] if r["id"] == f"{seat}_arg_0")
        assert {c["path"].split(".")[1] for c in first["citations"]} == {"US"}, first["citations"]
