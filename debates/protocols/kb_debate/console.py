"""The human moderator's console of a KB debate: the posted form read into a moderator turn's payload, the KB
changes a closure still needs (what a refused ruling offers as a one-click fix), and what the console shows now:
its sections in the order that fits the debate's state (open or collapsed) and the pickers filled from the ledger
and the KB instead of typed ids."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from debates.protocols.kb_debate.ledger import DEAD, LIVE

# The field a refused ruling's fix posts: "<arg-id>:<status>", one per downgrade the closure needs.
FIX_FIELD = "also_propose"
_FIX = re.compile(r"^(arg-\d{3,}):(refuted|baseless)$")
# The rating a closure needs, by what the claim is closed as (a debunked source leaves its argument baseless).
CLOSURE_RATING = {"refuted": "refuted", "baseless": "baseless", "source-debunked": "baseless"}


# --- the posted form ----------------------------------------------------------------------------------------------


def posted(data: Mapping[str, Any], name: str) -> list[str]:
    """Every value posted under `name`, stripped and non-empty: a QueryDict's list (checkboxes), or a plain
    mapping's string or list."""
    getlist = getattr(data, "getlist", None)
    if callable(getlist):
        raw: Iterable[Any] = getlist(name)
    else:
        value = data.get(name)
        raw = value if isinstance(value, (list, tuple)) else [] if value is None else [value]
    return [str(v).strip() for v in raw if str(v).strip()]


def _text(data: Mapping[str, Any], name: str) -> str:
    values = posted(data, name)
    return values[-1] if values else ""


def _numbers(data: Mapping[str, Any], name: str) -> list[int]:
    """Turn numbers from checkboxes or typed text ("1, 3"), each once, in order."""
    found = [int(n) for value in posted(data, name) for n in re.findall(r"\d+", value)]
    return sorted(set(found))


def _ids(data: Mapping[str, Any], name: str) -> list[str]:
    found = [a for value in posted(data, name) for a in re.findall(r"arg-\d{3,}", value)]
    return list(dict.fromkeys(found))


def moderator_payload(data: Mapping[str, Any]) -> dict[str, Any]:
    """The moderator's console as an answer to the moderator's step (schema.moderator_schema; validated by the
    caller). A fix posted with it (FIX_FIELD) adds the downgrade a closure needs; it takes the place of a
    downgrade of the same argument in the form."""
    text = lambda name: _text(data, name)  # noqa: E731
    payload: dict[str, Any] = {"text": text("text") or "(no summary)"}
    if text("press_entry"):
        payload["presses"] = [
            {"entry": text("press_entry"), "text": text("press_text") or "Press this claim."}
        ]
    if text("callout_type"):
        payload["callouts"] = [
            {
                "type": text("callout_type"),
                "position": text("callout_position"),
                "turn": (_numbers(data, "callout_turn") or [1])[0],
                "text": text("callout_text") or text("callout_type"),
            }
        ]
    if text("deflection_position"):
        payload["deflections"] = [
            {
                "position": text("deflection_position"),
                "cited_args": _ids(data, "deflection_args"),
                "turns": _numbers(data, "deflection_turns"),
                "target_arg": text("deflection_target"),
                "text": text("deflection_text"),
            }
        ]
    if text("ruling_entry"):
        payload["rulings"] = [
            {
                "entry": text("ruling_entry"),
                "arg_id": text("ruling_arg"),
                "closed_as": text("ruling_as"),
                "justification": text("ruling_justification"),
                "turns": _numbers(data, "ruling_turns"),
            }
        ]
    if text("objection_entry"):  # the pending objection's entry is code's to record: the decision is asked
        payload["objection_decision"] = {
            "decision": text("objection_decision"),
            "text": text("objection_text") or text("objection_decision"),
        }
    mutations: list[dict[str, Any]] = []
    if text("mutation_arg"):
        mutations.append(
            {
                "kind": "status-downgrade",
                "arg_id": text("mutation_arg"),
                "to": text("mutation_to"),
                "justification": text("mutation_justification") or "Moderator's ruling.",
            }
        )
    for arg, to in fixes_posted(data):
        mutations = [m for m in mutations if m["arg_id"] != arg]
        mutations.append(
            {"kind": "status-downgrade", "arg_id": arg, "to": to, "justification": _fix_justification(data)}
        )
    if mutations:
        payload["mutations"] = mutations
    return payload


def fixes_posted(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The closure fixes posted with the form, as (argument, rating), each argument once."""
    fixes: dict[str, str] = {}
    for value in posted(data, FIX_FIELD):
        match = _FIX.match(value)
        if match:
            fixes[match[1]] = match[2]
    return list(fixes.items())


def _fix_justification(data: Mapping[str, Any]) -> str:
    entry, closed_as, why = (
        _text(data, "ruling_entry"),
        _text(data, "ruling_as"),
        _text(data, "ruling_justification"),
    )
    head = f"Closing {entry} as {closed_as}" if entry and closed_as else "The moderator's ruling"
    return f"{head}: {why}"[:1000] if why else f"{head} needs this rating."


# --- what a closure needs -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClosureFix:
    """A ruling (by its index in the turn) that closes `entry` on `arg_id`, rated `status`: it needs `arg_id`
    downgraded to `to` in the same turn."""

    index: int
    entry: str
    arg_id: str
    status: str
    to: str

    @property
    def value(self) -> str:
        return f"{self.arg_id}:{self.to}"

    @property
    def label(self) -> str:
        return f"Also propose {self.arg_id} → {self.to}"


def closure_fixes(
    rulings: Sequence[Mapping[str, Any]], mutations: Sequence[Mapping[str, Any]], ratings: Mapping[str, str]
) -> list[ClosureFix]:
    """The rulings whose argument is not rated refuted or baseless and whose turn proposes no downgrade to either:
    each with the downgrade that would back it. `ratings`: the KB's arguments and their ratings now."""
    downgraded = {
        str(m.get("arg_id")) for m in mutations if m.get("kind") == "status-downgrade" and m.get("to") in DEAD
    }
    fixes = []
    for index, ruling in enumerate(rulings):
        arg = str(ruling.get("arg_id") or "")
        status = ratings.get(arg, "")
        if status in DEAD or arg in downgraded:
            continue
        to = CLOSURE_RATING.get(str(ruling.get("closed_as") or ""), "refuted")
        fixes.append(ClosureFix(index, str(ruling.get("entry") or ""), arg, status, to))
    return fixes


# --- what the console shows now -----------------------------------------------------------------------------------

SECTIONS = {
    "callouts": "Call out a move",
    "deflection": "Call out a deflection",
    "close": "Close a claim",
    "press": "Press a thin claim",
    "kb": "Propose a KB change",
}
# The payload lists each section's errors are about, and how the plain error names an item of each.
SECTION_ERRORS = {
    "objection": ("objection_decision",),
    "callouts": ("callouts",),
    "deflection": ("deflections",),
    "close": ("rulings",),
    "press": ("presses",),
    "kb": ("mutations",),
}
_ITEM_PREFIX = re.compile(r"^(?:Press|Callout|Deflection|Ruling|Mutation) 1: ")


def _plain(errors: Sequence[str]) -> list[str]:
    """The console has one of each move: 'Ruling 1: Closing needs …' reads 'Closing needs …'."""
    return [_ITEM_PREFIX.sub("", str(e)) for e in errors]


def console_context(form: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the console renders beyond the posted values: `form` is the moderator form of
    selectors.panels.moderator_context (`context`: the step's, `kb`: the run's page context, `values`: what was
    posted, `errors` / `field_errors`: why it was refused)."""
    step = form.get("context") or {}
    kb = form.get("kb") or {}
    values = form.get("values") or {}
    field_errors: Mapping[str, Sequence[str]] = form.get("field_errors") or {}
    refused = bool(form.get("errors"))
    args: Mapping[str, Mapping[str, Any]] = kb.get("args") or {}
    ledger = list(step.get("ledger") or kb.get("ledger") or [])
    flags = list(step.get("flags") or [])
    pending = step.get("pending_objection")
    number = int(step.get("turn") or 0)

    turns = [
        t
        for t in sorted((kb.get("turns") or {}).values(), key=lambda t: t["number"])
        if t.get("committed", True) and (not number or t["number"] < number)
    ]
    debater_turns = [t for t in turns if t.get("position")]
    cited: dict[str, dict[str, list[int]]] = {}  # arg -> position -> turns
    for position, by_turn in (kb.get("cited") or {}).items():
        for turn, turn_args in by_turn.items():
            for arg in turn_args:
                cited.setdefault(arg, {}).setdefault(position, []).append(int(turn))
    cited_args = [
        {
            **_arg_brief(args, arg),
            "by": "; ".join(
                f"{p} in turn{'s' if len(ns) > 1 else ''} {', '.join(map(str, sorted(ns)))}"
                for p, ns in sorted(by.items())
            ),
        }
        for arg, by in sorted(cited.items())
    ]

    live = [e for e in ledger if e.get("status") in LIVE or e.get("status") == "rebutted"]
    closable = [
        {"entry": e["id"], "arg": r["arg"], "status": r["status"], "position": e["position"]}
        for e in live
        for r in e.get("references", [])
        if r.get("status") in DEAD
    ]
    ratings = {a: str(info.get("status", "")) for a, info in args.items()}
    payload = moderator_payload(values) if refused else {}
    fixes = [
        f
        for f in closure_fixes(payload.get("rulings", []), payload.get("mutations", []), ratings)
        if f.arg_id in args and f.status
    ]
    kept = [
        {"value": f"{arg}:{to}", "label": f"Also propose {arg} → {to}"}
        for arg, to in fixes_posted(values)
        if refused and arg in args and ratings.get(arg) not in DEAD
    ]

    def chose(*names: str) -> bool:
        return refused and any(_text(values, n) for n in names)

    errors = {
        name: _plain([e for key in keys for e in field_errors.get(key, [])])
        for name, keys in SECTION_ERRORS.items()
    }
    applies = {
        "callouts": bool(flags),
        "deflection": False,
        "close": bool(closable) or bool(fixes) or bool(kept),
        "press": not flags
        and not closable
        and pending is None
        and any(e.get("status") == "open" for e in ledger),
        "kb": False,
    }
    touched = {
        "callouts": chose("callout_type"),
        "deflection": chose("deflection_position"),
        "close": chose("ruling_entry"),
        "press": chose("press_entry"),
        "kb": chose("mutation_arg"),
    }
    hints = {
        "callouts": (
            f"{len(flags)} flag{'s' if len(flags) != 1 else ''} since your last turn"
            if flags
            else "overreach, a secondhand citation, a closed claim raised again…"
        ),
        "deflection": "a side answers a central argument at another layer or scope",
        "close": (
            "can be closed now: "
            + "; ".join(f"{c['entry']} ({c['arg']} is {c['status']})" for c in closable[:3])
            if closable
            else "needs its argument rated refuted or baseless"
        ),
        "press": "ask a side to show more for a claim",
        "kb": "downgrade an argument's rating (never up)",
    }
    sections = [
        {
            "name": name,
            "title": title,
            "hint": hints[name],
            "open": applies[name] or touched[name] or bool(errors[name]),
            "errors": errors[name],
        }
        for name, title in SECTIONS.items()
    ]
    # What applies now first (in the order above), then the rest, collapsed.
    sections.sort(key=lambda s: not s["open"])

    flag = flags[0] if flags else None
    latest = debater_turns[-1]["number"] if debater_turns else (turns[-1]["number"] if turns else "")
    return {
        "sections": sections,
        # Each move's errors next to its fields, in plain words.
        "errors": {key: _plain(list(grouped)) for key, grouped in field_errors.items()},
        "turns": turns,
        "turns_newest": list(reversed(turns)),
        "debater_turns": debater_turns,
        "cited_args": cited_args,
        "open_entries": [e for e in ledger if e.get("status") != "closed"],
        "closable": closable,
        "fixes": [
            {"value": f.value, "label": f.label, "arg": f.arg_id, "to": f.to, "status": f.status}
            for f in fixes
        ],
        "kept_fixes": kept,
        "ruling_arg_group": _ruling_arg_group(
            ledger, _text(values, "ruling_entry"), _text(values, "ruling_arg")
        ),
        "ruling_turns": _chosen_numbers(values, "ruling_turns"),
        "deflection_turns": _chosen_numbers(values, "deflection_turns"),
        "deflection_args": set(_ids(values, "deflection_args")),
        "callout_turn": _text(values, "callout_turn") or str(flag["turn"] if flag else latest),
        "callout_position": _text(values, "callout_position") or (flag["position"] if flag else ""),
    }


def _ruling_arg_group(ledger: Sequence[Mapping[str, Any]], entry: str, arg: str) -> str:
    """The ledger entry under which the argument picker shows the posted argument as chosen: the posted entry
    when it cites it, else the first that does."""
    citing = [e["id"] for e in ledger if arg in [r.get("arg") for r in e.get("references", [])]]
    return entry if entry in citing else (citing[0] if citing else "")


def _chosen_numbers(values: Mapping[str, Any], name: str) -> set[str]:
    return {str(n) for n in _numbers(values, name)}


def _arg_brief(args: Mapping[str, Mapping[str, Any]], arg: str) -> dict[str, Any]:
    info = args.get(arg) or {}
    return {
        "id": arg,
        "title": info.get("title", ""),
        "status": info.get("status", "unknown"),
        "position": info.get("position", ""),
    }
