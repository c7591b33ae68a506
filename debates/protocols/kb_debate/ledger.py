"""The claims ledger of a KB debate (seed 002) and the checks made against it: every claim made, attacked,
conceded and closed, read from the committed turns. Shared by the protocol's rules, its page, signals and
exports, so none of them needs the protocol class."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from debates.contract import KbView, RunView
from debates.protocols.kb_debate.schema import POSITIONED_LABELS, VERDICT_LABELS, verdict_parts, verdict_value

LIVE = ("open", "partially-rebutted")
RANK = {"robust": 5, "strong": 4, "contested": 3, "weak": 2, "refuted": 1, "baseless": 1}
DEAD = ("refuted", "baseless")
ORBIT_EDGES = ("tangential-to", "scope-mismatch-with", "layer-shift-from")
DEBATE_TASKS = ("opening", "turn", "moderator")
FAILURES_IN_A_ROW = 3
# The most debate turns a debate runs, whatever the size of its ledger.
TURN_CAP_MAX = 60
# The claims an opening makes at most (the opening schema's maxItems), for a cap estimated before the openings.
OPENING_CLAIMS_AT_MOST = 5


class KbDebateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    positions: list[str] = Field(
        min_length=2, max_length=6, description="Filled from the KB when left empty."
    )
    moderator: Literal["agent", "human"] = "agent"
    max_turns: int | None = Field(
        default=None,
        ge=4,
        le=TURN_CAP_MAX,
        description="Debate turns (openings included) at most; empty: as many as the ledger needs (turn_cap).",
    )
    min_turns: int = Field(default=12, ge=2, le=60, description="Debate turns before it may end early.")
    moderator_every: int = Field(default=3, ge=1, le=10, description="Debater turns between moderator turns.")
    auto_approve: bool = Field(default=False, description="Apply proposed KB mutations without the inbox.")


def debater_handle(position: str) -> str:
    return "debater-" + (re.sub(r"[^a-z0-9]+", "-", position.lower()).strip("-") or "position")


def position_label(position: str) -> str:
    """A KB position as people read it: "pro-pricing" is "For pricing", "con-pricing" "Against pricing", "meta"
    "Meta". The id stays what agents cite and the ledger records; a page shows this."""
    side, _, subject = position.partition("-")
    words = subject.replace("-", " ").replace("_", " ").strip()
    if words and side.lower() in ("pro", "con"):
        return f"{'For' if side.lower() == 'pro' else 'Against'} {words}"
    return position.replace("-", " ").replace("_", " ").strip().capitalize() or position


def turn_key(number: int, task: str, seat: str) -> str:
    return f"t{number:02d}/{task}/{seat}"


# --- the ledger, derived from the committed turns ----------------------------------------------------------------


@dataclass
class Entry:
    id: str
    claim: str
    position: str
    turn: int
    args: list[str]
    sources: list[str]
    presented_as: str
    status: str = "open"
    thread: list[int] = field(default_factory=list)
    closure: dict[str, Any] | None = None
    objection: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        return self.status == "closed"

    def as_dict(self, kb: KbView | None) -> dict[str, Any]:
        refs = [
            {"arg": a, "status": kb.arguments[a].status if kb and a in kb.arguments else "unknown"}
            for a in self.args
        ]
        return {
            "id": self.id,
            "claim": self.claim,
            "position": self.position,
            "turn": self.turn,
            "references": refs,
            "sources": list(self.sources),
            "presented_as": self.presented_as,
            "status": self.status,
            "thread": list(self.thread),
            "closure": self.closure,
            "objection": self.objection,
            "notes": list(self.notes),
        }


@dataclass
class Flag:
    turn: int
    position: str
    kind: str  # untraced | baseless-as-robust | reraised-closed
    detail: str


@dataclass
class TurnInfo:
    number: int
    key: str
    seat: str
    task: str
    position: str
    status: str
    payload: Mapping[str, Any] | None


@dataclass
class Ledger:
    entries: dict[str, Entry] = field(default_factory=dict)
    flags: list[Flag] = field(default_factory=list)
    turns: list[TurnInfo] = field(default_factory=list)
    cited: dict[str, dict[int, set[str]]] = field(default_factory=dict)  # position -> turn -> args
    deflections: list[dict[str, Any]] = field(default_factory=list)
    callouts: list[dict[str, Any]] = field(default_factory=list)
    last_moderator: int = 0

    def pending_objection(self) -> Entry | None:
        return next((e for e in self.entries.values() if e.objection and e.objection.get("pending")), None)

    def unhandled_flags(self) -> list[Flag]:
        return [f for f in self.flags if f.turn > self.last_moderator]

    def args_cited(self, position: str) -> set[str]:
        return set().union(*self.cited.get(position, {}).values()) if self.cited.get(position) else set()


def position_of(seat: str, positions: list[str]) -> str:
    return next((p for p in positions if debater_handle(p) == seat), "")


def _ratings(view: RunView) -> Callable[[str, int], str]:
    """An argument's rating as a debater saw it at a turn: a downgrade this run proposed at that turn or later
    does not count against the turn (claims are judged by the rating they were made under, not retroactively)."""
    kb = view.kb
    assert kb is not None
    numbers = {key: number for number, key in enumerate(view.turns, start=1)}
    downgrades: dict[str, list[tuple[int, str]]] = {}
    for mutation in kb.mutations:
        if mutation.kind == "status-downgrade" and mutation.status == "applied":
            arg = str(mutation.payload.get("arg_id", ""))
            number = numbers.get(mutation.turn_key, 0)
            downgrades.setdefault(arg, []).append((number, str(mutation.payload.get("to", ""))))

    def rated(arg: str, number: int) -> str:
        argument = kb.arguments[arg]
        applied = downgrades.get(arg, [])
        if not any(n >= number for n, _ in applied):
            return argument.status
        earlier = [to for n, to in applied if n < number]
        return earlier[-1] if earlier else argument.snapshot_status

    return rated


def _claim_flags(
    ledger: Ledger,
    kb: KbView,
    number: int,
    position: str,
    claim: Mapping[str, Any],
    rated: Callable[[str, int], str],
) -> None:
    args = [a for a in claim.get("args", []) if a in kb.arguments]
    if not claim.get("args") and not claim.get("sources"):
        ledger.flags.append(
            Flag(number, position, "untraced", f"“{claim['text']}” cites no argument or source")
        )
    weak = [a for a in args if RANK.get(rated(a, number), 3) <= RANK["weak"]]
    if weak and RANK.get(claim.get("presented_as", ""), 0) >= RANK["strong"]:
        listed = ", ".join(f"{a} ({rated(a, number)})" for a in weak)
        ledger.flags.append(
            Flag(number, position, "baseless-as-robust", f"presents {listed} as {claim['presented_as']}")
        )
    # Re-raising is leaning again on one's own closed claim; the other side citing it is no breach.
    for entry_id in _reraised(ledger, number, position, args):
        closure = ledger.entries[entry_id].closure or {}
        ledger.flags.append(
            Flag(number, position, "reraised-closed", f"cites {closure.get('arg')} of closed {entry_id}")
        )


def _add_entries(ledger: Ledger, number: int, position: str, claims: list[Mapping[str, Any]]) -> None:
    for claim in claims:
        entry_id = f"L-{len(ledger.entries) + 1:03d}"
        entry = Entry(
            id=entry_id,
            claim=str(claim["text"]),
            position=position,
            turn=number,
            args=list(claim.get("args", [])),
            sources=list(claim.get("sources", [])),
            presented_as=str(claim.get("presented_as", "")),
            thread=[number],
        )
        if not entry.args and not entry.sources:
            entry.status = "unclaimable"
            entry.notes.append("untraced: cites no argument or source")
        reraised = _reraised(ledger, number, position, entry.args)
        if reraised:  # not a new claim: it cannot be argued, closed again or objected to a second time
            entry.status = "unclaimable"
            entry.notes.append(f"re-raises closed {', '.join(reraised)}")
        ledger.entries[entry_id] = entry


def _reraised(ledger: Ledger, number: int, position: str, args: list[str]) -> list[str]:
    """The position's own closed entries whose closing argument these args cite again (after the ruling)."""
    return [
        e.id
        for e in ledger.entries.values()
        if e.closed
        and e.closure
        and e.position == position
        and e.closure["arg"] in args
        and e.closure["turn"] < number
    ]


def ledger_build(view: RunView) -> Ledger:
    config = view.config
    assert isinstance(config, KbDebateConfig)
    kb = view.kb
    ledger = Ledger()
    rated = _ratings(view) if kb is not None else None
    for number, turn in enumerate(view.turns.values(), start=1):
        position = position_of(turn.seat, config.positions)
        info = TurnInfo(number, turn.key, turn.seat, turn.task, position, turn.status, turn.payload)
        ledger.turns.append(info)
        if not turn.committed or turn.payload is None or kb is None or rated is None:
            continue
        payload = turn.payload
        if turn.task in ("opening", "turn"):
            cited = ledger.cited.setdefault(position, {}).setdefault(number, set())
            for claim in payload.get("claims", []):
                cited.update(claim.get("args", []))
                _claim_flags(ledger, kb, number, position, claim, rated)
        if turn.task == "opening":
            _add_entries(ledger, number, position, payload.get("claims", []))
        elif turn.task == "turn":
            _apply_debater_turn(ledger, number, position, payload)
        elif turn.task == "moderator":
            _apply_moderator_turn(ledger, number, payload, kb)
    return ledger


def _apply_debater_turn(ledger: Ledger, number: int, position: str, payload: Mapping[str, Any]) -> None:
    target = ledger.entries.get(payload["responds_to"]["entry"])
    if target is not None and not target.closed:
        target.thread.append(number)
        move = payload["move"]
        if move == "rebut":
            target.status = (
                "rebutted" if target.status in ("partially-rebutted", "rebutted") else "partially-rebutted"
            )
        elif (
            move == "partial-rebut"
            and target.status == "open"
            or move == "defend"
            and target.status == "rebutted"
        ):
            target.status = "partially-rebutted"
        elif move == "concede":
            target.status = "conceded"
    objection = payload.get("objection")
    if objection:
        closed = ledger.entries.get(objection["entry"])
        if closed is not None and closed.closed and closed.objection is None and closed.position == position:
            closed.objection = {
                "turn": number,
                "text": objection["text"],
                "new_args": list(objection.get("new_args", [])),
                "new_sources": list(objection.get("new_sources", [])),
                "pending": True,
            }
            closed.thread.append(number)
            ledger.cited.setdefault(position, {}).setdefault(number, set()).update(
                objection.get("new_args", [])
            )
    _add_entries(ledger, number, position, payload.get("claims", []))


def _closure_backing(kb: KbView, arg_id: str) -> str:
    """Whether the KB backs a closure on `arg_id`: "rated" (refuted / baseless now), "pending" (a downgrade to it
    waits for approval) or "" (no such rating: the downgrade was rejected or refused)."""
    argument = kb.arguments.get(arg_id)
    if argument is not None and argument.status in DEAD:
        return "rated"
    downgrades = [
        m
        for m in kb.mutations
        if m.kind == "status-downgrade" and m.payload.get("arg_id") == arg_id and m.payload.get("to") in DEAD
    ]
    return "pending" if any(m.status == "pending" for m in downgrades) else ""


def _apply_moderator_turn(ledger: Ledger, number: int, payload: Mapping[str, Any], kb: KbView) -> None:
    ledger.last_moderator = number
    for press in payload.get("presses", []):
        entry = ledger.entries.get(press["entry"])
        if entry is not None:
            entry.thread.append(number)
            entry.notes.append(f"pressed at turn {number}: {press['text']}")
    for ruling in payload.get("rulings", []):
        entry = ledger.entries.get(ruling["entry"])
        if entry is None or entry.closed:
            continue
        entry.thread.append(number)
        backing = _closure_backing(kb, ruling["arg_id"])
        if not backing:  # closure needs the matching KB downgrade; a rejected one voids the ruling
            entry.notes.append(
                f"ruling at turn {number} void: the downgrade of {ruling['arg_id']} to refuted/baseless was not applied"
            )
            continue
        if backing == "pending":
            entry.notes.append(f"closure waits for the approval of {ruling['arg_id']}'s downgrade")
        entry.status = "closed"
        entry.closure = {
            "pending_downgrade": backing == "pending",
            "turn": number,
            "arg": ruling["arg_id"],
            "as": ruling["closed_as"],
            "justification": ruling["justification"],
            "turns": list(ruling["turns"]),
            "ruling": f'Ruling: claim "{entry.claim}" ({ruling["arg_id"]}) is CLOSED as {ruling["closed_as"]}.',
        }
    for decision in payload.get("objection_decisions", []):
        entry = ledger.entries.get(decision["entry"])
        if entry is None or not entry.objection or not entry.objection.get("pending"):
            continue
        entry.objection = {
            **entry.objection,
            "pending": False,
            "decision": decision["decision"],
            "at": number,
        }
        entry.thread.append(number)
        if decision["decision"] == "reverse":
            entry.status = "partially-rebutted"
            entry.closure = {**(entry.closure or {}), "reversed_at": number}
    for callout in payload.get("callouts", []):
        ledger.callouts.append({**callout, "at": number})
    for deflection in payload.get("deflections", []):
        ledger.deflections.append({**deflection, "at": number})


# --- the turn cap and the claims left open -------------------------------------------------------------------------


def turn_cap(view: RunView, ledger: Ledger | None = None) -> int:
    """The debate turns (openings included) the debate runs at most. The user's cap when one was set; else as many
    as the ledger needs: every opening claim answered once, half of them answered back, and a moderator turn every
    `moderator_every` of those, clamped to [min_turns, TURN_CAP_MAX]. Before the openings are in, the opening claims
    are counted at their most (OPENING_CLAIMS_AT_MOST per position, fewer when the position holds fewer arguments)."""
    config = view.config
    assert isinstance(config, KbDebateConfig)
    if config.max_turns is not None:
        return config.max_turns
    openings = [t for t in (ledger.turns if ledger else []) if t.task == "opening"]
    if ledger is not None and len(openings) >= len(config.positions):
        opening_turns = {t.number for t in openings}
        claims = sum(1 for e in ledger.entries.values() if e.turn in opening_turns)
    else:
        kb = view.kb
        held = [a.position for a in kb.arguments.values()] if kb is not None else []
        claims = sum(
            min(OPENING_CLAIMS_AT_MOST, held.count(p) or OPENING_CLAIMS_AT_MOST) for p in config.positions
        )
    answers = claims + (claims + 1) // 2
    moderator = -(-answers // config.moderator_every)
    return max(config.min_turns, min(TURN_CAP_MAX, len(config.positions) + answers + moderator))


def was_answered(ledger: Ledger, entry: Entry) -> bool:
    """Whether a debater turn has taken the entry up (rebutted, defended or conceded it): a moderator's press is
    no answer."""
    return any(n != entry.turn and ledger.turns[n - 1].task == "turn" for n in entry.thread)


def left_open(ledger: Ledger, cap: int) -> list[dict[str, Any]]:
    """The claims still live when the debate ends, each with why: never answered before the turn cap, or answered
    but not settled (neither rebutted nor conceded nor closed) before it."""
    found = []
    for entry in ledger.entries.values():
        if entry.status not in LIVE:
            continue
        answers = [n for n in entry.thread if n != entry.turn and ledger.turns[n - 1].task == "turn"]
        if not answers:
            reason = f"never answered: no debater took it up before the debate reached its cap of {cap} turns"
        else:
            turns = ", ".join(map(str, answers))
            state = "partially rebutted" if entry.status == "partially-rebutted" else "still open"
            reason = (
                f"{state} after the answers of turn{'s' if len(answers) > 1 else ''} {turns}: not settled "
                f"(rebutted, conceded or closed) before the debate reached its cap of {cap} turns"
            )
        found.append(
            {
                "entry": entry.id,
                "position": entry.position,
                "claim": entry.claim,
                "status": entry.status,
                "answered": bool(answers),
                "reason": reason,
            }
        )
    return found


# --- engagement and the verdict rules ------------------------------------------------------------------------------


def engagement(view: RunView, ledger: Ledger) -> list[dict[str, Any]]:
    """For each central question: the positions that engaged it (cited an argument that `addresses` it), those
    that only orbited it (cited arguments that are tangential / scope-mismatched / layer-shifted to it), and the
    rest."""
    kb = view.kb
    config = view.config
    assert kb is not None and isinstance(config, KbDebateConfig)
    rows = []
    for number, text, addressing in kb.central_questions:
        targets = set(addressing)
        orbiting = {src for src, kind, target in kb.edges if kind in ORBIT_EDGES and target in targets}
        engaged = [p for p in config.positions if ledger.args_cited(p) & targets]
        orbited = [p for p in config.positions if p not in engaged and ledger.args_cited(p) & orbiting]
        rows.append(
            {
                "question": number,
                "text": text,
                "engaged_by": engaged,
                "orbited_by": orbited,
                "not_engaged": [p for p in config.positions if p not in engaged and p not in orbited],
            }
        )
    return rows


def central_entries(view: RunView, ledger: Ledger, position: str) -> list[Entry]:
    kb = view.kb
    assert kb is not None
    central = {a for _, _, args in kb.central_questions for a in args}
    own = [e for e in ledger.entries.values() if e.position == position]
    return [e for e in own if set(e.args) & central] or own


def dismantled(view: RunView, ledger: Ledger, position: str) -> list[str]:
    """The position's central entries closed (and not reversed), when they are at least half of them."""
    entries = central_entries(view, ledger, position)
    closed = [e.id for e in entries if e.closed and e.closure and not e.closure.get("pending_downgrade")]
    return closed if entries and len(closed) * 2 >= len(entries) else []


def non_engagement(view: RunView, ledger: Ledger) -> list[dict[str, Any]]:
    """Deflection callouts repeated across moderator turns while the side never engaged the target argument."""
    findings = []
    config = view.config
    assert isinstance(config, KbDebateConfig)
    for position in config.positions:
        callouts = [d for d in ledger.deflections if d["position"] == position]
        turns = sorted({d["at"] for d in callouts})
        if len(turns) < 2:
            continue
        targets = {d["target_arg"] for d in callouts}
        later = {a for t, args in ledger.cited.get(position, {}).items() if t > turns[0] for a in args}
        if not any(engaging_args(view, target) & later for target in targets):
            findings.append({"position": position, "callout_turns": turns, "targets": sorted(targets)})
    return findings


def engaging_args(view: RunView, target: str) -> set[str]:
    """What engages `target` at its layer: the argument itself, an argument with an `addresses` edge to it, or an
    addressing argument of a central question it belongs to."""
    kb = view.kb
    assert kb is not None
    engaging = {target} | {src for src, kind, tgt in kb.edges if kind == "addresses" and tgt == target}
    for _, _, args in kb.central_questions:
        if target in args:
            engaging |= set(args)
    return engaging


def verdict_errors(view: RunView, ledger: Ledger, verdict: Mapping[str, Any]) -> list[str]:
    config = view.config
    assert isinstance(config, KbDebateConfig)
    positions = config.positions
    label, position = verdict["label"], verdict.get("position", "")
    broken = {p: dismantled(view, ledger, p) for p in positions}
    rows = engagement(view, ledger)
    persistent = {f["position"] for f in non_engagement(view, ledger)}
    errors = []
    if label in ("better-grounded", "engagement-asymmetry") and position not in positions:
        return [f"verdict.position: {label} needs one of the positions {', '.join(positions)}"]
    if label in ("genuinely-contested", "unresolved-by-corpus"):
        if label == "unresolved-by-corpus" and all(broken.values()):
            return []  # every side's central claims closed: nothing stands, and no balance is manufactured
        standing_engaged = any(p in r["engaged_by"] for r in rows for p in positions if not broken[p])
        if label == "unresolved-by-corpus" and not standing_engaged:
            # No side left standing engaged a central question (or the KB names none): nobody can be called
            # better-grounded, so the corpus does not settle it; the synthesis must still name what was closed.
            return []
        for p, closed in broken.items():
            if closed:
                errors.append(
                    f"verdict: no balanced verdict — {p}'s central claims are closed ({', '.join(closed)})"
                )
        return errors
    others = [p for p in positions if p != position]
    engaged_by_x = [r["question"] for r in rows if position in r["engaged_by"]]
    if not engaged_by_x:
        return [f"verdict: {position} engaged no central question via addresses edges"]
    if broken[position]:
        errors.append(f"verdict: {position}'s own central claims are closed ({', '.join(broken[position])})")
    if label == "better-grounded":
        for other in others:
            orbit_only = all(other not in r["engaged_by"] for r in rows if r["question"] in engaged_by_x)
            if not (broken[other] or other in persistent or orbit_only):
                errors.append(
                    f"verdict: better-grounded:{position} needs {other}'s central claims closed or {other} not "
                    "engaging the central questions; neither holds"
                )
    else:
        asymmetric = [
            r["question"]
            for r in rows
            if position in r["engaged_by"] and any(o in r["orbited_by"] for o in others)
        ]
        if not asymmetric:
            errors.append(
                f"verdict: engagement-asymmetry:{position} needs a central question {position} engaged and the "
                "other side only orbited"
            )
    return errors


def verdicts_possible(positions: list[str]) -> list[str]:
    """Every verdict a synthesis could give, as picked from its enum ("better-grounded:pro-x", ...)."""
    return [
        verdict_value(label, position)
        for label in VERDICT_LABELS
        for position in (positions if label in POSITIONED_LABELS else [""])
    ]


def verdicts_allowed(view: RunView, ledger: Ledger) -> list[str]:
    """The verdicts the ledger and the engagement findings allow (verdict_errors finds nothing wrong with)."""
    config = view.config
    assert isinstance(config, KbDebateConfig)
    allowed = []
    for value in verdicts_possible(config.positions):
        label, position = verdict_parts(value)
        draft = {"label": label, "position": position}
        if not verdict_errors(view, ledger, draft):
            allowed.append(value)
    return allowed


def mutation_payload(mutation: Mapping[str, Any]) -> dict[str, Any]:
    """The discipline's payload for a proposed mutation of a turn."""
    kind = mutation["kind"]
    if kind == "status-downgrade":
        return {"arg_id": mutation["arg_id"], "to": mutation["to"]}
    if kind == "new-edge":
        return {"src": mutation["src"], "type": mutation["edge_type"], "target": mutation["target"]}
    if kind == "criticism-append":
        return {"source": mutation["source"], "text": mutation["text"]}
    if kind == "traceback-append":
        return {"arg_id": mutation["arg_id"], "text": mutation["text"]}
    if kind == "new-source":
        fields = {
            "title": mutation["title"],
            "authors": list(mutation.get("authors", [])),
            "year": mutation.get("year", ""),
            "source_type": mutation.get("source_type", ""),
            "journal_or_source": mutation.get("journal_or_source", ""),
            "url": mutation.get("url", ""),
            "doi": mutation.get("doi", ""),
            "key_finding": mutation.get("key_finding", ""),
            "content": mutation.get("text", ""),
            "arg_id": mutation.get("arg_id", ""),
            "note": mutation.get("note", ""),
            "disputes": mutation.get("disputes", ""),
            "criticism": mutation.get("criticism", ""),
        }
        return {key: value for key, value in fields.items() if value not in ("", [])}
    return {
        "type": mutation["contradiction_type"],
        "title": mutation["title"],
        "arguments": list(mutation["arguments"]),
        "description": mutation["text"],
    }
