"""Comparing two runs on the same question (/runs/compare/?a=<id>&b=<id>): settings with their differences marked,
outcomes side by side (verdict, judge's and human's picks, scorecard totals, each run's outcome partial), per-seat
concessions / deflections / defences, cost, duration and turn counts; the picker of candidates (same topic first,
then same protocol); refusals of a run compared with itself or a missing run."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from debates.models import Run
from debates.services import runs as services
from tests.conftest import run_to_stop
from tests.platform.test_rendering import XSS_CORPUS, executable_parts
from tests.protocols.kb_debate.test_page import MODERATOR, OPENING_CON, OPENING_PRO, REBUT, commit


def compare(client: Client, query: str, status: int = 200) -> str:
    response = client.get(f"/runs/compare/{query}")
    assert response.status_code == status
    return response.content.decode()


def element(html: str, dom_id: str, closing: str) -> str:
    start = html.index(f'id="{dom_id}"')
    return html[start : html.index(closing, start)]


def row(table: str, attribute: str, value: str) -> str:
    start = table.index(f'{attribute}="{value}"')
    return table[start : table.index("</tr>", start)]


def cells(markup: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", markup, re.S)]


def measure(summary: dict[str, int], signal: str) -> str:
    """A seat's count as the table shows it: of the questions the examiner classified, with the rate."""
    of = summary["conceded"] + summary["deflected"] + summary["defended"]
    count = summary[signal]
    return f"{count} of {of} · {round(100 * count / of, 1)}%" if of else f"{count} of 0"


# --- two finished runs side by side ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_seeds_of_a_cross_examination_side_by_side(make_run, viewer_client):
    a, b = make_run(seed=7), make_run(seed=8)
    assert run_to_stop(a) == "done" and run_to_stop(b) == "done"
    html = compare(viewer_client, f"?a={a.pk}&b={b.pk}")
    assert 'id="compare"' in html
    for side, run in (("a", a), ("b", b)):
        column = element(html, f"compare-{side}", "</section>")
        assert f'data-run="{run.pk}"' in column and f'href="/runs/{run.pk}/read/"' in column
        assert 'class="card outcome-card"' in column  # the protocol's outcome partial of that run
    assert html.index('id="compare-a"') < html.index('id="compare-b"')

    settings = element(html, "compare-config-diff", "</table>")
    assert cells(row(settings, "data-setting", "seed")) == ["7", "8"]
    assert 'data-setting="seed" data-differs="true"' in settings
    assert cells(row(settings, "data-setting", "protocol")) == ["Cross-examination", "Cross-examination"]
    assert 'data-setting="protocol" data-differs' not in settings
    assert (
        'data-setting="config: examiner"' in settings and '<th scope="row">Setting: examiner</th>' in settings
    )

    seats = element(html, "compare-seats", "</table>")
    for summary_a, summary_b in zip(a.outcome["summary"], b.outcome["summary"], strict=True):
        assert cells(row(seats, "data-seat", summary_a["analyst"])) == [
            "2",  # an analysis and the answers
            *(measure(summary_a, s) for s in ("conceded", "deflected", "defended")),
            "2",
            *(measure(summary_b, s) for s in ("conceded", "deflected", "defended")),
        ]
    assert cells(row(seats, "data-seat", "examiner")) == ["2", "n/a", "n/a", "n/a", "2", "n/a", "n/a", "n/a"]

    costs = element(html, "compare-cost", "</table>")
    assert cells(row(costs, "data-measure", "turns")) == ["8", "8"]
    durations = cells(row(costs, "data-measure", "duration"))
    assert all(re.fullmatch(r"\d+\.\d s", d) for d in durations), durations
    assert cells(row(costs, "data-measure", "cost"))[0].startswith("$0.0000")


@pytest.mark.django_db(transaction=True)
def test_comparative_runs_show_their_scorecard_totals_and_both_picks(moderator_client, moderator):
    from tests.protocols.comparative.test_simulated import debate

    a, b = debate(seed=3), debate(seed=4)
    other = "A" if b.judge_pick == "B" else "B"
    assert services.run_pick_record(
        run_id=b.pk, pick=other, reason="Our team runs it already.", user=moderator
    )
    b.refresh_from_db()
    html = compare(moderator_client, f"?a={a.pk}&b={b.pk}")
    for side, run in (("a", a), ("b", b)):
        column = element(html, f"compare-{side}", "</section>")
        card = run.outcome["scorecard"]
        summary = column[column.index('class="compare-totals"') :]
        summary = " ".join(summary[: summary.index("</dd>")].split())
        assert f"<strong>{card['total_a']}</strong> / {card['max_total']}" in summary
        assert f"<strong>{card['total_b']}</strong> / {card['max_total']}" in summary
        assert f'class="compare-judge-pick">{run.judge_pick_label}<' in column
    column_b = element(html, "compare-b", "</section>")
    assert f'{b.human_pick_label} <span class="badge pick-override">overrides the judge</span>' in column_b
    assert 'class="compare-human-pick">—<' in element(html, "compare-a", "</section>")


@pytest.mark.django_db(transaction=True)
def test_both_outcomes_keep_every_id_on_the_page_unique_and_their_links_working(moderator_client):
    """The same outcome partial twice: each side's ids are prefixed, its links to its own elements follow them,
    and its links to elements of the run page (its turns) lead there."""
    from tests.protocols.comparative.test_simulated import debate

    a, b = debate(seed=3), debate(seed=4)
    html = compare(moderator_client, f"?a={a.pk}&b={b.pk}")
    ids = re.findall(r'(?<![\w-])id="([^"]+)"', html)
    assert [i for i in ids if ids.count(i) > 1] == []
    for side, run in (("a", a), ("b", b)):
        end = 'id="compare-b"' if side == "a" else 'id="compare-config-diff"'
        column = html[html.index(f'id="compare-{side}"') : html.index(end)]
        assert f'id="{side}-scorecard-chart"' in column and 'id="scorecard-chart"' not in column
        for target in re.findall(r'href="#([^"]+)"', column):
            assert f'id="{target}"' in column, target
        for target in re.findall(rf'href="/runs/{run.pk}/#([^"]+)"', column):
            assert target.startswith("turn-"), target


# --- per-seat signals ----------------------------------------------------------------------------------------------


@pytest.fixture
def kb_runs(db: None) -> tuple[Run, Run]:
    """Two crafted kb-debates on the demo KB: A with a rebuttal, a moderator's deflection callout on pro-pricing
    and con-pricing conceding L-001; B with its openings only."""
    from kb.demo import demo_kbs_load

    kb = demo_kbs_load()[0]

    def create(seed: int) -> Run:
        return services.run_create(
            protocol="kb-debate",
            topic="Does congestion pricing cut traffic without unfair harm?",
            kb=kb,
            config={"moderator": "human"},
            backend_options={"cps": 0},
            seed=seed,
            enqueue=False,
        )

    a, b = create(3), create(4)
    for run in (a, b):
        commit(run, "t01/opening/debater-con-pricing", OPENING_CON)
        commit(run, "t02/opening/debater-pro-pricing", OPENING_PRO)
    commit(a, "t03/turn/debater-pro-pricing", REBUT)
    commit(a, "t04/moderator/moderator", MODERATOR)
    commit(
        a,
        "t05/turn/debater-con-pricing",
        {"responds_to": {"entry": "L-001", "turn": 1}, "move": "concede", "text": "The rebound is real."},
    )
    return a, b


def test_the_seats_table_counts_each_runs_own_signals(viewer_client, kb_runs):
    a, b = kb_runs
    Run.objects.filter(pk=a.pk).update(status="completed")
    html = compare(viewer_client, f"?a={a.pk}&b={b.pk}")
    seats = element(html, "compare-seats", "</table>")
    # Turns, then conceded / deflected / defended of A's debate turns; B is not finished, so it is not counted.
    assert cells(row(seats, "data-seat", "debater-con-pricing")) == [
        *("2", "1 of 1 · 100.0%", "0 of 1 · 0.0%", "0 of 1 · 0.0%"),
        *("1", "—", "—", "—"),
    ]
    assert cells(row(seats, "data-seat", "debater-pro-pricing")) == [
        *("2", "0 of 1 · 0.0%", "1 of 1 · 100.0%", "0 of 1 · 0.0%"),
        *("1", "—", "—", "—"),
    ]
    assert cells(row(seats, "data-seat", "moderator")) == ["1", "n/a", "n/a", "n/a", "0", "—", "—", "—"]
    assert f"run {b.pk} is not completed, so its seats are not counted" in element(
        html, "compare-seats", "</p>"
    )


# --- the picker and the refusals -------------------------------------------------------------------------------------


def test_the_picker_offers_runs_on_the_same_topic_first_then_the_same_protocol(make_run, viewer_client):
    a = make_run(seed=1)
    same_protocol = make_run(seed=2, topic="Should the city build a tram?")
    same_topic = make_run(seed=3)
    Run.objects.filter(pk=same_topic.pk).update(protocol="adversarial")
    unrelated = make_run(seed=4, topic="Something else entirely")
    Run.objects.filter(pk=unrelated.pk).update(protocol="comparative")
    html = compare(viewer_client, f"?a={a.pk}")
    listed = element(html, "compare-candidates", "</section>")
    offered = [int(pk) for pk in re.findall(r'<li data-run="(\d+)">', listed)]
    assert offered == [same_topic.pk, same_protocol.pk]
    assert f'href="/runs/compare/?a={a.pk}&amp;b={same_topic.pk}"' in listed
    items = dict(re.findall(r'<li data-run="(\d+)">(.*?)</li>', listed, re.S))
    assert "same topic" in items[str(same_topic.pk)] and "same topic" not in items[str(same_protocol.pk)]
    # The picker's select for B offers the same candidates; the one for A has A selected.
    picker = element(html, "compare-picker", "</form>")
    select_b = picker[picker.index('name="b"') : picker.index("</select>", picker.index('name="b"'))]
    assert re.findall(r'<option value="(\d+)"', select_b) == [str(same_topic.pk), str(same_protocol.pk)]
    assert f'<option value="{a.pk}" selected>' in picker
    assert 'id="compare"' not in html


def test_the_picker_without_a_run_lists_the_latest_runs(make_run, viewer_client):
    runs = [make_run(seed=n) for n in (1, 2)]
    picker = element(compare(viewer_client, ""), "compare-picker", "</form>")
    for run in runs:
        assert f'<option value="{run.pk}">' in picker


def test_a_run_is_not_compared_with_itself(make_run, viewer_client):
    a = make_run()
    html = compare(viewer_client, f"?a={a.pk}&b={a.pk}", status=400)
    assert f"Run {a.pk} cannot be compared with itself: pick another run." in element(
        html, "compare-error", "</p>"
    )
    assert 'id="compare"' not in html and 'id="compare-picker"' in html


@pytest.mark.parametrize("b", ["999999", "abc"])
def test_a_missing_run_is_refused_with_the_id_it_was_given(make_run, viewer_client, b):
    a = make_run()
    html = compare(viewer_client, f"?a={a.pk}&b={b}", status=404)
    assert f"No run &#x27;{b}&#x27;: pick runs from the lists below." in element(
        html, "compare-error", "</p>"
    )
    assert 'id="compare"' not in html and 'id="compare-picker"' in html


def test_comparing_needs_a_login(make_run):
    a, b = make_run(), make_run(seed=9)
    response = Client().get(f"/runs/compare/?a={a.pk}&b={b.pk}")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize("payload", XSS_CORPUS)
def test_untrusted_topics_and_outcomes_stay_inert(make_run, viewer_client, payload):
    a, b = make_run(), make_run(seed=9)
    Run.objects.filter(pk=a.pk).update(topic=payload, status="completed", outcome={"verdict": payload})
    Run.objects.filter(pk=b.pk).update(topic=payload, model=payload)
    for query in (f"?a={a.pk}&b={b.pk}", f"?a={a.pk}"):
        assert executable_parts(compare(viewer_client, query), page=True) == []
