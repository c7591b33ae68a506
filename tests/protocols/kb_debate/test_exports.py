"""The run-dir export of a kb-debate run (seed 002): the layout, the transcripts, the claims ledger, the revision
log, the snapshot, and the zip the run page serves. The debate is made of crafted committed turns (valid for the
kb-debate schemas), so these tests do not depend on how the simulated agents play."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from pydantic import BaseModel

from debates.exports.run_json import run_export_json
from debates.models import Run, Turn
from debates.protocols.kb_debate import schema
from debates.protocols.kb_debate.exports import run_export_run_dir, run_export_zip
from debates.services import runs as services
from kb.demo import demo_kbs_load
from kb.discipline import mutation_propose
from kb.models import KnowledgeBase
from kb.services import kb_files

STOCKHOLM = "kb/sources/institutional/stockholm-city-2006-trial-facts-and-results.md"
ELIASSON = "kb/sources/peer-reviewed/eliasson-2009-stockholm-trial-overview.md"
SEATS = ["debater-con-pricing", "debater-pro-pricing", "moderator", "orchestrator"]

# (key, stage, status, schema, payload or error). The debate turn number is the key's tNN.
TURNS: list[tuple[str, str, str, type[BaseModel] | None, Any]] = [
    (
        "t01/opening/debater-con-pricing",
        "openings",
        "committed",
        schema.Opening,
        {
            "summary": "The traffic gains are overstated and the burden falls unfairly.",
            "claims": [
                {
                    "text": "Cordon charges mainly push traffic onto boundary roads.",
                    "args": ["arg-014"],
                    "sources": [STOCKHOLM],
                    "presented_as": "weak",
                },
                {
                    "text": "A flat charge is regressive unless offset.",
                    "args": ["arg-008"],
                    "presented_as": "contested",
                },
            ],
        },
    ),
    (
        "t02/opening/debater-pro-pricing",
        "openings",
        "committed",
        schema.Opening,
        {
            "summary": "Pricing cuts traffic durably and its harms are manageable.",
            "claims": [
                {
                    "text": "Stockholm's charge cut cordon traffic by about 20%.",
                    "args": ["arg-001"],
                    "sources": [ELIASSON],
                    "presented_as": "robust",
                },
                {
                    "text": "Leaving roads unpriced is unfair too.",
                    "args": ["arg-023"],
                    "presented_as": "contested",
                },
            ],
        },
    ),
    (
        "t03/turn/debater-pro-pricing",
        "debate",
        "committed",
        schema.DebaterTurn,
        {
            "responds_to": {"entry": "L-001", "turn": 1},
            "move": "rebut",
            "text": "The Stockholm counts show small boundary increases, not wholesale displacement.",
            "claims": [
                {
                    "text": "Boundary counts rose only slightly while cordon traffic fell.",
                    "args": ["arg-001"],
                    "presented_as": "robust",
                }
            ],
            "mutations": [
                {
                    "kind": "status-downgrade",
                    "arg_id": "arg-014",
                    "to": "refuted",
                    "justification": "Debate turn 3: the cordon counts of arg-001 contradict wholesale displacement.",
                }
            ],
        },
    ),
    (
        "t04/moderator/moderator",
        "debate",
        "committed",
        schema.ModeratorTurn,
        {
            "text": "The displacement claim does not survive the counts; the fairness claim needs its incidence.",
            "presses": [{"entry": "L-002", "text": "Who actually pays the charge?"}],
            "callouts": [
                {
                    "type": "overreach",
                    "position": "pro-pricing",
                    "turn": 3,
                    "text": "One city is not every city.",
                }
            ],
            "deflections": [
                {
                    "position": "pro-pricing",
                    "cited_args": ["arg-001"],
                    "turns": [2, 3],
                    "target_arg": "arg-017",
                }
            ],
            "rulings": [
                {
                    "entry": "L-001",
                    "arg_id": "arg-014",
                    "closed_as": "refuted",
                    "justification": "The boundary counts refute wholesale displacement.",
                    "turns": [3],
                }
            ],
        },
    ),
    (
        "t05/turn/debater-con-pricing",
        "debate",
        "committed",
        schema.DebaterTurn,
        {
            "responds_to": {"entry": "L-003", "turn": 2},
            "move": "partial-rebut",
            "text": "Before/after counts need seasonal and economic controls.",
            "objection": {
                "entry": "L-001",
                "text": "The counts lack controls for the 2006 fuel prices.",
                "new_args": ["arg-021"],
            },
        },
    ),
    (
        "t06/moderator/moderator",
        "debate",
        "committed",
        schema.ModeratorTurn,
        {
            "text": "The objection brings a principle, not counts that change the picture.",
            "objection_decisions": [{"entry": "L-001", "decision": "reaffirm", "text": "No new counts."}],
        },
    ),
    (
        "t07/turn/debater-pro-pricing",
        "debate",
        "failed",
        None,
        "schema: move: on your own claim, defend or concede",
    ),
    (
        "t08/synthesis/orchestrator",
        "synthesis",
        "committed",
        schema.Synthesis,
        {
            "text": "The displacement claim was closed as refuted; the fairness thread stayed open.",
            "verdict": {
                "label": "better-grounded",
                "position": "pro-pricing",
                "evidence": "The robust Stockholm counts stand; arg-014 was refuted.",
                "engagement": "Both sides addressed CQ2; only pro-pricing addressed CQ1.",
            },
        },
    ),
    (
        "t09/verdict-review/moderator",
        "review",
        "committed",
        schema.VerdictReview,
        {"decision": "dissent", "text": "Fairness was never settled; better-grounded on CQ1 only."},
    ),
]


def _commit(run: Run, number: int) -> Turn:
    key, stage, status, model, data = TURNS[number - 1]
    payload = model.model_validate(data).model_dump(mode="json") if model is not None else None
    _, task, handle = key.split("/")
    return Turn.objects.create(
        run=run,
        key=key,
        seat=run.seats.get(handle=handle),
        stage=stage,
        task=task,
        status=status,
        payload=payload,
        error="" if model is not None else data,
        schema_version=schema.SCHEMA_VERSION if model is not None else "",
        first_seq=number * 10,
    )


@pytest.fixture
def graph_kb(db: None) -> KnowledgeBase:
    return demo_kbs_load()[0]


def _new_run(kb: KnowledgeBase) -> Run:
    return services.run_create(
        protocol="kb-debate",
        topic="Does congestion pricing cut traffic without unfair harm?",
        kb=kb,
        config={"moderator": "human"},
        seed=7,
        backend_options={"cps": 0},
        enqueue=False,
    )


@pytest.fixture
def debate(graph_kb: KnowledgeBase) -> tuple[Run, dict[str, str]]:
    """A finished kb-debate run whose turn 3 downgraded arg-014 (weak → refuted) through the discipline, and the
    KB's files as they were when the run was created."""
    run = _new_run(graph_kb)
    at_start = kb_files(graph_kb)
    for number in range(1, len(TURNS) + 1):
        turn = _commit(run, number)
        for mutation in (turn.payload or {}).get("mutations", []):
            mutation_propose(
                kb=graph_kb,
                kind=mutation["kind"],
                payload={"arg_id": mutation["arg_id"], "to": mutation["to"]},
                proposed_by=turn.seat.handle,
                justification=mutation["justification"],
                run=run,
                turn=turn,
                auto_approve=True,
            )
    run.refresh_from_db()
    return run, at_start


def _bullets(block: str) -> dict[str, str]:
    return dict(re.findall(r"^- \*\*(.+?)\*\*: (.*)$", block, flags=re.MULTILINE))


def _ledger_blocks(text: str) -> dict[str, str]:
    parts = re.split(r"^## ", text, flags=re.MULTILINE)
    return {p.split(":", 1)[0]: "## " + p for p in parts[1:]}


class LayoutTests:
    def test_the_exact_file_list(self, debate):
        run, at_start = debate
        files = run_export_run_dir(run)
        assert list(files) == sorted(files)
        output = {p for p in files if p.startswith("output/")}
        assert output == {
            "output/transcript.md",
            "output/claims-ledger.md",
            "output/synthesis.md",
            *(f"output/agents/{seat}/transcript.md" for seat in SEATS),
        }
        live = {p for p in files if p.startswith("kb/")}
        assert live == set(kb_files(run.kb)) and "kb/revisions.md" in live
        snapshot = {p for p in files if p.startswith("kb-snapshot-construction/")}
        assert snapshot == {"kb-snapshot-construction/" + p.removeprefix("kb/") for p in at_start}
        assert len(files) == len(output) + len(live) + len(snapshot)

    def test_a_run_without_revisions_still_has_an_empty_revision_log(self, graph_kb):
        run = _new_run(graph_kb)
        _commit(run, 1)
        files = run_export_run_dir(run)
        assert files["kb/revisions.md"] == "# KB Revisions Log\n\n"
        assert "kb-snapshot-construction/revisions.md" not in files  # the log is created after the snapshot
        assert {p for p in files if p.startswith("output/agents/")} == {
            "output/agents/debater-con-pricing/transcript.md"
        }
        assert "No synthesis has been committed" in files["output/synthesis.md"]


class TranscriptTests:
    def test_every_turn_in_order_with_its_heading(self, debate):
        run, _ = debate
        text = run_export_run_dir(run)["output/transcript.md"]
        headings = re.findall(r"^## Turn (\d+) — (\S+) \((\w+), ([\w-]+)\)$", text, flags=re.MULTILINE)
        assert headings == [
            ("1", "debater-con-pricing", "debater", "opening"),
            ("2", "debater-pro-pricing", "debater", "opening"),
            ("3", "debater-pro-pricing", "debater", "turn"),
            ("4", "moderator", "moderator", "moderator"),
            ("5", "debater-con-pricing", "debater", "turn"),
            ("6", "moderator", "moderator", "moderator"),
            ("7", "debater-pro-pricing", "debater", "turn"),
            ("8", "orchestrator", "orchestrator", "synthesis"),
            ("9", "moderator", "moderator", "verdict-review"),
        ]
        assert text.startswith("# Transcript\n")
        assert (
            f"- L-001: Cordon charges mainly push traffic onto boundary roads. — presented as weak; cites arg-014, {STOCKHOLM}"
            in text
        )
        assert (
            "- **Answers**: L-001 from turn 1 — “Cordon charges mainly push traffic onto boundary roads.” (con-pricing)"
            in text
        )
        assert "- **Move**: rebut" in text
        assert "- L-005: Boundary counts rose only slightly while cordon traffic fell." in text
        assert (
            "- status-downgrade: arg-014 → refuted — applied as R-001. Justification: Debate turn 3" in text
        )
        assert "**Failed**: schema: move: on your own claim, defend or concede" in text
        assert "**Objection** to the closure of L-001" in text and "New evidence: arg-021" in text
        assert "- L-001: reaffirm — the closure stands. No new counts." in text
        assert "- overreach — pro-pricing, turn 3: One city is not every city." in text
        assert "- **Verdict**: better-grounded" in text and "- **Decision**: dissent" in text

    def test_the_moderator_speaks_in_the_seed_shapes(self, debate):
        run, _ = debate
        text = run_export_run_dir(run)["output/transcript.md"]
        scope_001 = run.kb.arguments.get(arg_id="arg-001").scope
        scope_017 = run.kb.arguments.get(arg_id="arg-017").scope
        assert (
            f"Deflection: Position pro-pricing has cited arg-001 (layer: empirical, scope: {scope_001}, status: robust) "
            f"across turns 2, 3 to address arg-017 (layer: policy/regulatory, scope: {scope_017}). "
            "arg-001 scope-mismatches arg-017. Position pro-pricing has not engaged arg-017 at its actual layer.\n"
        ) in text
        assert (
            'Ruling: claim "Cordon charges mainly push traffic onto boundary roads." (arg-014) is CLOSED as refuted.\n'
            "Justification: The boundary counts refute wholesale displacement (debate turn 3).\n"
        ) in text

    def test_each_seat_has_only_its_own_turns(self, debate):
        run, _ = debate
        files = run_export_run_dir(run)
        full = files["output/transcript.md"]
        for seat in SEATS:
            own = files[f"output/agents/{seat}/transcript.md"]
            assert own.startswith(f"# Transcript — {seat}\n")
            headings = re.findall(r"^## Turn \d+ — (\S+) ", own, flags=re.MULTILINE)
            assert headings and set(headings) == {seat}
            for block in own.split("\n## ")[1:]:  # each turn reads as in the full transcript
                assert "\n## " + block.rstrip("\n") in full
        moderator = files["output/agents/moderator/transcript.md"]
        assert re.findall(r"^## Turn (\d+)", moderator, flags=re.MULTILINE) == ["4", "6", "9"]


class LedgerTests:
    def test_headings_and_bullets(self, debate):
        run, _ = debate
        text = run_export_run_dir(run)["output/claims-ledger.md"]
        assert text.startswith("# Claim Ledger\n\n## L-001: ")
        blocks = _ledger_blocks(text)
        assert list(blocks) == ["L-001", "L-002", "L-003", "L-004", "L-005"]
        assert blocks["L-001"].startswith(
            "## L-001: Cordon charges mainly push traffic onto boundary roads.\n"
        )
        for block in blocks.values():
            assert re.findall(r"^- \*\*(.+?)\*\*:", block, flags=re.MULTILINE)[:3] == [
                "Asserted by",
                "References",
                "Status",
            ]
            assert list(_bullets(block))[-2:] == ["Thread", "Notes"]

        closed = _bullets(blocks["L-001"])
        assert closed["Asserted by"] == "debater-con-pricing (debate turn 1)"
        assert closed["References"] == f"arg-014 (KB-rated refuted), {STOCKHOLM}"
        assert closed["Status"] == "closed"
        assert closed["Closure"].startswith(
            "ruled by moderator at turn 4 as refuted; "
            '“Ruling: claim "Cordon charges mainly push traffic onto boundary roads." (arg-014) is CLOSED as refuted.”'
        )
        assert "Objected once at turn 5 with new evidence (arg-021)" in closed["Closure"]
        assert "the moderator reaffirmed at turn 6 — the closure stands" in closed["Closure"]
        assert closed["Thread"] == "turns 1 → 3 → 4 → 5 → 6"
        assert "arg-014 downgraded during the debate: weak → refuted" in closed["Notes"]

        pressed = _bullets(blocks["L-002"])
        assert pressed["Status"] == "open" and "Closure" not in pressed
        assert pressed["References"] == "arg-008 (KB-rated contested)"
        assert pressed["Thread"] == "turns 1 → 4"
        assert "pressed at turn 4: Who actually pays the charge?" in pressed["Notes"]

        rebutted = _bullets(blocks["L-003"])
        assert rebutted["Asserted by"] == "debater-pro-pricing (debate turn 2)"
        assert rebutted["Status"] == "partially-rebutted" and rebutted["Thread"] == "turns 2 → 5"
        assert _bullets(blocks["L-005"])["Asserted by"] == "debater-pro-pricing (debate turn 3)"


class KbTests:
    def test_the_revision_log_cites_the_debate_turn(self, debate):
        run, _ = debate
        text = run_export_run_dir(run)["kb/revisions.md"]
        assert text.startswith("# KB Revisions Log\n")
        entries = re.findall(
            r"^## (R-\d{3}) — (\d{4}-\d{2}-\d{2}) — (\S+), debate turn (\d+)$", text, flags=re.MULTILINE
        )
        assert [(r, who, n) for r, _, who, n in entries] == [("R-001", "debater-pro-pricing", "3")]
        assert "- **Type**: status-downgrade" in text and "- **Target**: arg-014" in text
        assert "- **Change**: status weak → refuted" in text
        assert "- **Justification**: Debate turn 3:" in text
        # Triggered by: who spoke at which turn, and the words that triggered it, quoted.
        assert (
            "- **Triggered by**: debater-pro-pricing at debate turn 3: “The Stockholm counts show small boundary "
            "increases, not wholesale displacement.”\n"
        ) in text
        assert "t03/turn/" not in text  # the words, not a turn key

    def test_the_snapshot_is_the_kb_at_the_start_after_a_downgrade(self, debate):
        run, at_start = debate
        files = run_export_run_dir(run)
        snapshot = {
            "kb/" + p.removeprefix("kb-snapshot-construction/"): t
            for p, t in files.items()
            if p.startswith("kb-snapshot-construction/")
        }
        assert snapshot == at_start
        node = "arguments/arg-014-traffic-displaced-to-boundary.md"
        assert "\nstatus: weak\n" in files[f"kb-snapshot-construction/{node}"]
        assert "\nstatus: refuted\n" in files[f"kb/{node}"]
        assert files["kb/arguments/index.md"] != files["kb-snapshot-construction/arguments/index.md"]

    def test_the_live_kb_is_the_kb_now(self, debate):
        run, _ = debate
        files = run_export_run_dir(run)
        assert {p: t for p, t in files.items() if p.startswith("kb/")} == kb_files(run.kb)


class SynthesisTests:
    def test_text_verdict_review_and_pointers(self, debate):
        run, _ = debate
        text = run_export_run_dir(run)["output/synthesis.md"]
        assert text.startswith("# Synthesis\n")
        assert "The displacement claim was closed as refuted; the fairness thread stayed open." in text
        verdict = _bullets(text.split("## Verdict\n", 1)[1].split("\n## ", 1)[0])
        assert verdict == {
            "Verdict": "better-grounded",
            "Position": "pro-pricing",
            "Evidentiary strength of central claims": "The robust Stockholm counts stand; arg-014 was refuted.",
            "Engagement with central questions": "Both sides addressed CQ2; only pro-pricing addressed CQ1.",
        }
        review = _bullets(text.split("## Verdict review\n", 1)[1].split("\n## ", 1)[0])
        assert review["Decision"].startswith("dissent")
        assert review["Text"] == "Fairness was never settled; better-grounded on CQ1 only."
        assert (
            "`kb-snapshot-construction/`" in text
            and "`kb/revisions.md` (this debate's changes are R-001)" in text
        )


class ZipAndCommandTests:
    def test_the_zip_is_deterministic(self, debate):
        run, _ = debate
        first, second = run_export_zip(run), run_export_zip(run)
        assert first == second
        with zipfile.ZipFile(io.BytesIO(first)) as archive:
            infos = archive.infolist()
            names = [i.filename for i in infos]
            assert names == sorted(names)
            assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
            files = run_export_run_dir(run)
            assert {n: archive.read(n).decode() for n in names if not n.endswith("/")} == files
            assert [n for n in names if n.endswith("/")] == ["kb/sources/agents/"]

    def test_the_command_writes_the_same_bytes_as_the_zip(self, debate, tmp_path):
        run, _ = debate
        out = tmp_path / "research-runs" / "congestion"
        stdout = io.StringIO()
        call_command("export_run", str(run.pk), "--format", "run-dir", "--out", str(out), stdout=stdout)
        assert stdout.getvalue().strip() == str(out)
        on_disk = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        with zipfile.ZipFile(io.BytesIO(run_export_zip(run))) as archive:
            zipped = {n: archive.read(n) for n in archive.namelist() if not n.endswith("/")}
        assert on_disk == zipped
        assert (out / "kb" / "sources" / "agents").is_dir()  # the layout's (empty) agent source directory

    def test_the_command_refuses_a_directory_that_is_not_empty(self, debate, tmp_path):
        run, _ = debate
        (tmp_path / "old.txt").write_text("x")
        with pytest.raises(CommandError, match="not an empty directory"):
            call_command("export_run", str(run.pk), "--format", "run-dir", "--out", str(tmp_path))

    def test_another_protocol_has_no_run_dir(self, make_run, tmp_path):
        run = make_run()
        with pytest.raises(
            CommandError, match=r"cross-examination run; only kb-debate runs have a run directory"
        ):
            call_command("export_run", str(run.pk), "--format", "run-dir", "--out", str(tmp_path / "dir"))
        assert not (tmp_path / "dir").exists()


class JsonTests:
    def test_json_carries_the_ledger_revisions_and_proposals(self, debate, tmp_path):
        run, _ = debate
        target = tmp_path / "run.json"
        call_command(
            "export_run", str(run.pk), "--format", "json", "--out", str(target), stdout=io.StringIO()
        )
        data = json.loads(target.read_text())
        assert data == json.loads(json.dumps(run_export_json(run)))
        assert [e["id"] for e in data["ledger"]] == ["L-001", "L-002", "L-003", "L-004", "L-005"]
        assert data["ledger"][0]["status"] == "closed"
        assert data["ledger"][0]["references"] == [{"arg": "arg-014", "status": "refuted"}]
        [revision] = data["revisions"]
        assert revision["id"] == "R-001" and revision["turn"] == "t03/turn/debater-pro-pricing"
        assert revision["heading"].endswith("debater-pro-pricing, debate turn 3")
        [mutation] = data["proposed_mutations"]
        assert mutation["status"] == "applied" and mutation["revision"] == "R-001"
        assert mutation["turn"] == "t03/turn/debater-pro-pricing"
        assert mutation["payload"] == {"arg_id": "arg-014", "to": "refuted"}
        # the demo KB's own pending proposals belong to no run
        assert all(m["turn"] for m in data["proposed_mutations"])

    def test_other_protocols_keep_them_empty(self, make_run):
        data = run_export_json(make_run())
        assert data["ledger"] == data["revisions"] == data["proposed_mutations"] == []


def test_paths_are_relative_and_safe(debate):
    run, _ = debate
    for path in run_export_run_dir(run):
        assert not Path(path).is_absolute() and ".." not in Path(path).parts


# --- a debate whose seats repeat their moves in their text ----------------------------------------------------------

CALLOUT = "One city is not every city: the Stockholm counts do not generalise."
PRESS = "Who actually pays the charge, by income decile?"
RULING_JUSTIFICATION = "The boundary counts refute wholesale displacement. Debate turn 2."
OBJECTION = "The counts lack controls for the 2006 fuel prices, so the ruling should be reconsidered."
DECISION = "No new counts were brought: the closure stands and the claim is not re-litigated."
EVIDENCE = "The robust Stockholm counts stand; arg-014 was refuted."
ENGAGEMENT = "Both sides addressed CQ2; only pro-pricing addressed CQ1."


def _repeating_turns(kb: KnowledgeBase) -> list[tuple[str, str, type[BaseModel], dict[str, Any]]]:
    """Turns whose free text says again what their fields hold, as models do: the moderator writes out its
    callout, press, deflection (in the seed's shape), ruling and decision; a debater its objection; the
    synthesis gives itself a title and a verdict section."""
    scope_001 = kb.arguments.get(arg_id="arg-001").scope
    scope_017 = kb.arguments.get(arg_id="arg-017").scope
    deflection = (
        f"Deflection: Position pro-pricing has cited arg-001 (layer: empirical, scope: {scope_001}, status: "
        f"robust) across turn 2 to address arg-017 (layer: policy/regulatory, scope: {scope_017}). arg-001 is "
        "well-supported within its scope but scope-mismatches arg-017. Position pro-pricing has not engaged arg-017 "
        "at its actual layer."
    )
    return [
        TURNS[0][:2] + TURNS[0][3:],  # type: ignore[list-item]
        TURNS[1][:2] + TURNS[1][3:],  # type: ignore[list-item]
        (
            "t03/moderator/moderator",
            "debate",
            schema.ModeratorTurn,
            {
                "text": "\n\n".join(
                    [
                        "Contract check after the openings.",
                        f"Callout: {CALLOUT}",
                        f"Press on L-004: {PRESS}",
                        deflection,
                        'Ruling: claim "Cordon charges mainly push traffic onto boundary roads." (arg-014) is '
                        f"CLOSED as refuted.\nJustification: {RULING_JUSTIFICATION}",
                    ]
                ),
                "presses": [{"entry": "L-004", "text": PRESS}],
                "callouts": [{"type": "overreach", "position": "pro-pricing", "turn": 2, "text": CALLOUT}],
                "deflections": [
                    {
                        "position": "pro-pricing",
                        "cited_args": ["arg-001"],
                        "turns": [2],
                        "target_arg": "arg-017",
                        "text": deflection,
                    }
                ],
                "rulings": [
                    {
                        "entry": "L-001",
                        "arg_id": "arg-014",
                        "closed_as": "refuted",
                        "justification": RULING_JUSTIFICATION,
                        "turns": [2],
                    }
                ],
            },
        ),
        (
            "t04/turn/debater-con-pricing",
            "debate",
            schema.DebaterTurn,
            {
                "responds_to": {"entry": "L-003", "turn": 2},
                "move": "partial-rebut",
                "text": f"Before/after counts need seasonal controls.\n\n{OBJECTION}",
                "objection": {"entry": "L-001", "text": OBJECTION, "new_args": ["arg-021"]},
            },
        ),
        (
            "t05/moderator/moderator",
            "debate",
            schema.ModeratorTurn,
            {
                "text": f"Objection heard. {DECISION}",
                "objection_decisions": [{"entry": "L-001", "decision": "reaffirm", "text": DECISION}],
            },
        ),
        (
            "t06/synthesis/orchestrator",
            "synthesis",
            schema.Synthesis,
            {
                "text": (
                    "# Synthesis: Does congestion pricing cut traffic without unfair harm?\n\n"
                    "## Closed claims\n\n- L-001 was closed as refuted.\n\n"
                    f"## Verdict\n\n**better-grounded:pro-pricing**\n\n- Evidence: {EVIDENCE}\n"
                    f"- Engagement: {ENGAGEMENT}\n\nThe fairness thread stays open."
                ),
                "verdict": {
                    "label": "better-grounded",
                    "position": "pro-pricing",
                    "evidence": EVIDENCE,
                    "engagement": ENGAGEMENT,
                },
            },
        ),
    ]


@pytest.fixture
def repeating(graph_kb: KnowledgeBase) -> dict[str, str]:
    run = _new_run(graph_kb)
    for number, (key, stage, model, data) in enumerate(_repeating_turns(graph_kb), start=1):
        _, task, handle = key.split("/")
        Turn.objects.create(
            run=run,
            key=key,
            seat=run.seats.get(handle=handle),
            stage=stage,
            task=task,
            status="committed",
            payload=model.model_validate(data).model_dump(mode="json"),
            schema_version=schema.SCHEMA_VERSION,
            first_seq=number * 10,
        )
    return run_export_run_dir(run)


class NothingTwiceTests:
    """A seat's text that repeats its moves is written without the repeats: each move once, in its shape."""

    def test_each_moderator_move_is_written_once_in_its_own_shape(self, repeating):
        text = repeating["output/transcript.md"]
        for said in (CALLOUT, PRESS, RULING_JUSTIFICATION, DECISION, OBJECTION):
            assert text.count(said) == 1, said
        assert text.count("is CLOSED as refuted.") == 1
        assert text.count("Deflection: Position pro-pricing") == 1
        assert (
            'Ruling: claim "Cordon charges mainly push traffic onto boundary roads." (arg-014) is CLOSED as '
            f"refuted.\nJustification: {RULING_JUSTIFICATION}\n"  # its turn references are not added again
        ) in text
        # The deflection opens its own paragraph and runs on with what the moderator added to the shape.
        deflection = next(p for p in text.split("\n\n") if p.startswith("Deflection: "))
        assert deflection.endswith(
            "to address arg-017 (layer: policy/regulatory, scope: "
            f"{graph_scope(repeating, 'arg-017')}). arg-001 is well-supported within its scope but scope-mismatches "
            "arg-017. Position pro-pricing has not engaged arg-017 at its actual layer."
        )
        assert deflection.count("Deflection:") == 1

    def test_what_the_text_says_beyond_the_moves_is_kept(self, repeating):
        text = repeating["output/transcript.md"]
        assert "Contract check after the openings." in text
        assert "Before/after counts need seasonal controls." in text
        assert "Objection heard." in text
        assert "Press on L-004:" not in text and "\nCallout:" not in text  # a label left alone goes too

    def test_the_synthesis_has_one_title_and_one_verdict(self, repeating):
        text = repeating["output/synthesis.md"]
        assert re.findall(r"^# .*$", text, flags=re.MULTILINE) == ["# Synthesis"]
        assert re.findall(r"^## Verdict.*$", text, flags=re.MULTILINE) == ["## Verdict"]
        assert text.count(EVIDENCE) == 1 and text.count(ENGAGEMENT) == 1
        verdict = text.split("## Verdict\n", 1)[1].split("\n## ", 1)[0]
        assert _bullets(verdict)["Verdict"] == "better-grounded"
        assert (
            "The fairness thread stays open." in verdict
        )  # the verdict section's own words follow its fields
        assert "## Closed claims\n\n- L-001 was closed as refuted." in text

    def test_the_synthesis_turn_of_the_transcripts_has_no_second_title_or_verdict(self, repeating):
        for path in ("output/transcript.md", "output/agents/orchestrator/transcript.md"):
            text = repeating[path]
            assert len(re.findall(r"^# ", text, flags=re.MULTILINE)) == 1, path
            assert "## Verdict" not in text and text.count("\n**Verdict**\n") == 1
            assert text.count(EVIDENCE) == 1


def graph_scope(files: dict[str, str], arg_id: str) -> str:
    """An argument's scope as its node file in the exported live KB states it."""
    node = next(t for p, t in files.items() if p.startswith(f"kb/arguments/{arg_id}-"))
    return re.search(r"^scope: (.*)$", node, flags=re.MULTILINE)[1].strip().strip('"')
