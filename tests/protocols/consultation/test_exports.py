"""`export_run --format artifacts`: a consultation's round artifacts, checked by a validator that mirrors the seed
project's own (LLM_Conclave src/consult/artifacts/schemas/{Independent,Synthesis,CrossExam,Verdict}Schema.ts,
applied to the snake_case JSON its ArtifactTransformer writes): required fields, artifact types, round numbers,
at least one key point, at least two viewpoints per tension, confidences in 0–1, ISO timestamps with a T, one
evidence item and dissent severities in converge mode, a non-empty option menu in explore mode."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from debates.protocols.consultation.exports import consultation_artifacts
from debates.services import runs as services
from tests.conftest import MATERIAL, run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)


# --- the seed's validators, mirrored (snake_case) ----------------------------------------------------------------


class Invalid(Exception):
    pass


def _require(artifact: dict[str, Any], fields: list[str]) -> None:
    for name in fields:
        if name not in artifact:
            raise Invalid(f"Missing required field: {name}")


def _common(artifact: dict[str, Any], artifact_type: str, round_number: int) -> None:
    if artifact["artifact_type"] != artifact_type:
        raise Invalid(f"Invalid artifactType: expected '{artifact_type}', got '{artifact['artifact_type']}'")
    if not isinstance(artifact["schema_version"], str):
        raise Invalid("schemaVersion must be a string")
    if type(artifact["round_number"]) is not int or artifact["round_number"] != round_number:
        raise Invalid(f"roundNumber must be {round_number}")
    created = artifact["created_at"]
    if not isinstance(created, str) or "T" not in created:
        raise Invalid("createdAt must be a valid ISO 8601 timestamp")
    datetime.fromisoformat(created)  # raises on a malformed date


def _text(value: Any, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise Invalid(f"{what} must be a non-empty string")


def _confidence(value: Any, what: str = "confidence") -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise Invalid(f"{what} must be a number between 0 and 1")


def _strings(value: Any, what: str) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Invalid(f"All {what} items must be strings")


def validate_independent(a: dict[str, Any]) -> None:
    _require(
        a,
        [
            "artifact_type",
            "schema_version",
            "agent_id",
            "round_number",
            "position",
            "key_points",
            "rationale",
            "confidence",
            "prose_excerpt",
            "created_at",
        ],
    )
    _common(a, "independent", 1)
    _text(a["agent_id"], "agentId")
    _text(a["position"], "position")
    if not isinstance(a["key_points"], list) or not a["key_points"]:
        raise Invalid("keyPoints must contain at least one point")
    _strings(a["key_points"], "keyPoints")
    _text(a["rationale"], "rationale")
    _confidence(a["confidence"])
    if not isinstance(a["prose_excerpt"], str):
        raise Invalid("proseExcerpt must be a string")


def validate_synthesis(a: dict[str, Any]) -> None:
    _require(
        a,
        [
            "artifact_type",
            "schema_version",
            "round_number",
            "consensus_points",
            "tensions",
            "priority_order",
            "created_at",
        ],
    )
    _common(a, "synthesis", 2)
    for point in a["consensus_points"]:
        _text(point["point"], "ConsensusPoint.point")
        _strings(point["supporting_agents"], "supportingAgents")
        _confidence(point["confidence"], "ConsensusPoint.confidence")
    for tension in a["tensions"]:
        _text(tension["topic"], "Tension.topic")
        if not isinstance(tension["viewpoints"], list) or len(tension["viewpoints"]) < 2:
            raise Invalid("Tension must have at least 2 viewpoints")
        for viewpoint in tension["viewpoints"]:
            _text(viewpoint["agent"], "Viewpoint.agent")
            _text(viewpoint["viewpoint"], "Viewpoint.viewpoint")
    _strings(a["priority_order"], "priorityOrder")


def validate_cross_exam(a: dict[str, Any]) -> None:
    _require(
        a,
        [
            "artifact_type",
            "schema_version",
            "round_number",
            "challenges",
            "rebuttals",
            "unresolved",
            "created_at",
        ],
    )
    _common(a, "cross_exam", 3)
    for challenge in a["challenges"]:
        _text(challenge["challenger"], "Challenge.challenger")
        _text(challenge["target_agent"], "Challenge.targetAgent")
        _text(challenge["challenge"], "Challenge.challenge")
        _strings(challenge["evidence"], "challenge.evidence")
    for rebuttal in a["rebuttals"]:
        _text(rebuttal["agent"], "Rebuttal.agent")
        _text(rebuttal["rebuttal"], "Rebuttal.rebuttal")
    _strings(a["unresolved"], "unresolved")


def validate_verdict(a: dict[str, Any], mode: str) -> None:
    if mode == "explore":
        _require(
            a,
            [
                "artifact_type",
                "schema_version",
                "round_number",
                "recommendations",
                "confidence",
                "created_at",
            ],
        )
    else:
        _require(
            a,
            [
                "artifact_type",
                "schema_version",
                "round_number",
                "recommendation",
                "confidence",
                "evidence",
                "dissent",
                "created_at",
            ],
        )
    _common(a, "verdict", 4)
    _confidence(a["confidence"])
    if mode == "explore":
        if not isinstance(a["recommendations"], list) or not a["recommendations"]:
            raise Invalid("recommendations must contain at least one item in explore mode")
        for index, rec in enumerate(a["recommendations"]):
            _text(rec.get("option"), f"Recommendation at index {index} option")
            _text(rec.get("description"), f"Recommendation at index {index} description")
            for name in ("pros", "cons"):
                if name in rec and not isinstance(rec[name], list):
                    raise Invalid(f"Recommendation at index {index}: '{name}' must be an array")
    else:
        _text(a["recommendation"], "recommendation")
        if not a["evidence"]:
            raise Invalid("evidence must contain at least one item")
        _strings(a["evidence"], "evidence")
        for d in a["dissent"]:
            _text(d.get("agent"), "Dissent.agent")
            _text(d.get("concern"), "Dissent.concern")
            if d.get("severity") not in {"high", "medium", "low"}:
                raise Invalid(f"Dissent has invalid severity: '{d.get('severity')}'")
    if "_analysis" in a and not isinstance(a["_analysis"], str):
        raise Invalid("_analysis must be a string if provided")


def seed_import(artifact: dict[str, Any]) -> dict[str, Any]:
    """The seed's importer of a verdict (ArtifactTransformer.verdictFromJSON), mirrored: it reads `dissent` on every
    verdict, whatever the mode (`json.dissent.map(...)`), and fails without it."""
    if artifact.get("artifact_type") != "verdict":
        return artifact
    if not isinstance(artifact.get("dissent"), list):
        raise Invalid("Cannot read properties of undefined (reading 'map')")
    return {
        "recommendation": artifact.get("recommendation"),
        "confidence": artifact["confidence"],
        "evidence": artifact.get("evidence"),
        "dissent": [
            {"agent": d["agent"], "concern": d["concern"], "severity": d["severity"]}
            for d in artifact["dissent"]
        ],
    }


def seed_validate(artifact: dict[str, Any], mode: str = "converge") -> None:
    kind = artifact.get("artifact_type")
    if kind == "independent":
        validate_independent(artifact)
    elif kind == "synthesis":
        validate_synthesis(artifact)
    elif kind == "cross_exam":
        validate_cross_exam(artifact)
    elif kind == "verdict":
        validate_verdict(artifact, mode)
    else:
        raise Invalid(f"Unknown artifact type: {kind}")


# The mirror itself refuses what the seed refuses (so a pass below means something).
GOOD_SYNTHESIS = {
    "artifact_type": "synthesis",
    "schema_version": "1.0",
    "round_number": 2,
    "consensus_points": [{"point": "p", "supporting_agents": ["A"], "confidence": 0.8}],
    "tensions": [
        {"topic": "t", "viewpoints": [{"agent": "A", "viewpoint": "x"}, {"agent": "B", "viewpoint": "y"}]}
    ],
    "priority_order": ["t"],
    "created_at": "2026-11-30T10:00:00+00:00",
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"round_number": 3}, "roundNumber must be 2"),
        ({"created_at": "2026-11-30 10:00"}, "ISO 8601"),
        (
            {"tensions": [{"topic": "t", "viewpoints": [{"agent": "A", "viewpoint": "x"}]}]},
            "at least 2 viewpoints",
        ),
        (
            {"consensus_points": [{"point": "p", "supporting_agents": [], "confidence": 1.2}]},
            "between 0 and 1",
        ),
        ({"artifact_type": "verdict"}, "Missing required field: recommendation"),
    ],
)
def test_the_mirrored_validator_refuses_what_the_seed_refuses(change: dict[str, Any], message: str) -> None:
    seed_validate(GOOD_SYNTHESIS)
    with pytest.raises(Invalid, match=message):
        seed_validate({**GOOD_SYNTHESIS, **change})


def test_the_mirrored_validator_needs_a_key_point_and_converge_evidence() -> None:
    independent = {
        "artifact_type": "independent",
        "schema_version": "1.0",
        "agent_id": "Ada",
        "round_number": 1,
        "position": "Yes.",
        "key_points": [],
        "rationale": "Because.",
        "confidence": 0.5,
        "prose_excerpt": "",
        "created_at": "2026-11-30T10:00:00Z".replace("Z", "+00:00"),
    }
    with pytest.raises(Invalid, match="at least one point"):
        seed_validate(independent)
    verdict = {
        "artifact_type": "verdict",
        "schema_version": "1.0",
        "round_number": 4,
        "recommendation": "Go.",
        "confidence": 0.9,
        "evidence": [],
        "dissent": [],
        "created_at": "2026-11-30T10:00:00+00:00",
    }
    with pytest.raises(Invalid, match="at least one item"):
        seed_validate(verdict)


# --- exported runs --------------------------------------------------------------------------------------------


def consultation(**overrides: Any) -> Any:
    run = services.run_create(
        protocol="consultation",
        topic="Should the city charge cars entering the centre?",
        material=MATERIAL,
        config=overrides.pop("config", {}),
        seed=overrides.pop("seed", 9),
        backend_options={"cps": 0, **overrides.pop("backend_options", {})},
        enqueue=False,
    )
    assert run_to_stop(run) == "done"
    return run


SNAKE = re.compile(r"_?[a-z]+(_[a-z]+)*")


def keys_of(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for value in node.values() for k in keys_of(value)}
    if isinstance(node, list):
        return {k for item in node for k in keys_of(item)}
    return set()


def export(run: Any, out: Path) -> dict[str, dict[str, Any]]:
    call_command("export_run", str(run.pk), "--format", "artifacts", "--out", str(out))
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in sorted(out.iterdir())}


@pytest.mark.parametrize("mode", ["converge", "explore"])
def test_every_exported_artifact_passes_the_seeds_validators(mode: str, tmp_path: Path) -> None:
    run = consultation(config={"mode": mode})
    files = export(run, tmp_path / "artifacts")
    assert sorted(files) == [
        "consultation.json",
        "round-1-independent-architect.json",
        "round-1-independent-pragmatist.json",
        "round-1-independent-security-expert.json",
        "round-2-synthesis.json",
        "round-3-cross_exam.json",
        "round-4-verdict.json",
    ]
    for name, artifact in files.items():
        if name != "consultation.json":
            seed_validate(artifact, mode)
            seed_import(artifact)
            assert artifact["schema_version"] == "1.0"
            assert all(SNAKE.fullmatch(key) for key in keys_of(artifact)), sorted(keys_of(artifact))
    assert files["round-1-independent-architect.json"]["agent_id"] == "Architect"
    verdict = files["round-4-verdict.json"]
    if mode == "explore":
        assert "recommendation" not in verdict and len(verdict["recommendations"]) >= 2
    else:
        assert verdict["dissent"] and "_analysis" in verdict
    # The invalid tension the judge listed was dropped from the artifact; the warning travels with the snapshot.
    synthesis = files["round-2-synthesis.json"]
    assert all(len(t["viewpoints"]) >= 2 for t in synthesis["tensions"])
    snapshot = files["consultation.json"]
    assert snapshot["warnings"] and "dropped" in snapshot["warnings"][0]
    assert (snapshot["current_state"], snapshot["current_round"], snapshot["is_terminal"]) == (
        "complete",
        0,
        True,
    )
    assert [(t["from"], t["to"]) for t in snapshot["transitions"]][-3:] == [
        ("synthesis", "cross_exam"),
        ("cross_exam", "verdict"),
        ("verdict", "complete"),
    ]
    assert all("T" in t["timestamp"] for t in snapshot["transitions"])
    # The files are what the run recorded when each round committed, not rebuilt at export.
    recorded = run.events.get(kind="round_artifact", payload__round_number=4).payload["artifact"]
    assert verdict == recorded


def test_an_explore_verdict_carries_an_empty_dissent_the_seeds_importer_reads(tmp_path: Path) -> None:
    run = consultation(config={"mode": "explore"})
    verdict = export(run, tmp_path / "artifacts")["round-4-verdict.json"]
    assert verdict["dissent"] == []  # recorded so when the round committed, not added at export
    assert run.events.get(kind="round_artifact", payload__round_number=4).payload["artifact"]["dissent"] == []
    assert seed_import(verdict)["dissent"] == []
    with pytest.raises(
        Invalid, match="reading 'map'"
    ):  # what the seed's importer did with the artifact before
        seed_import({k: v for k, v in verdict.items() if k != "dissent"})


def test_an_explore_verdict_recorded_without_dissent_is_exported_with_an_empty_one(tmp_path: Path) -> None:
    run = consultation(config={"mode": "explore"})
    event = run.events.get(kind="round_artifact", payload__round_number=4)
    del event.payload["artifact"]["dissent"]  # as a run recorded before explore verdicts carried it
    event.save(update_fields=["payload"])
    verdict = export(run, tmp_path / "old")["round-4-verdict.json"]
    assert verdict["dissent"] == [] and seed_import(verdict)["dissent"] == []
    seed_validate(verdict, "explore")


def test_the_snapshot_says_the_estimate_was_approved_automatically_under_the_threshold(
    tmp_path: Path,
) -> None:
    run = consultation()
    snapshot = export(run, tmp_path / "artifacts")["consultation.json"]
    assert snapshot["consultation_id"] == str(run.pk)
    assert snapshot["user_consent"] == {
        "approved": True,
        "auto_approved": True,  # the seed's consultation:user_consent, under the $0.50 threshold
        "estimate_usd": str(run.estimate_usd),
        "threshold_usd": "0.50",
    }
    started = next(t for t in snapshot["transitions"] if t["to"] == "independent")
    assert started["reason"] == (
        f"Approved automatically: the estimate ${run.estimate_usd:.4f} is under the threshold $0.50."
    )


def test_an_early_stopped_consultation_exports_rounds_1_and_2_only(tmp_path: Path) -> None:
    run = consultation(backend_options={"consensus": "strong"})
    files = export(run, tmp_path / "out")
    assert [name for name in files if name.startswith("round-")] == [
        "round-1-independent-architect.json",
        "round-1-independent-pragmatist.json",
        "round-1-independent-security-expert.json",
        "round-2-synthesis.json",
    ]
    for name, artifact in files.items():
        if name.startswith("round-"):
            seed_validate(artifact)
    assert files["consultation.json"]["early_termination"] is True


def test_export_refuses_other_protocols_and_a_non_empty_directory(make_run: Any, tmp_path: Path) -> None:
    other = make_run()
    with pytest.raises(CommandError, match="only a consultation run has round artifacts"):
        call_command("export_run", str(other.pk), "--format", "artifacts", "--out", str(tmp_path / "x"))
    run = consultation()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(CommandError, match="not an empty directory"):
        call_command("export_run", str(run.pk), "--format", "artifacts", "--out", str(tmp_path / "full"))
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    assert set(consultation_artifacts(run)) >= {"round-4-verdict.json", "consultation.json"}
