"""Simulated seats of the adversarial review (seed 003 family), auto-discovered by `debates.agents.simulated`.

They play the pattern for real: the advocate quotes real sentences of the artifact as strengths and turns some
into acknowledged trade-offs and addressable blockers; the challenger acknowledges what works and raises exactly 5
concerns, each quoting a real sentence, ranked by severity; the judge counts a concern as addressed only when one of the
advocate's addressable blockers covers the same sentence, scores it from its severity (a softened concern loses a
point), calls the challenge performative when it was softened or toothless, and rejects when two or more genuine,
unaddressed concerns score 4 or more. `Run.backend_options` switches branches on:

    {"softeners": true | "challenger" | "advocate" | "both",   # the side(s) use one banned phrase
     "concerns": "mixed" | "severe" | "mild",                  # severe: 4 critical + 1 high (the judge rejects
                                                               # unless the advocate's 1-2 blockers cover three
                                                               # of them); mild: medium/low only (it approves)
     "fail": ["r1/concerns/*"], "flaky": [...]}                # handled by the simulated backend itself
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from typing import Any

from debates.agents.base import AgentRequest
from debates.agents.simulated import material_sentences

SEVERITY_BASE = {"critical": 5, "high": 4, "medium": 3, "low": 2}
SEVERITY_RANK = {"critical": 4, "high": 3, "medium": 2, "low": 1}

STRENGTH_FRAMES = (
    "The {artifact} is concrete where it matters: {s_lower}",
    "The {artifact} already commits to the key point: {s_lower}",
    "This is the evidence the decision needs, stated in the {artifact} itself: {s_lower}",
    "The {artifact} grounds its case in a fact: {s_lower}",
)
WHY_IT_MATTERS = (
    "It removes the main uncertainty a reviewer would otherwise have to chase.",
    "It makes the change measurable, so success and failure can be told apart after rollout.",
    "It shows the authors have thought past the happy path.",
    "It is the part of the decision that is hardest to reverse, and it is already settled.",
)
TRADEOFFS = (
    "Approving accepts what the {artifact} states plainly: “{s}” That is a real cost, not a detail.",
    "The {artifact} is candid that “{s}” Approval means living with it during the rollout.",
)
BLOCKERS = (
    (
        "The {artifact} says “{s}” but does not say how this is verified before rollout.",
        "Add an explicit verification step with an owner and a go/no-go criterion; it does not change the design.",
    ),
    (
        "“{s}” needs a rollback path the {artifact} does not spell out yet.",
        "Document the rollback and rehearse it once in staging before the change goes live.",
    ),
)
# (keywords, title, risk, fix): the challenger's concern archetypes. A quoted sentence gets the archetype whose
# keywords it mentions (so the concern is about what the sentence says), else a generic one.
CONCERNS = (
    (
        ("rollback", "roll back", "revert", "flag"),
        "Rollback path is unproven",
        "The {artifact} relies on “{short}”, but nothing says the way back has ever been exercised; the first "
        "real rollback will happen during an incident.",
        "Rehearse the rollback in staging with production-like data and record how long it takes.",
    ),
    (
        ("failover", "cluster", "node", "replica", "sentinel", "redundan"),
        "Failover is untested",
        "“{short}” describes the failover design, not its behaviour: a split brain or a slow election drops "
        "every dependent request at once.",
        "Run a failover drill under load and publish the observed downtime and data loss.",
    ),
    (
        ("migrat", "both stores", "written to", "backfill", "switch", "dual"),
        "Migration can lose or duplicate data",
        "While “{short}” is under way, old and new paths run side by side and can diverge silently.",
        "Specify a reconciliation check that must pass before the old path is removed.",
    ),
    (
        ("persist", "fsync", "aof", "durab", "backup", "snapshot"),
        "Durability gap on failure",
        "With “{short}”, a crash can lose the most recent writes; users are logged out or lose state.",
        "State the acceptable data loss explicitly and test a crash-restart against it.",
    ),
    (
        ("own", "team", "alert", "on-call", "oncall"),
        "Ownership and alerting are thin",
        "“{short}” names an owner but no runbook or alert thresholds; the first page at 3 a.m. has nothing to "
        "follow.",
        "Add the runbook, the alert thresholds and the escalation path to the {artifact}.",
    ),
    (
        ("cost", "dollar", "price", "budget", "$"),
        "Cost is not bounded",
        "Nothing caps the spend implied by “{short}”; a traffic spike turns into an unbudgeted bill.",
        "State the expected monthly cost at peak, an alert threshold and a hard limit.",
    ),
    (
        ("percent", "load", "request", "traffic", "latency", "throughput"),
        "Unmeasured claim carries the decision",
        "The {artifact} rests on “{short}” without saying how it was measured; capacity will be planned on a "
        "guess and discovered in production.",
        "Attach the measurement behind the figure, with its method, period and date.",
    ),
    (
        ("security", "auth", "access", "token", "password", "encrypt", "user"),
        "Security boundary not addressed",
        "The {artifact} changes what “{short}” touches without saying who can read or write it; data can leak.",
        "Add a threat model for the change and the access controls it needs.",
    ),
)
GENERIC_CONCERNS = (
    (
        (),
        "Assumption left unexamined",
        "“{short}” is asserted, not argued; if it does not hold, the rest of the {artifact} fails with it.",
        "State the assumption explicitly, with the evidence for it and what happens if it is wrong.",
    ),
    (
        (),
        "No success criterion",
        "Nothing in the {artifact} says how anyone will know that “{short}” worked; a failed change can run "
        "for months unnoticed.",
        "Add a measurable success criterion and the date it is checked.",
    ),
    (
        (),
        "Failure mode not described",
        "The {artifact} describes “{short}” only on the happy path; the failure behaviour will be discovered "
        "in production.",
        "Describe what happens when this part fails, and how it is detected.",
    ),
)


def _archetypes(rng: random.Random, quotes: list[str]) -> list[tuple[Any, ...]]:
    """One archetype per quote, never the same twice: the unused one whose keywords the quote mentions most."""
    unused = list(CONCERNS)
    rng.shuffle(unused)
    generic = list(GENERIC_CONCERNS)
    rng.shuffle(generic)
    chosen = []
    for quote in quotes:
        lowered = quote.lower()
        hits = {a: sum(1 for k in a[0] if k in lowered) for a in unused}
        best = max(unused, key=lambda a: hits[a], default=None)
        fallback = generic.pop() if generic and not (best and hits[best]) else None
        match = best if best and hits[best] else (fallback or unused[0])
        if match in unused:
            unused.remove(match)
        chosen.append(match)
    return chosen


ACKNOWLEDGED = (
    "The {artifact} is specific where it says “{short}”, and that is worth keeping.",
    "The motivation is sound: “{short}”.",
)


def _sentences(request: AgentRequest) -> list[str]:

    return [s[:600] for s in material_sentences(request.view.material)]


def _shorten(sentence: str, words: int = 12) -> str:
    parts = sentence.rstrip(".!?").split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _uses(request: AgentRequest, side: str) -> bool:
    """Does the run's `softeners` option make this side use a banned phrase?"""
    option = request.options.get("softeners")
    wanted = {True: "challenger", "true": "challenger"}.get(option, option)
    return wanted == side or wanted == "both"


def _pick(rng: random.Random, sentences: list[str], count: int) -> list[int]:
    """`count` sentence indexes in reading order: distinct while there are enough, then reused."""
    if len(sentences) >= count:
        return sorted(rng.sample(range(len(sentences)), count))
    return sorted(
        list(range(len(sentences))) * (count // len(sentences))
        + rng.sample(range(len(sentences)), count % len(sentences))
    )


def _case(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    artifact = context.get("artifact_type") or "proposal"
    framework = list(context.get("framework") or [])
    sentences = _sentences(request)
    count = max(2, min(len(sentences), rng.randint(3, 4)))
    picked = _pick(rng, sentences, count)
    strengths = []
    for number, index in enumerate(picked, start=1):
        sentence = sentences[index].rstrip(".")
        point = rng.choice(STRENGTH_FRAMES).format(artifact=artifact, s_lower=_lower_first(sentence)) + "."
        if framework:
            point = f"On {framework[(number - 1) % len(framework)]}: {_lower_first(point)}"
        strengths.append(
            {
                "point": point,
                "quote": sentences[index],
                "why_it_matters": rng.choice(WHY_IT_MATTERS),
            }
        )
    rest = [s for i, s in enumerate(sentences) if i not in picked] or sentences
    rng.shuffle(rest)
    tradeoffs = [rng.choice(TRADEOFFS).format(artifact=artifact, s=rest[0])]
    blockers = [
        {"blocker": blocker.format(artifact=artifact, s=sentence), "how_addressed": how}
        for sentence, (blocker, how) in zip(
            rest[1 : 1 + rng.randint(1, 2)] or rest[:1], BLOCKERS, strict=False
        )
    ]
    summary = (
        f"The {artifact} is ready to approve. Its {len(strengths)} strongest points are stated in its own words, "
        f"the trade-off it carries is acknowledged, and {len(blockers)} genuine blocker"
        f"{'s are' if len(blockers) > 1 else ' is'} addressable without changing the design."
    )
    if _uses(request, "advocate"):
        summary += " Whether the rollout should wait, it depends on the team's appetite for risk."
    return {
        "summary": summary,
        "strengths": strengths,
        "tradeoffs_acknowledged": tradeoffs,
        "addressable_blockers": blockers,
    }


def _severities(rng: random.Random, style: str) -> list[str]:
    if style == "severe":
        return ["critical"] * 4 + ["high"]
    pool = (
        ("medium", "medium", "low")
        if style == "mild"
        else ("critical", "high", "high", "medium", "medium", "low")
    )
    return sorted((rng.choice(pool) for _ in range(5)), key=lambda s: -SEVERITY_RANK[s])


def _five_concerns(rng: random.Random, request: AgentRequest, *, soften: bool) -> list[dict[str, Any]]:
    artifact = request.step.context.get("artifact_type") or "proposal"
    sentences = _sentences(request)
    quotes = [sentences[i] for i in _pick(rng, sentences, 5)]
    rng.shuffle(quotes)
    archetypes = _archetypes(rng, quotes)
    severities = _severities(rng, str(request.options.get("concerns", "mixed")))
    concerns = []
    for rank, (quote, (_, title, risk, fix), severity) in enumerate(
        zip(quotes, archetypes, severities, strict=True), 1
    ):
        values = {"artifact": artifact, "short": _shorten(quote)}
        concerns.append(
            {
                "rank": rank,
                "severity": severity,
                "title": title,
                "quote": quote,
                "risk": risk.format(**values),
                "fix": fix.format(**values),
            }
        )
    if soften:  # one banned softener, on the least severe concern, where a pulled punch usually hides
        concerns[-1]["risk"] = "Minor nitpick, but " + _lower_first(concerns[-1]["risk"])
    return concerns


def _by_rank(concerns: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The schema's shape: one concern per rank, keyed by the rank (code puts the rank back into the item)."""
    return {str(c["rank"]): {k: v for k, v in c.items() if k != "rank"} for c in concerns}


def _concerns(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    artifact = request.step.context.get("artifact_type") or "proposal"
    concerns = _five_concerns(rng, request, soften=_uses(request, "challenger"))
    sentences = _sentences(request)
    attacked = {c["quote"] for c in concerns}
    spared = [s for s in sentences if s not in attacked] or sentences  # what works is what it does not attack
    acknowledged = [
        frame.format(artifact=artifact, short=_shorten(spared[i]))
        for frame, i in zip(ACKNOWLEDGED, _pick(rng, spared, rng.randint(1, 2)), strict=False)
    ]
    return {"acknowledged_strengths": acknowledged, "concerns": _by_rank(concerns)}


SURVIVED = "Quoted from the artifact and not undermined by any genuine concern."
FELL = "A genuine concern attacks the very words this strength quotes."


def _judgement(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    artifact = context.get("artifact_type") or "proposal"
    case: Mapping[str, Any] | None = context.get("case")
    challenge: Mapping[str, Any] | None = context.get("concerns")
    softened = {f["where"] for f in (context.get("softeners") or {}).get("challenger", [])}
    # Acknowledging a trade-off is not answering it: only a blocker with its fix addresses a concern.
    covered = _norm(
        " ".join(f"{b['blocker']} {b['how_addressed']}" for b in (case or {}).get("addressable_blockers", []))
    )

    assessments = []
    concerns = sorted((challenge or {}).get("concerns", []), key=lambda c: c["rank"])
    for concern in concerns:
        addressed = bool(case) and _norm(concern["quote"]) in covered
        score = SEVERITY_BASE[concern["severity"]] + rng.choice((-1, 0, 0, 0))
        if f"concern {concern['rank']}" in softened:
            score -= 1
        score = min(5, max(1, score))
        genuine = "genuine" if score >= 3 else "stretch"
        note = (
            "The advocate's blocker list already covers it with a concrete change. " if addressed else ""
        ) + (
            "A real production risk, tied to the artifact's own words."
            if genuine == "genuine"
            else "A stretch: the risk does not follow from the quoted text."
        )
        assessments.append(
            {
                "rank": concern["rank"],
                "addressed_by_advocate": addressed,
                "genuine": genuine,
                "score": score,
                "note": note,
            }
        )
    by_rank = {a["rank"]: a for a in assessments}
    serious = [
        c
        for c in concerns
        if by_rank[c["rank"]]["genuine"] == "genuine"
        and not by_rank[c["rank"]]["addressed_by_advocate"]
        and by_rank[c["rank"]]["score"] >= 4
    ]
    genuine_quotes = {_norm(c["quote"]) for c in concerns if by_rank[c["rank"]]["genuine"] == "genuine"}

    strengths = list((case or {}).get("strengths", []))
    surviving = [
        {"strength_id": s["id"], "why": SURVIVED}
        for s in strengths
        if _norm(s["quote"]) not in genuine_quotes
    ]
    pulled = None
    if challenge:
        toothless = not any(c["severity"] in {"critical", "high"} for c in concerns)
        signs = (["The challenger softened its own concerns."] if softened else []) + (
            ["No concern is rated above medium for an artifact headed to production."] if toothless else []
        )
        pulled = {
            "verdict": "performative" if signs else "genuine",
            "explanation": " ".join(signs)
            or "The concerns quote the artifact, name concrete risks and are ranked honestly.",
        }

    verdict = "reject" if len(serious) >= 2 else "approve"
    agreement = [
        f"Both sides credit the {artifact}: {text}"
        for text in (challenge or {}).get("acknowledged_strengths", [])
    ]
    if case and not agreement:
        agreement = [
            f"The advocate's strength {s['strength_id']} stands unchallenged." for s in surviving[:2]
        ]
    contested = []
    for concern in concerns:
        assessed = by_rank[concern["rank"]]
        if assessed["genuine"] != "genuine":
            continue
        stance = (
            "the advocate offers a fix; the risk stands until it lands"
            if assessed["addressed_by_advocate"]
            else "unanswered by the advocate"
        )
        contested.append(f"{concern['title']} (rank {concern['rank']}, score {assessed['score']}): {stance}.")

    narratives = []
    if surviving:
        best = next(s for s in strengths if s["id"] == surviving[0]["strength_id"])
        narratives.append(f"What holds: {_shorten(best['point'], 18)}")
    if serious:
        narratives.append(
            f"The decisive risk: {serious[0]['title'].lower()} — {_shorten(serious[0]['risk'], 18)}"
        )
    elif concerns:
        genuine_count = sum(1 for a in assessments if a["genuine"] == "genuine")
        narratives.append(
            f"{genuine_count} of {len(concerns)} concerns are genuine, but none serious enough stands unanswered."
        )
    if not challenge:
        narratives.append(
            f"The {artifact} went unchallenged: the case stands on its own quotes, with lower confidence."
        )
    if not case:
        narratives.append(
            "The advocate failed: no concern was answered, so every genuine one counts in full."
        )
    narratives.append(
        f"Verdict {verdict}: {len(serious)} genuine, unaddressed concern{'s' if len(serious) != 1 else ''} scored 4+."
    )
    rationale = f"{'Reject' if verdict == 'reject' else 'Approve'} the {artifact}: " + (
        f"{len(serious)} genuine concerns scored 4 or more went unaddressed ({', '.join(c['title'] for c in serious)})."
        if serious
        else "no more than one serious concern stands unanswered, and the advocate's quoted strengths hold."
    )
    # The judge's schema: one verdict per strength id, one assessment per concern rank (keyed by what exists),
    # whether a concern was addressed only when there is an advocate; genuine follows from the score.
    answer: dict[str, Any] = {}
    if strengths:
        survived = {s["strength_id"] for s in surviving}
        answer["advocate_strengths"] = {
            s["id"]: {
                "survived": s["id"] in survived,
                "why": SURVIVED if s["id"] in survived else FELL,
            }
            for s in strengths
        }
    if challenge:
        answer["concern_assessments"] = {
            str(a["rank"]): {
                **({"addressed_by_advocate": a["addressed_by_advocate"]} if case else {}),
                "score": a["score"],
                "note": a["note"],
            }
            for a in assessments
        }
        answer["pulled_punches"] = pulled
    return {
        **answer,
        "agreement_zones": agreement[:6],
        "contested_zones": contested[:6],
        "key_narratives": narratives[:3],
        "verdict": verdict,
        "rationale": rationale,
    }


def _review(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    artifact = request.step.context.get("artifact_type") or "proposal"
    sentences = _sentences(request)
    strengths = [
        {"point": f"The {artifact} is concrete here: {_shorten(sentences[i], 16)}", "quote": sentences[i]}
        for i in _pick(rng, sentences, min(2, len(sentences)))
    ]
    concerns = _five_concerns(rng, request, soften=False)
    critical = [c for c in concerns if c["severity"] == "critical"]
    verdict = "reject" if len(critical) >= 2 else "approve"
    return {
        "summary": f"Single-agent review of the {artifact}: {len(strengths)} strengths, 5 ranked concerns, "
        f"{len(critical)} of them critical.",
        "strengths": strengths,
        "concerns": _by_rank(concerns),
        "key_narratives": [
            f"Most severe: {concerns[0]['title'].lower()} ({concerns[0]['severity']}).",
            f"Verdict {verdict}: {len(critical)} critical concern{'s' if len(critical) != 1 else ''}.",
        ],
        "verdict": verdict,
        "rationale": f"{'Reject' if verdict == 'reject' else 'Approve'}: the review found {len(critical)} critical "
        "concerns; two or more block approval.",
    }


GENERATORS: dict[tuple[str, str], Callable[[random.Random, AgentRequest], dict[str, Any]]] = {
    ("adversarial", "case"): _case,
    ("adversarial", "concerns"): _concerns,
    ("adversarial", "judgement"): _judgement,
    ("adversarial", "review"): _review,
}
