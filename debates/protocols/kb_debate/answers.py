"""A seat's answer as it is committed (seed 002): the shape it was asked in (schema.*_schema) mapped to the
stored shape, what code knows filled in (the entry and turn a debater answers, the entry a pending objection is
about, the callout a re-raised closed claim needs), and what no schema can check flagged. An item that would put
the ledger wrong (a ruling the KB does not back, a deflection the citations do not show, an objection without new
evidence) is left out of the payload and flagged; everything else is kept and flagged.

A flag's `where` is the item's path in the stored payload ("claims.1.presented_as"), or the list's name for an
item left out ("rulings")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from debates.contract import Accepted, Flag, KbView, RunView
from debates.protocols.kb_debate.console import closure_fixes
from debates.protocols.kb_debate.ledger import RANK, Ledger, verdict_errors
from debates.protocols.kb_debate.schema import verdict_parts
from debates.protocols.schemas import at_most, said

# The stored shape of a proposed KB change: every kind's fields, those of other kinds empty.
MUTATION_FIELDS: dict[str, Any] = {
    "arg_id": "",
    "to": "",
    "src": "",
    "edge_type": "",
    "target": "",
    "source": "",
    "title": "",
    "contradiction_type": "",
    "arguments": [],
    "text": "",
    "authors": [],
    "year": "",
    "source_type": "",
    "journal_or_source": "",
    "url": "",
    "doi": "",
    "key_finding": "",
    "disputes": "",
    "criticism": "",
    "note": "",
}
CLAIMS_AT_MOST = {"opening": 5, "turn": 4}


def _distinct(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


# --- claims and KB changes, shared by every turn that makes them --------------------------------------------------


def claims_stored(
    claims: Sequence[BaseModel], limit: int, kb: KbView, flags: list[Flag]
) -> list[dict[str, Any]]:
    """The claims as the ledger reads them; an untraced claim and one presented above the rating of what it
    cites are flagged (the ledger also flags them to the moderator)."""
    stored = []
    for index, claim in enumerate(at_most(claims, limit, "claims", flags, "claims")):
        where = f"claims.{index}"
        args = at_most(_distinct(claim.args), 8, f"{where}.args", flags, "argument ids")  # type: ignore[attr-defined]
        sources = at_most(
            _distinct(getattr(claim, "sources", [])), 5, f"{where}.sources", flags, "source paths"
        )
        presented = str(claim.presented_as)  # type: ignore[attr-defined]
        if not args and not sources:
            flags.append(
                Flag("untraced", where, "Cites no argument or source: the ledger keeps it as unclaimable.")
            )
        rated = [(RANK.get(kb.arguments[a].status, 0), a) for a in args if a in kb.arguments]
        if rated and RANK.get(presented, 0) > min(rated)[0]:
            weakest = min(rated)[1]
            flags.append(
                Flag(
                    "above_rating",
                    f"{where}.presented_as",
                    f"Presented as {presented}, above the KB rating of {weakest} ({kb.arguments[weakest].status}).",
                )
            )
        stored.append(
            {
                "text": said(claim.text, f"{where}.text", flags, "claim"),  # type: ignore[attr-defined]
                "args": args,
                "sources": sources,
                "presented_as": presented,
            }
        )
    return stored


def mutations_stored(mutations: Sequence[BaseModel], kb: KbView, flags: list[Flag]) -> list[dict[str, Any]]:
    """The proposed KB changes in the stored shape (every kind's fields). A status-downgrade that is none (the
    rating it names is not lower than the argument's) is kept and flagged: the discipline refuses it and keeps
    the refusal as a finding."""
    stored = []
    for index, mutation in enumerate(at_most(mutations, 3, "mutations", flags, "KB changes")):
        where = f"mutations.{index}"
        answer = mutation.model_dump(mode="json")
        item = {"kind": answer["kind"], **MUTATION_FIELDS, **answer}
        item["justification"] = said(
            answer["justification"], f"{where}.justification", flags, "justification"
        )
        if "text" in answer:
            item["text"] = said(answer["text"], f"{where}.text", flags, "text")
        if "title" in answer:
            item["title"] = said(answer["title"], f"{where}.title", flags, "title")
        if "arguments" in answer:
            item["arguments"] = at_most(
                _distinct(answer["arguments"]), 6, f"{where}.arguments", flags, "argument ids"
            )
        if item["kind"] == "new-source":
            item["disputes"] = str(answer.get("disputes") or "")
            for name in ("key_finding", "note", "criticism"):
                if answer.get(name):
                    item[name] = said(answer[name], f"{where}.{name}", flags, name.replace("_", " "))
            item["authors"] = at_most(
                _distinct([a.strip() for a in answer.get("authors", []) if a.strip()]),
                8,
                f"{where}.authors",
                flags,
                "authors",
            )
            item["year"], item["url"], item["doi"] = (
                str(answer.get(k, "")).strip() for k in ("year", "url", "doi")
            )
            if not item["url"] and not item["doi"]:
                flags.append(
                    Flag(
                        "source_unlocatable",
                        f"{where}.url",
                        "A new source needs the URL it was read at or its DOI: the KB refuses it.",
                    )
                )
        argument = kb.arguments.get(str(item["arg_id"]))
        if item["kind"] == "status-downgrade" and argument is not None:
            to = str(item["to"])
            if to == argument.status or RANK.get(to, 0) > RANK.get(argument.status, 0):
                flags.append(
                    Flag(
                        "not_a_downgrade",
                        f"{where}.to",
                        f"{argument.arg_id} is {argument.status}: {to} is no downgrade; the KB refuses it.",
                    )
                )
        stored.append(item)
    return stored


# --- the openings and the debaters' turns ---------------------------------------------------------------------------


def opening_accept(answer: BaseModel, kb: KbView) -> Accepted:
    flags: list[Flag] = []
    payload = {
        "summary": said(answer.summary, "summary", flags, "summary"),  # type: ignore[attr-defined]
        "claims": claims_stored(answer.claims, CLAIMS_AT_MOST["opening"], kb, flags),  # type: ignore[attr-defined]
        "mutations": mutations_stored(answer.mutations, kb, flags),  # type: ignore[attr-defined]
    }
    return Accepted(payload, tuple(flags))


def _objection_stored(objection: Any, ledger: Ledger, flags: list[Flag]) -> dict[str, Any] | None:
    """The objection, when it may be heard: to a closed claim of the seat's not objected to before (the schema
    offers only those), with evidence not cited for it before."""
    if objection is None:
        return None
    entry = ledger.entries.get(objection.entry)
    if entry is None or not entry.closed or entry.objection is not None:
        flags.append(
            Flag("objection_refused", "objection", f"{objection.entry} cannot be objected to; left out.")
        )
        return None
    new_args = at_most(_distinct(objection.new_args), 5, "objection.new_args", flags, "argument ids")
    new_sources = at_most(
        _distinct(getattr(objection, "new_sources", [])), 5, "objection.new_sources", flags, "source paths"
    )
    known = set(entry.args) | set(entry.sources)
    if not [x for x in [*new_args, *new_sources] if x not in known]:
        flags.append(
            Flag(
                "objection_without_new_evidence",
                "objection",
                f"The objection to {entry.id}'s closure cites nothing not cited for it before; left out, the "
                "ruling stands.",
            )
        )
        return None
    return {
        "entry": entry.id,
        "text": said(objection.text, "objection.text", flags, "objection"),
        "new_args": new_args,
        "new_sources": new_sources,
    }


def turn_accept(context: Mapping[str, Any], answer: BaseModel, kb: KbView, ledger: Ledger) -> Accepted:
    """A debater's turn, answering the entry and turn it was handed (code records which)."""
    flags: list[Flag] = []
    payload = {
        "responds_to": {"entry": str(context["entry"]["id"]), "turn": int(context["answer_turn"])},
        "move": str(answer.move),  # type: ignore[attr-defined]
        "text": said(answer.text, "text", flags),  # type: ignore[attr-defined]
        "claims": claims_stored(answer.claims, CLAIMS_AT_MOST["turn"], kb, flags),  # type: ignore[attr-defined]
        "objection": _objection_stored(getattr(answer, "objection", None), ledger, flags),
        "mutations": mutations_stored(answer.mutations, kb, flags),  # type: ignore[attr-defined]
    }
    return Accepted(payload, tuple(flags))


# --- the moderator ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """A ruling or deflection the ledger and the KB do not bear out: refused to a human moderator (who can fix
    the form; `error` reads as the console shows it), left out of an agent's turn and flagged. `turns`: a
    deflection's turns to leave out (empty: the whole item)."""

    kind: str
    field: str
    index: int
    error: str
    turns: tuple[int, ...] = ()


def moderator_problems(
    rulings: Sequence[Mapping[str, Any]],
    deflections: Sequence[Mapping[str, Any]],
    mutations: Sequence[Mapping[str, Any]],
    ledger: Ledger,
    kb: KbView,
) -> list[Problem]:
    problems = []
    needs = {
        fix.index: fix
        for fix in closure_fixes(rulings, mutations, {a: arg.status for a, arg in kb.arguments.items()})
    }
    for index, ruling in enumerate(rulings):
        where = f"rulings[{index}]"
        entry = ledger.entries.get(str(ruling["entry"]))
        if entry is None:
            problems.append(
                Problem(
                    "ruling_refused", "rulings", index, f"{where}.entry: no ledger entry {ruling['entry']}"
                )
            )
            continue
        if entry.closed:
            problems.append(
                Problem("ruling_refused", "rulings", index, f"{where}: {entry.id} is closed already")
            )
        elif ruling["arg_id"] not in entry.args:
            problems.append(
                Problem(
                    "ruling_refused",
                    "rulings",
                    index,
                    f"{where}.arg_id: {entry.id} does not cite {ruling['arg_id']}",
                )
            )
        elif (fix := needs.get(index)) is not None:
            problems.append(
                Problem(
                    "unbacked_ruling",
                    "rulings",
                    index,
                    f"{where}: closing needs {ruling['arg_id']} rated refuted or baseless — it is "
                    f"{fix.status or 'unknown'}; propose {fix.arg_id} → {fix.to} in this turn",
                )
            )
    for index, deflection in enumerate(deflections):
        where = f"deflections[{index}]"
        target, cited_args = str(deflection["target_arg"]), list(deflection["cited_args"])
        engaging = [
            src for src, kind, tgt in kb.edges if kind == "addresses" and tgt == target and src in cited_args
        ]
        if engaging:
            problems.append(
                Problem(
                    "not_a_deflection",
                    "deflections",
                    index,
                    f"{where}: {', '.join(engaging)} addresses {target}; citing it engages the argument, it is no "
                    "deflection",
                )
            )
            continue
        cited = ledger.cited.get(str(deflection["position"]), {})
        uncited = tuple(t for t in deflection["turns"] if not cited.get(t, set()) & set(cited_args))
        for turn in uncited:
            problems.append(
                Problem(
                    "not_cited",
                    "deflections",
                    index,
                    f"{where}: {deflection['position']} did not cite {', '.join(cited_args)} in turn {turn}",
                    turns=(turn,),
                )
            )
    return problems


def _callouts_owed(ledger: Ledger, callouts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A callout for each position that re-raised a closed claim since the last moderator turn and was not called
    out for it: the debate contract requires one, and the flag says all it needs."""
    called = {c["position"] for c in callouts if c["type"] == "reraised-closed"}
    owed: dict[str, dict[str, Any]] = {}
    for flag in ledger.unhandled_flags():
        if flag.kind == "reraised-closed" and flag.position not in called and flag.position not in owed:
            owed[flag.position] = {
                "type": "reraised-closed",
                "position": flag.position,
                "turn": flag.turn,
                "text": f"Re-raised a closed claim at turn {flag.turn}: {flag.detail}. The closure stands.",
            }
    return list(owed.values())


def moderator_accept(answer: BaseModel, kb: KbView, ledger: Ledger) -> Accepted:
    flags: list[Flag] = []
    dumped = answer.model_dump(mode="json")
    presses = at_most(dumped.get("presses", []), 4, "presses", flags, "presses")
    callouts = at_most(dumped.get("callouts", []), 6, "callouts", flags, "callouts")
    deflections = at_most(dumped.get("deflections", []), 3, "deflections", flags, "deflections")
    rulings = at_most(dumped.get("rulings", []), 3, "rulings", flags, "rulings")
    mutations = mutations_stored(getattr(answer, "mutations", []), kb, flags)
    problems = moderator_problems(rulings, deflections, mutations, ledger, kb)
    left_out = {(p.field, p.index) for p in problems if not p.turns}
    for problem in problems:
        label = "Ruling" if problem.field == "rulings" else "Deflection"
        what = f"turn {problem.turns[0]} left out" if problem.turns else "left out"
        message = problem.error.split(": ", 1)[-1]
        flags.append(Flag(problem.kind, problem.field, f"{label} {problem.index + 1} ({what}): {message}."))
    kept_deflections = []
    for index, deflection in enumerate(deflections):
        dropped = {t for p in problems if p.field == "deflections" and p.index == index for t in p.turns}
        turns = [t for t in deflection["turns"] if t not in dropped]
        if ("deflections", index) in left_out or not turns:
            continue
        kept_deflections.append(
            {**deflection, "turns": turns, "cited_args": _distinct(deflection["cited_args"])}
        )
    owed = _callouts_owed(ledger, callouts)
    for callout in owed:
        flags.append(
            Flag(
                "missing_callout",
                "callouts",
                f"{callout['position']} re-raised a closed claim at turn {callout['turn']} and was not called "
                "out: the callout was added.",
            )
        )
    pending = ledger.pending_objection()
    decision = dumped.get("objection_decision")
    payload = {
        "text": said(dumped["text"], "text", flags),
        "presses": [
            {"entry": p["entry"], "text": said(p["text"], f"presses.{i}.text", flags, "press")}
            for i, p in enumerate(presses)
        ],
        "callouts": [*callouts, *owed],
        "deflections": kept_deflections,
        "rulings": [
            {**r, "turns": sorted(set(r["turns"]))}
            for index, r in enumerate(rulings)
            if ("rulings", index) not in left_out
        ],
        "objection_decisions": (
            [{"entry": pending.id, "decision": decision["decision"], "text": decision["text"].strip()}]
            if pending is not None and decision
            else []
        ),
        "mutations": mutations,
    }
    return Accepted(payload, tuple(flags))


# --- the synthesis and the review -----------------------------------------------------------------------------------


def synthesis_accept(answer: BaseModel, view: RunView, ledger: Ledger) -> Accepted:
    """The verdict picked from its enum as {label, position}. The enum holds only the verdicts the ledger allows
    unless it allows none (then every verdict is offered, and what the pick gets wrong is flagged)."""
    flags: list[Flag] = []
    verdict = answer.verdict  # type: ignore[attr-defined]
    label, position = verdict_parts(str(verdict.label))
    stored = {
        "label": label,
        "position": position,
        "evidence": said(verdict.evidence, "verdict.evidence", flags, "evidence"),
        "engagement": said(verdict.engagement, "verdict.engagement", flags, "engagement"),
    }
    for error in verdict_errors(view, ledger, stored):
        flags.append(Flag("verdict_inconsistent", "verdict", error.removeprefix("verdict: ")))
    text = said(answer.text, "text", flags, "synthesis")  # type: ignore[attr-defined]
    return Accepted({"text": text, "verdict": stored}, tuple(flags))


def review_accept(answer: BaseModel) -> Accepted:
    return Accepted(
        {"decision": str(answer.decision), "text": str(answer.text).strip()}  # type: ignore[attr-defined]
    )
