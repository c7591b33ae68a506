"""What the consultation does with an answer its schema accepted (issue 22): it maps it to the seed's stored shape
and flags what no schema can check, never refusing it. A text is stripped and flagged when empty, a confidence
outside 0-1 is clamped and flagged, a list longer than its schema states keeps its first items, an agent named
twice where once is meant is kept once; a self-challenge, a reply that neither challenges nor defends, a
low-confidence verdict without dissent and an option listed twice are flagged; the judge's unresolved items
are emptied (and flagged) when no agent raised a challenge in Round 3. Every function takes the answer
as `model_dump(mode="json")` and appends its flags to `flags`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from debates.contract import Flag
from debates.protocols.consultation import schema
from debates.protocols.schemas import at_most, clamped, said

LOW_CONFIDENCE = 0.70  # a converge verdict below this has major dissent, which it names


def _texts(items: Sequence[str], where: str, flags: list[Flag], what: str, limit: int) -> list[str]:
    """A list of texts: the first `limit` kept, each stripped, an empty one flagged."""
    kept = at_most(items, limit, where, flags)
    return [said(text, f"{where}.{n}", flags, what) for n, text in enumerate(kept)]


def _unit(value: float, where: str, flags: list[Flag]) -> float:
    return clamped(float(value), 0.0, 1.0, where, flags)


def _once(agents: Sequence[str], where: str, flags: list[Flag], what: str) -> list[str]:
    """The agents in order, each once; a repeated one is flagged."""
    distinct = list(dict.fromkeys(agents))
    if len(distinct) < len(agents):
        repeated = sorted({agent for agent in agents if agents.count(agent) > 1})
        flags.append(
            Flag("duplicate", where, f"{', '.join(repeated)} listed more than once as {what}; kept once.")
        )
    return distinct


def _first_per_agent(
    items: Sequence[Mapping[str, Any]], where: str, flags: list[Flag], what: str
) -> list[tuple[int, Mapping[str, Any]]]:
    """The items with their index, the first of each agent only; a later one of the same agent is flagged."""
    kept: list[tuple[int, Mapping[str, Any]]] = []
    seen: set[str] = set()
    for n, item in enumerate(items):
        agent = str(item["agent"])
        if agent in seen:
            flags.append(Flag("duplicate", f"{where}.{n}.agent", f"A second {what} of {agent}: dropped."))
            continue
        seen.add(agent)
        kept.append((n, item))
    return kept


# --- R1 ----------------------------------------------------------------------------------------------------


def accept_independent(answer: Mapping[str, Any], flags: list[Flag]) -> dict[str, Any]:
    return {
        "position": said(answer["position"], "position", flags, "position"),
        "key_points": _texts(answer["key_points"], "key_points", flags, "key point", schema.MAX_KEY_POINTS),
        "rationale": said(answer["rationale"], "rationale", flags, "rationale"),
        "confidence": _unit(answer["confidence"], "confidence", flags),
        "prose_excerpt": said(answer["prose_excerpt"], "prose_excerpt", flags, "prose excerpt"),
    }


# --- R2 ----------------------------------------------------------------------------------------------------


def accept_synthesis(answer: Mapping[str, Any], flags: list[Flag]) -> dict[str, Any]:
    points = []
    listed = at_most(
        answer["consensus_points"], schema.MAX_CONSENSUS_POINTS, "consensus_points", flags, "consensus points"
    )
    for n, point in enumerate(listed):
        where = f"consensus_points.{n}"
        points.append(
            {
                "point": said(point["point"], f"{where}.point", flags, "consensus point"),
                "supporting_agents": _once(
                    point["supporting_agents"], f"{where}.supporting_agents", flags, "supporting agents"
                ),
                "confidence": _unit(point["confidence"], f"{where}.confidence", flags),
            }
        )
    tensions = []
    for n, tension in enumerate(
        at_most(answer["tensions"], schema.MAX_TENSIONS, "tensions", flags, "tensions")
    ):
        where = f"tensions.{n}"
        viewpoints = at_most(
            tension["viewpoints"], schema.MAX_VIEWPOINTS, f"{where}.viewpoints", flags, "viewpoints"
        )
        _once([v["agent"] for v in viewpoints], f"{where}.viewpoints", flags, "holders of a viewpoint")
        tensions.append(
            {
                "topic": said(tension["topic"], f"{where}.topic", flags, "tension's topic"),
                "viewpoints": [
                    {
                        "agent": viewpoint["agent"],
                        "viewpoint": said(
                            viewpoint["viewpoint"], f"{where}.viewpoints.{m}.viewpoint", flags, "viewpoint"
                        ),
                    }
                    for m, viewpoint in enumerate(viewpoints)
                ],
            }
        )
    return {
        "consensus_points": points,
        "tensions": tensions,
        "priority_order": _texts(
            answer["priority_order"], "priority_order", flags, "priority", schema.MAX_PRIORITIES
        ),
    }


# --- R3 ----------------------------------------------------------------------------------------------------


def accept_reply(answer: Mapping[str, Any], flags: list[Flag], *, own: str) -> dict[str, Any]:
    """An agent's challenge-or-defend reply; `own`: the agent's name (the schema, shared by every agent of the
    round, cannot leave it out of the targets)."""
    challenges = []
    listed = at_most(answer["challenges"], schema.MAX_CHALLENGES, "challenges", flags, "challenges")
    for n, challenge in enumerate(listed):
        where = f"challenges.{n}"
        if challenge["target_agent"] == own:
            flags.append(
                Flag(
                    "self_challenge",
                    f"{where}.target_agent",
                    f"{own} challenges its own position; a challenge targets another agent or the consensus.",
                )
            )
        challenges.append(
            {
                "target_agent": challenge["target_agent"],
                "challenge_point": said(
                    challenge["challenge_point"], f"{where}.challenge_point", flags, "challenge"
                ),
                "evidence": _texts(
                    challenge["evidence"], f"{where}.evidence", flags, "evidence", schema.MAX_EVIDENCE
                ),
            }
        )
    defense = answer["defense"].strip()
    if not challenges and not defense:
        flags.append(
            Flag(
                "missing_defense",
                "defense",
                "Neither a challenge nor a defense: the reply does not say why the position holds.",
            )
        )
    return {
        "critique": said(answer["critique"], "critique", flags, "critique"),
        "challenges": challenges,
        "defense": defense,
        "revised_position": answer["revised_position"].strip(),
    }


def accept_cross_exam(answer: Mapping[str, Any], flags: list[Flag], *, challenged: bool) -> dict[str, Any]:
    """The judge's synthesis of the replies. `challenged`: whether any Round 3 reply raised a challenge; when none
    did, nothing new was raised and `unresolved` is empty (the seed's rule), whatever the judge listed there."""
    challenges = []
    listed = at_most(answer["challenges"], schema.MAX_JUDGE_CHALLENGES, "challenges", flags, "challenges")
    for n, challenge in enumerate(listed):
        where = f"challenges.{n}"
        if challenge["challenger"] == challenge["target_agent"]:
            flags.append(
                Flag(
                    "self_challenge",
                    f"{where}.target_agent",
                    f"{challenge['challenger']} is listed as challenging itself.",
                )
            )
        challenges.append(
            {
                "challenger": challenge["challenger"],
                "target_agent": challenge["target_agent"],
                "challenge": said(challenge["challenge"], f"{where}.challenge", flags, "challenge"),
                "evidence": _texts(
                    challenge["evidence"], f"{where}.evidence", flags, "evidence", schema.MAX_EVIDENCE
                ),
            }
        )
    rebuttals = [
        {
            "agent": rebuttal["agent"],
            "rebuttal": said(rebuttal["rebuttal"], f"rebuttals.{n}.rebuttal", flags, "rebuttal"),
        }
        for n, rebuttal in enumerate(
            at_most(answer["rebuttals"], schema.MAX_REBUTTALS, "rebuttals", flags, "rebuttals")
        )
    ]
    unresolved = _texts(answer["unresolved"], "unresolved", flags, "unresolved item", schema.MAX_UNRESOLVED)
    if unresolved and not challenged:
        flags.append(
            Flag(
                "unresolved_without_challenge",
                "unresolved",
                f"No agent raised a new challenge in Round 3, so nothing is unresolved; the judge's "
                f"{len(unresolved)} unresolved item{'' if len(unresolved) == 1 else 's'} "
                f"({'; '.join(unresolved)[:300]}) dropped.",
            )
        )
        unresolved = []
    return {"challenges": challenges, "rebuttals": rebuttals, "unresolved": unresolved}


# --- R4 ----------------------------------------------------------------------------------------------------


def accept_verdict(answer: Mapping[str, Any], flags: list[Flag]) -> dict[str, Any]:
    if "recommendations" in answer:
        return _accept_explore(answer, flags)
    return _accept_converge(answer, flags)


def _accept_converge(answer: Mapping[str, Any], flags: list[Flag]) -> dict[str, Any]:
    confidence = _unit(answer["confidence"], "confidence", flags)
    dissent = [
        {
            "agent": item["agent"],
            "concern": said(item["concern"], f"dissent.{n}.concern", flags, "concern"),
            "severity": item["severity"],
        }
        for n, item in _first_per_agent(
            at_most(answer["dissent"], schema.MAX_DISSENT, "dissent", flags, "dissents"),
            "dissent",
            flags,
            "dissent",
        )
    ]
    if confidence < LOW_CONFIDENCE and not dissent:
        flags.append(
            Flag(
                "missing_dissent",
                "dissent",
                f"A confidence of {confidence:.2f} (below {LOW_CONFIDENCE:.2f}) means major dissent, but no "
                "dissenting agent is named.",
            )
        )
    contributions = [
        {
            "agent": item["agent"],
            "key_insight": said(
                item["key_insight"], f"per_agent_contributions.{n}.key_insight", flags, "key insight"
            ),
            "adopted": item["adopted"],
        }
        for n, item in _first_per_agent(
            answer["per_agent_contributions"], "per_agent_contributions", flags, "contribution"
        )
    ]
    return {
        "analysis": answer["analysis"].strip(),
        "recommendation": said(answer["recommendation"], "recommendation", flags, "recommendation"),
        "confidence": confidence,
        "evidence": _texts(answer["evidence"], "evidence", flags, "evidence", schema.MAX_VERDICT_EVIDENCE),
        "dissent": dissent,
        "per_agent_contributions": contributions,
    }


def _accept_explore(answer: Mapping[str, Any], flags: list[Flag]) -> dict[str, Any]:
    options = []
    names: set[str] = set()
    listed = at_most(answer["recommendations"], schema.MAX_OPTIONS, "recommendations", flags, "options")
    for n, option in enumerate(listed):
        where = f"recommendations.{n}"
        name = said(option["option"], f"{where}.option", flags, "option's name")
        if name and name.casefold() in names:
            flags.append(Flag("duplicate", f"{where}.option", f"The option “{name}” is listed twice."))
        names.add(name.casefold())
        options.append(
            {
                "option": name,
                "description": said(
                    option["description"], f"{where}.description", flags, "option's description"
                ),
                "pros": _texts(option["pros"], f"{where}.pros", flags, "pro", schema.MAX_PROS),
                "cons": _texts(option["cons"], f"{where}.cons", flags, "con", schema.MAX_CONS),
                "best_when": said(option["best_when"], f"{where}.best_when", flags, "“best when”"),
                "championed_by": _once(option["championed_by"], f"{where}.championed_by", flags, "champions"),
            }
        )
    return {
        "analysis": answer["analysis"].strip(),
        "recommendations": options,
        "synergies": _texts(answer["synergies"], "synergies", flags, "synergy", schema.MAX_SYNERGIES),
        "confidence": _unit(answer["confidence"], "confidence", flags),
        "summary": said(answer["summary"], "summary", flags, "summary"),
    }
