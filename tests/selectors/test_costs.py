"""The usage and cost per seat (debates.selectors.runs.seat_costs): the sums of each seat's turns, in seat order,
human seats left out, costs as decimals to the column's places on every database."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.db.models import Count, Sum

from debates.models import Turn, TurnStatus
from debates.selectors.runs import USAGE_COLUMNS, run_turn_tally, seat_costs
from tests.conftest import run_to_stop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backend]


def test_each_seat_sums_its_turns_in_seat_order_without_the_human_seats(make_run: Any) -> None:
    run = make_run()
    assert run_to_stop(run) == "done"
    turns = Turn.objects.filter(run=run)
    # Costs a real backend would have billed, with the sixth decimal place used; one turn played by a human.
    for index, turn in enumerate(turns.order_by("pk")):
        turn.cost_usd = Decimal("0.000125") * (index + 1) + Decimal("0.000003")
        turn.thinking_tokens = 7 * index
        turn.save(update_fields=["cost_usd", "thinking_tokens"])
    human = turns.order_by("pk").first()
    assert human is not None
    Turn.objects.filter(pk=human.pk).update(human=True)

    expected = list(
        Turn.objects.filter(run=run, human=False)
        .values("seat__handle", "seat__name", "seat__model")
        .annotate(turns=Count("id"), cost=Sum("cost_usd"), **{c: Sum(c) for c in USAGE_COLUMNS})
        .order_by("seat__position")
    )
    rows = seat_costs(run.pk)
    assert rows == expected
    assert [row["seat__handle"] for row in rows] == list(
        run.seats.filter(turns__human=False).distinct().order_by("position").values_list("handle", flat=True)
    )
    assert all(isinstance(row["cost"], Decimal) and row["cost"].as_tuple().exponent == -6 for row in rows)
    assert sum(row["turns"] for row in rows) == turns.count() - 1
    assert sum(row["cost"] for row in rows) == sum(
        t.cost_usd for t in Turn.objects.filter(run=run, human=False)
    )


def test_a_run_without_turns_has_no_rows(make_run: Any) -> None:
    assert seat_costs(make_run().pk) == []


def test_the_tally_counts_every_turn_a_persons_too_and_names_the_latest_turns_stage(make_run: Any) -> None:
    """The progress widget's figures come from the same statement as the costs: every turn counted by its status,
    human or not, and the stage of the turn shown last."""
    run = make_run()
    assert run_to_stop(run) == "done"
    turns = list(Turn.objects.filter(run=run).order_by("first_seq", "id"))
    Turn.objects.filter(pk=turns[0].pk).update(human=True)
    Turn.objects.filter(pk=turns[1].pk).update(status=TurnStatus.FAILED)
    Turn.objects.filter(pk=turns[-1].pk).update(status=TurnStatus.STREAMING)
    statuses = list(Turn.objects.filter(run=run).values_list("status", flat=True))

    tally = run_turn_tally(run.pk)
    assert (tally.turns, tally.committed, tally.failed) == (
        len(turns),
        statuses.count(TurnStatus.COMMITTED),
        statuses.count(TurnStatus.FAILED),
    )
    assert tally.failed == 1 and tally.committed == len(turns) - 2
    assert tally.current_stage == turns[-1].stage
    assert sum(row["turns"] for row in tally.seats) == len(turns) - 1  # the person's turn made no call
