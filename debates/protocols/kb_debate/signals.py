"""Integrity signals of a KB debate (debates.selectors.integrity): each debater's moves (concede, defend, and the
deflections the moderator called out), and the rounds in which both sides only conceded."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from debates.contract import SeatSignals
from debates.protocols.kb_debate.ledger import debater_handle
from debates.protocols.signals import as_dict, as_list, measure

# The committed turns the signals read.
TASKS = ("turn", "moderator")


def seat_signals(
    outcome: Mapping[str, Any],
    config: Mapping[str, Any],
    names: Mapping[str, str],
    turns: Sequence[tuple[str, str, Any]],
) -> SeatSignals:

    positions = [str(p) for p in as_list(config.get("positions"))]
    handle_of = {p: debater_handle(p) for p in positions}
    moves: dict[str, list[str]] = defaultdict(list)
    deflections: dict[str, int] = defaultdict(int)
    rounds: list[list[tuple[str, str]]] = [[]]
    for seat, task, payload in turns:
        payload = as_dict(payload)
        if task == "turn":
            move = str(payload.get("move", ""))
            moves[seat].append(move)
            rounds[-1].append((seat, move))
        elif task == "moderator":
            # The ruling closes a round: a seat that answered in it and was called out deflected once there, however
            # many callouts name it (a rate of its turns that passed 100 % would be nonsense).
            called_out = {str(as_dict(d).get("position", "")) for d in as_list(payload.get("deflections"))}
            answered = {seat for seat, _ in rounds[-1]}
            for handle in {handle_of.get(p, p) for p in called_out} & answered:
                deflections[handle] += 1
            if rounds[-1]:
                rounds.append([])
    basis = "debate turns"
    seats = []
    for position in positions:
        handle = handle_of[position]
        made = moves.get(handle, [])
        seats.append(
            {
                "handle": handle,
                "name": names.get(handle, position),
                "conceded": measure(made.count("concede"), len(made), basis),
                "deflected": measure(
                    deflections.get(handle, 0), len(made), basis + " called out by the moderator's ruling"
                ),
                "defended": measure(made.count("defend"), len(made), basis),
            }
        )
    handshake_rounds = [
        f"round {number}"
        for number, moves_in in enumerate((r for r in rounds if r), start=1)
        if len({seat for seat, _ in moves_in}) >= 2 and all(move == "concede" for _, move in moves_in)
    ]
    handshakes = {
        "count": len(handshake_rounds),
        "rounds": handshake_rounds,
        "basis": "debate turns between two moderator turns, both sides answering, every move a concession",
    }
    return seats, "" if seats else "no debaters", handshakes
