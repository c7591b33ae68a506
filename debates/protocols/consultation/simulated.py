"""Simulated seats of the consultation (seed 001), auto-discovered by `debates.agents.simulated`.

They play the four rounds for real, from the material: in R1 each agent takes a stance from its place in the
panel (go ahead / go ahead only with safeguards / not yet), cites real sentences and states a confidence; the
judge's synthesis finds the point every agent cited as consensus, the stances that differ as a tension, and —
as judges do — lists one agent's lone concern as a "tension" with a single viewpoint (which the protocol drops
with a warning); in R3 the sceptics challenge the consensus and the proponents defend; the verdict follows the
majority with the minority's dissent (converge) or lays out one option per stance (explore). `Run.backend_options`
switches the branches that matter for early termination.

They argue about the run's own topic from the run's own material. A run without material gets no stand-in facts:
every agent says plainly that none was supplied, reasons about the topic from general experience at a lower
confidence, and the synthesis, cross-examination and verdict say so too.

The branches:

    {"consensus": "mixed"          # default: real tensions, mean confidence well under 0.90, all four rounds
                 | "strong"        # agreement at ~0.94 with one agent at 0.82: converge mode stops after R2
                 | "rubber_stamp", # identical answers, everyone above 0.85, no tensions: the early stop is
                                   # blocked as rubber-stamped, and the cross-exam finds the untested assumption
     "fail": ["r1/independent/agent-architect"], "flaky": [...]}   # handled by the simulated backend
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from debates.agents.base import AgentRequest
from debates.agents.simulated import material_sentences

PROCEED, CONDITIONS, HOLD = "proceed", "conditions", "hold"
ANCHOR_LEAD = "The material is clear on this: "
NO_MATERIAL_DISCOUNT = 0.15  # mixed mode: what an agent takes off its confidence when there is no material
STANCE_ORDER = (PROCEED, CONDITIONS, HOLD)
MARKERS = {HOLD: "Not yet", CONDITIONS: "Yes, but only with safeguards"}
OPTION_NAMES = {
    CONDITIONS: "Staged rollout with safeguards",
    PROCEED: "Go ahead now",
    HOLD: "Wait and gather evidence",
}


def _subject(topic: str) -> str:
    """The run's topic, quoted, as the agents refer to it."""
    return f"“{' '.join(str(topic).split()) or 'the question'}”"


def _has_material(request: AgentRequest) -> bool:
    return bool(request.view.material.strip())


def _no_material(topic: str) -> list[str]:
    """What an agent can honestly say about the topic when the run has no material: that there is none, and what
    the decision would need."""
    subject = _subject(topic)
    return [
        f"No material was supplied on {subject}, so this rests on general experience, not on evidence.",
        "Nothing supplied measures what the decision would cost or gain in this case.",
        "Whether the answer fits depends on facts nobody has supplied yet: the people, the constraints, the risks.",
        "Those affected will weigh the near-term disruption against the long-term gain differently.",
    ]


def _grounds(request: AgentRequest) -> list[str]:
    """The sentences an agent argues from: the material's, or — without material — plain statements about the
    topic that say there is none (never another debate's facts)."""
    if _has_material(request):
        return material_sentences(request.view.material)
    return _no_material(request.view.topic)


def _unlead(key_point: Any) -> str:
    return str(key_point).removeprefix(ANCHOR_LEAD)


def _short(sentence: str, words: int = 16) -> str:
    parts = str(sentence).rstrip(".!?").split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def _lower(sentence: str) -> str:
    sentence = str(sentence).rstrip(".!?")
    return sentence[:1].lower() + sentence[1:]


def _lens(lens: str) -> str:
    return (lens or "general").split(":")[0].strip() or "general"


def _mode(request: AgentRequest) -> str:
    consensus = str(request.options.get("consensus", "mixed"))
    return consensus if consensus in {"mixed", "strong", "rubber_stamp"} else "mixed"


def _anchor(sentences: Sequence[str]) -> str:
    """The sentence every agent cites: the first with a figure in it, else the first."""
    return next((s for s in sentences if any(ch.isdigit() for ch in s)), sentences[0])


def _stance(index: int, count: int, mode: str) -> str:
    if mode == "rubber_stamp":
        return PROCEED
    if mode == "strong":
        return CONDITIONS if index % 2 else PROCEED
    if count == 2:
        return (PROCEED, HOLD)[index]
    return (PROCEED, CONDITIONS, HOLD)[index % 3]


def stance_of(position: str) -> str:
    """The stance a position takes, read from its words (the judge reads the text, not a label)."""
    text = str(position)
    if text.startswith(MARKERS[HOLD]):
        return HOLD
    if text.startswith(MARKERS[CONDITIONS]):
        return CONDITIONS
    return PROCEED


# --- R1 -------------------------------------------------------------------------------------------------------


def _independent(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    agents = list(context.get("agents") or [context.get("name", "")])
    name = str(context.get("name", ""))
    index = agents.index(name) if name in agents else 0
    mode = _mode(request)
    grounded = _has_material(request)
    subject = _subject(request.view.topic)
    sentences = _grounds(request)
    anchor = _anchor(sentences)
    others = [s for s in sentences if s != anchor] or [anchor]
    lens = _lens(str(context.get("lens", "")))
    lead = ANCHOR_LEAD if grounded else ""  # without material the first point says so itself
    if mode == "rubber_stamp":  # everyone says the same thing, in the same words, very sure
        picked = others[:2]
        position = (
            f"Yes: go ahead. {_short(anchor)}, and nothing in the material argues against it."
            if grounded
            else "Yes: go ahead. No material was supplied, and nothing argues against it."
        )
        key_points = [f"{lead}{anchor}"] + [f"{_short(s)}." for s in picked]
        confidence = round(0.9 + 0.05 * rng.random(), 2)
    else:
        picked = rng.sample(others, min(2, len(others)))
        stance = _stance(index, len(agents), mode)
        if stance == HOLD:
            position = (
                f"{MARKERS[HOLD]}: from the {lens} side, “{_short(picked[0], 12)}” is unresolved, and that is "
                "decisive for now."
            )
        elif stance == CONDITIONS:
            position = (
                f"{MARKERS[CONDITIONS]}: the case is sound, but “{_short(picked[0], 12)}” has to be addressed "
                f"first from the {lens} side."
            )
        elif grounded:
            position = f"Yes: go ahead. Seen from {lens}, {_lower(_short(anchor, 14))} outweighs the risks."
        else:
            position = (
                f"Yes: go ahead. From the {lens} side nothing argues against it, though with no material this "
                "is judgement, not evidence."
            )
        key_points = [f"{lead}{anchor}"] + [f"From the {lens} side: {_short(s)}." for s in picked]
        base = {PROCEED: 0.78, CONDITIONS: 0.72, HOLD: 0.66}[stance]
        if mode == "strong":
            base = 0.82 if index == 0 else 0.88
        elif not grounded:
            base -= NO_MATERIAL_DISCOUNT
        confidence = round(min(0.97, base + 0.04 * rng.random()), 2)
    if grounded:
        rationale = (
            f"I read the question {subject} through {lens}. The material's firmest fact is this: “{anchor}”\n\n"
            + " ".join(f"It also says: “{s}”" for s in picked)
            + f"\n\nWeighing these, my answer is the position above, held at a confidence of {confidence:.2f}."
        )
    else:
        rationale = (
            f"I read the question {subject} through {lens}. No material was supplied, so I cite nothing: "
            "what follows is general experience, and it should be weighed as such.\n\n"
            + " ".join(f"“{s}”" for s in picked)
            + f"\n\nMy answer is the position above, held at a confidence of only {confidence:.2f} for want of "
            "evidence."
        )
    return {
        "position": position,
        "key_points": key_points,
        "rationale": rationale,
        "confidence": confidence,
        "prose_excerpt": f"{name} ({lens}): {position}",
    }


# --- R2 -------------------------------------------------------------------------------------------------------


def _synthesis(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    mode = _mode(request)
    positions: list[Mapping[str, Any]] = list(request.step.context.get("positions") or [])
    names = [str(p["agent"]) for p in positions]
    by_stance: dict[str, list[Mapping[str, Any]]] = {s: [] for s in STANCE_ORDER}
    for p in positions:
        by_stance[stance_of(p["position"])].append(p)
    grounded = _has_material(request)
    subject = _subject(request.view.topic)
    anchor = _unlead(positions[0]["key_points"][0]) if positions else "the material"
    shared_confidence = {"mixed": 0.8, "strong": 0.95, "rubber_stamp": 0.96}[mode]
    consensus = [
        {
            "point": f"Every agent starts from the same fact: {anchor}"
            if grounded
            else f"No material was supplied on {subject}: every agent argues from general experience.",
            "supporting_agents": names,
            "confidence": shared_confidence,
        }
    ]
    go = by_stance[PROCEED] + by_stance[CONDITIONS]
    if len(go) >= 2 or (mode == "rubber_stamp" and go):
        consensus.append(
            {
                "point": "Going ahead is justified in principle.",
                "supporting_agents": [str(p["agent"]) for p in go],
                "confidence": {"mixed": 0.68, "strong": 0.93, "rubber_stamp": 0.95}[mode],
            }
        )
    cautious = by_stance[CONDITIONS] + by_stance[HOLD]
    if mode == "mixed" and len(cautious) >= 2:
        consensus.append(
            {
                "point": "Safeguards must be in place before any rollout.",
                "supporting_agents": [str(p["agent"]) for p in cautious],
                "confidence": 0.7,
            }
        )
    tensions: list[dict[str, Any]] = []
    if mode == "mixed":
        sides = by_stance[PROCEED][:1] + by_stance[CONDITIONS][:1] + by_stance[HOLD][:1]
        if len(sides) >= 2:
            tensions.append(
                {
                    "topic": "Go now, go with safeguards, or wait",
                    "viewpoints": [
                        {"agent": str(p["agent"]), "viewpoint": str(p["position"])} for p in sides
                    ],
                }
            )
        # The judge also lists one agent's lone concern as a "tension": a single viewpoint, dropped by the protocol.
        lone = (by_stance[HOLD] or positions[-1:])[0]
        tensions.append(
            {
                "topic": f"A concern only {lone['agent']} raised",
                "viewpoints": [{"agent": str(lone["agent"]), "viewpoint": str(lone["key_points"][-1])}],
            }
        )
    elif mode == "strong" and len(positions) >= 2:
        tensions.append(
            {
                "topic": "How fast to roll out",
                "viewpoints": [
                    {"agent": str(positions[0]["agent"]), "viewpoint": "As soon as the plan is signed off."},
                    {"agent": str(positions[1]["agent"]), "viewpoint": "In stages, watching the first one."},
                ],
            }
        )
    priority = [str(t["topic"]) for t in tensions if len(t["viewpoints"]) >= 2] + [
        str(c["point"]) for c in consensus[1:]
    ]
    return {"consensus_points": consensus, "tensions": tensions, "priority_order": priority}


# --- R3 -------------------------------------------------------------------------------------------------------


def _fresh(request: AgentRequest, cited: str) -> str:
    grounds = _grounds(request)
    sentences = [s for s in grounds if s not in cited]
    return sentences[-1] if sentences else grounds[0]


def _cross_exam(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    mode = _mode(request)
    name = str(context.get("name", ""))
    own = context.get("own_position") or {}
    stance = stance_of(str(own.get("position", "")))
    consensus = list(context.get("consensus_points") or [])
    tensions = list(context.get("tensions") or [])
    cited = " ".join([str(own.get("rationale", "")), *map(str, own.get("key_points") or [])])
    fresh = _fresh(request, cited)
    opponents = [
        str(v["agent"])
        for t in tensions
        for v in t.get("viewpoints", [])
        if str(v["agent"]) != name and stance_of(str(v["viewpoint"])) != stance
    ]
    agents = list(context.get("agents") or [])
    if mode == "rubber_stamp":
        if agents and name == agents[0]:  # the one who notices that nobody tested the shared view
            return {
                "critique": "We all agreed in the same words; nobody tested what would make us wrong.",
                "challenges": [
                    {
                        "target_agent": "Consensus",
                        "challenge_point": f"The consensus never tested this: “{_short(fresh)}”",
                        "evidence": [fresh],
                    }
                ],
                "defense": "",
                "revised_position": "Yes, but only after checking the assumption nobody tested.",
            }
        return {
            "critique": "The synthesis matches what I said.",
            "challenges": [],
            "defense": f"My position stands: {_short(own.get('position', ''))}",
            "revised_position": "",
        }
    if stance == HOLD:
        top = str(consensus[-1]["point"]) if consensus else "the consensus"
        challenges = [
            {
                "target_agent": "Consensus",
                "challenge_point": f"“{_short(top, 12)}” ignores what I raised: {_short(own['key_points'][-1])}",
                "evidence": [fresh],
            }
        ]
        if opponents:
            challenges.append(
                {
                    "target_agent": opponents[0],
                    "challenge_point": f"{opponents[0]} treats the risk as settled; "
                    + (
                        "the material does not." if _has_material(request) else "nothing supplied settles it."
                    ),
                    "evidence": [fresh],
                }
            )
        return {
            "critique": "The synthesis counts agreement, not evidence: the open risk is still open.",
            "challenges": challenges,
            "defense": f"Not yet remains right: “{_short(fresh)}”",
            "revised_position": "",
        }
    if stance == CONDITIONS:
        challenges = []
        if opponents:
            challenges.append(
                {
                    "target_agent": opponents[0],
                    "challenge_point": f"Going ahead without safeguards, as {opponents[0]} proposes, repeats "
                    + (
                        "the mistake the material warns about."
                        if _has_material(request)
                        else "a bet that no evidence supports either way."
                    ),
                    "evidence": [fresh],
                }
            )
        return {
            "critique": "The consensus is right to go ahead, but it understates the safeguards.",
            "challenges": challenges,
            "defense": "Safeguards first is the position that survives both sides' evidence.",
            "revised_position": "Yes, with the safeguards named as preconditions of each stage.",
        }
    return {
        "critique": "The consensus matches the strongest evidence in the material."
        if _has_material(request)
        else "With no material, the consensus is as good as the panel's judgement, and no better.",
        "challenges": [],
        "defense": f"The case for going ahead stands: {_short(own.get('key_points', [''])[0])}",
        "revised_position": "",
    }


def _cross_exam_judge(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    replies = list(request.step.context.get("replies") or [])
    challenges = [
        {
            "challenger": str(r["agent"]),
            "target_agent": str(c["target_agent"]),
            "challenge": str(c["challenge_point"]),
            "evidence": list(c.get("evidence") or []),
        }
        for r in replies
        for c in r.get("challenges") or []
    ]
    rebuttals = [
        {"agent": str(r["agent"]), "rebuttal": str(r["defense"])} for r in replies if r.get("defense")
    ]
    unresolved = []
    for challenge in challenges:
        if challenge["target_agent"] == "Consensus":
            unresolved.append(f"Raised by {challenge['challenger']}: {challenge['challenge']}")
    for tension in request.step.context.get("tensions") or []:
        unresolved.append(f"{tension['topic']} — still contested after the cross-examination.")
    return {"challenges": challenges, "rebuttals": rebuttals, "unresolved": unresolved if challenges else []}


# --- R4 -------------------------------------------------------------------------------------------------------


def _verdict(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    positions: list[Mapping[str, Any]] = list(context.get("positions") or [])
    stances = {str(p["agent"]): stance_of(str(p["position"])) for p in positions}
    anchor = _unlead(positions[0]["key_points"][0]) if positions else "The material is the only evidence."
    grounded = _has_material(request)
    subject = _subject(request.view.topic)
    unresolved = list(context.get("unresolved") or [])
    challenges = list(context.get("challenges") or [])
    if context.get("mode") == "explore":
        return _explore(positions, stances, challenges, anchor, subject=subject, grounded=grounded)
    counts = {s: sum(1 for v in stances.values() if v == s) for s in STANCE_ORDER}
    go = counts[PROCEED] + counts[CONDITIONS]
    majority = (CONDITIONS if counts[CONDITIONS] or counts[HOLD] else PROCEED) if go >= counts[HOLD] else HOLD
    recommendation = (
        f"On {subject}: "
        + {
            PROCEED: f"go ahead, on the strength of the firmest fact in the material: {anchor}"
            if grounded
            else "go ahead on judgement alone (no material was supplied), and check the first results before "
            "committing further.",
            CONDITIONS: "go ahead in stages, with the safeguards raised in Round 3 as preconditions of each stage.",
            HOLD: "do not go ahead yet: settle the open risks first, then decide again.",
        }[majority]
    )
    challengers = {str(c["challenger"]) for c in challenges if c["target_agent"] == "Consensus"}
    dissent = []
    for agent, stance in stances.items():
        if majority != HOLD and stance == HOLD:
            dissent.append(
                {
                    "agent": agent,
                    "concern": "The open risk is not settled; going ahead now is premature.",
                    "severity": "high",
                }
            )
        elif majority == HOLD and stance == PROCEED:
            dissent.append(
                {
                    "agent": agent,
                    "concern": "Waiting forfeits the benefit the material documents."
                    if grounded
                    else "Waiting buys nothing while nobody is gathering the missing evidence.",
                    "severity": "medium",
                }
            )
        elif agent in challengers and stance != HOLD:
            dissent.append(
                {
                    "agent": agent,
                    "concern": "The untested assumption raised in Round 3 is still untested.",
                    "severity": "low",
                }
            )
    confidence = (
        0.66 if dissent and any(d["severity"] == "high" for d in dissent) else (0.86 if unresolved else 0.9)
    )
    evidence = list(
        dict.fromkeys([anchor] + [str(p["key_points"][1]) for p in positions if len(p["key_points"]) > 1])
    )[:4]
    return {
        "analysis": f"On {subject}, {go} of {len(positions)} agents favour going ahead in some form; "
        f"{len(unresolved)} item(s) stay unresolved after the cross-examination."
        + ("" if grounded else " No material was supplied: the verdict rests on the panel's judgement."),
        "recommendation": recommendation,
        "confidence": confidence,
        "evidence": evidence,
        "dissent": dissent,
        "per_agent_contributions": [
            {
                "agent": str(p["agent"]),
                "key_insight": str(p["key_points"][-1]),
                "adopted": stances[str(p["agent"])] == majority or stances[str(p["agent"])] == CONDITIONS,
            }
            for p in positions
        ],
    }


def _explore(
    positions: Sequence[Mapping[str, Any]],
    stances: Mapping[str, str],
    challenges: Sequence[Mapping[str, Any]],
    anchor: str,
    *,
    subject: str,
    grounded: bool,
) -> dict[str, Any]:
    present = [s for s in (CONDITIONS, PROCEED, HOLD) if s in stances.values()]
    if len(present) < 2:  # a menu of one is no menu: the unchosen alternative is still worth naming
        present += [s for s in (CONDITIONS, HOLD) if s not in present][: 2 - len(present)]
    recommendations: list[dict[str, Any]] = []
    for stance in present:
        champions = [agent for agent, s in stances.items() if s == stance]
        pros = [str(p["key_points"][-1]) for p in positions if str(p["agent"]) in champions][:3]
        cons = [str(c["challenge"]) for c in challenges if str(c["target_agent"]) in champions][:3]
        recommendations.append(
            {
                "option": OPTION_NAMES[stance],
                "description": {
                    CONDITIONS: "Go ahead one stage at a time; each stage starts only when its safeguards are met.",
                    PROCEED: f"Go ahead now, on the strength of the firmest fact in the material: {anchor}"
                    if grounded
                    else "Go ahead now, on the panel's judgement alone: no material was supplied.",
                    HOLD: "Hold the decision and gather the evidence the sceptics asked for.",
                }[stance],
                "pros": pros or ["Keeps the decision reversible."],
                "cons": cons
                or (
                    ["No challenge was raised against it in Round 3, so its costs are untested."]
                    if champions
                    else ["Nobody on the panel argued for it; its costs are unexamined."]
                ),
                "best_when": {
                    CONDITIONS: "the benefit is clear but a failure would be costly to undo",
                    PROCEED: "speed matters more than the residual risk",
                    HOLD: "the open risk could invalidate the whole plan",
                }[stance],
                "championed_by": champions,
            }
        )
    return {
        "analysis": f"On {subject}, the panel split into {len(present)} distinct directions; each is kept as an "
        "option.",
        "recommendations": recommendations,
        "synergies": ["Wait on the riskiest part while the rest goes ahead in stages."]
        if len(recommendations) > 1
        else [],
        "confidence": 0.72,
        "summary": f"{len(recommendations)} options on {subject}, most promising first: "
        + "; ".join(r["option"] for r in recommendations)
        + ".",
    }


GENERATORS: dict[tuple[str, str], Callable[[random.Random, AgentRequest], dict[str, Any]]] = {
    ("consultation", "independent"): _independent,
    ("consultation", "synthesis"): _synthesis,
    ("consultation", "cross_exam"): _cross_exam,
    ("consultation", "cross_exam_judge"): _cross_exam_judge,
    ("consultation", "verdict"): _verdict,
}
