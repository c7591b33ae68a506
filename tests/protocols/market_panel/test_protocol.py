"""The market panel (seed 004), planned over hand-built histories: lens × stance seats on KB slices (a seat's
context and prompt hold only its slice, the judge's the whole KB), openings in parallel, cross-examination paired
within a lens (serial within a pair, pairs in parallel), the handshake rule, the judge's arithmetic (recomputed,
a wrong figure shown as a mismatch, not corrected), figure verification against the KB, both evidence variants
of the seed, and the degradation paths."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from debates.agents.prompts import prompt_render
from debates.contract import Done, KbView, RunView, SeatView, Steps, TurnView
from debates.engine import registry
from debates.protocols.market_panel.protocol import (
    KEY_JUDGEMENT,
    MATERIAL_NOTE,
    MarketPanelConfig,
    arg_label,
    evidence_verify,
    key_closing,
    key_opening,
    score_rows,
    side_check,
    slices_parse,
    weighted_score,
)

PROTOCOL = registry.get("market-panel")
DATA: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[3] / "kb" / "demo" / "market-2026-q4.json").read_text(encoding="utf-8")
)
SEATS = [
    "tech_bull",
    "tech_bear",
    "fund_bull",
    "fund_bear",
    "macro_bull",
    "macro_bear",
    "senti_bull",
    "senti_bear",
]
PAIRS = {"tech": ("tech_bull", "tech_bear"), "fund": ("fund_bull", "fund_bear"), "macro": ("macro_bull", "macro_bear"),
         "senti": ("senti_bull", "senti_bear")}  # fmt: skip


def kb(data: dict[str, Any] | None = None, kind: str = "data") -> Any:
    return SimpleNamespace(
        kind=kind, data=DATA if data is None else data, title="Market Q4", slug="market-2026-q4"
    )


def config(**overrides: Any) -> MarketPanelConfig:
    return MarketPanelConfig.model_validate(PROTOCOL.prepare(dict(overrides), kb()))


def view(
    turns: dict[str, dict[str, Any] | None], data: dict[str, Any] | None = None, **overrides: Any
) -> RunView:
    cfg = config(**overrides)
    seats = {s.handle: SeatView(s.handle, s.name, s.role, s.lens, s.human) for s in PROTOCOL.seats(cfg)}
    turn_views = {
        key: TurnView(
            key=key,
            seat=seat_of(key),
            stage=key.split("/")[1],
            task=key.split("/")[1],
            status="committed" if payload is not None else "failed",
            payload=payload,
            error="" if payload is not None else "Simulated mid-stream failure",
        )
        for key, payload in turns.items()
    }
    kb_view = KbView("market-2026-q4", {}, (), (), frozenset(), (), data=DATA if data is None else data)
    return RunView(
        1, "One-month outlook for the S&P 500", MATERIAL_NOTE, 7, cfg, seats, turn_views, kb=kb_view
    )


def seat_of(key: str) -> str:
    if key.startswith("r2/"):
        prefix, order = key.split("/")[2:]
        return PAIRS[prefix][int(order) - 1]
    return key.rsplit("/", 1)[1]


def argument(claim: str, evidence: Any, confidence: float = 0.7) -> dict[str, Any]:
    return {"claim": claim, "evidence": evidence, "confidence": confidence, "counterpoints": ["A caveat."]}


def opening(seat: str, count: int = 2) -> dict[str, Any]:
    """Arguments citing the seat's own slice correctly (paths that every lens of the demo KB has)."""
    cites = {
        "tech": [("technicals.SPX.rsi_14", "58.4"), ("indices.SPX.returns.20d", "1.9"), ("technicals.RUT.rsi_14", "41.3")],
        "fund": [("fundamentals.sp500_pe_approx.current_pe_approx", "27.4"), ("sectors.XLK.change_20d_pct", "3.9"),
                 ("fundamentals.sp500_earnings_yield_approx", "3.65")],
        "macro": [("macro.CPI.latest_value", "2.8"), ("macro.GDP.latest_value", "1.7"), ("macro.UNRATE.latest_value", "4.5")],
        "senti": [("sentiment.vix_level", "17.6"), ("sentiment.sector_breadth.positive_20d", "7/10"),
                 ("sentiment.sector_breadth.breadth_regime", "narrowing")],
    }[seat.split("_")[0]]  # fmt: skip
    return {
        "arguments": [
            argument(f"{seat} claim {n}", [{"data_point": value, "source": path}], 0.6 + n / 10)
            for n, (path, value) in enumerate(cites[:count])
        ]
    }


def openings(count: int = 2) -> dict[str, dict[str, Any] | None]:
    return {key_opening(s): opening(s, count) for s in SEATS}


def cross(opponent: str, kinds: list[str]) -> dict[str, Any]:
    return {
        "challenges": [
            {
                "target_id": f"{opponent}_arg_{n}",
                "challenge_type": kind,
                "reasoning": "Because.",
                "new_evidence": "",
            }
            for n, kind in enumerate(kinds)
        ]
    }


def crosses(kinds: dict[str, list[str]] | None = None) -> dict[str, dict[str, Any] | None]:
    kinds = kinds or {}
    turns: dict[str, dict[str, Any] | None] = {}
    for prefix, (first, second) in PAIRS.items():
        turns[f"r2/cross/{prefix}/1"] = cross(second, kinds.get(first, ["refute", "partial"]))
        turns[f"r2/cross/{prefix}/2"] = cross(first, kinds.get(second, ["question_evidence", "concede"]))
    return turns


STANCE = " ".join(["word"] * 60)


def closing(seat: str, abandoned: tuple[int, ...] = ()) -> dict[str, Any]:
    return {
        "refined_claims": [
            {"argument_id": f"{seat}_arg_{n}", "original": "c", "refinement": "r", "confidence_adjusted": 0.6}
            for n in range(2)
            if n not in abandoned
        ],
        "abandoned": [f"{seat}_arg_{n}" for n in abandoned],
        "concessions": ["I accept the point."] if abandoned else [],
        "final_stance": STANCE,
        "conviction_change": "weakened" if abandoned else "unchanged",
    }


def closings() -> dict[str, dict[str, Any] | None]:
    return {key_closing(s): closing(s) for s in SEATS}


def judgement(**overrides: Any) -> dict[str, Any]:
    scores = [
        {
            "argument_id": f"{seat}_arg_{n}",
            "logic": 8,
            "evidence": 7,
            "clarity": 8,
            "persuasiveness": 7,
            "weighted": 7.5,
            "status": ("UPHELD", "WEAKENED", "REFUTED")[(i + n) % 3],
        }
        for i, seat in enumerate(SEATS)
        for n in range(2)
    ]
    data = {
        "scores": scores,
        "synthesis": {"bull_case_summary": "Bull.", "bear_case_summary": "Bear.", "key_insight": "Horizon."},
        "stronger_case": "bear",
    }
    data.update(overrides)
    return data


def full_history(**judge: Any) -> dict[str, dict[str, Any] | None]:
    return {**openings(), **crosses(), **closings(), KEY_JUDGEMENT: judgement(**judge)}


# --- seats, config and slices ----------------------------------------------------------------------------------------


def test_seats_are_lens_by_stance_plus_a_judge_named_as_in_the_seed() -> None:
    seats = PROTOCOL.seats(config())
    assert [s.handle for s in seats] == [*SEATS, "judge"]
    assert seats[0].lens == "technical / bull" and seats[-1].role == "judge"
    assert (seats[6].handle, seats[6].lens) == ("senti_bull", "sentiment / bull")  # the seed's senti_bull


def test_a_run_created_before_the_rename_plans_and_reads_with_its_own_sentiment_handles() -> None:
    """A run keeps the seats it was created with: one whose sentiment seats are sent_bull / sent_bear (and its
    cross keys r2/cross/sent/N) finds them by their lens, so it goes on and its outcome names them."""
    old = {"senti_bull": "sent_bull", "senti_bear": "sent_bear"}

    def renamed(turns: dict[str, dict[str, Any] | None]) -> RunView:
        current = view(turns)
        seats = {
            old.get(h, h): SeatView(old.get(h, h), s.name, s.role, s.lens, s.human)
            for h, s in current.seats.items()
        }
        keyed = {
            k.replace("senti_", "sent_").replace("/senti/", "/sent/"): replace(
                t, key=k.replace("senti_", "sent_").replace("/senti/", "/sent/"), seat=old.get(t.seat, t.seat)
            )
            for k, t in current.turns.items()
        }
        return replace(current, seats=seats, turns=keyed)

    def old_payload(payload: dict[str, Any]) -> dict[str, Any]:
        return json.loads(json.dumps(payload).replace("senti_", "sent_"))

    plan = PROTOCOL.plan(renamed({}))
    assert isinstance(plan, Steps) and {s.seat for s in plan.steps} >= {"sent_bull", "sent_bear"}
    plan = PROTOCOL.plan(renamed(openings()))
    assert isinstance(plan, Steps)
    cross = next(s for s in plan.steps if s.seat == "sent_bull")
    assert cross.key == "r2/cross/sent/1" and cross.context["opponent"] == "sent_bear"
    assert [a["id"] for a in cross.context["opponent_arguments"]] == ["sent_bear_arg_0", "sent_bear_arg_1"]
    history = {k: old_payload(v) if v else v for k, v in full_history().items()}
    done = PROTOCOL.plan(renamed(history))
    assert isinstance(done, Done) and not done.failed
    assert done.outcome["seats"][-2:] == ["sent_bull", "sent_bear"]
    rows = [r for r in done.outcome["rows"] if r["lens"] == "sentiment"]
    assert [r["id"] for r in rows] == [
        "sent_bull_arg_0",
        "sent_bull_arg_1",
        "sent_bear_arg_0",
        "sent_bear_arg_1",
    ]
    assert all(r["score"] and r["challenges"] for r in rows)


def test_default_slices_fit_the_demo_kb_and_drop_sections_a_kb_lacks() -> None:
    assert config().slices == {
        "technical": ["indices", "technicals"],
        "fundamental": ["fundamentals", "sectors"],
        "macro": ["macro", "global_markets"],
        "sentiment": ["sentiment"],
    }
    smaller = {k: v for k, v in DATA.items() if k != "global_markets"}
    prepared = PROTOCOL.prepare({}, kb(smaller))
    assert prepared["slices"]["macro"] == ["macro"]


def test_a_data_kb_is_required_and_a_missing_slice_path_is_named() -> None:
    with pytest.raises(ValueError, match="needs a data knowledge base"):
        PROTOCOL.prepare({}, None)
    with pytest.raises(ValueError, match="is an argument graph"):
        PROTOCOL.prepare({}, kb(kind="graph"))
    with pytest.raises(ValueError, match=r"slices\.macro: .*'macro\.EXI' .*no 'macro\.EXI'"):
        PROTOCOL.prepare({"slices": {"macro": ["macro.EXI"]}}, kb())
    with pytest.raises(ValueError, match=r"slices\.flows: name the KB paths"):
        PROTOCOL.prepare({"lenses": ["technical", "flows"]}, kb())


def test_the_weights_must_sum_to_100_and_are_not_normalised() -> None:
    assert (
        config(weights={"logic": 40, "evidence": 40, "clarity": 5, "persuasiveness": 15}).weights["clarity"]
        == 5
    )
    with pytest.raises(ValidationError, match="must sum to 100 \\(they sum to 90\\)"):
        config(weights={"logic": 30, "evidence": 30, "clarity": 20, "persuasiveness": 10})
    with pytest.raises(ValidationError, match="give exactly logic, evidence, clarity, persuasiveness"):
        config(weights={"logic": 50, "evidence": 50})


def test_slices_box_lines_parse_and_a_bad_line_is_named() -> None:
    assert slices_parse("technical: indices.SPX, technicals.SPX\n\nmacro: macro") == {
        "technical": ["indices.SPX", "technicals.SPX"],
        "macro": ["macro"],
    }
    with pytest.raises(ValueError, match="Slices, line 2"):
        slices_parse("macro: macro\nsentiment")


# --- openings and slicing -------------------------------------------------------------------------------------------


def test_openings_run_in_parallel_each_seeing_only_its_slice_and_no_other_turn() -> None:
    plan = PROTOCOL.plan(view({}))
    assert isinstance(plan, Steps)
    steps = {s.seat: s for s in plan.steps}
    assert sorted(steps) == sorted(SEATS)
    tech = steps["tech_bull"]
    assert set(tech.context["kb_slice"]) == {"indices", "technicals"}
    assert tech.context["kb_slice"]["technicals"] == DATA["technicals"]
    assert set(steps["senti_bear"].context["kb_slice"]) == {"sentiment"}
    assert not any(s.may_see(key_opening("tech_bear")) for s in plan.steps)


def test_a_seats_prompt_holds_its_slice_and_nothing_of_the_others() -> None:
    """The rendered prompt (shared prefix, transcript, persona, task) of a technical seat quotes technical data and
    none of the macro or sentiment data, even after other seats' openings have committed."""
    history = {key_opening(s): opening(s) for s in SEATS if s != "tech_bull"}
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Steps) and [s.seat for s in plan.steps] == ["tech_bull"]
    text = prompt_render(protocol="market-panel", step=plan.steps[0], view=view(history)).text
    assert '"rsi_14":58.4' in text.replace(" ", "")
    for foreign in ('"vix_level"', '"FEDFUNDS"', '"sp500_earnings_yield_approx"', "macro.CPI.latest_value"):
        assert foreign not in text


def test_a_sliced_path_keeps_only_that_subtree() -> None:
    plan = PROTOCOL.plan(view({}, slices={"technical": ["technicals.SPX", "indices.SPX.returns"]}))
    assert isinstance(plan, Steps)
    tech = next(s for s in plan.steps if s.seat == "tech_bear")
    assert tech.context["kb_slice"] == {
        "technicals": {"SPX": DATA["technicals"]["SPX"]},
        "indices": {"SPX": {"returns": DATA["indices"]["SPX"]["returns"]}},
    }


def test_the_judge_sees_the_whole_kb_and_the_whole_transcript() -> None:
    history = {**openings(), **crosses(), **closings()}
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Steps)
    (judge,) = plan.steps
    assert judge.key == KEY_JUDGEMENT and judge.context["kb"] == DATA
    assert judge.sees is None
    assert [a["id"] for a in judge.context["arguments"]] == [f"{s}_arg_{n}" for s in SEATS for n in range(2)]
    assert judge.context["weights"] == {"logic": 30, "evidence": 30, "clarity": 20, "persuasiveness": 20}


# --- cross-examination: pairs, order, visibility --------------------------------------------------------------------


def test_cross_examination_pairs_only_within_a_lens_first_stance_first_pairs_in_parallel() -> None:
    plan = PROTOCOL.plan(view(openings()))
    assert isinstance(plan, Steps)
    assert [(s.key, s.seat) for s in plan.steps] == [
        ("r2/cross/tech/1", "tech_bull"),
        ("r2/cross/fund/1", "fund_bull"),
        ("r2/cross/macro/1", "macro_bull"),
        ("r2/cross/senti/1", "senti_bull"),
    ]
    for step in plan.steps:
        opponent = step.context["opponent"]
        assert opponent.split("_")[0] == step.seat.split("_")[0] and opponent.endswith("_bear")
        assert {a["id"] for a in step.context["opponent_arguments"]} == {
            f"{opponent}_arg_0",
            f"{opponent}_arg_1",
        }
        assert not step.may_see(key_opening("macro_bear" if step.seat != "macro_bull" else "tech_bear"))


def test_within_a_pair_the_second_side_waits_for_the_first_and_reads_it() -> None:
    history = {**openings(), "r2/cross/tech/1": cross("tech_bear", ["refute", "refute"])}
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Steps)
    keys = [s.key for s in plan.steps]
    assert keys == ["r2/cross/tech/2", "r2/cross/fund/1", "r2/cross/macro/1", "r2/cross/senti/1"]
    second = plan.steps[0]
    assert (
        second.seat == "tech_bear"
        and second.context["challenges_received"][0]["target_id"] == "tech_bear_arg_0"
    )
    assert second.may_see("r2/cross/tech/1") and second.may_see(key_opening("tech_bull"))
    assert not second.may_see(key_opening("fund_bull")) and not second.may_see("r2/cross/fund/1")


def test_the_stance_order_decides_who_challenges_first() -> None:
    plan = PROTOCOL.plan(view(openings(), stances=["bear", "bull"]))
    assert isinstance(plan, Steps)
    assert {s.seat for s in plan.steps} == {"tech_bear", "fund_bear", "macro_bear", "senti_bear"}


def test_closings_run_in_parallel_and_read_only_their_own_pair() -> None:
    plan = PROTOCOL.plan(view({**openings(), **crosses()}))
    assert isinstance(plan, Steps)
    assert sorted(s.seat for s in plan.steps) == sorted(SEATS)
    fund = next(s for s in plan.steps if s.seat == "fund_bear")
    assert [c["target_id"] for c in fund.context["challenges_received"]] == [
        "fund_bear_arg_0",
        "fund_bear_arg_1",
    ]
    assert fund.may_see("r2/cross/fund/2") and not fund.may_see("r2/cross/tech/1")
    assert not fund.may_see(key_closing("fund_bull"))


# --- the handshake rule ----------------------------------------------------------------------------------------------


def test_each_side_must_challenge_at_least_half_and_a_concede_does_not_count() -> None:
    targets = ["x_bull_arg_0", "x_bull_arg_1", "x_bull_arg_2"]
    payload = {"challenges": [{"target_id": t, "challenge_type": k} for t, k in zip(targets, ["partial", "concede", "concede"], strict=True)]}  # fmt: skip
    assert side_check("x_bear", payload, targets) == {
        "seat": "x_bear",
        "challenged": 1,
        "targets": 3,
        "needed": 2,
        "short": True,
        "missing": False,
    }
    payload["challenges"][1]["challenge_type"] = "question_evidence"
    assert side_check("x_bear", payload, targets)["short"] is False  # 2 of 3 is at least half


def test_a_pair_that_mostly_concedes_is_flagged_as_a_handshake_and_a_single_short_side_as_such() -> None:
    kinds = {
        "senti_bull": ["concede", "concede"],
        "senti_bear": ["concede", "concede"],
        "macro_bull": ["refute", "refute"],
        "macro_bear": ["concede", "concede"],
    }
    plan = PROTOCOL.plan(view({**openings(), **crosses(kinds), **closings(), KEY_JUDGEMENT: judgement()}))
    assert isinstance(plan, Done)
    flags = {(h["seat"], h["kind"]) for h in plan.outcome["handshakes"]}
    assert flags == {("senti_bull", "handshake"), ("senti_bear", "handshake"), ("macro_bear", "short")}
    pairs = {p["lens"]: p for p in plan.outcome["pairs"]}
    assert (
        pairs["sentiment"]["handshake"]
        and not pairs["macro"]["handshake"]
        and not pairs["technical"]["short"]
    )


# --- the judge's arithmetic ------------------------------------------------------------------------------------------


def test_the_weighted_score_is_recomputed_with_the_configured_weights() -> None:
    scores = {"logic": 8, "evidence": 7, "clarity": 8, "persuasiveness": 7}
    assert (
        str(weighted_score(scores, {"logic": 30, "evidence": 30, "clarity": 20, "persuasiveness": 20}))
        == "7.50"
    )
    assert (
        str(weighted_score(scores, {"logic": 0, "evidence": 40, "clarity": 5, "persuasiveness": 55}))
        == "7.05"
    )


def test_a_wrong_judge_weighted_score_is_shown_as_a_mismatch_not_corrected() -> None:
    weights = {"logic": 30, "evidence": 30, "clarity": 20, "persuasiveness": 20}
    judged = {
        "scores": [
            {"argument_id": "a", "logic": 8, "evidence": 7, "clarity": 8, "persuasiveness": 7, "weighted": 8.4,
             "status": "UPHELD"},
            {"argument_id": "b", "logic": 7, "evidence": 7, "clarity": 8, "persuasiveness": 8, "weighted": 7.5,
             "status": "UPHELD"},
        ]
    }  # fmt: skip
    rows, mismatches = score_rows(judged, weights)
    assert (
        rows["a"]["weighted"] == 7.5 and rows["a"]["judge_weighted"] == 8.4 and rows["a"]["weighted_mismatch"]
    )
    assert rows["b"]["weighted"] == 7.4 and rows["b"]["weighted_mismatch"]
    assert mismatches == [
        "a: the judge wrote weighted 8.4, but (8 × 30 + 7 × 30 + 8 × 20 + 7 × 20) / 100 = 7.5",
        "b: the judge wrote weighted 7.5, but (7 × 30 + 7 × 30 + 8 × 20 + 8 × 20) / 100 = 7.4",
    ]


def test_a_judge_rounding_to_one_decimal_is_not_a_mismatch() -> None:
    weights = {"logic": 25, "evidence": 25, "clarity": 25, "persuasiveness": 25}
    judged = {"scores": [{"argument_id": "a", "logic": 7, "evidence": 7, "clarity": 7, "persuasiveness": 8,
                          "weighted": 7.3, "status": "WEAKENED"}]}  # fmt: skip
    rows, mismatches = score_rows(judged, weights)
    assert rows["a"]["weighted"] == 7.25 and not rows["a"]["weighted_mismatch"] and mismatches == []


def test_the_outcome_shows_the_judges_slip_beside_the_recomputed_score() -> None:
    history = full_history()
    history[KEY_JUDGEMENT]["scores"][0]["weighted"] = 9.9  # type: ignore[index]
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Done) and not plan.failed
    row = plan.outcome["rows"][0]
    assert row["score"]["weighted"] == 7.5 and row["score"]["judge_weighted"] == 9.9
    assert plan.outcome["score_mismatches"] == [
        "tech_bull_arg_0: the judge wrote weighted 9.9, but (8 × 30 + 7 × 30 + 8 × 20 + 7 × 20) / 100 = 7.5"
    ]


def test_a_lean_against_the_recomputed_means_is_flagged() -> None:
    history = full_history(stronger_case="bull")
    for score in history[KEY_JUDGEMENT]["scores"]:  # type: ignore[index]
        if score["argument_id"].split("_")[1] == "bear":
            score.update(logic=9, weighted=None)
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Done)
    assert plan.outcome["stance_means"] == {"bull": 7.5, "bear": 7.8}
    assert any("bear arguments have the higher mean" in f for f in plan.outcome["flags"])


# --- figure verification ---------------------------------------------------------------------------------------------


def test_cited_figures_are_verified_mismatched_or_unknown_against_the_kb() -> None:
    evidence = [
        {"data_point": "58.4", "source": "technicals.SPX.rsi_14"},
        {"data_point": "RSI at 62", "source": "technicals.SPX.rsi_14"},
        {"data_point": "4,850", "source": "indices.EXI.price"},
        {"data_point": "bearish", "source": "technicals.RUT.macd_signal"},
        {"data_point": "about 20", "source": "sentiment.vix_level", "inferred": True},
    ]
    checked = evidence_verify(evidence, DATA, allowed=["technicals"])
    assert [c["status"] for c in checked] == ["verified", "mismatch", "unverified", "verified", "inferred"]
    assert checked[1]["kb_value"] == 58.4 and checked[1]["detail"] == "quoted RSI at 62, the KB has 58.4"
    assert checked[2]["detail"] == "no data at indices.EXI"
    assert [c["outside_slice"] for c in checked] == [False, False, False, False, True]


def test_the_string_variant_names_paths_with_their_values() -> None:
    text = (
        "RSI per technicals.SPX.rsi_14 = 58.4, CPI macro.CPI.latest_value (3.1) and falling, "
        "MACD technicals.RUT.macd_signal: bearish; e.g. a made-up sentiment.put_call 0.9."
    )
    checked = evidence_verify(text, DATA)
    assert [(c["path"], c["quoted"], c["status"]) for c in checked] == [
        ("technicals.SPX.rsi_14", "58.4", "verified"),
        ("macro.CPI.latest_value", "3.1", "mismatch"),
        ("technicals.RUT.macd_signal", "bearish", "verified"),
        ("sentiment.put_call", "0.9", "unverified"),
    ]


def test_a_misquoted_figure_reaches_the_judge_and_the_outcome() -> None:
    history = full_history()
    history[key_opening("fund_bull")]["arguments"][1]["evidence"] = "sectors.XLK.change_20d_pct = 4.5"  # type: ignore[index]
    judge = PROTOCOL.plan(view({k: v for k, v in history.items() if k != KEY_JUDGEMENT}))
    assert isinstance(judge, Steps)
    (mismatch,) = judge.steps[0].context["mismatches"]
    assert (mismatch["seat"], mismatch["where"], mismatch["quoted"], mismatch["kb_value"]) == (
        "fund_bull", "fund_bull_arg_1", "4.5", 3.9,
    )  # fmt: skip
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Done)
    assert [m["path"] for m in plan.outcome["mismatches"]] == ["sectors.XLK.change_20d_pct"]
    row = next(r for r in plan.outcome["rows"] if r["id"] == "fund_bull_arg_1")
    assert [c["status"] for c in row["citations"]] == ["mismatch"]


# --- both evidence variants of the seed ----------------------------------------------------------------------------


def test_the_trace_reads_either_variant() -> None:
    history = full_history()
    history[key_opening("tech_bull")]["arguments"][0]["evidence"] = "technicals.SPX.rsi_14 = 58.4"  # type: ignore[index]
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Done)
    rows = {r["id"]: r for r in plan.outcome["rows"]}
    assert rows["tech_bull_arg_0"]["evidence"] == "technicals.SPX.rsi_14 = 58.4"
    assert rows["tech_bull_arg_1"]["evidence"] == "indices.SPX.returns.20d: 1.9"
    assert (
        rows["tech_bull_arg_0"]["citations"][0]["status"] == rows["tech_bull_arg_1"]["citations"][0]["status"]
    )


# --- outcome and degradation ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argument_id", "seat", "label"),
    [
        ("tech_bull_arg_0", True, "Technical bull, argument 1"),
        ("macro_bear_arg_2", True, "Macro bear, argument 3"),
        ("fund_bear_arg_1", False, "Argument 2"),
        ("…_arg_0", True, "Argument 1"),  # a target still streaming, its seat not yet known
        ("not an id", True, "not an id"),
    ],
)
def test_an_argument_is_named_for_people_counted_from_one(argument_id: str, seat: bool, label: str) -> None:
    assert arg_label(argument_id, seat=seat) == label


def test_the_outcome_has_the_trace_table_chart_synthesis_and_pick() -> None:
    plan = PROTOCOL.plan(view(full_history()))
    assert isinstance(plan, Done) and not plan.failed
    outcome = plan.outcome
    assert [r["id"] for r in outcome["rows"]][:3] == ["tech_bull_arg_0", "tech_bull_arg_1", "tech_bear_arg_0"]
    given = [s["status"] for s in judgement()["scores"]]
    assert outcome["verdicts"] == {v: given.count(v) for v in ("UPHELD", "WEAKENED", "REFUTED")}
    assert [r["score"]["status"] for r in outcome["rows"]] == given
    assert outcome["synthesis"]["key_insight"] == "Horizon."
    assert (outcome["judge_pick"], outcome["pick_options"]) == (
        "bear",
        [["bull", "Bull case"], ["bear", "Bear case"]],
    )
    chart = outcome["chart"]
    # Seats and arguments as people read them (arguments counted from 1; the ids count from 0).
    assert chart["data"]["labels"][:3] == ["Technical bull", "Technical bear", "Fundamental bull"]
    assert len(chart["data"]["labels"]) == len(SEATS)
    assert [d["label"] for d in chart["data"]["datasets"]] == ["argument 1", "argument 2"]
    assert chart["data"]["datasets"][0]["data"] == [7.5] * 8
    closing_row = outcome["rows"][0]["closing"]
    assert closing_row == {"state": "refined", "refinement": "r", "confidence_adjusted": 0.6}


def test_a_failed_opening_skips_its_pair_and_its_closing() -> None:
    history: dict[str, dict[str, Any] | None] = {**openings(), key_opening("macro_bear"): None}
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Steps)
    assert [s.key for s in plan.steps] == ["r2/cross/tech/1", "r2/cross/fund/1", "r2/cross/senti/1"]
    history.update({k: v for k, v in crosses().items() if "/macro/" not in k})
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Steps)
    assert sorted(s.seat for s in plan.steps) == sorted(s for s in SEATS if s != "macro_bear")
    macro_bull = next(s for s in plan.steps if s.seat == "macro_bull")
    assert macro_bull.context["challenges_received"] == []


def test_a_failed_judge_fails_the_run_with_the_arguments_unscored() -> None:
    history = {**openings(), **crosses(), **closings(), KEY_JUDGEMENT: None}
    plan = PROTOCOL.plan(view(history))
    assert isinstance(plan, Done) and plan.failed and "The judge failed" in plan.reason
    assert plan.outcome["chart"] is None and plan.outcome["judge_pick"] == ""
    assert all(r["score"] is None for r in plan.outcome["rows"]) and len(plan.outcome["rows"]) == 16


def test_every_opening_failing_fails_the_run() -> None:
    plan = PROTOCOL.plan(view({key_opening(s): None for s in SEATS}))
    assert isinstance(plan, Done) and plan.failed and plan.reason == "Every opening failed: nothing to judge."


def test_expected_turns_counts_three_rounds_and_the_judge() -> None:
    assert PROTOCOL.expected_turns(view({})) == 25
    assert PROTOCOL.expected_turns(view({}, lenses=["macro"])) == 7
