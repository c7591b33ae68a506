"""Simulated play of the KB debate (seed 002): deterministic for (run seed, step key), grounded in the run's KB
(real argument ids, live ratings, layers, scopes, edges, central questions, sources) and in the step's context.

How the simulated seats play, so every rule of the protocol is exercised on any seed-002 KB:

- openings cite the position's own arguments: the best-rated one addressing each central question, an argument
  that only orbits a central question (tangential / scope-mismatched / layer-shifted) if the position has one,
  and its contested / weak ones at their real rating. One side (the first position with a refuted or baseless
  argument) presents that dead argument as "strong", which breaks the debater contract on purpose;
- a debater rebuts the other side's claim with the best counter in the graph (an argument of its own side or a
  shared neutral / factual / meta one with a refutes / contradicts / addresses / confounds edge, or an orbiting
  edge when that argument is better rated: the false-balance temptation), proposes a one-step status downgrade
  of a contested / weak argument it rebuts with a better-rated counter, defends its own claim with a supporting
  argument or another source, concedes when its argument was downgraded or it has nothing new, objects once (with
  evidence not cited before) to the closure of a claim it had presented above its rating, and, once called out
  for a deflection on an argument, engages it with an addressing argument instead;
- the moderator decides a pending objection (reaffirm, unless new well-rated evidence supports the closed
  argument and its downgrade never happened), calls out every flag the orchestrator passed on, closes claims that
  rest on a refuted / baseless argument (or on one the debate proposed to downgrade so, concurring with the same
  downgrade), issues deflection callouts where a position cited an orbiting argument instead of engaging a central
  question's argument, and presses thin (contested / weak) claims nobody has touched;
- the orchestrator's synthesis picks the first verdict the protocol's own checks accept and writes the account.

Every choice follows from the KB and the history, so the generators need no draw from the (seed, key) random
source they are handed; two runs with the same KB and seed produce the same transcript.

`Run.backend_options` switches: `{"honest": true}` (no dead argument presented as strong), `{"reraise": true}` (a
debater re-raises its closed claim once after the ruling stood, so the moderator must call it out),
`{"object": false}` (debaters accept every closure)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from debates.agents.base import AgentRequest
from debates.contract import KbArgument, KbView
from debates.protocols.kb_debate import ledger as kb_ledger
from debates.protocols.kb_debate.schema import verdict_value

_named = kb_ledger.position_label  # a position in prose, as the page shows it ("For pricing")

SHARED = ("neutral", "factual", "meta")
ATTACKS = ("refutes", "contradicts", "addresses", "confounds")
ORBITS = kb_ledger.ORBIT_EDGES
LOWER = {"robust": "strong", "strong": "contested", "contested": "weak", "weak": "refuted"}
CALLOUT_FOR_FLAG = {
    "untraced": "overreach",
    "baseless-as-robust": "baseless-as-robust",
    "reraised-closed": "reraised-closed",
}


def _rank(status: str) -> int:
    return kb_ledger.RANK.get(status, 0)


def _cut(text: str, limit: int, *, keep_lines: bool = False) -> str:
    text = str(text) if keep_lines else " ".join(str(text).split())
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


class Graph:
    """The run's KB as the simulated seats read it."""

    def __init__(self, kb: KbView) -> None:
        self.kb = kb
        self.args: Mapping[str, KbArgument] = kb.arguments
        self.edges = [(s, k, t) for s, k, t in kb.edges if s in kb.arguments]
        self.central = {a for _, _, ids in kb.central_questions for a in ids}

    def status(self, arg: str) -> str:
        return self.args[arg].status if arg in self.args else "unknown"

    def dead(self, arg: str) -> bool:
        return self.status(arg) in kb_ledger.DEAD

    def usable(self, arg: str, position: str) -> bool:
        argument = self.args.get(arg)
        return (
            argument is not None
            and argument.position in (position, *SHARED)
            and argument.status not in kb_ledger.DEAD
        )

    def sources(self, arg: str) -> list[str]:
        return [
            t for s, k, t in self.edges if s == arg and k == "derived-from-source" and t in self.kb.sources
        ]

    def questions_of(self, arg: str) -> list[int]:
        return [n for n, _, ids in self.kb.central_questions if arg in ids]

    def question_args(self, arg: str) -> set[str]:
        """The addressing arguments of every central question `arg` belongs to."""
        return {a for _, _, ids in self.kb.central_questions if arg in ids for a in ids}

    def engages(self, cited: Iterable[str], target: str) -> bool:
        """Whether the cited arguments engage `target` at its layer: the target itself, an argument with an
        `addresses` edge to it, or another addressing argument of its central question."""
        cited = set(cited)
        if target in cited or cited & self.question_args(target):
            return True
        return any(s in cited and k == "addresses" and t == target for s, k, t in self.edges)

    def label(self, arg: str) -> str:
        a = self.args.get(arg)
        return f"{arg} ({a.status})" if a else arg

    def describe(self, arg: str, *, status: bool = True) -> str:
        a = self.args[arg]
        rated = f", status: {a.status}" if status else ""
        return f"{arg} (layer: {a.layer}, scope: {_cut(a.scope, 90)}{rated})"

    def proposed(self, arg: str) -> list[Mapping[str, Any]]:
        """This run's status-downgrade proposals for `arg` that may still take effect."""
        return [
            m.payload
            for m in self.kb.mutations
            if m.kind == "status-downgrade"
            and m.payload.get("arg_id") == arg
            and m.status in ("pending", "applied", "approved")
        ]


def _claim(graph: Graph, text: str, args: list[str], sources: list[str], presented_as: str = "") -> dict:
    rated = min((graph.status(a) for a in args), key=_rank, default="contested")
    claim: dict[str, Any] = {"text": _cut(text, 290), "args": args}
    if graph.kb.sources:  # a KB without sources is asked for none
        claim["sources"] = sources[:5]
    return {**claim, "presented_as": presented_as or rated}


def _downgrade(arg: str, to: str, justification: str) -> dict[str, Any]:
    return {"kind": "status-downgrade", "arg_id": arg, "to": to, "justification": _cut(justification, 990)}


def _view_parts(request: AgentRequest) -> tuple[Graph, kb_ledger.Ledger, Mapping[str, Any]]:
    kb = request.view.kb
    assert kb is not None, "a KB debate runs over a knowledge base"
    return Graph(kb), kb_ledger.ledger_build(request.view), request.step.context


# --- openings ---------------------------------------------------------------------------------------------------


def _dishonest_position(graph: Graph, positions: list[str]) -> str:
    """The side that presents a dead argument as strong: the first with a refuted or baseless argument."""
    for position in positions:
        if any(a.position == position and a.status in kb_ledger.DEAD for a in graph.args.values()):
            return position
    return ""


def _opening(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    graph, _, context = _view_parts(request)
    config = request.view.config
    assert isinstance(config, kb_ledger.KbDebateConfig)
    position = str(context["position"])
    own = sorted(
        (a for a in graph.args.values() if a.position == position),
        key=lambda a: (-_rank(a.status), a.arg_id),
    )
    chosen: list[tuple[KbArgument, str]] = []  # (argument, presented as)

    def take(argument: KbArgument, presented: str = "") -> None:
        if len(chosen) < 5 and all(argument.arg_id != c.arg_id for c, _ in chosen):
            chosen.append((argument, presented or argument.status))

    for _, _, ids in graph.kb.central_questions:
        best = next((a for a in own if a.arg_id in ids and a.status not in kb_ledger.DEAD), None)
        if best is not None:
            take(best)
    if not request.options.get("honest") and _dishonest_position(graph, config.positions) == position:
        dead = next(
            a
            for a in sorted(own, key=lambda a: (a.status != "baseless", a.arg_id))
            if a.status in kb_ledger.DEAD
        )
        take(dead, "strong")
    orbiting = [
        a
        for a in own
        if a.arg_id not in graph.central
        and a.status not in kb_ledger.DEAD
        and any(s == a.arg_id and k in ORBITS and t in graph.central for s, k, t in graph.edges)
    ]
    if orbiting:
        take(orbiting[0])
    for argument in own:
        if argument.status in ("contested", "weak"):
            take(argument)
    for argument in own:
        if argument.status not in kb_ledger.DEAD:
            take(argument)
    claims = []
    for argument, presented in chosen:
        sources = graph.sources(argument.arg_id)[:1]
        claims.append(_claim(graph, argument.title, [argument.arg_id], sources, presented))
    engaged = sorted(
        {n for argument, _ in chosen for n in graph.questions_of(argument.arg_id)},
    )
    questions = {n: text for n, text, _ in graph.kb.central_questions}
    lines = [
        f"**{_named(position)}**: opening statement on “{request.view.topic}”.",
        "I cite the knowledge base by argument id and source path, at the ratings it gives.",
    ]
    for argument, presented in chosen:
        note = "" if presented == argument.status else f" — I hold it to be {presented}"
        lines.append(
            f"- {argument.arg_id} ({argument.status}, {argument.layer}): {_cut(argument.title, 140)}{note}"
        )
    if engaged:
        lines.append("Central questions engaged: " + "; ".join(_cut(questions[n], 80) for n in engaged) + ".")
    return {
        "summary": _cut("\n".join(lines), 1990, keep_lines=True),
        "claims": claims or [_fallback_claim(graph, position)],
    }


def _fallback_claim(graph: Graph, position: str) -> dict[str, Any]:
    shared = sorted((a for a in graph.args.values() if a.position in SHARED), key=lambda a: -_rank(a.status))
    argument = shared[0] if shared else next(iter(graph.args.values()))
    return _claim(graph, argument.title, [argument.arg_id], graph.sources(argument.arg_id)[:1])


# --- debater turns ---------------------------------------------------------------------------------------------


def _position_cited(view_turns: Mapping[str, Any], seat: str) -> set[str]:
    """Every argument id and source path this seat has cited in the run."""
    cited: set[str] = set()
    for turn in view_turns.values():
        if turn.seat == seat and turn.committed and turn.payload:
            for claim in turn.payload.get("claims", []):
                cited.update(claim.get("args", []))
                cited.update(claim.get("sources", []))
            objection = turn.payload.get("objection") or {}
            cited.update(objection.get("new_args", []))
            cited.update(objection.get("new_sources", []))
    return cited


def _called_out_targets(request: AgentRequest, position: str) -> set[str]:
    """The arguments the moderator said this position deflected from."""
    targets = set()
    for turn in request.view.turns.values():
        if turn.task == "moderator" and turn.committed and turn.payload:
            for deflection in turn.payload.get("deflections", []):
                if deflection.get("position") == position:
                    targets.add(str(deflection.get("target_arg")))
    return targets


Counter = tuple[tuple[int, bool, bool], str, str, str]


def _counters(
    graph: Graph, position: str, targets: list[str], avoid_orbit: set[str], cited: set[str]
) -> list[Counter]:
    """(score, counter arg, edge type, target arg), best first."""
    found: dict[tuple[str, str], Counter] = {}
    for src, kind, tgt in graph.edges:
        pairs = []
        if tgt in targets and kind in (*ATTACKS, *ORBITS):
            pairs.append((src, kind, tgt))
        if kind == "contradicts" and src in targets:
            pairs.append((tgt, kind, src))
        for counter, edge, target in pairs:
            if counter in targets or not graph.usable(counter, position):
                continue
            orbit = edge in ORBITS
            if orbit and target in avoid_orbit:
                continue
            score = (_rank(graph.status(counter)) + (0 if orbit else 1), not orbit, counter not in cited)
            key = (counter, target)
            if key not in found or found[key][0] < score:
                found[key] = (score, counter, edge, target)
    return sorted(found.values(), key=lambda c: (c[0], c[1]), reverse=True)


def _objection(graph: Graph, context: Mapping[str, Any], position: str, request: AgentRequest) -> dict | None:
    if request.options.get("object") is False:
        return None
    closed = {e["id"]: e for e in context.get("closed_entries", [])}
    for entry_id in context.get("may_object_to", []):
        entry = closed.get(entry_id)
        if entry is None or not entry.get("closure"):
            continue
        arg = entry["closure"]["arg"]
        argument = graph.args.get(arg)
        leaned = argument is not None and _rank(entry.get("presented_as", "")) > _rank(
            argument.snapshot_status
        )
        if not leaned:
            continue  # presented at its rating: the debater accepts the closure
        known = set(entry.get("sources", [])) | {r["arg"] for r in entry.get("references", [])}
        related = [
            other
            for s, k, t in graph.edges
            for other in ((t,) if s == arg else (s,) if t == arg else ())
            if k not in ("derived-from-source", *ATTACKS[:2]) and other not in known
        ]
        candidates = [a for a in related if graph.usable(a, position)]
        if not candidates and argument is not None:
            candidates = [
                a.arg_id
                for a in sorted(graph.args.values(), key=lambda a: (-_rank(a.status), a.arg_id))
                if a.layer == argument.layer and a.arg_id not in known and graph.usable(a.arg_id, position)
            ]
        if not candidates:
            continue
        new = candidates[0]
        sources = [s for s in graph.sources(new) if s not in known][:1]
        return {
            "entry": entry_id,
            "text": _cut(
                f"I object once to the closure of {entry_id} ({arg}). New evidence not cited before: {new} "
                f"({graph.status(new)}, {graph.args[new].layer}) — {graph.args[new].title}"
                + (f" [{sources[0]}]" if sources else "")
                + f". It bears on the concern {arg} was making, so the ruling should be reconsidered.",
                1990,
            ),
            "new_args": [new],
            **({"new_sources": sources} if graph.kb.sources else {}),
        }
    return None


def _turn(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    graph, ledger, context = _view_parts(request)
    position = str(context["position"])
    entry = context["entry"]
    number = int(context["turn"])
    answered = int(context["answer_turn"])
    args = [r["arg"] for r in entry["references"] if r["arg"] in graph.args]
    own = entry["position"] == position
    cited = _position_cited(request.view.turns, request.step.seat)
    claims: list[dict[str, Any]] = []
    mutations: list[dict[str, Any]] = []
    lines: list[str] = []
    if own:
        move = "defend"
        downgraded = [a for a in args if _rank(graph.status(a)) < _rank(graph.args[a].snapshot_status)]
        thin = [a for a in args if _rank(graph.status(a)) <= _rank("weak")]
        supports = sorted(
            {
                (_rank(graph.status(s)), s not in cited, s)
                for s, k, t in graph.edges
                if k == "supports"
                and t in args
                and graph.usable(s, position)
                and s not in args
                and s not in cited
            }
            | {
                (_rank(graph.status(t)), t not in cited, t)
                for s, k, t in graph.edges
                if k == "depends-on"
                and s in args
                and graph.usable(t, position)
                and t not in args
                and t not in cited
            },
            reverse=True,
        )
        fresh_sources = [(a, s) for a in args for s in graph.sources(a) if s not in cited]
        firm = bool(args) and min(_rank(graph.status(a)) for a in args) >= _rank("strong")
        if firm and not downgraded and not (supports or fresh_sources):
            lines.append(
                f"{entry['id']} stands at its rating: {', '.join(graph.label(a) for a in args)}. The reply in turn "
                f"{answered} brings nothing rated higher, and the traceback behind {args[0]} is unchanged; I have "
                "no new source to add and claim nothing beyond the rating."
            )
        elif downgraded or thin or not (supports or fresh_sources):
            move = "concede"
            why = (
                f"{', '.join(graph.label(a) for a in downgraded)} was downgraded during this debate"
                if downgraded
                else f"{', '.join(graph.label(a) for a in thin)} is rated too low to carry it"
                if thin
                else "I have no evidence beyond what I already cited"
            )
            lines.append(f"I concede {entry['id']}: {why}. The claim does not survive as stated.")
            best = sorted(
                (a for a in graph.args.values() if a.position == position and a.status not in kb_ledger.DEAD),
                key=lambda a: (-_rank(a.status), a.arg_id not in graph.central, a.arg_id),
            )
            if best and best[0].arg_id not in args:
                shift = best[0]
                lines.append(
                    f"The load-bearing argument for {_named(position)} is {shift.arg_id} ({shift.status})."
                )
                if shift.arg_id not in cited:  # only new evidence becomes a new ledger claim
                    claims.append(_claim(graph, shift.title, [shift.arg_id], graph.sources(shift.arg_id)[:1]))
        elif supports:
            _, _, support = supports[0]
            sources = graph.sources(support)[:1]
            lines.append(
                f"{entry['id']} stands: {support} ({graph.status(support)}) supports "
                f"{', '.join(args)} — {graph.args[support].title}" + (f" [{sources[0]}]." if sources else ".")
            )
            claims.append(
                _claim(graph, f"{graph.args[support].title} (supports {args[0]})", [support], sources)
            )
        else:
            arg, source = fresh_sources[0]
            lines.append(
                f"{entry['id']} stands on a second primary source for {arg} ({graph.status(arg)}): {source}."
            )
            claims.append(_claim(graph, f"{graph.args[arg].title} — per {source}", [arg], [source]))
    else:
        avoid = _called_out_targets(request, position)
        counters = _counters(graph, position, args, avoid, cited)
        if counters:
            _, counter, edge, target = counters[0]
            sources = graph.sources(counter)[:1]
            stronger = _rank(graph.status(counter)) >= _rank(graph.status(target))
            move = "rebut" if stronger and edge not in ORBITS else "partial-rebut"
            lines.append(
                f"On {entry['id']} (turn {answered}): {counter} ({graph.status(counter)}, "
                f"{graph.args[counter].layer}) {edge} {target} ({graph.status(target)}). "
                f"{graph.args[counter].title}" + (f" [{sources[0]}]." if sources else ".")
            )
            if counter in cited:
                lines.append(f"{counter} was cited before by my side; it answers this claim too.")
            else:  # only new evidence becomes a new ledger claim
                claims.append(
                    _claim(graph, f"{graph.args[counter].title} ({edge} {target})", [counter], sources)
                )
            lower = LOWER.get(graph.status(target))
            if (
                lower
                and graph.status(target) in ("contested", "weak")
                and edge in ATTACKS
                and _rank(graph.status(counter)) > _rank(graph.status(target))
                and (lower != "refuted" or edge in ("refutes", "contradicts"))
                and not graph.proposed(target)
            ):
                mutations.append(
                    _downgrade(
                        target,
                        lower,
                        f"Debate turn {number}: {counter} ({graph.status(counter)}) {edge} {target} "
                        f"({graph.status(target)}), answering {entry['id']} of turn {answered}; traceback: "
                        f"{target}'s support is thinner than {counter}'s, so {graph.status(target)} → {lower}.",
                    )
                )
                lines.append(f"I propose downgrading {target} {graph.status(target)} → {lower}.")
        elif same_question := sorted(
            (
                a
                for t in args
                for a in graph.question_args(t)
                if a not in args and graph.usable(a, position) and graph.args[a].position != "meta"
            ),
            key=lambda a: (-_rank(graph.status(a)), a in cited, a),
        ):
            counter = same_question[0]
            sources = graph.sources(counter)[:1]
            move = "partial-rebut"
            lines.append(
                f"On {entry['id']} (turn {answered}): no argument of mine attacks "
                f"{', '.join(graph.label(a) for a in args)} head-on, but the central question it addresses is "
                f"answered differently by {counter} ({graph.status(counter)}): {graph.args[counter].title}"
                + (f" [{sources[0]}]." if sources else ".")
            )
            if counter not in cited:
                claims.append(_claim(graph, graph.args[counter].title, [counter], sources))
        else:
            move = "partial-rebut"
            lines.append(
                f"On {entry['id']} (turn {answered}): nothing in the graph answers "
                f"{', '.join(graph.label(a) for a in args)} directly; its rating is the whole case for it, "
                "and I note it stays unanswered by my side."
            )
    objection = _objection(graph, context, position, request)
    if objection is not None:
        lines.append(objection["text"])
    if request.options.get("reraise"):
        claims += _reraised(graph, ledger, position, request)
    payload: dict[str, Any] = {  # the entry and turn answered are the step's: code records them
        "move": move,
        "text": _cut("\n\n".join(lines), 3990, keep_lines=True),
        "claims": claims[:4],
        "mutations": mutations[:3],
    }
    if objection is not None:
        payload["objection"] = objection
    return payload


def _reraised(graph: Graph, ledger: kb_ledger.Ledger, position: str, request: AgentRequest) -> list[dict]:
    """The contract breach on request: lean again on a closed claim whose objection was reaffirmed (once)."""
    for entry in ledger.entries.values():
        objection = entry.objection or {}
        if entry.position != position or not entry.closed or objection.get("decision") != "reaffirm":
            continue
        arg = entry.closure["arg"] if entry.closure else ""
        if any(f.kind == "reraised-closed" and f.position == position for f in ledger.flags):
            return []
        return [_claim(graph, f"As I said, {entry.claim}", [arg], graph.sources(arg)[:1], "contested")]
    return []


# --- moderator turns -------------------------------------------------------------------------------------------


def _deflections(graph: Graph, ledger: kb_ledger.Ledger, request: AgentRequest, number: int) -> list[dict]:
    """Claims that cited an orbiting argument where a central question's argument needed engaging."""
    config = request.view.config
    assert isinstance(config, kb_ledger.KbDebateConfig)
    found: dict[tuple[str, str, str], set[int]] = {}
    for info in ledger.turns:
        if info.task not in ("opening", "turn") or not info.payload or info.status != "committed":
            continue
        payload = info.payload
        answered: set[str] = set()
        if info.task == "turn":
            entry = ledger.entries.get(payload["responds_to"]["entry"])
            answered = set(entry.args) if entry else set()
        for claim in payload.get("claims", []):
            cited = [a for a in claim.get("args", []) if a in graph.args]
            for src, kind, target in graph.edges:
                if kind not in ORBITS or src not in cited or target not in graph.central:
                    continue
                if graph.args[target].position == info.position or graph.engages(cited, target):
                    continue
                if info.task == "opening":
                    relevant = src not in graph.central
                else:
                    relevant = bool(answered & ({target} | graph.question_args(target)))
                if relevant:
                    found.setdefault((info.position, src, target), set()).add(info.number)
    covered: dict[tuple[str, str, str], set[int]] = {}
    for deflection in ledger.deflections:
        for cited_arg in deflection["cited_args"]:
            key = (deflection["position"], cited_arg, deflection["target_arg"])
            covered.setdefault(key, set()).update(deflection["turns"])
    out = []
    for (position, src, target), turns in sorted(found.items(), key=lambda i: (min(i[1]), i[0])):
        if not turns - covered.get((position, src, target), set()):
            continue
        kind = next(k for s, k, t in graph.edges if s == src and t == target and k in ORBITS)
        shift = {
            "tangential-to": "is tangential to",
            "scope-mismatch-with": "scope-mismatches",
            "layer-shift-from": "layer-shifts from",
        }[kind]
        listed = sorted(t for t in turns if t < number)[:8]
        text = (
            f"Deflection: {_named(position)} has cited {graph.describe(src)} across turns "
            f"{', '.join(map(str, listed))} to address {graph.describe(target, status=False)}. "
            + (
                f"{src} is well-supported within its scope but {shift} {target}. "
                if _rank(graph.status(src)) >= _rank("strong")
                else f"Whatever its own rating ({graph.status(src)}), {src} {shift} {target}. "
            )
            + f"{_named(position)} has not engaged {target} at its actual layer."
        )
        out.append(
            {
                "position": position,
                "cited_args": [src],
                "turns": listed,
                "target_arg": target,
                "text": _cut(text, 990),
            }
        )
    return out[:3]


def _moderator(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    graph, ledger, context = _view_parts(request)
    number = int(context["turn"])
    lines: list[str] = []
    decisions: list[dict[str, Any]] = []
    callouts: list[dict[str, Any]] = []
    rulings: list[dict[str, Any]] = []
    mutations: list[dict[str, Any]] = []
    presses: list[dict[str, Any]] = []

    pending = ledger.pending_objection()
    if pending is not None and pending.objection is not None and pending.closure is not None:
        arg = pending.closure["arg"]
        new = [a for a in pending.objection.get("new_args", []) if a in graph.args]
        backing = [
            a
            for a in new
            if _rank(graph.status(a)) >= _rank("strong")
            and any(s == a and k == "supports" and t == arg for s, k, t in graph.edges)
        ]
        if backing and not graph.dead(arg):
            decision = "reverse"
            text = (
                f"Objection on {pending.id} upheld: {', '.join(backing)} supports {arg}, which is still rated "
                f"{graph.status(arg)}. The closure is reversed and the claim reopens."
            )
        else:
            decision = "reaffirm"
            attackers = [s for s, k, t in graph.edges if t == arg and k in ("refutes", "contradicts")]
            text = (
                f"Objection on {pending.id} heard. The new evidence ({', '.join(graph.label(a) for a in new) or 'none'}) "
                f"does not supply what {arg} lacks: it stays rated {graph.status(arg)}"
                + (f", and {', '.join(attackers)} still stands against it" if attackers else "")
                + ". The ruling is reaffirmed; the closure stands and the claim may not be re-litigated."
            )
        decisions.append({"decision": decision, "text": _cut(text, 990)})
        lines.append(text)

    seen = set()
    for flag in ledger.unhandled_flags():
        kind = CALLOUT_FOR_FLAG.get(flag.kind, "overreach")
        if (kind, flag.position, flag.turn) in seen or len(callouts) >= 6:
            continue
        seen.add((kind, flag.position, flag.turn))
        text = {
            "baseless-as-robust": f"Contract breach at turn {flag.turn}: {_named(flag.position)} {flag.detail}. A rating "
            "is not an opinion: cite it at its KB rating.",
            "reraised-closed": f"Re-raised closed claim at turn {flag.turn}: {_named(flag.position)} {flag.detail}. The "
            "closure stands; re-litigating it is against the debate contract.",
        }.get(
            kind,
            f"Untraced claim at turn {flag.turn}: {_named(flag.position)}: {flag.detail}. Cite an argument id.",
        )
        callouts.append({"type": kind, "position": flag.position, "turn": flag.turn, "text": _cut(text, 990)})
        lines.append(text)

    for entry in ledger.entries.values():
        if len(rulings) >= 3 or entry.closed or entry.status in ("conceded", "unclaimable"):
            continue
        if entry.closure and entry.closure.get("reversed_at"):
            continue
        dead = [a for a in entry.args if graph.dead(a)]
        proposed = [
            (a, str(p["to"]))
            for a in entry.args
            if not graph.dead(a)
            for p in graph.proposed(a)
            if p.get("to") in kb_ledger.DEAD
        ]
        if dead:
            arg, closed_as, basis = (
                dead[0],
                graph.status(dead[0]),
                f"{dead[0]} is rated {graph.status(dead[0])}",
            )
        elif proposed and len(mutations) < 3:
            arg, closed_as = proposed[0]
            basis = f"the debate's traceback supports downgrading {arg} {graph.status(arg)} → {closed_as}"
            mutations.append(
                _downgrade(
                    arg,
                    closed_as,
                    f"Moderator's ruling at debate turn {number} on {entry.id}: concurring with the downgrade "
                    f"proposed in this debate; {basis}.",
                )
            )
        else:
            continue
        attackers = [s for s, k, t in graph.edges if t == arg and k in ("refutes", "contradicts")]
        turns = sorted({t for t in entry.thread if t < number})[:10] or [entry.turn]
        justification = (
            f"Traceback: {basis}"
            + (f"; {', '.join(attackers)} stands against it" if attackers else "")
            + f". Debate turns {', '.join(map(str, turns))}."
        )
        rulings.append(
            {
                "entry": entry.id,
                "arg_id": arg,
                "closed_as": closed_as,
                "justification": _cut(justification, 1490),
                "turns": turns,
            }
        )
        lines.append(
            f'Ruling: claim "{_cut(entry.claim, 160)}" ({arg}) is CLOSED as {closed_as}.\nJustification: {justification}'
        )

    deflections = _deflections(graph, ledger, request, number)
    lines += [d["text"] for d in deflections]

    if not rulings:
        pressed = {e.id for e in ledger.entries.values() if any(n.startswith("pressed") for n in e.notes)}
        # Press the side that speaks next, so the asserter's answer keeps the speakers alternating.
        last_speaker = next((t.position for t in reversed(ledger.turns) if t.task in ("turn", "opening")), "")
        thin = [
            e
            for e in ledger.entries.values()
            if e.status == "open"
            and len(e.thread) == 1
            and e.id not in pressed
            and e.position != last_speaker
            and any(graph.status(a) in ("contested", "weak") for a in e.args)
        ]
        if thin:
            entry = thin[0]
            shaky = [graph.label(a) for a in entry.args if graph.status(a) in ("contested", "weak")]
            text = (
                f"{_named(entry.position)}: {entry.id} rests on {', '.join(shaky)}. Which primary source carries it, and "
                "what does the traceback say about its weakest link?"
            )
            presses.append({"entry": entry.id, "text": _cut(text, 990)})
            lines.append(f"Press on {entry.id}: {text}")
    if not lines:
        live = [e.id for e in ledger.entries.values() if e.status in kb_ledger.LIVE]
        lines.append(
            "No ruling is needed at this point. Open threads: " + (", ".join(live) if live else "none") + "."
        )
    payload: dict[str, Any] = {
        "text": _cut("\n\n".join(lines), 2990, keep_lines=True),
        "presses": presses[:4],
        "callouts": callouts[:6],
        "deflections": deflections,
        "rulings": rulings,
        "mutations": mutations,
    }
    if decisions:  # the entry of the pending objection is code's to record
        payload["objection_decision"] = decisions[0]
    return payload


# --- synthesis -------------------------------------------------------------------------------------------------


def _verdict(request: AgentRequest, ledger: kb_ledger.Ledger, graph: Graph) -> dict[str, Any]:
    view = request.view
    config = view.config
    assert isinstance(config, kb_ledger.KbDebateConfig)
    rows = kb_ledger.engagement(view, ledger)
    broken = {p: kb_ledger.dismantled(view, ledger, p) for p in config.positions}
    order = sorted(
        config.positions,
        key=lambda p: (len(broken[p]), -sum(p in r["engaged_by"] for r in rows), p),
    )
    cited_central = {a for p in config.positions for a in ledger.args_cited(p) if a in graph.central}
    unsettled = [a for a in cited_central if graph.status(a) in ("contested", "weak")]
    balanced = ["unresolved-by-corpus", "genuinely-contested"]
    if len(unsettled) * 2 <= len(cited_central):
        balanced.reverse()
    candidates = [("better-grounded", p) for p in order] + [("engagement-asymmetry", p) for p in order]
    candidates += [(label, "") for label in balanced]
    for label, position in candidates:
        draft = {"label": label, "position": position, "evidence": "-", "engagement": "-"}
        if not kb_ledger.verdict_errors(view, ledger, draft):
            break
    evidence = []
    for p in config.positions:
        entries = kb_ledger.central_entries(view, ledger, p)
        closed = [e.id for e in entries if e.closed]
        rated = sorted({f"{a} {graph.status(a)}" for e in entries for a in e.args if a in graph.args})
        evidence.append(
            f"{_named(p)}: {len(entries)} central claim(s), {len(closed)} closed"
            + (f" ({', '.join(closed)})" if closed else "")
            + (f"; cited at {', '.join(rated[:8])}" if rated else "")
        )
    engagement_text = []
    for row in rows:
        engagement_text.append(
            f"Q{row['question'] + 1}: engaged by {', '.join(map(_named, row['engaged_by'])) or 'nobody'}"
            + (f"; orbited by {', '.join(map(_named, row['orbited_by']))}" if row["orbited_by"] else "")
        )
    if label in ("better-grounded", "engagement-asymmetry"):
        evidence.append(
            f"{_named(position)} is better grounded on the central questions it engaged"
            if label == "better-grounded"
            else f"{_named(position)} engaged a central question the other side only orbited"
        )
    return {
        "label": label,
        "position": position,
        "evidence": _cut(". ".join(evidence) + ".", 1990),
        "engagement": _cut(
            ". ".join(engagement_text) + "." if engagement_text else "No central questions.", 1990
        ),
    }


def _synthesis(rng: random.Random, request: AgentRequest) -> dict[str, Any]:
    graph, ledger, context = _view_parts(request)
    view = request.view
    config = view.config
    assert isinstance(config, kb_ledger.KbDebateConfig)
    verdict = _verdict(request, ledger, graph)
    rows = kb_ledger.engagement(view, ledger)
    orbit_edges = [(s, k, t) for s, k, t in graph.edges if k in ORBITS]
    out = ["## Central questions and engagement", ""]
    for row in rows:
        question = next(ids for n, _, ids in graph.kb.central_questions if n == row["question"])
        line = f"- {_cut(row['text'], 240)}"
        for p in config.positions:
            cited = ledger.args_cited(p)
            if p in row["engaged_by"]:
                line += (
                    f"\n  - {_named(p)} engaged it via addresses: {', '.join(sorted(cited & set(question)))}."
                )
            elif p in row["orbited_by"]:
                moves = sorted(f"{s} {k} {t}" for s, k, t in orbit_edges if s in cited and t in question)
                line += f"\n  - {_named(p)} only orbited it ({'; '.join(moves)})."
            else:
                line += f"\n  - {_named(p)} did not engage it."
        out.append(line)
    out += ["", "## Closed claims", ""]
    closed = [e for e in ledger.entries.values() if e.closed]
    for e in closed:
        closure = e.closure or {}
        objection = e.objection or {}
        line = f"- {e.id} ({_named(e.position)}): “{_cut(e.claim, 140)}” — {closure.get('ruling', 'CLOSED')} (turn {closure.get('turn')})"
        if objection:
            outcome = objection.get("decision") or "undecided"
            line += f"; objection at turn {objection.get('turn')}, {outcome}"
            line += f" at turn {objection['at']}." if objection.get("at") else "."
        out.append(line)
    if not closed:
        out.append("- None: no claim was closed by a ruling.")
    still_open = [c["entry"] for c in context.get("left_open", [])]
    if still_open:  # listed with their reasons after this account
        out.append(
            f"- Still open when the debate ended: {', '.join(still_open)}; an open claim is neither conceded nor "
            "refuted, and the verdict counts it neither way."
        )
    out += ["", "## Claims found baseless", ""]
    baseless = [e for e in ledger.entries.values() if any(graph.status(a) == "baseless" for a in e.args)]
    out += [
        f"- {e.id} ({_named(e.position)}) rests on {', '.join(graph.label(a) for a in e.args)}: no primary source on traceback."
        for e in baseless
    ] or ["- None."]
    out += ["", "## Non-engagement and deflections", ""]
    findings = kb_ledger.non_engagement(view, ledger)
    out += [
        f"- Persistent non-engagement: {_named(f['position'])} was called out at turns "
        f"{', '.join(map(str, f['callout_turns']))} and never engaged {', '.join(f['targets'])}."
        for f in findings
    ]
    out += [
        f"- Deflection callout at turn {d['at']}: {_named(d['position'])} cited {', '.join(d['cited_args'])} to address "
        f"{d['target_arg']} (turns {', '.join(map(str, d['turns']))})."
        for d in ledger.deflections
    ]
    if not findings and not ledger.deflections:
        out.append("- No deflection was called out.")
    for p, ids in context.get("dismantled", {}).items():
        if ids:
            out.append(
                f"- {_named(p)}'s central claims are closed ({', '.join(ids)}): the position is held against the weight "
                "of the traceback evidence."
            )
    out += ["", "## Knowledge-base changes", ""]
    revisions = [m for m in graph.kb.mutations if m.revision]
    pending = [m for m in graph.kb.mutations if m.status == "pending"]
    out.append(
        "- The pre-debate state is the run's snapshot (kb-snapshot-construction/); read it for the KB as rated "
        "when the debate began."
    )
    out.append(
        "- Revisions (kb/revisions.md): "
        + (
            ", ".join(
                f"{m.revision} ({m.kind} {m.payload.get('arg_id', '')}, {m.turn_key})" for m in revisions
            )
            or "none"
        )
        + (f"; {len(pending)} proposal(s) still await approval." if pending else ".")
    )
    picked = {  # the verdict as its enum names it: "better-grounded:pro-x"; the text leaves it to this field
        "label": verdict_value(verdict["label"], verdict["position"]),
        "evidence": verdict["evidence"],
        "engagement": verdict["engagement"],
    }
    return {"text": _cut("\n".join(out), 5980, keep_lines=True), "verdict": picked}


GENERATORS: dict[tuple[str, str], Callable[[random.Random, AgentRequest], dict[str, Any]]] = {
    ("kb-debate", "opening"): _opening,
    ("kb-debate", "turn"): _turn,
    ("kb-debate", "moderator"): _moderator,
    ("kb-debate", "synthesis"): _synthesis,
}
