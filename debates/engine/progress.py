"""What a runner's latest decision saw of its run, kept in the process that runs it.

Every burst of a run's events is rendered in its runner's process, with the status widgets (the stage bar, the
count of turns, the plan's notices) and, for a turn's start or a protocol's panels, a view of the run. Read from
the database, that was a view (and a plan) per burst: a fifth of a market panel's CPU, a sixth of a KB debate's.
The runner has both when it decides, so it notes them here:
- the plan's figures (the turns it expects, its notices) hold until its next decision;
- the view holds while nothing has happened to the run since (its last seq is the decision's). What changes
  without an event of the run, another run's revision of a shared KB, shows from the next event on."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from debates.contract import RunView
from debates.models import Run


@dataclass(frozen=True)
class PlanNote:
    created_at: datetime  # the run's: a test database that rolls back hands out the same run ids again
    expected_turns: int
    notices: tuple[str, ...]
    seq: int  # the run's last seq when the decision's transaction committed
    view: RunView | None  # the view as of `seq`; None when the decision could not tell


_notes: dict[int, PlanNote] = {}


def run_plan_note(
    run: Run, *, expected_turns: int, notices: tuple[str, ...], seq: int, view: RunView | None
) -> None:
    """The runner decided to run steps (its transaction has committed): what it saw, until its next decision."""
    _notes[run.pk] = PlanNote(run.created_at, expected_turns, notices, seq, view)


def run_plan_forget(run_id: int) -> None:
    """The runner decided anything but steps, or stopped: the status is read from the database again."""
    _notes.pop(run_id, None)


def run_plan_noted(run: Run) -> PlanNote | None:
    """The plan of a run this process is running, as its runner last decided it; None for any other run."""
    note = _notes.get(run.pk)
    return note if note is not None and note.created_at == run.created_at else None


def run_view_noted(run: Run) -> RunView | None:
    """The view the run's runner decided on, if nothing has happened to the run since (`run` as just read)."""
    note = run_plan_noted(run)
    return note.view if note is not None and note.seq == run.last_seq else None
