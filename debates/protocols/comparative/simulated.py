"""Simulated play of the comparative debate (seed 003, `/evaluate`): deterministic for (run seed, step key),
grounded in the run's evidence base (per option and criterion), its material sentences, its stakeholders and gaps.

How the simulated seats play, so every rule of the protocol is exercised:

- an opening argues every criterion in order (c1, c2, ...). A criterion's argument cites the sources of the
  evidence base that bear on it (its words or their synonyms appear in the source or summary) for the advocate's
  option or for both; where none does, the argument is deliberately thin: asserted through the lens alone, with
  no evidence, so the rebuttals and the audit have targets. Exactly 3 risks of the other option (the
  highest-weight criteria, framed by the lens), every stakeholder addressed (those who prefer the other option
  are acknowledged and asked to reconsider), a closing of exactly 3 sentences. No banned hedge is written,
  unless `{"hedge": true}`: then advocate B says "slight edge" once, so the flag shows;
- a rebuttal attacks the opponent's 3 weakest claims: fewest evidence items, then lowest criterion weight, then
  order. The failure fits the weakness (no evidence: missing evidence; one source against the attacker's own
  source on the criterion: cherry-picked data; otherwise a logic gap or an ignored trade-off of the lens); the
  counter-evidence is the attacker's own source on the criterion, else a material sentence on it, else a
  framing that names the open gap (which the judge then flags as unsupported). The strongest claim not attacked
  is acknowledged;
- the judge scores each option on each criterion from the evidence base: 3 when neither option has a source on
  it, 3 + (1 or 2) for an option with sources, 2 for an option without when the other has some; a claim whose
  rebuttal collapsed loses 1 point. A rebuttal's effectiveness is 2, +1 when the target cites no evidence, -1
  when it cites two or more, +1 when the counter names a source or a material sentence, +1 when it has a
  figure; COLLAPSE at 4 or more (a mislabelled "missing evidence" attack on a sourced claim is a strawman: 1).
  The audit lists every argument without evidence (unsupported), every rebuttal whose counter names neither a
  source nor a material sentence, every risk of the other option spun out of that option's own source on a
  criterion where it scores no worse (strawman), and the hedges the protocol flagged (pulled punches).
  The scorecard is exact, unless `{"judge_slip": true}`: one weighted cell and total A are off by the same
  amount. The recommendation follows the higher recomputed total (a tie goes to A); `its_close` is true exactly
  when the totals differ by at most 5 % of the larger one. Rebuttals are scored in team mode only; in single
  mode, and for an option without an advocate, the scores come from the evidence base alone.

The (seed, key) random source only picks among equivalent phrasings; no score or choice depends on it. Each
answer is given in its step's schema shape (one property per criterion, per risk, per stakeholder, per attack, per
rebuttal id; no claim ids, criteria or quotes), which the protocol's `accept` maps to the stored shape.

`Run.backend_options` switches: `{"hedge": true}`, `{"judge_slip": true}`; `fail` / `flaky` as for every
simulated run (see debates/agents/simulated.py)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from debates.agents.base import AgentRequest
from debates.agents.simulated import material_sentences
from debates.engine import registry
from debates.protocols.comparative import protocol as proto
from debates.protocols.comparative import schema
from debates.protocols.schemas import property_names

Item = Mapping[str, Any]

# Words of a criterion's name that say nothing on their own ("Team familiarity" is about familiarity).
GENERIC = {"team", "quality", "effort", "level", "overall", "time", "total", "general"}
# Stem (first 5 letters of a criterion word) -> further substrings that show a source bears on it.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "cost": ("price", "pricing", "$", "€", "£", "budget", "licen", "spend", "cheap", "expens", "per month"),
    "perfo": ("latenc", "throughput", "load", "messages per second", "speed", "fast", "p99", "benchmark"),
    "speed": ("fast", "latenc", "throughput", "load", "quick", "perfo", "benchmark", "p99"),
    "migra": ("migrat", "moved", "cutover", "port "),
    "opera": ("on-call", "incident", "maintenance", "retention", "ops ", "operat"),
    "burde": ("on-call", "incident", "maintenance", "toil"),
    "famil": ("familiar", "experience", "skill", "already operate", "know"),
    "prefe": ("prefer", "survey", "favour", "favor"),
    "stabi": ("stable", "funding", "revenue", "acquisition", "runway", "profitab"),
    "featu": ("feature", "capabilit", "functionality"),
    "compl": ("complex", "simpl"),
    "integ": ("api", "integrat", "sdk", "connector", "plugin"),
    "suppo": ("support", "sla", "response time"),
    "maint": ("maintain", "maintenance", "upgrade"),
    "exten": ("extens", "plugin", "extend"),
    "devel": ("developer", "ergonom"),
    "commu": ("community", "ecosystem", "contributor"),
    "ecosy": ("community", "ecosystem", "contributor"),
    "learn": ("learning", "onboard", "ramp"),
    "strat": ("strateg", "alignment", "roadmap"),
    "rever": ("revers", "rollback", "lock-in", "exit"),
    "buy-i": ("buy-in", "stakeholder", "sponsor"),
    "value": ("payback", "value", "roi"),
    "risk": ("risk", "incident", "outage"),
}
HORIZON = {"A": "the next 2-3 years", "B": "the next 6-12 months"}
LENS_GAIN = {
    "A": (
        "That advantage compounds over the next 2-3 years as volume and the ecosystem grow.",
        "It is the durable position the organisation needs for the next 2-3 years.",
        "It scales with the organisation instead of being outgrown within 2-3 years.",
    ),
    "B": (
        "That pays off in the next 6-12 months, before any long-term promise has to be tested.",
        "It lands inside the next 6-12 months with the team we have today.",
        "It lowers delivery risk in the next 6-12 months, when the plan is most exposed.",
    ),
}
THIN_CLAIMS = {
    "A": (
        "{name} positions the organisation best on {criterion} for the next 2-3 years",
        "On {criterion}, {name} is the durable choice for the next 2-3 years",
    ),
    "B": (
        "{name} delivers on {criterion} within the next 6-12 months",
        "On {criterion}, {name} is the choice that works this year, not in theory",
    ),
}
CITED_CLAIMS = (
    "{name} is the stronger choice on {criterion}: {fact}",
    "On {criterion}, the evidence favours {name}: {fact}",
)
THIN_WHY = {
    "A": "{name} is built for where the organisation is going: its trajectory on {criterion} keeps improving, "
    "and choices made now on {criterion} set the ceiling for the next 2-3 years.",
    "B": "{name} is ready now: on {criterion} it asks for no new platform skills, so the team keeps shipping "
    "through the next 6-12 months.",
}
THEIRS_CRITIQUE = {
    "A": "that describes where it stands today, not where it will be in 2-3 years",
    "B": "that does not turn into delivered work within the next 6-12 months",
}
RISKS = {
    "A": (
        "{other} locks the organisation into a path on {criterion} that gets costlier to unwind after year one",
        "{other} is sized for today on {criterion} and leaves no headroom for 2-3 years of growth",
        "{other} leaves {criterion} dependent on a roadmap with no long-term commitment behind it",
    ),
    "B": (
        "{other} puts {criterion} at risk during the next 6-12 months while the team absorbs a new platform",
        "{other} front-loads rework on {criterion} before any benefit lands this year",
        "{other_poss} case on {criterion} rests on future promises that delivery cannot bank on this quarter",
    ),
}
TRADE_OFF = {
    "A": "The claim counts the speed of the first 6-12 months on {criterion} and ignores what that shortcut "
    "costs in years two and three, when {name_poss} position keeps improving.",
    "B": "The claim counts a 2-3 year upside on {criterion} and ignores the price of getting there: migration "
    "and learning in the next 6-12 months, which {name} avoids.",
}
# Said plainly by an advocate with nothing to cite: no material and no evidence base were given.
NO_GROUNDS = "No material or evidence was given for this decision, so this rests on the lens alone."
MITIGATIONS = (
    "Run a time-boxed pilot on {criterion} with an exit checkpoint before the full commitment.",
    "Set a measurable {criterion} target for the first two quarters and review it with the decision owner.",
    "Keep the current setup running in parallel until {criterion} is proven in production.",
)


# --- text helpers ---------------------------------------------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip(" ,;:") + "…"


def _sentence(text: str) -> str:
    """One sentence as `sentences_count` counts it: no inner sentence break, one full stop at the end."""
    text = " ".join(str(text).split())
    text = re.sub(r"[.!?…]+(?=[\"'”’)]*\s)", "", text)
    text = text.strip().rstrip(".!?…,;: ")
    return (text[:1].upper() + text[1:] + ".") if text else "."


def _fact(text: str, words: int = 18) -> str:
    """A source's summary as a clause inside a sentence."""
    parts = " ".join(str(text).split()).rstrip(".!?").split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def _poss(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def _hedge_free(text: str) -> bool:
    return not proto.hedges_find({"text": text})


def _has_figure(text: str) -> bool:
    return bool(re.search(r"\d", text))


# --- what bears on a criterion -------------------------------------------------------------------------------


def _stem(word: str) -> str:
    return word[:5] if len(word) >= 5 else word


def criterion_terms(name: str) -> list[str]:
    words = [w for w in re.findall(r"[a-z][a-z\-]*", name.lower()) if len(w) >= 3]
    specific = [w for w in words if w not in GENERIC] or words
    terms: list[str] = []
    for word in specific:
        stem = _stem(word)
        terms.append(stem)
        terms += SYNONYMS.get(stem, ())
    return list(dict.fromkeys(terms))


def bears_on(text: str, criterion: str) -> bool:
    lowered = f" {text.lower()} "
    return any(
        re.search(rf"\b{re.escape(term)}", lowered) if len(term) <= 4 and term.isalpha() else term in lowered
        for term in criterion_terms(criterion)
    )


def relevant(evidence: Sequence[Item], criterion: str, options: Sequence[str]) -> list[Item]:
    return [
        e for e in evidence if e["option"] in options and bears_on(f"{e['source']} {e['summary']}", criterion)
    ]


def _mentions(text: str, name: str) -> bool:
    return proto._norm(name) in proto._norm(text)


def _material_on(request: AgentRequest, criterion: str, own: str, other: str) -> str:
    """The first material sentence on the criterion that is about the advocate's option (or neither option)."""
    if not request.view.material.strip():
        return ""
    candidates = [
        s
        for s in material_sentences(request.view.material)
        if bears_on(s, criterion) and _hedge_free(s) and not (_mentions(s, other) and not _mentions(s, own))
    ]
    candidates.sort(key=lambda s: (not _mentions(s, own), not _has_figure(s)))
    return candidates[0] if candidates else ""


def _points(criteria: Sequence[Item]) -> dict[str, int]:
    return {proto._norm(c["name"]): proto.WEIGHTS[c["weight"]] for c in criteria}


def _setup(request: AgentRequest) -> proto.Setup:
    protocol = registry.get("comparative")
    assert isinstance(protocol, proto.Comparative)
    return protocol.setup(request.view)


def _prefers(position: str, letter: str, name: str) -> bool:
    if _mentions(position, name):
        return True
    verbs = r"(?i:prefers?|favou?rs?|wants?|backs?|leans? towards?)"
    return bool(re.search(rf"\b{verbs}\s+(?:(?i:option)\s+)?{letter}\b", position))


# --- round 1: openings ------------------------------------------------------------------------------------------


def _opening(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    option, other = str(context["option"]), str(context["other"])
    name, other_name = str(context["option_name"]), str(context["other_name"])
    criteria, evidence = context["criteria"], context["evidence"]
    usable = [e for e in evidence if _hedge_free(e["summary"])]
    hedge_target = ""
    if request.options.get("hedge") and option == "B":
        hedge_target = min(criteria, key=lambda c: (c["points"], -criteria.index(c)))["name"]

    # No material and no evidence base: the case rests on the run's own options and criteria, and says so.
    bare = not evidence and not request.view.material.strip()
    arguments = []
    for number, criterion in enumerate(criteria, start=1):
        label = criterion["name"]
        mine = relevant(usable, label, (option, "both"))
        own_only = [e for e in mine if e["option"] == option]
        theirs = relevant(usable, label, (other,))
        sentence = _material_on(request, label, name, other_name)
        gain = rng.choice(LENS_GAIN[option])
        if own_only:
            lead = own_only[0]
            claim = rng.choice(CITED_CLAIMS).format(name=name, criterion=label, fact=_fact(lead["summary"]))
            why = f"{lead['source']} ({lead['type']}) reports: {_sentence(_fact(lead['summary'], 40))} {gain}"
            for extra in mine[1:3]:
                why += f" {extra['source']} adds: {_sentence(_fact(extra['summary'], 24))}"
        else:
            claim = rng.choice(THIN_CLAIMS[option]).format(name=name, criterion=label)
            why = THIN_WHY[option].format(name=name, criterion=label) + f" {gain}"
            if bare:
                why += f" {NO_GROUNDS}"
        if sentence:
            why += f" The material agrees: “{_cut(sentence, 300)}”"
        if label == hedge_target:
            why += f" On balance this gives {name} a slight edge on {label}."
        if theirs:
            short = (
                f"{_poss(other_name)} own source ({theirs[0]['source']}: {_fact(theirs[0]['summary'], 20)})"
            )
            falls = f"{short} is no answer: {THEIRS_CRITIQUE[option]}."
        elif bare:
            falls = (
                f"Nothing given for this decision shows {other_name} delivering on {label} either; its advocates "
                f"will have to argue it from assertion, and {HORIZON[option]} is where that gap shows."
            )
        else:
            falls = (
                f"Nothing in the evidence base shows {other_name} delivering on {label}; its advocates will have "
                f"to argue it from assertion, and {HORIZON[option]} is where that gap shows."
            )
        arguments.append(
            {
                "id": f"c{number}",
                "criterion": label,
                "claim": _cut(claim.rstrip(".") + ".", 400),
                "why_ours_scores_well": _cut(why, 1500),
                "why_theirs_falls_short": _cut(falls, 1500),
                "evidence": [e["source"] for e in own_only + [e for e in mine if e["option"] == "both"]][:5]
                if own_only
                else [],
            }
        )

    ranked = sorted(criteria, key=lambda c: (-c["points"], criteria.index(c)))
    risks = []
    for number in range(3):
        criterion = ranked[number % len(ranked)]
        label = criterion["name"]
        text = RISKS[option][number].format(other=other_name, other_poss=_poss(other_name), criterion=label)
        theirs = relevant(usable, label, (other,))
        mine = relevant(usable, label, (option,))
        if theirs:
            support = f"Their own source, {theirs[0]['source']}, says {_fact(theirs[0]['summary'], 30)}"
        elif mine:
            support = (
                f"{_poss(name)} own source, {mine[0]['source']}, reports: {_fact(mine[0]['summary'], 24)}; no "
                f"source shows {other_name} matching it"
            )
        elif gaps := [g for g in context["evidence_gaps"] if bears_on(g, label)]:
            support = f"The evidence base has no source on it for {other_name}; open gap: {gaps[0]}"
        else:
            support = f"The evidence base has no source on {label} for {other_name}"
        risks.append({"risk": _cut(_sentence(text), 600), "evidence": _cut(_sentence(support), 600)})

    best = next(
        (a for a in sorted(arguments, key=lambda a: -len(a["evidence"])) if a["evidence"]), arguments[0]
    )
    stakeholders = []
    for person in context["stakeholders"]:
        who, position = person["name"], person.get("position", "")
        notes = person.get("notes", "")
        known = "; ".join(
            [person.get("confidence", "inferred")] + ([notes] if notes and _hedge_free(notes) else [])
        )
        # Addressed in the second person: the brief and the page show each response behind the stakeholder's name.
        if _prefers(position, other, other_name) and not _prefers(position, option, name):
            response = (
                f"Your preference for {other_name} ({known}) is understandable, and worth reconsidering: "
                f"{best['claim']} {rng.choice(LENS_GAIN[option])}"
            )
        elif _prefers(position, option, name):
            response = (
                f"Your support for {name} ({known}) is borne out by the evidence: {best['claim']} "
                f"We will hold {name} to that over {HORIZON[option]}."
            )
        else:
            stated = f" ({_cut(position, 120)})" if position and _hedge_free(position) else ""
            response = (
                f"You have stated no preference between the two{stated}. What matters to you is what happens "
                f"over {HORIZON[option]}: {best['claim']}"
            )
        stakeholders.append({"stakeholder": who, "response": _cut(response, 800)})

    cited = [a for a in arguments if a["evidence"]]
    leads = ", ".join(a["criterion"] for a in cited[:3]) or ", ".join(c["name"] for c in ranked[:2])
    strongest = next((e for e in usable if e["option"] == option), None)
    closing = " ".join(
        (
            _sentence(f"{name} is the right choice because it leads on {leads}"),
            _sentence(
                f"The strongest evidence is {strongest['source']}: {_fact(strongest['summary'], 22)}"
                if strongest
                else f"With no material and no evidence given, this case rests on {proto.LENS_SHORT[option]} alone"
                if bare
                else f"{name} is built for {HORIZON[option]}, which is the horizon this decision turns on"
            ),
            _sentence(f"{risks[0]['risk'].rstrip('.')}, so choose {name}"),
        )
    )
    assert proto.sentences_count(closing) == 3, closing
    return {"arguments": arguments, "risks_of_other": risks, "stakeholders": stakeholders, "closing": closing}


# --- round 2: rebuttals ---------------------------------------------------------------------------------------


def _weakest(arguments: Sequence[Item], points: Mapping[str, int]) -> list[Item]:
    return sorted(
        arguments,
        key=lambda a: (len(a["evidence"]), points.get(proto._norm(a["criterion"]), 2), arguments.index(a)),
    )


def _rebuttal(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    option, opponent = str(context["option"]), str(context["opponent"])
    name, opponent_name = str(context["option_name"]), str(context["opponent_name"])
    setup = _setup(request)
    points = _points(setup.criteria)
    usable = [e for e in setup.evidence if _hedge_free(e["summary"])]
    arguments = list(context["opponent_opening"]["arguments"])
    targets = _weakest(arguments, points)[:3]

    rebuttals = []
    for claim in targets:
        label = claim["criterion"]
        mine = relevant(usable, label, (option,))
        theirs = [e for e in usable if e["source"] in claim["evidence"] and e["option"] == opponent]
        sentence = _material_on(request, label, name, opponent_name)
        if not claim["evidence"]:
            failure = "missing evidence"
            why = (
                f"Claim {claim['id']} on {label} cites no source from the evidence base: “{_fact(claim['claim'], 24)}” "
                "is asserted without a figure, a test or a document behind it."
            )
        elif mine and len(claim["evidence"]) == 1 and _has_figure(mine[0]["summary"]):
            failure = "cherry-picked data"
            why = (
                f"Claim {claim['id']} leans on one source ({claim['evidence'][0]}) and leaves out "
                f"{mine[0]['source']}, which points the other way on {label}."
            )
        else:
            failure = rng.choice(("logic gap", "ignores a trade-off"))
            if failure == "logic gap":
                basis = theirs[0]["summary"] if theirs else claim["claim"]
                why = (
                    f"Even granting that {_fact(basis, 24)}, it does not follow that {opponent_name} wins on "
                    f"{label}: the step from that fact to the conclusion is never argued."
                )
            else:
                why = TRADE_OFF[option].format(criterion=label, name=name, name_poss=_poss(name))
        if mine:
            counter = f"{mine[0]['source']} ({mine[0]['type']}): {_cut(mine[0]['summary'], 600)}"
            if len(mine) > 1:
                counter += f" Also {mine[1]['source']}: {_cut(mine[1]['summary'], 300)}"
        elif sentence:
            counter = f"The material states: “{_cut(sentence, 600)}”"
        else:
            gaps = [g for g in setup.gaps if bears_on(g, label)]
            gap = f" (open gap: {gaps[0]})" if gaps else ""
            counter = (
                f"Stronger framing: through the lens of {proto.LENS_SHORT[option]}, what counts on {label} is "
                f"{HORIZON[option]}, and the claim's evidence says nothing about that horizon{gap}."
            )
        rebuttals.append(
            {
                "claim_id": claim["id"],
                "quoted_claim": claim["claim"],
                "failure": failure,
                "why_it_fails": _cut(why, 1500),
                "counter_evidence": _cut(counter, 1500),
            }
        )
    attacked = {t["id"] for t in targets}
    rest = [a for a in reversed(_weakest(arguments, points)) if a["id"] not in attacked]
    return {"rebuttals": rebuttals, "acknowledged_strong": [rest[0]["id"]] if rest else []}


# --- round 3: the judge -----------------------------------------------------------------------------------------


def _sourced(text: str, evidence: Sequence[Item], sentences: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(e["source"].lower() in lowered for e in evidence) or any(s in text for s in sentences)


def _effectiveness(
    rebuttal: Item, claim: Item | None, evidence: Sequence[Item], sentences: Sequence[str]
) -> int:
    cited = len(claim["evidence"]) if claim else 0
    if rebuttal["failure"] == "missing evidence" and cited:
        return 1  # attacks a claim for lacking evidence it has: a strawman
    score = 2 + (1 if cited == 0 else 0) - (1 if cited >= 2 else 0)
    score += 1 if _sourced(rebuttal["counter_evidence"], evidence, sentences) else 0
    score += 1 if _has_figure(rebuttal["counter_evidence"]) else 0
    return max(1, min(5, score))


def _base_score(evidence: Sequence[Item], label: str, option: str) -> tuple[int, int]:
    """(score 1-5 from the evidence base alone, number of the option's own sources on the criterion)."""
    own = len(relevant(evidence, label, (option,)))
    other = len(relevant(evidence, label, (proto.OTHER[option],)))
    if own:
        return 3 + min(own, 2), own
    return (2 if other else 3), own


def _judgement(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    names = context["options"]
    criteria, evidence = context["criteria"], context["evidence"]
    openings: Mapping[str, Item | None] = context["openings"]
    missing = set(context["missing"])
    mode = context["mode"]
    sentences = material_sentences(request.view.material) if request.view.material.strip() else []
    claims = {
        o: {a["id"]: a for a in (openings[o] or {}).get("arguments", [])} if openings.get(o) else {}
        for o in "AB"
    }

    # Rebuttal analysis: effectiveness and verdict per rebuttal.
    analysis: list[dict[str, Any]] = []
    collapsed: dict[str, set[str]] = {"A": set(), "B": set()}
    strawmen: list[dict[str, str]] = []
    new_unsupported: list[dict[str, str]] = []
    for item in context["rebuttals"]:
        claim = claims[item["target"]].get(item["claim_id"])
        effect = _effectiveness(item, claim, evidence, sentences)
        verdict = "COLLAPSE" if effect >= 4 else "SURVIVE"
        if verdict == "COLLAPSE":
            collapsed[item["target"]].add(proto._norm(item["criterion"]))
        if effect == 1 and item["failure"] == "missing evidence":
            strawmen.append(
                {
                    "advocate": item["by"],
                    "instance": _cut(
                        f"Rebuttal {item['id']} says claim {item['claim_id']} has no evidence, but it cites "
                        f"{', '.join(claim['evidence']) if claim else 'sources'}.",
                        600,
                    ),
                }
            )
        if not _sourced(item["counter_evidence"], evidence, sentences):
            new_unsupported.append(
                {
                    "advocate": item["by"],
                    "instance": _cut(
                        f"Rebuttal {item['id']} ({item['criterion']}) answers with a framing no source backs: "
                        f"“{_fact(item['counter_evidence'], 24)}”",
                        600,
                    ),
                }
            )
        analysis.append(
            {
                "rebuttal_id": item["id"],
                "targeted_claim": _cut(item["quoted_claim"], 400),
                "rebuttal": _cut(f"{item['failure']}: {item['why_it_fails']}", 600),
                "effectiveness": effect,
                "verdict": verdict,
            }
        )

    # Criterion scores.
    scores, rows = [], []
    for criterion in criteria:
        label, weight = criterion["name"], criterion["points"]
        key = proto._norm(label)
        per: dict[str, int] = {}
        why: dict[str, str] = {}
        strength: dict[str, int] = {}
        for option in "AB":
            score, own = _base_score(evidence, label, option)
            arg = next((a for a in claims[option].values() if proto._norm(a["criterion"]) == key), None)
            sources = [e["source"] for e in relevant(evidence, label, (option,))]
            basis = (
                f"{len(sources)} source{'s' if len(sources) != 1 else ''} on {label} ({', '.join(sources[:3])})"
                if sources
                else f"no source of its own on {label}"
            )
            if option in missing:
                text = f"{names[option]} is scored from the evidence alone: {basis}"
            elif arg is not None and key in collapsed[option]:
                score = max(1, score - 1)
                text = f"{names[option]} has {basis}, and its claim {arg['id']} collapsed under rebuttal"
            elif arg is not None and arg["evidence"]:
                text = f"{_poss(names[option])} claim {arg['id']} rests on {basis}"
            else:
                text = f"{_poss(names[option])} claim {arg['id'] if arg else ''} is asserted without evidence; {basis}"
            per[option], why[option] = score, _sentence(text)
            strength[option] = (len(arg["evidence"]) if arg else 0) - (2 if key in collapsed[option] else 0)
        if missing:
            convincing = "n/a"
        else:
            convincing = "even" if strength["A"] == strength["B"] else max("AB", key=lambda o: strength[o])
        scores.append(
            {
                "criterion": label,
                "score_a": per["A"],
                "score_b": per["B"],
                "justification_a": _cut(why["A"], 600),
                "justification_b": _cut(why["B"], 600),
                "more_convincing": convincing,
            }
        )
        rows.append(
            {
                "criterion": label,
                "weight": weight,
                "weighted_a": per["A"] * weight,
                "weighted_b": per["B"] * weight,
            }
        )
    total_a, total_b = sum(r["weighted_a"] for r in rows), sum(r["weighted_b"] for r in rows)
    if request.options.get("judge_slip"):
        row = max(rows, key=lambda r: r["weight"])
        slip = 1 if row["weighted_a"] <= 14 else -1
        row["weighted_a"] += slip
        judge_total_a = total_a + slip
    else:
        judge_total_a = total_a

    pick = "A" if total_a >= total_b else "B"
    loser = proto.OTHER[pick]
    top = max(total_a, total_b)
    gap = round(100 * abs(total_a - total_b) / top, 1) if top else 0.0
    close = 100 * abs(total_a - total_b) <= proto.CLOSE_PERCENT * top  # exact, not the rounded gap
    decisive = ""
    if analysis:
        decisive = max(analysis, key=lambda a: (a["effectiveness"], -analysis.index(a)))["rebuttal_id"]
    diff = {s["criterion"]: s[f"score_{pick.lower()}"] - s[f"score_{loser.lower()}"] for s in scores}
    leads = [c for c, d in diff.items() if d > 0]
    trails = [c for c, d in diff.items() if d < 0]
    even = [c for c, d in diff.items() if d == 0]

    # The audit.
    unsupported = [
        {
            "advocate": option,
            "instance": _cut(f"{arg['id']} ({arg['criterion']}): “{arg['claim']}” cites no source.", 600),
        }
        for option in "AB"
        for arg in claims[option].values()
        if not arg["evidence"]
    ][:10]
    by_criterion = {proto._norm(s["criterion"]): s for s in scores}
    for option in "AB":
        other = proto.OTHER[option]
        for number, risk in enumerate((openings.get(option) or {}).get("risks_of_other", []), start=1):
            named = [
                c["name"]
                for c in criteria
                if re.search(rf"\b{re.escape(c['name'].lower())}\b", risk["risk"].lower())
            ]
            theirs = [
                e["source"] for e in evidence if e["option"] == other and e["source"] in risk["evidence"]
            ]
            if not named or not theirs:
                continue
            scored = by_criterion[proto._norm(named[0])]
            mine, their = scored[f"score_{option.lower()}"], scored[f"score_{other.lower()}"]
            if their >= mine:  # the risk is spun out of the other option's own favourable source
                strawmen.append(
                    {
                        "advocate": option,
                        "instance": _cut(
                            f"Risk {number} (“{risk['risk']}”) is drawn from {_poss(names[other])} own source "
                            f"{theirs[0]}, yet the evidence scores {names[other]} no worse on {named[0]} "
                            f"({their} against {mine}).",
                            600,
                        ),
                    }
                )
    pulled = [
        {"advocate": option, "instance": _cut(f"“{h['phrase']}” in {h['where']}: …{h['excerpt']}…", 600)}
        for option in "AB"
        for h in context["hedging"].get(option, [])
    ][:10]

    # Recommendation, conditions, questions, risks, zones, summary.
    rationale = [
        f"{names[pick]} has the higher weighted total ({max(total_a, total_b)} against {min(total_a, total_b)})"
        + (f" and leads on {', '.join(leads[:3])}" if leads else ""),
    ]
    if decisive:
        item = next(r for r in context["rebuttals"] if r["id"] == decisive)
        rationale.append(
            f"The most decisive rebuttal was {decisive}, advocate {item['by']}'s attack on claim "
            f"{item['claim_id']} of {names[item['target']]} ({item['criterion']})"
        )
    if close:
        rationale.append(f"The totals are within {proto.CLOSE_PERCENT:g} %, so the margin is narrow but real")
    elif trails:
        rationale.append(
            f"{names[loser]} is ahead on {', '.join(trails[:2])}, which does not outweigh the rest"
        )
    conditions: dict[str, list[str]] = {}
    for option in "AB":
        ahead = [
            s["criterion"]
            for s in scores
            if s[f"score_{option.lower()}"] > s[f"score_{proto.OTHER[option].lower()}"]
        ]
        # Each condition is what follows "Choose <option> if", which the brief and the page write themselves.
        items = [f"{c} weighs more than this scorecard assumes." for c in ahead[:2]]
        items.append(
            f"{HORIZON[option]} matters more to the organisation than {HORIZON[proto.OTHER[option]]}."
        )
        if len(items) < 2:
            items.append("new evidence closes its gaps on the High-weight criteria.")
        conditions[option] = items[:3]
    questions = [
        _cut(f"What would close this gap: {gap_text.rstrip('.?')}?", 400)
        for gap_text in context["evidence_gaps"]
    ][:4]
    for s in scores:
        if len(questions) >= 4:
            break
        if not relevant(evidence, s["criterion"], ("A", "B")):
            questions.append(
                f"No source measures {s['criterion']} for either option: what would a pilot show?"
            )
    points = _points(criteria)
    weakest = sorted(scores, key=lambda s: (s[f"score_{pick.lower()}"], -points[proto._norm(s["criterion"])]))
    fallback = (
        f"How would the totals move if {names[loser]} brought a source on {weakest[-1]['criterion']}?",
        f"Who carries the cost if {names[pick]} underdelivers on {weakest[0]['criterion']}?",
    )
    questions += list(fallback[: max(0, 2 - len(questions))])
    opponent_risks = (openings.get(loser) or {}).get("risks_of_other", [])
    risks = []
    for s in weakest[:3]:
        score = s[f"score_{pick.lower()}"]
        pattern = re.compile(rf"\b{re.escape(s['criterion'].lower())}\b")
        raised = [r["risk"] for r in opponent_risks if pattern.search(r["risk"].lower())]
        text = raised[0] if raised else f"{names[pick]} underdelivers on {s['criterion']} (scored {score}/5)."
        risks.append(
            {
                "risk": _cut(text, 600),
                "likelihood": "H" if score <= 2 else ("M" if score == 3 else "L"),
                "mitigation": _cut(rng.choice(MITIGATIONS).format(criterion=s["criterion"]), 600),
            }
        )
    if len(risks) < 2:  # a single criterion: one risk from the scores, one from the thin evidence base
        risks.append(
            {
                "risk": f"The evidence base for {names[pick]} is thin; its scores may not hold in production.",
                "likelihood": "M",
                "mitigation": MITIGATIONS[0].format(criterion=criteria[0]["name"]),
            }
        )
    agreement = [
        f"{s['criterion']}: both options score {s['score_a']}/5." for s in scores if s["criterion"] in even
    ][:6]
    contested = [
        f"{s['criterion']}: {names['A']} {s['score_a']}/5 against {names['B']} {s['score_b']}/5"
        + (
            " (a claim collapsed under rebuttal)."
            if proto._norm(s["criterion"]) in collapsed["A"] | collapsed["B"]
            else "."
        )
        for s in sorted(scores, key=lambda s: -abs(s["score_a"] - s["score_b"]))
        if s["criterion"] not in even
    ][:6]
    rounds = {
        "team": f"{sum(1 for a in analysis if a['verdict'] == 'COLLAPSE')} of {len(analysis)} rebuttals collapsed "
        f"the claim they targeted",
        "subagent": "The advocates argued in one round, without rebuttals",
        "single": "No advocate argued, so both options were scored from the evidence base alone",
    }[mode]
    widest = max(scores, key=lambda s: abs(s["score_a"] - s["score_b"]))
    summary = [
        f"Recommend {names[pick]} for this decision: it scores {max(total_a, total_b)} against "
        f"{min(total_a, total_b)} on the weighted scorecard ({gap} % apart)",
        rounds,
        f"The widest gap is on {widest['criterion']} ({widest['score_a']} against {widest['score_b']})"
        if widest["score_a"] != widest["score_b"]
        else "The two options score level on every criterion",
    ]
    if not evidence and not sentences:
        summary.append(
            "No material and no sources were given for this decision, so every score rests on the advocates' "
            "unsupported assertions"
        )
    if missing and mode != "single":
        summary.append(
            f"{' and '.join(names[o] for o in sorted(missing))} had no advocate and was scored from the evidence alone"
        )
    return {
        "executive_summary": " ".join(_sentence(s) for s in summary),
        "criterion_scores": scores,
        "rebuttal_analysis": analysis,
        "audit": {
            "strawman": strawmen[:10],
            "unsupported": unsupported,
            "new_unsupported_in_rebuttals": new_unsupported[:10],
            "pulled_punches": pulled,
        },
        "scorecard": {"rows": rows, "total_a": judge_total_a, "total_b": total_b},
        "recommendation": {
            "option": pick,
            "its_close": close,
            "rationale": _cut(" ".join(_sentence(r) for r in rationale), 1200),
            "decisive_rebuttal": decisive if mode == "team" else "",
        },
        "decision_conditions": {"choose_a_if": conditions["A"], "choose_b_if": conditions["B"]},
        "open_questions": questions[:4],
        "key_risks": risks,
        "agreement_zones": agreement,
        "contested_zones": contested,
    }


# --- the answers as a model gives them (the step's schema; the protocol's `accept` maps them back) ----------------


def _opening_answer(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    context = request.step.context
    opening = _opening(rng, request)
    cites = bool(schema.evidence_sources(context["evidence"]))
    criteria = property_names([a["criterion"] for a in opening["arguments"]])
    answer: dict[str, Any] = {
        "arguments": {
            criteria[a["criterion"]]: {
                "claim": a["claim"],
                "why_ours_scores_well": a["why_ours_scores_well"],
                "why_theirs_falls_short": a["why_theirs_falls_short"],
                **({"evidence": a["evidence"]} if cites else {}),
            }
            for a in opening["arguments"]
        },
        "risks_of_other": dict(zip(schema.RISK_KEYS, opening["risks_of_other"], strict=True)),
    }
    if schema.stakeholder_names(context["stakeholders"]):
        names = property_names([s["stakeholder"] for s in opening["stakeholders"]])
        answer["stakeholders"] = {names[s["stakeholder"]]: s["response"] for s in opening["stakeholders"]}
    return {**answer, "closing": opening["closing"]}


def _rebuttal_answer(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    given = _rebuttal(rng, request)
    attacks = [{k: v for k, v in r.items() if k != "quoted_claim"} for r in given["rebuttals"]]
    return {
        "rebuttals": dict(zip(schema.rebuttal_keys(len(attacks)), attacks, strict=True)),
        "acknowledged_strong": given["acknowledged_strong"],
    }


def _judgement_answer(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    judgement = _judgement(rng, request)
    recommendation = dict(judgement["recommendation"])
    criteria = property_names([s["criterion"] for s in judgement["criterion_scores"]])
    answer: dict[str, Any] = {
        "executive_summary": judgement["executive_summary"],
        "criterion_scores": {
            criteria[s["criterion"]]: {k: v for k, v in s.items() if k != "criterion"}
            for s in judgement["criterion_scores"]
        },
    }
    if request.step.context["rebuttals"]:
        answer["rebuttal_analysis"] = {
            a["rebuttal_id"]: {"effectiveness": a["effectiveness"], "verdict": a["verdict"]}
            for a in judgement["rebuttal_analysis"]
        }
    else:
        recommendation.pop("decisive_rebuttal")
    card = judgement["scorecard"]
    rows = {criteria[r["criterion"]]: {k: v for k, v in r.items() if k != "criterion"} for r in card["rows"]}
    return {
        **answer,
        "audit": judgement["audit"],
        "scorecard": {"rows": rows, "total_a": card["total_a"], "total_b": card["total_b"]},
        "recommendation": recommendation,
        **{
            k: judgement[k]
            for k in (
                "decision_conditions",
                "open_questions",
                "key_risks",
                "agreement_zones",
                "contested_zones",
            )
        },
    }


GENERATORS: dict[tuple[str, str], Callable[[random.Random, AgentRequest], dict[str, Any]]] = {
    ("comparative", "opening"): _opening_answer,
    ("comparative", "rebuttal"): _rebuttal_answer,
    ("comparative", "judgement"): _judgement_answer,
}
