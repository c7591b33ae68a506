"""The attention bus: after a commit that may change what waits for a person (a run's status, a committed turn that
proposes a KB change, a decision), every open page's "Needs you" count is told to look again. A wake-up only: the
pages' consumers recount from the database (debates.selectors.inbox)."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

ATTENTION_GROUP = "needs-you"
# The events after which what waits for a person may have changed.
ATTENTION_KINDS = frozenset({"run_status", "turn_committed", "mutation_decided", "pick_recorded"})


def _send() -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(ATTENTION_GROUP, {"type": "attention.changed"})
    except Exception:  # best effort: a page recounts on its next load or wake-up
        return


def attention_ping() -> None:
    """Wake the "Needs you" counts once the current transaction commits (at once outside one). The consumers
    coalesce a burst of wake-ups into one recount."""
    transaction.on_commit(_send)
