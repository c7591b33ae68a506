"""Sycophancy and integrity signals (issue 8, part 4): per-seat concession / deflection / defended rates where the
protocol has them, handshake rounds, the citation verification rate, the judge's arithmetic mismatches and the
human's agreement with the judge, computed from what the protocols persisted; the bulk form is a fixed number of
queries; the run page shows them in `#integrity`."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from debates.models import Run, RunEvent, Seat, Turn
from debates.selectors.integrity import agreement_stats, run_signals, runs_signals
from debates.services import runs as services
from debates.web import frames
from kb.demo import demo_kbs_load
from tests.conftest import run_to_stop
from tests.protocols.comparative.test_page import comparison
from tests.protocols.market_panel.test_page import panel


def finish(run: Run, **fields: Any) -> Run:
    Run.objects.filter(pk=run.pk).update(status="completed", **fields)
    run.refresh_from_db()
    return run


def cite(run: Run, key: str, *statuses: str) -> Turn:
    seat = Seat.objects.filter(run=run).first()
    assert seat is not None
    return Turn.objects.create(
        run=run,
        seat=seat,
        key=key,
        stage="s",
        task="t",
        status="committed",
        citations=[{"kind": "arg", "ref": f"A{n}", "status": s} for n, s in enumerate(statuses)],
    )


# --- from real simulated runs ------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
class FromRunsTests:
    def test_cross_examination_rates_are_the_examiners_classifications_per_analyst(self, make_run):
        run = make_run()
        run_to_stop(run)
        assert run.status == "completed"
        signals = run_signals(run)
        summary = {row["analyst"]: row for row in run.outcome["summary"]}
        assert [s["handle"] for s in signals["seats"]] == list(summary)
        for seat in signals["seats"]:
            row = summary[seat["handle"]]
            classified = row["defended"] + row["conceded"] + row["deflected"]
            assert seat["conceded"]["count"] == row["conceded"] and seat["conceded"]["of"] == classified
            assert seat["deflected"]["count"] == row["deflected"]
            assert seat["defended"]["count"] == row["defended"]
            if classified:
                assert seat["conceded"]["rate"] == round(100 * row["conceded"] / classified, 1)
        assert signals["handshakes"] is None  # one-sided questioning has no rounds both sides answer
        assert signals["arithmetic"] is None  # no judge's arithmetic in this protocol

    def test_a_comparative_judges_arithmetic_slip_is_counted(self):
        run = comparison(backend_options={"judge_slip": True})
        signals = run_signals(run)
        assert signals["arithmetic"]["count"] == len(run.outcome["scorecard"]["mismatches"]) > 0
        assert signals["flagged"]
        assert [s["handle"] for s in signals["seats"]] == ["advocate-a", "advocate-b"]
        attacked_a = [r for r in run.outcome["rebuttals"] if r["target"] == "A" and r["verdict"]]
        assert signals["seats"][0]["defended"]["of"] == len(attacked_a)
        assert signals["seats"][0]["deflected"] is None

    def test_a_clean_comparative_run_has_zero_mismatches_not_none(self):
        run = comparison()
        signals = run_signals(run)
        assert signals["arithmetic"] == {"count": 0, "details": []}

    def test_a_market_panel_handshake_pair_is_a_handshake_round_and_slips_are_counted(self):
        run = panel(judge_slip=True)
        signals = run_signals(run)
        lens = run.config["lenses"][-1]  # the simulation's default handshake lens
        assert signals["handshakes"]["count"] == 1
        assert lens in signals["handshakes"]["rounds"][0]
        assert signals["arithmetic"]["count"] == len(run.outcome["score_mismatches"]) == 1
        shaking = [s for s in signals["seats"] if s["handle"].startswith(lens[:4])]
        assert shaking and all(s["conceded"]["rate"] == 100.0 for s in shaking)
        assert signals["citations"]["total"] >= signals["citations"]["verified"]

    def test_a_kb_debate_counts_moves_deflection_callouts_and_handshakes(self):
        kb = next(k for k in demo_kbs_load() if k.kind == "graph")
        run = services.run_create(
            protocol="kb-debate",
            topic="Does congestion pricing cut traffic?",
            kb=kb,
            config={},
            seed=3,
            backend_options={"cps": 0},
        )
        run_to_stop(run)
        signals = run_signals(run)
        moves: dict[str, list[str]] = {}
        for turn in run.turns.filter(task="turn", status="committed").select_related("seat"):
            moves.setdefault(turn.seat.handle, []).append(turn.payload["move"])
        assert {s["handle"] for s in signals["seats"]} >= set(moves)
        for seat in signals["seats"]:
            made = moves.get(seat["handle"], [])
            assert seat["conceded"] == {
                "count": made.count("concede"),
                "of": len(made),
                "rate": round(100 * made.count("concede") / len(made), 1) if made else None,
                "basis": "debate turns",
            }
            assert seat["defended"]["count"] == made.count("defend")
        # A deflection: a seat answered in a round and the ruling closing that round calls it out (once per round).
        callouts: dict[str, int] = {}
        answered: set[str] = set()
        for turn in run.turns.filter(status="committed").select_related("seat").order_by("first_seq"):
            if turn.task == "turn":
                answered.add(turn.seat.handle)
            elif turn.task == "moderator":
                named = {"debater-" + d["position"] for d in (turn.payload or {}).get("deflections", [])}
                for handle in named & answered:
                    callouts[handle] = callouts.get(handle, 0) + 1
                answered = set()
        assert {
            s["handle"]: s["deflected"]["count"] for s in signals["seats"] if s["deflected"]["count"]
        } == callouts
        assert signals["handshakes"]["basis"].startswith("debate turns between two moderator turns")


# --- the rules, on hand-made data -----------------------------------------------------------------------------------


def kb_debate(moves_by_round: list[list[tuple[str, str]]]) -> Run:
    """A completed kb-debate whose debate turns make these moves, a moderator turn between rounds."""
    run = Run.objects.create(
        protocol="kb-debate", topic="t", status="completed", config={"positions": ["pro", "con"]}, outcome={}
    )
    seats = {
        h: Seat.objects.create(run=run, handle=h, name=h, role=r)
        for h, r in (("debater-pro", "debater"), ("debater-con", "debater"), ("moderator", "moderator"))
    }
    number = 0
    for round_moves in moves_by_round:
        for handle, move in round_moves:
            number += 1
            Turn.objects.create(
                run=run,
                seat=seats[handle],
                key=f"t{number:02d}",
                stage="debate",
                task="turn",
                status="committed",
                payload={"move": move},
                first_seq=number,
            )
        number += 1
        Turn.objects.create(
            run=run,
            seat=seats["moderator"],
            key=f"t{number:02d}",
            stage="debate",
            task="moderator",
            status="committed",
            payload={"deflections": [{"position": "con"}]},
            first_seq=number,
        )
    return run


@pytest.mark.django_db
class RuleTests:
    def test_a_handshake_is_a_round_in_which_both_sides_only_conceded(self):
        run = kb_debate(
            [
                [("debater-pro", "concede"), ("debater-con", "concede")],  # handshake
                [("debater-pro", "concede"), ("debater-con", "rebut")],
                [("debater-pro", "concede")],  # one side only: no handshake
                [("debater-pro", "defend"), ("debater-con", "concede")],
            ]
        )
        signals = run_signals(run)
        assert signals["handshakes"]["count"] == 1 and signals["handshakes"]["rounds"] == ["round 1"]
        pro, con = signals["seats"]
        assert (pro["handle"], pro["conceded"]["count"], pro["conceded"]["of"]) == ("debater-pro", 3, 4)
        assert pro["conceded"]["rate"] == 75.0 and pro["defended"]["count"] == 1
        # Called out after all four rounds, but it answered in three: a deflection is one of its turns.
        assert con["deflected"] == {
            "count": 3,
            "of": 3,
            "rate": 100.0,
            "basis": "debate turns called out by the moderator's ruling",
        }
        assert signals["flagged"]

    def test_citation_rate_is_verified_over_all_citations(self, make_run):
        run = finish(make_run(), outcome={"summary": []})
        cite(run, "a", "verified", "verified", "mismatch")
        cite(run, "b", "unverified", "inferred", "verified")
        citations = run_signals(run)["citations"]
        assert citations == {
            "total": 6,
            "verified": 3,
            "mismatch": 1,
            "unverified": 1,
            "inferred": 1,
            "rate": 50.0,
        }

    def test_a_running_run_has_no_signals_yet_and_costs_no_query(self, make_run, django_assert_num_queries):
        """Its panel is re-rendered with every change of its state: nothing is read for signals it does not show,
        not even the agreement across runs."""
        run = make_run()
        Run.objects.filter(pk=run.pk).update(status="running")
        run.refresh_from_db()
        with django_assert_num_queries(0):
            signals = run_signals(run)
        assert not signals["applicable"] and signals["seats"] == [] and signals["handshakes"] is None
        assert "agreement" not in signals

    def test_a_protocol_without_the_notion_says_not_applicable(self, make_run):
        run = finish(make_run(), protocol="consultation", outcome={"anything": 1})
        signals = run_signals(run)
        assert signals["seats"] == [] and "not applicable" in signals["seats_note"]
        assert signals["handshakes"] is None and signals["arithmetic"] is None

    def test_malformed_outcomes_never_raise(self, make_run):
        for protocol, outcome in [
            ("cross-examination", {"summary": "oops"}),
            ("comparative", {"rebuttals": [None, 3], "scorecard": "x"}),
            (
                "market-panel",
                {"rows": [{"challenges": "x"}], "pairs": None, "judged": True, "score_mismatches": 5},
            ),
            ("adversarial", {"concern_table": [{"addressed": True}, "x"]}),
            ("kb-debate", {"ledger": None}),
        ]:
            run = finish(make_run(), protocol=protocol, outcome=outcome)
            assert run_signals(run)["applicable"]

    def test_human_vs_judge_per_run_and_across_runs(self, make_run):
        agreed = finish(
            make_run(),
            outcome={"pick_options": [["A", "Alpha"], ["B", "Beta"]]},
            judge_pick="A",
            human_pick="A",
        )
        finish(make_run(), judge_pick="A", human_pick="B")
        finish(make_run(), judge_pick="", human_pick="B")
        awaiting = finish(make_run(), outcome={"pick_options": [["A", "Alpha"]]}, judge_pick="A")
        signals = run_signals(agreed)
        assert signals["pick"] == {"state": "agrees", "judge": "Alpha", "human": "Alpha"}
        assert run_signals(awaiting)["pick"]["state"] == "awaiting"
        assert signals["agreement"] == {
            "picked": 3,
            "agreed": 1,
            "overridden": 1,
            "adjudicated": 1,
            "rate": 50.0,
        }
        assert agreement_stats(Run.objects.filter(human_pick="B")) == {
            "picked": 2,
            "agreed": 0,
            "overridden": 1,
            "adjudicated": 1,
            "rate": 0.0,
        }


@pytest.mark.django_db
class BulkTests:
    def test_runs_signals_is_a_fixed_number_of_queries(self, make_run, django_assert_num_queries):
        def make(count: int) -> list[int]:
            ids = []
            for n in range(count):
                run = finish(make_run(), outcome={"summary": []})
                cite(run, "a", "verified", "mismatch")
                ids.append(
                    kb_debate([[("debater-pro", "concede"), ("debater-con", "concede")]]).pk
                    if n % 2
                    else run.pk
                )
            return ids

        few = make(3)
        with CaptureQueriesContext(connection) as captured:
            runs_signals(few)
        many = make(30)
        with django_assert_num_queries(len(captured)):
            signals = runs_signals(many)
        assert len(signals) == 30 and len(captured) <= 4
        assert sum(1 for s in signals.values() if s["handshakes"] and s["handshakes"]["count"]) == 15


@pytest.mark.django_db
class RunPageTests:
    def test_the_run_page_shows_the_integrity_panel(self, viewer_client, make_run):
        summary = [
            {"analyst": "analyst-ada", "name": "Ada <b>", "defended": 1, "conceded": 2, "deflected": 1}
        ]
        run = finish(make_run(), outcome={"summary": summary}, judge_pick="A", human_pick="B")
        html = viewer_client.get(f"/runs/{run.pk}/").content.decode()
        start = html.index('id="integrity"')
        panel = html[start : html.index("</section>", start)]
        assert 'data-applicable="true"' in panel and 'data-flagged="true"' in panel  # the override flags it
        row = panel[panel.index('data-integrity-seat="analyst-ada"') :]
        assert "Ada &lt;b&gt;" in row and "<b>" not in row
        assert '<td class="conceded">50.0% <small class="muted">(2/4)</small>' in row
        assert '<td class="deflected">25.0% <small class="muted">(1/4)</small>' in row
        assert 'id="integrity-citations" data-rate=""' in panel and "no citations" in panel
        assert 'id="integrity-handshakes" data-count="na"' in panel
        assert 'id="integrity-arithmetic" data-count="na"' in panel
        assert 'data-state="overrides"' in panel and 'href="/decisions/"' in panel

    def test_a_running_run_shows_a_dash(self, viewer_client, make_run):
        run = make_run()
        html = viewer_client.get(f"/runs/{run.pk}/").content.decode()
        assert 'id="integrity-pending"' in html and 'data-applicable="false"' in html


@pytest.mark.django_db(transaction=True)
class LiveTests:
    def test_the_panel_fills_in_live_when_the_run_completes(self, make_run):
        """A viewer who watched the run to its end sees the signals without reloading: the frame of the final
        status event replaces the pending panel (and a page that connects later gets it in its snapshot)."""
        run = make_run()
        assert run_to_stop(run) == "done"
        completed = RunEvent.objects.filter(run=run, kind="run_status", payload__status="completed").get()
        html, _ = frames.event_frame(completed)
        start = html.index('<section id="integrity"')
        panel = html[start : html.index("</section>", start)]
        assert 'hx-swap-oob="outerHTML"' in panel and 'data-applicable="true"' in panel
        assert 'data-integrity-seat="analyst-ada"' in panel
        snapshot, _ = frames.snapshot_frame(run.pk, None)
        assert snapshot.count('<section id="integrity"') == 1

    def test_turn_frames_leave_the_panel_alone(self, make_run):
        run = make_run()
        assert run_to_stop(run) == "done"
        committed = RunEvent.objects.filter(run=run, kind="turn_committed").first()
        assert committed is not None
        html, _ = frames.event_frame(committed)
        assert 'id="integrity"' not in html
