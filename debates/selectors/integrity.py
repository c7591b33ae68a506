"""Sycophancy and integrity signals of finished runs (issue 8): how often each seat conceded, deflected or defended,
the rounds in which both sides only conceded (handshakes), how many citations verified, the judge's arithmetic
mismatches, and whether the human agreed with the judge.

API (selectors; read-only, no protocol is changed):

- ``run_signals(run) -> dict``: the signals of one run (the run page's ``#integrity`` panel), plus the agreement
  across runs of the same protocol once the run has completed (the panel shows none before).
- ``runs_signals(runs) -> dict[int, dict]``: the same dict (without the across-runs figure) for many runs, by id, in
  a fixed number of queries whatever the number of runs (the archive's page). ``runs`` are run ids or ``Run``
  instances (instances are used as they are, ids are fetched in one query).
- ``agreement_stats(queryset=None) -> dict``: human-vs-judge agreement across runs (agreed, overridden,
  adjudicated, agreement rate in %), one aggregate query.

The dict of one run::

    {
      "run_id": 7, "protocol": "cross-examination", "status": "completed",
      "applicable": True,              # False until the run is completed: the template shows "—"
      "seats": [                       # [] when the protocol has no notion of conceding / defending
        {"handle": "analyst-1", "name": "Analyst 1",
         "conceded":  {"count": 1, "of": 4, "rate": 25.0, "basis": "questions classified"},
         "deflected": {...} | None,    # None: not applicable to the protocol
         "defended":  {...} | None},
      ],
      "seats_note": "",                # why there are no seat rates ("not applicable to …")
      "handshakes": {"count": 0, "rounds": ["r2/technical"], "basis": "…"} | None,   # None: not applicable
      "citations": {"total": 9, "verified": 7, "mismatch": 1, "unverified": 1, "inferred": 0, "rate": 77.8},
      "arithmetic": {"count": 1, "details": ["Total A: …"]} | None,                 # None: no judge's arithmetic
      "pick": {"state": "agrees" | "overrides" | "adjudicated" | "awaiting" | "",
               "judge": "Postgres", "human": "Postgres"},
      "flagged": True,                 # any handshake, arithmetic mismatch, citation mismatch or override
    }

Rates are percentages rounded to one decimal; ``rate`` is None when ``of`` is 0. Every protocol's outcome is read
defensively: a key a protocol does not (yet) write makes its signal "not applicable", never an error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models import Count, F, Q, QuerySet

from debates.models import Run, RunStatus, Seat, Turn, TurnStatus

CITATION_STATUSES = ("verified", "mismatch", "unverified", "inferred")
RUN_FIELDS = ("id", "protocol", "status", "outcome", "config", "judge_pick", "human_pick")


# --- small helpers -----------------------------------------------------------------------------------------------


def _rate(count: int, of: int) -> float | None:
    return round(100 * count / of, 1) if of else None


def _measure(count: int, of: int, basis: str) -> dict[str, Any]:
    return {"count": count, "of": of, "rate": _rate(count, of), "basis": basis}


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


# --- per-seat rates and handshakes, per protocol -----------------------------------------------------------------
# Each takes the outcome, the run's config, the seats (handle -> name, in seat order) and the run's committed
# debate turns as (seat handle, task, payload), and returns (seats, seats_note, handshakes).

SeatResult = tuple[list[dict[str, Any]], str, dict[str, Any] | None]


def _cross_examination(outcome: Mapping[str, Any], config: Mapping[str, Any], names, turns) -> SeatResult:
    seats = []
    for row in _list(outcome.get("summary")):
        row = _dict(row)
        classified = sum(int(row.get(k) or 0) for k in ("defended", "conceded", "deflected"))
        basis = "questions classified by the examiner"
        seats.append(
            {
                "handle": str(row.get("analyst", "")),
                "name": str(row.get("name") or row.get("analyst", "")),
                "conceded": _measure(int(row.get("conceded") or 0), classified, basis),
                "deflected": _measure(int(row.get("deflected") or 0), classified, basis),
                "defended": _measure(int(row.get("defended") or 0), classified, basis),
            }
        )
    note = "" if seats else "no examiner classification in this run"
    return seats, note, None  # one-sided questioning: there are no rounds in which both sides answer


def _kb_debate(outcome: Mapping[str, Any], config: Mapping[str, Any], names, turns) -> SeatResult:
    try:
        from debates.protocols.kb_debate.protocol import debater_handle
    except ImportError:  # pragma: no cover - the protocol is part of the project
        return [], "not applicable", None
    positions = [str(p) for p in _list(config.get("positions"))]
    handle_of = {p: debater_handle(p) for p in positions}
    moves: dict[str, list[str]] = defaultdict(list)
    deflections: dict[str, int] = defaultdict(int)
    rounds: list[list[tuple[str, str]]] = [[]]
    for seat, task, payload in turns:
        payload = _dict(payload)
        if task == "turn":
            move = str(payload.get("move", ""))
            moves[seat].append(move)
            rounds[-1].append((seat, move))
        elif task == "moderator":
            # The ruling closes a round: a seat that answered in it and was called out deflected once there, however
            # many callouts name it (a rate of its turns that passed 100 % would be nonsense).
            called_out = {str(_dict(d).get("position", "")) for d in _list(payload.get("deflections"))}
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
                "conceded": _measure(made.count("concede"), len(made), basis),
                "deflected": _measure(
                    deflections.get(handle, 0), len(made), basis + " called out by the moderator's ruling"
                ),
                "defended": _measure(made.count("defend"), len(made), basis),
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


def _comparative(outcome: Mapping[str, Any], config: Mapping[str, Any], names, turns) -> SeatResult:
    openings = _dict(outcome.get("openings"))
    rebuttals = [_dict(r) for r in _list(outcome.get("rebuttals"))]
    if not rebuttals:
        return [], "not applicable: no rebuttal round in this run (subagent or single mode)", None
    option_names = _dict(outcome.get("options"))
    acknowledged: dict[str, int] = {}
    for seat, task, payload in turns:
        if task == "rebuttal":
            option = seat.rsplit("-", 1)[-1].upper()  # advocate-a / advocate-b
            acknowledged[option] = len(_list(_dict(payload).get("acknowledged_strong")))
    seats = []
    for option in ("A", "B"):
        other = "B" if option == "A" else "A"
        their_claims = len(_list(_dict(openings.get(other)).get("arguments")))
        attacked = [r for r in rebuttals if r.get("target") == option and r.get("verdict")]
        survived = sum(1 for r in attacked if r.get("verdict") == "SURVIVE")
        seats.append(
            {
                "handle": f"advocate-{option.lower()}",
                "name": names.get(f"advocate-{option.lower()}")
                or f"Advocate {option}" + (f" ({option_names[option]})" if option in option_names else ""),
                "conceded": _measure(
                    acknowledged.get(option, 0), their_claims, "opponent's claims acknowledged as strong"
                ),
                "deflected": None,
                "defended": _measure(survived, len(attacked), "own claims rebutted that SURVIVE (judge)"),
            }
        )
    return seats, "", None  # the rebuttal round requires rebuttals: a side cannot only concede


def _market_panel(outcome: Mapping[str, Any], config: Mapping[str, Any], names, turns) -> SeatResult:
    rows = [_dict(r) for r in _list(outcome.get("rows"))]
    pairs = [_dict(p) for p in _list(outcome.get("pairs"))]
    if not rows:
        return [], "no arguments in this run", None
    made: dict[str, list[str]] = defaultdict(list)
    own: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        own[str(row.get("seat", ""))].append(str(_dict(row.get("closing")).get("state", "")))
        for challenge in _list(row.get("challenges")):
            challenge = _dict(challenge)
            kind = challenge.get("challenge_type") or challenge.get("type") or ""
            made[str(challenge.get("by", ""))].append(str(kind))
    order = [str(s) for s in _list(outcome.get("seats"))] or list(own)
    seats = []
    for handle in order:
        kinds = made.get(handle, [])
        states = own.get(handle, [])
        seats.append(
            {
                "handle": handle,
                "name": names.get(handle, handle),
                "conceded": _measure(kinds.count("concede"), len(kinds), "challenges made"),
                "deflected": None,
                "defended": _measure(
                    sum(1 for s in states if s and s != "abandoned" and s != "no closing"),
                    len(states),
                    "own arguments kept in the closing",
                ),
                "partial": _measure(kinds.count("partial"), len(kinds), "challenges made"),
            }
        )
    handshake_rounds = []
    for pair in pairs:
        sides = [str(pair.get("first", "")), str(pair.get("second", ""))]
        if all(made.get(s) and all(k == "concede" for k in made[s]) for s in sides):
            handshake_rounds.append(f"cross-examination, {pair.get('lens', '?')} lens")
    handshakes = {
        "count": len(handshake_rounds),
        "rounds": handshake_rounds,
        "basis": "cross-examination pairs in which both sides' challenges were all concessions",
    }
    return seats, "", handshakes


def _adversarial(outcome: Mapping[str, Any], config: Mapping[str, Any], names, turns) -> SeatResult:
    table = [_dict(r) for r in _list(outcome.get("concern_table"))]
    assessed = [r for r in table if r.get("addressed") is not None]
    if not assessed:
        return [], "not applicable: no judged concerns in this run", None
    advocate = next((h for h, _ in names.items() if h.startswith("advocate")), "advocate")
    seats = [
        {
            "handle": advocate,
            "name": names.get(advocate, "Advocate"),
            "conceded": None,
            "deflected": None,
            "defended": _measure(
                sum(1 for r in assessed if r.get("addressed")),
                len(assessed),
                "challenger's concerns addressed",
            ),
        }
    ]
    return seats, "", None


SEAT_SIGNALS = {
    "cross-examination": _cross_examination,
    "kb-debate": _kb_debate,
    "comparative": _comparative,
    "market-panel": _market_panel,
    "adversarial": _adversarial,
}
# The turns each protocol's seat signals read (only these are fetched).
TURN_TASKS = {"kb-debate": ("turn", "moderator"), "comparative": ("rebuttal",)}


def _arithmetic(protocol: str, outcome: Mapping[str, Any]) -> dict[str, Any] | None:
    """The judge's arithmetic that code recomputed and found different, or None when no judge's figures exist."""
    details: list[Any] | None = None
    if protocol == "comparative":
        card = outcome.get("scorecard")
        details = _list(_dict(card).get("mismatches")) if isinstance(card, Mapping) else None
    elif protocol == "market-panel":
        details = _list(outcome.get("score_mismatches")) if outcome.get("judged") else None
    elif isinstance(outcome.get("arithmetic_mismatches"), list):
        details = list(outcome["arithmetic_mismatches"])
    if details is None:
        return None
    return {"count": len(details), "details": [str(d) for d in details]}


def _pick(run: Run) -> dict[str, Any]:
    outcome = _dict(run.outcome)
    if run.human_pick:
        state = (
            "adjudicated"
            if not run.judge_pick
            else "agrees"
            if run.human_pick == run.judge_pick
            else "overrides"
        )
    elif "pick_options" in outcome and run.status == RunStatus.COMPLETED:
        state = "awaiting"
    else:
        state = ""
    return {"state": state, "judge": run.judge_pick_label, "human": run.human_pick_label}


def _citations(lists: Iterable[Any]) -> dict[str, Any]:
    counts = dict.fromkeys(CITATION_STATUSES, 0)
    total = 0
    for citations in lists:
        for citation in _list(citations):
            status = _dict(citation).get("status")
            total += 1
            if status in counts:
                counts[str(status)] += 1
    return {"total": total, **counts, "rate": _rate(counts["verified"], total)}


def _signals(
    run: Run, names: Mapping[str, str], turns: Sequence[Any], citations: Iterable[Any]
) -> dict[str, Any]:
    outcome = _dict(run.outcome)
    signals: dict[str, Any] = {
        "run_id": run.pk,
        "protocol": run.protocol,
        "status": run.status,
        "applicable": run.status == RunStatus.COMPLETED,
        "seats": [],
        "seats_note": "",
        "handshakes": None,
        "citations": _citations(citations),
        "arithmetic": None,
        "pick": _pick(run),
        "concession_max": None,  # the highest seat's concession rate (the archive's badge)
        "flagged": False,
    }
    if not signals["applicable"]:
        return signals
    compute = SEAT_SIGNALS.get(run.protocol)
    if compute is None:
        signals["seats_note"] = f"not applicable: {run.protocol} has no conceding or defending"
    else:
        seats, note, handshakes = compute(outcome, _dict(run.config), names, turns)
        signals.update(seats=seats, seats_note=note, handshakes=handshakes)
    signals["arithmetic"] = _arithmetic(run.protocol, outcome)
    concessions = [
        s["conceded"]["rate"]
        for s in signals["seats"]
        if s.get("conceded") and s["conceded"]["rate"] is not None
    ]
    signals["concession_max"] = max(concessions) if concessions else None
    signals["flagged"] = bool(
        (signals["handshakes"] or {}).get("count")
        or (signals["arithmetic"] or {}).get("count")
        or signals["citations"]["mismatch"]
        or signals["pick"]["state"] == "overrides"
    )
    return signals


# --- the API -----------------------------------------------------------------------------------------------------


def runs_signals(runs: Iterable[int | Run]) -> dict[int, dict[str, Any]]:
    """The signals of many runs by id: at most four queries (runs by id, seats, cited turns, the debate turns
    some protocols read), whatever the number of runs."""
    given = list(runs)
    loaded = {r.pk: r for r in given if isinstance(r, Run)}
    wanted = [r for r in given if not isinstance(r, Run) and r not in loaded]
    if wanted:
        loaded.update((r.pk, r) for r in Run.objects.filter(pk__in=wanted).only(*RUN_FIELDS))
    if not loaded:
        return {}
    done = [pk for pk, r in loaded.items() if r.status == RunStatus.COMPLETED]
    names: dict[int, dict[str, str]] = defaultdict(dict)
    citations: dict[int, list[Any]] = defaultdict(list)
    turns: dict[int, list[tuple[str, str, Any]]] = defaultdict(list)
    if done:
        for run_id, handle, name in Seat.objects.filter(run_id__in=done).values_list(
            "run_id", "handle", "name"
        ):
            names[run_id][handle] = name
        committed = Turn.objects.filter(run_id__in=done, status=TurnStatus.COMMITTED)
        for run_id, cited in committed.exclude(citations=[]).values_list("run_id", "citations"):
            citations[run_id].append(cited)
        readers = Q()
        for protocol, tasks in TURN_TASKS.items():
            ids = [pk for pk in done if loaded[pk].protocol == protocol]
            if ids:
                readers |= Q(run_id__in=ids, task__in=tasks)
        if readers:
            rows = committed.filter(readers).order_by("run_id", "first_seq", "id")
            for run_id, handle, task, payload in rows.values_list(
                "run_id", "seat__handle", "task", "payload"
            ):
                turns[run_id].append((handle, task, payload))
    return {pk: _signals(run, names[pk], turns[pk], citations[pk]) for pk, run in loaded.items()}


def run_signals(run: Run) -> dict[str, Any]:
    """The signals of one run, with the human-vs-judge agreement across runs of its protocol once it has completed.
    Not before: the panel shows nothing until then, and a live run's panel is re-rendered with every change of its
    state (an aggregate over every run of the protocol each time, for nothing)."""
    signals = runs_signals([run])[run.pk]
    if signals["applicable"]:
        signals["agreement"] = agreement_stats(Run.objects.filter(protocol=run.protocol))
    return signals


def agreement_aggregates() -> dict[str, Count]:
    """The aggregate expressions of agreement_stats, to combine with other aggregates in one query."""
    picked = ~Q(human_pick="")
    return {
        "picked": Count("id", filter=picked),
        "agreed": Count("id", filter=picked & ~Q(judge_pick="") & Q(human_pick=F("judge_pick"))),
        "adjudicated": Count("id", filter=picked & Q(judge_pick="")),
    }


def agreement_from(totals: Mapping[str, Any]) -> dict[str, Any]:
    picked, agreed = totals.get("picked") or 0, totals.get("agreed") or 0
    adjudicated = totals.get("adjudicated") or 0
    overridden = picked - agreed - adjudicated
    return {
        "picked": picked,
        "agreed": agreed,
        "overridden": overridden,
        "adjudicated": adjudicated,
        "rate": _rate(agreed, agreed + overridden),
    }


def agreement_stats(queryset: QuerySet[Run] | None = None) -> dict[str, Any]:
    """Human-vs-judge agreement across runs: decisions (picked), those that agreed with or overrode a judge's pick,
    the adjudications (no judge's pick) apart, and the agreement rate in % of agreed + overridden (None without
    any). One query."""
    queryset = Run.objects.all() if queryset is None else queryset
    return agreement_from(queryset.order_by().aggregate(**agreement_aggregates()))
