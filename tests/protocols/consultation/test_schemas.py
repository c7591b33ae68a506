"""The consultation's step schemas and what it does with an answer they accept (issue 22).

Every reference to an agent is an enum of the agents who gave a Round 1 position (plus "Consensus" as a
challenge's target), the same for every seat of a parallel round; a reply's defense is a required field. Lengths,
ranges and counts are stated for the models that honour them and not enforced: `accept` strips texts, clamps a
confidence into 0-1, keeps the first items of a list that is too long, keeps an agent once, and flags each of
these along with a self-challenge, a reply that neither challenges nor defends, a low-confidence verdict without
dissent and an option listed twice. What it commits is the seed's stored shape, from which the round artifacts
are built."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from django.template import Context, Template
from pydantic import ValidationError

from debates.contract import Flag, Step, Steps
from debates.protocols.consultation import schema
from debates.protocols.consultation.panels import flag_mark
from debates.protocols.consultation.protocol import (
    KEY_CROSS_EXAM,
    KEY_SYNTHESIS,
    artifact_build,
    key_independent,
    key_reply,
)
from tests.protocols.consultation.test_protocol import HANDLES, PROTOCOL, r1, reply, synthesis, view

CREATED_AT = "2026-11-30T10:00:00+00:00"
CROSS = {"challenges": [], "rebuttals": [], "unresolved": []}
CY_CHALLENGES = [{"target_agent": "Consensus", "challenge_point": "Fairness is skipped.", "evidence": []}]


def steps_of(turns: dict[str, Any], **config: Any) -> list[Step]:
    plan = PROTOCOL.plan(view(turns, **config))
    assert isinstance(plan, Steps)
    return list(plan.steps)


def enum_at(json_schema: dict[str, Any], *path: str) -> list[str]:
    """The enum at a dotted path of a JSON schema, through arrays' items and $refs."""
    node: dict[str, Any] = json_schema
    for name in path:
        node = node["properties"][name]
        while "$ref" in node or "items" in node:
            node = node["items"] if "items" in node else json_schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return list(node["enum"])


# The history before each task's first step: Ada, Bo and Cy answered every round so far.
HISTORIES: dict[str, dict[str, Any]] = {
    "independent": {},
    "synthesis": r1(),
    "cross_exam": {**r1(), KEY_SYNTHESIS: synthesis()},
    "cross_exam_judge": {  # Cy challenged the consensus
        **r1(),
        KEY_SYNTHESIS: synthesis(),
        **{key_reply(h): reply(CY_CHALLENGES if h == "agent-cy" else None) for h in HANDLES},
    },
    "verdict": {
        **r1(),
        KEY_SYNTHESIS: synthesis(),
        **{key_reply(h): reply() for h in HANDLES},
        KEY_CROSS_EXAM: CROSS,
    },
}


def step_of(task: str, **config: Any) -> Step:
    return steps_of(HISTORIES[task], **config)[0]


def accepted(step: Step, answer: dict[str, Any], **config: Any) -> tuple[dict[str, Any], list[Flag]]:
    """The answer through the schema, the protocol's rules (nothing refused) and accept."""
    current = view(HISTORIES[step.task], **config)
    model = step.schema.model_validate(answer)
    assert PROTOCOL.validate(step, model, current) == []
    result = PROTOCOL.accept(step, model, current)
    return result.payload, list(result.flags)


def kinds(flags: list[Flag]) -> list[tuple[str, str]]:
    return [(flag.kind, flag.where) for flag in flags]


# --- the schemas ------------------------------------------------------------------------------------------------


def test_every_agent_reference_is_an_enum_of_the_agents_who_answered_round_1() -> None:
    without_cy = {**r1(), key_independent("agent-cy"): None}
    (judge,) = steps_of(without_cy)
    built = judge.schema.model_json_schema()
    assert enum_at(built, "consensus_points", "supporting_agents") == ["Ada", "Bo"]
    assert enum_at(built, "tensions", "viewpoints", "agent") == ["Ada", "Bo"]
    replies = steps_of({**without_cy, KEY_SYNTHESIS: synthesis()})
    assert [s.seat for s in replies] == ["agent-ada", "agent-bo"]
    assert enum_at(replies[0].schema.model_json_schema(), "challenges", "target_agent") == [
        "Ada",
        "Bo",
        "Consensus",
    ]


def test_the_seats_of_the_parallel_cross_examination_share_one_schema() -> None:
    replies = steps_of({**r1(), KEY_SYNTHESIS: synthesis()})
    assert len(replies) == 3
    assert all(step.schema is replies[0].schema for step in replies)  # one prompt-cache key for the round


def test_the_judges_cross_examination_names_only_the_agents_who_replied_as_challengers() -> None:
    turns = {**r1(), KEY_SYNTHESIS: synthesis(), key_reply("agent-ada"): reply(), key_reply("agent-bo"): None}
    turns[key_reply("agent-cy")] = reply()
    (judge,) = steps_of(turns)
    built = judge.schema.model_json_schema()
    assert enum_at(built, "challenges", "challenger") == ["Ada", "Cy"]
    assert enum_at(built, "challenges", "target_agent") == ["Ada", "Bo", "Cy", "Consensus"]
    assert enum_at(built, "rebuttals", "agent") == ["Ada", "Cy"]


@pytest.mark.parametrize("mode", ["converge", "explore"])
def test_the_verdict_names_agents_from_the_panel_only(mode: str) -> None:
    built = step_of("verdict", mode=mode).schema.model_json_schema()
    if mode == "converge":
        assert enum_at(built, "dissent", "agent") == ["Ada", "Bo", "Cy"]
        assert enum_at(built, "per_agent_contributions", "agent") == ["Ada", "Bo", "Cy"]
        assert enum_at(built, "dissent", "severity") == ["high", "medium", "low"]
    else:
        assert enum_at(built, "recommendations", "championed_by") == ["Ada", "Bo", "Cy"]
    stranger: dict[str, Any] = (
        {
            "analysis": "",
            "recommendation": "Go.",
            "confidence": 0.8,
            "evidence": ["e"],
            "per_agent_contributions": [],
        }
        | {"dissent": [{"agent": "Zed", "concern": "c", "severity": "low"}]}
        if mode == "converge"
        else {"analysis": "", "synergies": [], "confidence": 0.5, "summary": "s"}
        | {
            "recommendations": [
                {
                    "option": "o",
                    "description": "d",
                    "pros": [],
                    "cons": [],
                    "best_when": "",
                    "championed_by": ["Zed"],
                }
            ]
        }
    )
    with pytest.raises(ValidationError, match="Zed"):
        step_of("verdict", mode=mode).schema.model_validate(stranger)


def test_a_reply_must_carry_a_defense_field_whatever_it_challenges() -> None:
    built = step_of("cross_exam").schema.model_json_schema()
    assert set(built["required"]) == {"critique", "challenges", "defense", "revised_position"}


def test_lengths_ranges_and_counts_are_stated_for_the_model_not_enforced() -> None:
    independent = step_of("independent")
    assert independent.schema is schema.IndependentPosition
    sent = anthropic.transform_schema(independent.schema)
    assert "{maximum: 1, minimum: 0}" in sent["properties"]["confidence"]["description"]
    assert "maxItems: 8" in sent["properties"]["key_points"]["description"]
    assert sent["properties"]["key_points"]["minItems"] == 1  # enforced by both decoders: kept
    answer = {
        "position": "",
        "key_points": [""] * 12,
        "rationale": " ",
        "confidence": 7,
        "prose_excerpt": "",
    }
    independent.schema.model_validate(answer)  # no length, range or count refuses it


# --- what accept fills and flags ----------------------------------------------------------------------------------


def test_round_1_strips_clamps_and_flags_what_is_empty_out_of_range_or_too_many() -> None:
    step = step_of("independent")
    payload, flags = accepted(
        step,
        {
            "position": "  Charge cars.  ",
            "key_points": ["Traffic fell.", ""] + [f"P{n}" for n in range(8)],
            "rationale": "Stockholm.",
            "confidence": 1.4,
            "prose_excerpt": "",
        },
    )
    assert payload["position"] == "Charge cars."
    assert payload["key_points"] == ["Traffic fell.", ""] + [f"P{n}" for n in range(6)]
    assert payload["confidence"] == 1.0
    assert kinds(flags) == [
        ("too_many", "key_points"),
        ("empty", "key_points.1"),
        ("out_of_range", "confidence"),
        ("empty", "prose_excerpt"),
    ]


def test_the_synthesis_keeps_each_agent_once_and_flags_a_tension_held_twice_by_one_agent() -> None:
    payload, flags = accepted(
        step_of("synthesis"),
        {
            "consensus_points": [
                {"point": "Fees work.", "supporting_agents": ["Ada", "Bo", "Ada"], "confidence": -1}
            ],
            "tensions": [
                {
                    "topic": "Fairness",
                    "viewpoints": [
                        {"agent": "Cy", "viewpoint": "Regressive."},
                        {"agent": "Cy", "viewpoint": "Unfair."},
                    ],
                }
            ],
            "priority_order": ["Fairness", " "],
        },
    )
    assert payload["consensus_points"] == [
        {"point": "Fees work.", "supporting_agents": ["Ada", "Bo"], "confidence": 0.0}
    ]
    assert payload["priority_order"] == ["Fairness", ""]
    assert kinds(flags) == [
        ("duplicate", "consensus_points.0.supporting_agents"),
        ("out_of_range", "consensus_points.0.confidence"),
        ("duplicate", "tensions.0.viewpoints"),
        ("empty", "priority_order.1"),
    ]


def test_the_judges_cross_examination_flags_a_self_challenge_and_an_empty_rebuttal() -> None:
    payload, flags = accepted(
        step_of("cross_exam_judge"),
        {
            "challenges": [{"challenger": "Cy", "target_agent": "Cy", "challenge": "Odd.", "evidence": []}],
            "rebuttals": [{"agent": "Ada", "rebuttal": ""}],
            "unresolved": [f"U{n}" for n in range(11)],
        },
    )
    assert payload["challenges"][0]["challenger"] == "Cy" and len(payload["unresolved"]) == 10
    assert kinds(flags) == [
        ("self_challenge", "challenges.0.target_agent"),
        ("empty", "rebuttals.0.rebuttal"),
        ("too_many", "unresolved"),
    ]


JUDGED = {
    "challenges": [],
    "rebuttals": [{"agent": "Ada", "rebuttal": "My position holds."}],
    "unresolved": ["Fairness is still contested.", "Nobody tested the revenue claim."],
}


def test_with_no_new_challenge_in_round_3_nothing_is_unresolved_whatever_the_judge_lists() -> None:
    quiet = {**HISTORIES["cross_exam_judge"], **{key_reply(h): reply() for h in HANDLES}}
    (judge,) = steps_of(quiet)
    model = judge.schema.model_validate(JUDGED)
    result = PROTOCOL.accept(judge, model, view(quiet))
    assert result.payload["unresolved"] == []  # the seed: no new challenges, unresolved[] is empty
    assert result.payload["rebuttals"] == JUDGED["rebuttals"]  # the rest of the synthesis is kept
    (flag,) = result.flags
    assert (flag.kind, flag.where) == ("unresolved_without_challenge", "unresolved")
    assert "No agent raised a new challenge in Round 3" in flag.detail and "Fairness is still" in flag.detail
    # The verdict then sees nothing unresolved.
    after = {**quiet, KEY_CROSS_EXAM: result.payload}
    (verdict,) = steps_of(after)
    assert verdict.task == "verdict" and verdict.context["unresolved"] == []


def test_a_challenge_in_round_3_keeps_the_judges_unresolved_items() -> None:
    payload, flags = accepted(step_of("cross_exam_judge"), JUDGED)  # Cy challenged the consensus
    assert payload["unresolved"] == JUDGED["unresolved"] and flags == []


def test_a_converge_verdict_keeps_one_dissent_and_one_contribution_per_agent() -> None:
    payload, flags = accepted(
        step_of("verdict"),
        {
            "analysis": " Reasoning. ",
            "recommendation": "Charge in stages.",
            "confidence": 0.8,
            "evidence": ["Traffic fell."],
            "dissent": [
                {"agent": "Cy", "concern": "Regressive.", "severity": "high"},
                {"agent": "Cy", "concern": "Again.", "severity": "low"},
            ],
            "per_agent_contributions": [
                {"agent": "Ada", "key_insight": "Traffic.", "adopted": True},
                {"agent": "Ada", "key_insight": "Twice.", "adopted": False},
                {"agent": "Bo", "key_insight": "", "adopted": False},
            ],
        },
    )
    assert payload["analysis"] == "Reasoning."
    assert [d["concern"] for d in payload["dissent"]] == ["Regressive."]
    assert [(c["agent"], c["key_insight"]) for c in payload["per_agent_contributions"]] == [
        ("Ada", "Traffic."),
        ("Bo", ""),
    ]
    assert kinds(flags) == [
        ("duplicate", "dissent.1.agent"),
        ("duplicate", "per_agent_contributions.1.agent"),
        ("empty", "per_agent_contributions.2.key_insight"),
    ]


def test_an_explore_verdict_flags_an_option_listed_twice_and_keeps_each_champion_once() -> None:
    option = {
        "option": "Staged",
        "description": "In stages.",
        "pros": ["Safe."],
        "cons": [],
        "best_when": "risk is high",
        "championed_by": ["Bo", "Bo"],
    }
    payload, flags = accepted(
        step_of("verdict", mode="explore"),
        {
            "analysis": "",
            "recommendations": [option, {**option, "option": "staged ", "championed_by": []}],
            "synergies": [],
            "confidence": 0.7,
            "summary": "Two options.",
        },
        mode="explore",
    )
    assert [o["option"] for o in payload["recommendations"]] == ["Staged", "staged"]
    assert payload["recommendations"][0]["championed_by"] == ["Bo"]
    assert kinds(flags) == [
        ("duplicate", "recommendations.0.championed_by"),
        ("duplicate", "recommendations.1.option"),
    ]


def test_what_accept_commits_builds_the_seeds_round_artifacts() -> None:
    answers: dict[str, dict[str, Any]] = {
        "independent": {
            "position": "Yes.",
            "key_points": ["Traffic fell."],
            "rationale": "Because.",
            "confidence": 3,
            "prose_excerpt": "Yes.",
        },
        "synthesis": synthesis(),
        "cross_exam_judge": {
            "challenges": [
                {"challenger": "Cy", "target_agent": "Consensus", "challenge": "No.", "evidence": []}
            ],
            "rebuttals": [{"agent": "Ada", "rebuttal": "Yes."}],
            "unresolved": ["Fairness"],
        },
        "verdict": {
            "analysis": "Why.",
            "recommendation": "Go.",
            "confidence": 0.9,
            "evidence": ["Traffic fell."],
            "dissent": [],
            "per_agent_contributions": [{"agent": "Ada", "key_insight": "Traffic.", "adopted": True}],
        },
    }
    for task, answer in answers.items():
        payload, _ = accepted(step_of(task), answer)
        artifact = artifact_build(task, payload, agent="Ada", created_at=CREATED_AT)
        assert artifact["schema_version"] == "1.0" and artifact["created_at"] == CREATED_AT


# --- marks in the turn bodies -------------------------------------------------------------------------------------


def test_a_flagged_item_is_marked_where_it_is_shown() -> None:
    flags = [
        {"kind": "self_challenge", "where": "challenges.0.target_agent", "detail": "Ada challenges itself."}
    ]
    mark = flag_mark(flags, "challenges", 0)
    assert 'class="flag-mark"' in mark and "self challenge" in mark and "Ada challenges itself." in mark
    assert flag_mark(flags, "challenges", 1) == ""
    assert flag_mark(flags, "challenges", 0, "target") == ""
    assert flag_mark("", "defense") == ""  # a template without flags
    body = Template('{% include "debates/protocols/consultation.html#cross_exam" %}').render(
        Context(
            {
                "data": {
                    "critique": "c",
                    "challenges": [{"target_agent": "Ada", "challenge_point": "me", "evidence": []}],
                    "defense": "",
                    "revised_position": "",
                },
                "flags": flags,
            }
        )
    )
    assert body.count('class="flag-mark"') == 1
