"""The comparative debate in the web app: the setup form (triage to two options, criteria per decision type,
line errors that lose nothing), the evidence-review gate, the run page's scorecard (table, recomputed totals,
mismatches and degradations shown, chart data), escaping of untrusted text, and the decision brief export."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from debates.models import Run
from debates.protocols.comparative.exports import BriefUnavailable, run_export_brief
from debates.services import runs as services
from tests.conftest import MATERIAL, run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads

DECISION = "Which database should the order-tracking service use?"


def form_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "protocol": "comparative",
        "topic": DECISION,
        "material": MATERIAL,
        "cmp_options": "MongoDB\nPostgreSQL",
        "decision_type": "architecture",
        "criteria": "Operational burden | High\nMigration effort | Medium\nExtensibility | Low",
        "evidence_a": "Carrier audit | Doc | A new field set every quarter",
        "evidence_b": "Platform runbook | Doc | Two clusters with failover",
        "evidence_both": "",
        "stakeholders": "Head of platform | prefers PostgreSQL | stated",
        "evidence_gaps": "No load test at 40 million orders",
        "cmp_mode": "team",
        "backend": "simulated",
        "model": "simulated",
        "seed": "11",
        "sim_answers": "mixed",
        "sim_cps": "0",
        "examiner": "agent",
        "questions_per_analyst": "3",
    }
    data.update(overrides)
    return data


def field_errors(response: Any, field: str) -> list[str]:
    """The errors the new-run form shows next to `field`."""
    return list(response.context["form"].errors.get(field, []))


def comparison(**overrides: Any) -> Run:
    config = {
        "option_a": "MongoDB",
        "option_b": "PostgreSQL",
        "decision_type": "architecture",
        "criteria": [
            {"name": "Operational burden", "weight": "High"},
            {"name": "Migration effort", "weight": "Medium"},
            {"name": "Extensibility", "weight": "Low"},
        ],
        "evidence": [
            {"option": "A", "source": "Carrier audit", "type": "Doc", "summary": "A field set a quarter"}
        ],
        "stakeholders": [
            {"name": "Head of platform", "position": "prefers PostgreSQL", "confidence": "stated"}
        ],
        "evidence_gaps": ["No load test"],
        **overrides.pop("config", {}),
    }
    run = services.run_create(
        protocol="comparative",
        topic=overrides.pop("topic", DECISION),
        material=MATERIAL,
        config=config,
        seed=11,
        backend_options={"cps": 0, **overrides.pop("backend_options", {})},
    )
    run_to_stop(run)
    return run


# --- the setup form ----------------------------------------------------------------------------------------------


def test_the_form_starts_a_comparison_with_the_parsed_setup(moderator_client: Client) -> None:
    response = moderator_client.post("/runs/new/", form_data())
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert (run.config["option_a"], run.config["option_b"]) == ("MongoDB", "PostgreSQL")
    assert run.config["criteria"][0] == {"name": "Operational burden", "weight": "High"}
    assert [e["option"] for e in run.config["evidence"]] == ["A", "B"]
    assert run.config["stakeholders"][0]["confidence"] == "stated"
    assert run.config["evidence_review"] == "proceed"  # the box was not ticked


def test_three_options_ask_for_triage_and_keep_what_was_typed(moderator_client: Client) -> None:
    response = moderator_client.post("/runs/new/", form_data(cmp_options="MongoDB\nPostgreSQL\nDynamoDB"))
    html = response.content.decode()
    assert response.status_code == 200 and not Run.objects.exists()
    assert (
        "You listed 3 options (MongoDB, PostgreSQL, DynamoDB); a comparison takes exactly two."
        in unescape(html)
    )
    assert 'id="triage"' in html and 'value="DynamoDB"' in html
    assert "Platform runbook | Doc | Two clusters with failover" in unescape(html)  # nothing lost
    response = moderator_client.post(
        "/runs/new/",
        form_data(cmp_options="MongoDB\nPostgreSQL\nDynamoDB", cmp_triage=["MongoDB", "DynamoDB"]),
    )
    assert response.status_code == 302
    assert (Run.objects.get().config["option_a"], Run.objects.get().config["option_b"]) == (
        "MongoDB",
        "DynamoDB",
    )


def test_a_bad_criteria_line_is_named_next_to_the_field(moderator_client: Client) -> None:
    response = moderator_client.post("/runs/new/", form_data(criteria="Cost | High\nRisk | Critical"))
    assert response.status_code == 200 and not Run.objects.exists()
    assert field_errors(response, "criteria") == [
        "Criteria, line 2: 'Risk' has weight 'Critical'; use High, Medium or Low (or H/M/L, or 3/2/1)"
    ]


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        (
            "criteria",
            "\n".join(f"Criterion {n} | High" for n in range(13)),
            "Criteria: at most 12 allowed, 13 given",
        ),
        ("cmp_options", "MongoDB\nmongodb ", "Options (exactly two): the two options must differ"),
        (
            "stakeholders",
            "\n".join(f"Person {n}" for n in range(13)),
            "Stakeholders: at most 12 allowed, 13 given",
        ),
    ],
)
def test_what_the_lines_cannot_show_is_one_plain_line_next_to_its_field(
    moderator_client: Client, field: str, value: str, error: str
) -> None:
    response = moderator_client.post("/runs/new/", form_data(**{field: value}))
    html = unescape(response.content.decode())
    assert response.status_code == 200 and not Run.objects.exists()
    assert field_errors(response, field) == [error]
    assert "validation error" not in html and "pydantic" not in html and "could not be started" not in html


def test_the_evidence_review_box_makes_the_run_wait_for_the_decider(moderator_client: Client) -> None:
    moderator_client.post("/runs/new/", form_data(evidence_review="on"))
    run = Run.objects.get()
    assert run.config["evidence_review"] == "human"
    assert run.seats.get(handle="decider").human


def test_the_decision_type_refills_untouched_criteria_and_keeps_edited_ones(moderator_client: Client) -> None:
    response = moderator_client.get("/runs/new/criteria/", {"decision_type": "strategy", "criteria": ""})
    assert "Strategic alignment | High\nRisk | High" in unescape(response.content.decode())
    vendor = "Cost | High\nFeature completeness | High\nAPI/Integration quality | Medium\nVendor stability | Medium\n"
    vendor += "Migration effort | Medium\nTeam preference | Low\nSupport quality | Low"
    response = moderator_client.get("/runs/new/criteria/", {"decision_type": "tool", "criteria": vendor})
    assert "Developer experience | High" in unescape(response.content.decode())
    response = moderator_client.get(
        "/runs/new/criteria/", {"decision_type": "tool", "criteria": "Cost | Low"}
    )
    html = unescape(response.content.decode())
    assert "Cost | Low" in html and "Developer experience" not in html
    assert "Kept your edited criteria" in html


def test_viewers_cannot_use_the_criteria_helper(client: Client, viewer: Any) -> None:
    client.force_login(viewer)
    assert client.get("/runs/new/criteria/", {"decision_type": "tool"}).status_code == 403


# --- the run page -------------------------------------------------------------------------------------------------


def test_the_scorecard_shows_the_table_totals_and_chart_data(moderator_client: Client) -> None:
    run = comparison()
    assert run.status == "completed"
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    card = run.outcome["scorecard"]
    table = html[
        html.index('id="scorecard-table"') : html.index("</table>", html.index('id="scorecard-table"'))
    ]
    assert table.count("<tr data-criterion=") == 3
    first = card["rows"][0]
    assert f"{first['score_a']} × 3 = <strong>{first['weighted_a']}</strong>" in table
    assert re.search(rf'id="total-a"><strong>{card["total_a"]}</strong>', table)
    chart = re.search(r'id="scorecard-chart" data-chart="([^"]+)"', html)
    assert chart is not None
    config = json.loads(unescape(chart.group(1)))
    assert config["data"]["datasets"][0]["data"] == [r["score_a"] for r in card["rows"]]
    assert f"Judge recommends {run.judge_pick}" in html


def test_a_judge_arithmetic_slip_is_shown_beside_the_recomputed_numbers(moderator_client: Client) -> None:
    run = comparison(backend_options={"judge_slip": True})
    card = run.outcome["scorecard"]
    assert card["mismatches"]
    html = unescape(moderator_client.get(f"/runs/{run.pk}/").content.decode())
    assert "The judge's arithmetic differs from the recomputed scorecard" in html
    for mismatch in card["mismatches"]:
        assert mismatch in html
    assert 'class="mismatch">judge:' in html


def test_a_step_down_is_shown_with_its_reason(moderator_client: Client) -> None:
    run = comparison(backend_options={"fail": ["r2/rebuttal/advocate-b"]})
    html = unescape(moderator_client.get(f"/runs/{run.pk}/").content.decode())
    assert 'data-from="team" data-to="subagent"' in html
    assert "advocate B's rebuttal failed" in html
    assert "subagent debate (openings only)" in html


def test_a_failed_judge_leaves_the_openings_and_rebuttals_side_by_side(moderator_client: Client) -> None:
    run = comparison(backend_options={"fail": ["r3/judgement/judge"]})
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="raw-outputs"' in html and html.count('class="raw-output"') == 2
    raw = html[html.index('id="raw-outputs"') :]
    rebuttals = [r["id"] for r in run.outcome["rebuttals"]]
    assert len(rebuttals) == 6
    assert all(f'data-rebuttal="{r}"' in raw for r in rebuttals)
    assert 'id="scorecard-table"' not in html


def test_untrusted_names_and_evidence_are_escaped(moderator_client: Client) -> None:
    run = comparison(
        config={
            "option_a": "<script>alert(1)</script>Mongo",
            "evidence": [
                {
                    "option": "A",
                    "source": "<img src=x onerror=alert(2)>",
                    "type": "Doc",
                    "summary": "<script>x</script>",
                }
            ],
        }
    )
    html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert "<script>alert(1)" not in html and "<img src=x" not in html and "<script>x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;Mongo" in html


# --- the decision brief --------------------------------------------------------------------------------------------


BRIEF_SECTIONS = [
    "## Executive Summary",
    "## Evaluation Scorecard",
    "## Case for MongoDB (strategic lens)",
    "## Case for PostgreSQL (pragmatic lens)",
    "## Judge Synthesis",
    "## Recommendation",
    "## Open Questions",
    "## Stakeholder Input",
    "## Evidence Base",
]


def test_the_brief_has_the_seeds_sections_in_order_and_the_scorecard_totals() -> None:
    run = comparison()
    text = run_export_brief(run)
    assert [line for line in text.splitlines() if line.startswith("## ")] == BRIEF_SECTIONS
    assert text.startswith("---\ntype: work\nsubtype: decision-brief\n")
    assert "tags: [decision, evaluate, architecture]" in text and 'stakeholders: ["Head of platform"]' in text
    card = run.outcome["scorecard"]
    assert "| Criterion | Weight | MongoDB | PostgreSQL | MongoDB Weighted | PostgreSQL Weighted |" in text
    assert f"| **Total** |  |  |  | **{card['total_a']}** | **{card['total_b']}** |" in text
    assert f"**Recommend: {run.outcome['recommendation']['name']}**" in text
    assert "| Risk | Likelihood (H/M/L) | Mitigation |" in text
    assert "| Stakeholder | Known Position | Confidence | Notes |" in text
    assert "| Head of platform | prefers PostgreSQL | Stated |  |" in text
    assert "- [ ] No load test" in text
    assert "### Rebuttal Analysis" in text and "No human decision recorded yet." in text


def test_model_text_cannot_add_sections_or_close_the_result_comment() -> None:
    run = comparison()
    run.outcome["judgement"]["executive_summary"] = "Fine.\n\n## Injected section\n<!-- x -->"
    run.outcome["recommendation"]["rationale"] = "# Also a heading"
    run.outcome["result_event"] = "mode=team --> <script>alert(1)</script>"
    text = run_export_brief(run)
    assert [line for line in text.splitlines() if line.startswith("## ")] == BRIEF_SECTIONS
    assert "Fine. ## Injected section <!-- x --\\>" in text
    assert "\\# Also a heading" in text
    assert text.count("-->") == 1 and text.rstrip().endswith("</script> -->")


def test_the_brief_of_a_raw_run_says_the_judge_failed_and_keeps_both_cases() -> None:
    text = run_export_brief(comparison(backend_options={"fail": ["r3/judgement/judge"]}))
    assert [line for line in text.splitlines() if line.startswith("## ")] == BRIEF_SECTIONS
    assert "No scorecard: the judge failed." in text and "No recommendation: the judge failed." in text
    assert "> Stepped down team → raw: The judge failed" in text


def test_export_run_writes_the_brief_and_refuses_other_protocols(tmp_path: Path, make_run: Any) -> None:
    run = comparison()
    out = tmp_path / "brief.md"
    call_command("export_run", str(run.pk), "--format", "brief", "--out", str(out))
    assert out.read_text(encoding="utf-8") == run_export_brief(run)
    other = make_run()
    with pytest.raises(BriefUnavailable, match="cross-examination run"):
        run_export_brief(other)
    with pytest.raises(CommandError, match="--format brief: .* is a cross-examination run"):
        call_command("export_run", str(other.pk), "--format", "brief", "--out", str(out))


def test_run_debate_runs_a_comparison_headless(capsys: pytest.CaptureFixture[str]) -> None:
    call_command(
        "run_debate",
        "--protocol",
        "comparative",
        "--topic",
        DECISION,
        "--no-progress",
        "--config",
        json.dumps({"options": ["MongoDB", "PostgreSQL"], "decision_type": "tool"}),
    )
    run = Run.objects.get(pk=int(capsys.readouterr().out.strip().splitlines()[-1]))
    assert run.status == "completed" and run.turns.count() == 5
    assert [c["name"] for c in run.config["criteria"]][0] == "Developer experience"
    with pytest.raises(CommandError, match="exactly two options; 3 were given"):
        call_command(
            "run_debate",
            "--protocol",
            "comparative",
            "--topic",
            DECISION,
            "--no-progress",
            "--config",
            json.dumps({"options": ["A", "B", "C"]}),
        )
    with pytest.raises(CommandError, match="cannot wait at the evidence review"):
        call_command(
            "run_debate",
            "--protocol",
            "comparative",
            "--topic",
            DECISION,
            "--no-progress",
            "--config",
            json.dumps({"options": ["A", "B"], "evidence_review": "human"}),
        )


def headless(config: dict[str, Any]) -> None:
    call_command(
        "run_debate",
        "--protocol",
        "comparative",
        "--topic",
        DECISION,
        "--no-progress",
        "--config",
        json.dumps(config),
    )


@pytest.mark.parametrize(
    ("criteria", "error"),
    [
        (
            [{"name": "Cost", "weight": "High"}, {"name": "Risk", "weight": "Critical"}],
            "criteria: criterion 2 ('Risk') has weight 'Critical'; use High, Medium or Low (or H/M/L, or 3/2/1)",
        ),
        (
            [{"name": "Cost", "weight": 5}],
            "criteria: criterion 1 ('Cost') has weight 5; use High, Medium or Low (or H/M/L, or 3/2/1)",
        ),
        (
            [{"name": "Cost", "weigth": "High"}],
            "criteria: criterion 1 ('Cost') weigth: no such setting (the settings are name, weight)",
        ),
        (
            "Cost | High\nRisk | Urgent",
            "criteria, line 2: 'Risk' has weight 'Urgent'; use High, Medium or Low",
        ),
        (3, 'criteria: give a list like [{"name": "Cost", "weight": "High"}], not 3'),
    ],
)
def test_run_debate_refuses_a_wrong_weight_in_one_line_naming_the_criterion_and_the_value(
    criteria: Any, error: str
) -> None:
    with pytest.raises(CommandError) as refused:
        headless({"options": ["MongoDB", "PostgreSQL"], "criteria": criteria})
    message = str(refused.value)
    assert message.startswith(f"Invalid run: {error}")
    assert "\n" not in message and "validation error" not in message and "pydantic" not in message
    assert not Run.objects.exists()  # nothing half-written


def test_run_debate_reads_weights_as_words_letters_or_points(capsys: pytest.CaptureFixture[str]) -> None:
    headless(
        {
            "options": ["MongoDB", "PostgreSQL"],
            "mode": "single",
            "criteria": [
                {"name": "Cost", "weight": "h"},
                {"name": "Risk", "weight": 1},
                "Speed | medium",
                "Fit",
            ],
        }
    )
    run = Run.objects.get(pk=int(capsys.readouterr().out.strip().splitlines()[-1]))
    assert run.status == "completed"
    assert run.config["criteria"] == [
        {"name": "Cost", "weight": "High"},
        {"name": "Risk", "weight": "Low"},
        {"name": "Speed", "weight": "Medium"},
        {"name": "Fit", "weight": "Medium"},
    ]


def test_the_page_offers_the_brief_and_it_is_the_commands_file(
    moderator_client: Client, tmp_path: Path
) -> None:
    run = comparison()
    assert 'id="brief-download"' in moderator_client.get(f"/runs/{run.pk}/").content.decode()
    response = moderator_client.get(f"/runs/{run.pk}/brief.md")
    assert response.status_code == 200 and response["Content-Type"] == "text/markdown; charset=utf-8"
    assert re.match(
        r'attachment; filename="\d{4}-\d\d-\d\d-evaluate-which-database-should-the-order-tracking.md"',
        response["Content-Disposition"],
    )
    out = tmp_path / "brief.md"
    call_command("export_run", str(run.pk), "--format", "brief", "--out", str(out))
    assert response.content.decode() == out.read_text(encoding="utf-8")


def test_a_run_without_a_brief_answers_404(moderator_client: Client, make_run: Any) -> None:
    other = make_run()
    assert moderator_client.get(f"/runs/{other.pk}/brief.md").status_code == 404


def test_a_step_down_is_shown_while_the_run_goes_on_not_only_at_the_end(moderator_client: Client) -> None:
    run = services.run_create(
        protocol="comparative",
        topic=DECISION,
        material=MATERIAL,
        config={"option_a": "MongoDB", "option_b": "PostgreSQL", "decision_type": "architecture"},
        seed=11,
        backend_options={"cps": 0, "fail": ["r2/rebuttal/advocate-b"]},
    )
    # Step mode: both openings and both rebuttals run, then the run pauses before the judge.
    Run.objects.filter(pk=run.pk).update(pause_requested=True, step_credits=4)
    assert run_to_stop(run) == "paused"
    page = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    notices = re.search(r'<ul id="run-notices".*?</ul>', page, re.S)
    assert notices is not None
    assert "Stepped down team → subagent: advocate B&#x27;s rebuttal failed" in notices.group(0)
    assert 'id="brief-download"' not in page  # no outcome yet, so no brief
