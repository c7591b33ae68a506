"""What the run page of a kb-debate shows beyond a turn's own data (Protocol.page_context): the KB with live and
snapshot ratings, the claims ledger, turn numbers and anchors, engagement edges and proposed mutations."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from debates.engine.view import run_view_load
from debates.models import turn_dom_id
from debates.protocols.kb_debate.ledger import KbDebateConfig, TurnInfo, ledger_build

if TYPE_CHECKING:
    from debates.models import Run

ORBIT_VERBS = {
    "layer-shift-from": "layer-shifts from",
    "scope-mismatch-with": "scope-mismatches",
    "tangential-to": "is tangential to",
}


def turn_label(turn: TurnInfo) -> str:
    """A turn as the console's pickers list it: number, speaker and move ("3 · pro-pricing, rebut L-002")."""
    if turn.task == "turn":
        payload = turn.payload or {}
        answered = (payload.get("responds_to") or {}).get("entry") or ""
        what = f"{payload.get('move') or 'turn'} {answered}".strip()
    else:
        what = {"verdict-review": "verdict review"}.get(turn.task, turn.task)
    speaker = turn.position or turn.seat
    return (
        f"{turn.number} · {what}"
        if speaker in ("moderator", "orchestrator")
        else f"{turn.number} · {speaker}, {what}"
    )


def kb_debate_context(run: Run) -> dict[str, Any] | None:
    """A kb-debate run's KB as its page shows it: every argument with its live rating (and the one the snapshot
    took), the claims ledger derived from the committed turns, turn numbers with their anchors, the engagement
    edges between arguments, and the KB mutations this run proposed, per turn."""
    view = run_view_load(run)
    kb = view.kb
    if kb is None:
        return None
    ledger = ledger_build(view)
    arguments = {
        a.arg_id: {
            "id": a.arg_id,
            "title": a.title,
            "position": a.position,
            "layer": a.layer,
            "scope": a.scope,
            "status": a.status,
            "snapshot_status": a.snapshot_status,
        }
        for a in kb.arguments.values()
    }
    relations: dict[str, dict[str, str]] = {}
    for src, kind, target in kb.edges:
        if kind in ORBIT_VERBS:
            relations.setdefault(src, {})[target] = ORBIT_VERBS[kind]
    mutations: dict[str, list[dict[str, Any]]] = {}
    for m in kb.mutations:
        mutations.setdefault(m.turn_key, []).append({"id": m.id, "status": m.status, "revision": m.revision})
    entries = [e.as_dict(kb) for e in ledger.entries.values()]
    config = view.config
    assert isinstance(config, KbDebateConfig)
    turns = {
        t.number: {
            "number": t.number,
            "key": t.key,
            "dom_id": turn_dom_id(t.key),
            "seat": t.seat,
            "task": t.task,
            "position": t.position,
            "committed": t.status == "committed",
            "label": turn_label(t),
        }
        for t in ledger.turns
    }
    for entry in entries:
        entry["fragment"] = ledger_entry_fragment(entry, kb.slug, arguments, turns)
    return {
        "slug": kb.slug,
        "args": arguments,
        "arg_list": list(arguments.values()),
        "changed": [a for a in arguments.values() if a["status"] != a["snapshot_status"]],
        "relations": relations,
        "ledger": entries,
        "entries": {e["id"]: e for e in entries},
        "turns": turns,
        # Which arguments each position cited in which turn (the console's deflection picker).
        "cited": {
            position: {n: sorted(args) for n, args in sorted(by_turn.items())}
            for position, by_turn in ledger.cited.items()
        },
        "by_key": {t.key: t.number for t in ledger.turns},
        "positions": list(config.positions),
        "mutations_by_turn": mutations,
        "flags": [f.__dict__ for f in ledger.unhandled_flags()],
    }


def ledger_entry_fragment(
    entry: dict[str, Any], slug: str, arguments: dict[str, dict[str, Any]], turns: dict[int, dict[str, Any]]
) -> str:
    """The key of an entry's rendered HTML in the ledger panel ({% cache %} in the template): a digest of all it
    shows (the entry, the KB ratings of the arguments it cites, the anchors of the turns it links to). The panel is
    re-rendered on every commit while most entries stay as they were; they are rendered once each."""
    numbers = {entry["turn"], *entry["thread"]}
    for part, field in ((entry["closure"], "reversed_at"), (entry["objection"], "turn")):
        if part and part.get(field) is not None:
            numbers.add(part[field])
    shown = {
        "entry": entry,
        "slug": slug,
        "args": {r["arg"]: arguments.get(r["arg"]) for r in entry["references"]},
        "turns": {str(n): (turns.get(n) or {}).get("dom_id") for n in numbers if n is not None},
    }
    return hashlib.blake2b(
        json.dumps(shown, sort_keys=True, default=str).encode(), digest_size=16
    ).hexdigest()
