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
      "run_id": 7, "protocol": "<its name>", "status": "completed",
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
      "flags": {"total": 3, "turns": 2, "kinds": {"unverified_quote": 2, "missing_revision": 1}},  # Turn.flags
      "pick": {"state": "agrees" | "overrides" | "adjudicated" | "awaiting" | "",
               "judge": "Postgres", "human": "Postgres"},
      "flagged": True,                 # any handshake, arithmetic mismatch, citation mismatch, flag or override
    }

Rates are percentages rounded to one decimal; ``rate`` is None when ``of`` is 0. Every protocol's outcome is read
defensively: a key a protocol does not (yet) write makes its signal "not applicable", never an error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models import Count, F, Q, QuerySet

from debates.engine import registry
from debates.models import Run, RunStatus, Seat, Turn, TurnStatus
from debates.protocols.signals import as_dict, as_list, rate

CITATION_STATUSES = ("verified", "mismatch", "unverified", "inferred")
RUN_FIELDS = ("id", "protocol", "status", "outcome", "config", "judge_pick", "human_pick")


# --- per-seat rates, handshakes and the judge's arithmetic: each protocol's own (Protocol.seat_signals, its
# package's signals.py), read from the outcome, the config, the seats (handle -> name, in seat order) and the
# committed turns of the tasks it names (Protocol.signal_tasks) as (seat handle, task, payload).


def _arithmetic(protocol: str, outcome: Mapping[str, Any]) -> dict[str, Any] | None:
    """The judge's arithmetic that code recomputed and found different, or None when no judge's figures exist."""
    details = registry.get(protocol).arithmetic_mismatches(outcome)
    if details is None:
        return None
    return {"count": len(details), "details": [str(d) for d in details]}


def _pick(run: Run) -> dict[str, Any]:
    outcome = as_dict(run.outcome)
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
        for citation in as_list(citations):
            status = as_dict(citation).get("status")
            total += 1
            if status in counts:
                counts[str(status)] += 1
    return {"total": total, **counts, "rate": rate(counts["verified"], total)}


def _flags(lists: Iterable[Any]) -> dict[str, Any]:
    """What code flagged in the committed turns (Turn.flags): how many items, in how many turns, of each kind."""
    kinds: dict[str, int] = defaultdict(int)
    turns = 0
    for flags in lists:
        items = [as_dict(flag) for flag in as_list(flags)]
        turns += bool(items)
        for item in items:
            kinds[str(item.get("kind") or "flag")] += 1
    ordered = dict(sorted(kinds.items()))
    return {
        "total": sum(kinds.values()),
        "turns": turns,
        "kinds": ordered,
        "labels": [{"label": kind.replace("_", " "), "count": count} for kind, count in ordered.items()],
    }


def _signals(
    run: Run,
    names: Mapping[str, str],
    turns: Sequence[Any],
    citations: Iterable[Any],
    flags: Iterable[Any] = (),
) -> dict[str, Any]:
    outcome = as_dict(run.outcome)
    signals: dict[str, Any] = {
        "run_id": run.pk,
        "protocol": run.protocol,
        "status": run.status,
        "applicable": run.status == RunStatus.COMPLETED,
        "seats": [],
        "seats_note": "",
        "handshakes": None,
        "citations": _citations(citations),
        "flags": _flags(flags),
        "arithmetic": None,
        "pick": _pick(run),
        "concession_max": None,  # the highest seat's concession rate (the archive's badge)
        "flagged": False,
    }
    if not signals["applicable"]:
        return signals
    computed = registry.get(run.protocol).seat_signals(outcome, as_dict(run.config), names, turns)
    if computed is None:
        signals["seats_note"] = f"not applicable: {run.protocol} has no conceding or defending"
    else:
        seats, note, handshakes = computed
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
        or signals["flags"]["total"]
        or signals["pick"]["state"] == "overrides"
    )
    return signals


# --- the API -----------------------------------------------------------------------------------------------------


def runs_signals(runs: Iterable[int | Run]) -> dict[int, dict[str, Any]]:
    """The signals of many runs by id: at most four queries (runs by id, seats, cited or flagged turns, the debate turns
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
    flags: dict[int, list[Any]] = defaultdict(list)
    turns: dict[int, list[tuple[str, str, Any]]] = defaultdict(list)
    if done:
        for run_id, handle, name in Seat.objects.filter(run_id__in=done).values_list(
            "run_id", "handle", "name"
        ):
            names[run_id][handle] = name
        committed = Turn.objects.filter(run_id__in=done, status=TurnStatus.COMMITTED)
        marked = committed.exclude(Q(citations=[]) & Q(flags=[]))  # cited or flagged turns, in one query
        for run_id, cited, flagged in marked.values_list("run_id", "citations", "flags"):
            citations[run_id].append(cited)
            flags[run_id].append(flagged)
        readers = Q()
        for protocol in registry.all_protocols():
            ids = [pk for pk in done if loaded[pk].protocol == protocol.name]
            if ids and protocol.signal_tasks:
                readers |= Q(run_id__in=ids, task__in=protocol.signal_tasks)
        if readers:
            rows = committed.filter(readers).order_by("run_id", "first_seq", "id")
            for run_id, handle, task, payload in rows.values_list(
                "run_id", "seat__handle", "task", "payload"
            ):
                turns[run_id].append((handle, task, payload))
    return {pk: _signals(run, names[pk], turns[pk], citations[pk], flags[pk]) for pk, run in loaded.items()}


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
        "rate": rate(agreed, agreed + overridden),
    }


def agreement_stats(queryset: QuerySet[Run] | None = None) -> dict[str, Any]:
    """Human-vs-judge agreement across runs: decisions (picked), those that agreed with or overrode a judge's pick,
    the adjudications (no judge's pick) apart, and the agreement rate in % of agreed + overridden (None without
    any). One query."""
    queryset = Run.objects.all() if queryset is None else queryset
    return agreement_from(queryset.order_by().aggregate(**agreement_aggregates()))
