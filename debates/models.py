"""Persistent state of debates. The database is the source of truth; the channel layer only wakes things up."""

from __future__ import annotations

import re
import uuid
from decimal import Decimal

from django.conf import settings
from django.db import models


class RunStatus(models.TextChoices):
    DRAFT = "draft"
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    AWAITING_HUMAN = "awaiting_human"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED}
# Started and not finished: a runner may drive the run, and it counts against its creator's active runs.
ACTIVE_STATUSES = [RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.AWAITING_HUMAN]


class UsageFields(models.Model):
    """Token usage and cost: per turn, and summed per run in the transaction that commits each turn."""

    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cache_write_tokens = models.PositiveBigIntegerField(default=0)
    cache_read_tokens = models.PositiveBigIntegerField(default=0)
    thinking_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal(0))

    class Meta:
        abstract = True


class Run(UsageFields):
    protocol = models.CharField(max_length=64)
    topic = models.TextField()
    material = models.TextField(blank=True, help_text="Free-text material the agents analyse.")
    kb = models.ForeignKey(
        "kb.KnowledgeBase",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="runs",
        help_text="The knowledge base debated over; its snapshot is taken when the run is created.",
    )
    config = models.JSONField(
        default=dict, help_text="The protocol's validated config (pydantic model dump)."
    )
    backend = models.CharField(max_length=32, default="simulated")
    backend_options = models.JSONField(
        default=dict, blank=True, help_text="Backend settings, e.g. simulation."
    )
    model = models.CharField(max_length=100, blank=True)
    seed = models.BigIntegerField(default=0)
    awaiting = models.JSONField(
        default=list, blank=True, help_text="Keys of the human steps the run waits for."
    )
    status = models.CharField(
        max_length=20, choices=RunStatus.choices, default=RunStatus.DRAFT, db_index=True
    )
    status_reason = models.TextField(blank=True)
    outcome = models.JSONField(null=True, blank=True)

    # The human's pick after a judge's verdict. A protocol with a pick puts `judge_pick` (the judge's choice, ""
    # when the judge failed and the human adjudicates) and `pick_options` ([value, label] pairs) in its outcome;
    # the runner copies the judge's choice here, and the latest human pick stands (every pick is a HumanAction).
    judge_pick = models.CharField(max_length=100, blank=True, db_index=True)
    human_pick = models.CharField(max_length=100, blank=True, db_index=True)
    pick_reason = models.TextField(blank=True)
    picked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    picked_at = models.DateTimeField(null=True, blank=True)

    # Checked before every model call: a call that could take the run past either limit is not made, and the run
    # pauses with `budget_stopped` set until a moderator raises the budget.
    budget_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    budget_tokens = models.BigIntegerField(null=True, blank=True)
    budget_stopped = models.BooleanField(default=False)
    # The cost estimate made at creation, and the consent it needed (seed 001's cost gate).
    estimate_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    estimate = models.JSONField(null=True, blank=True)
    consent = models.CharField(
        max_length=10,
        choices=[
            ("", "not needed"),
            ("required", "waiting for consent"),
            ("approved", "approved by a moderator"),
            ("auto", "approved automatically (under the threshold)"),
            ("declined", "declined by a moderator"),
        ],
        blank=True,
        default="",
    )

    # Control fields written by human actions and read by the runner between steps.
    pause_requested = models.BooleanField(default=False)
    step_credits = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)

    lease_owner = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    last_seq = models.PositiveBigIntegerField(default=0)

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    # Lineage (debates.services.lineage): a re-run or a fork names the run it was made from; a fork also names the turn
    # it was forked at (its history up to that turn is copied, the rest generated anew). "" for a re-run.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    forked_at_key = models.CharField(max_length=200, blank=True)

    # The new-run form's idempotency key (a uuid made when the form is rendered): a resubmit of the same form,
    # after an answer that was lost or an error page, finds this run instead of starting a second one.
    client_uuid = models.UUIDField(null=True, blank=True, unique=True, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [("moderate", "Can start, steer and decide debates")]
        # The archive filters by these and pages newest first.
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="run_archive_order"),
            models.Index(fields=["protocol", "-created_at"], name="run_protocol_created"),
            models.Index(fields=["status", "-created_at"], name="run_status_created"),
            models.Index(fields=["backend", "model"], name="run_backend_model"),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.protocol})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def pick_options(self) -> list[tuple[str, str]]:
        """The outcome's [value, label] pairs the human picks from; [] when the protocol has no pick."""
        options = self.outcome.get("pick_options") if isinstance(self.outcome, dict) else None
        pairs = []
        for option in options or []:
            if isinstance(option, (list, tuple)) and len(option) >= 2:
                pairs.append((str(option[0]), str(option[1])))
            elif isinstance(option, str):
                pairs.append((option, option))
        return pairs

    def pick_label(self, value: str) -> str:
        """An option's label (the value itself when the outcome does not name it; "" for no pick)."""
        return dict(self.pick_options).get(value, value) if value else ""

    @property
    def judge_pick_label(self) -> str:
        return self.pick_label(self.judge_pick)

    @property
    def human_pick_label(self) -> str:
        return self.pick_label(self.human_pick)

    @property
    def pick_overrides(self) -> bool:
        """The human picked something other than the judge (adjudicating without a judge is no override)."""
        return bool(self.human_pick and self.judge_pick and self.human_pick != self.judge_pick)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_write_tokens + self.cache_read_tokens


class Seat(models.Model):
    run = models.ForeignKey(Run, related_name="seats", on_delete=models.CASCADE)
    handle = models.SlugField(max_length=100)
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=32)
    lens = models.TextField(blank=True, help_text="Stance or lens the seat argues from.")
    backend = models.CharField(max_length=32, default="simulated")
    model = models.CharField(max_length=100, blank=True)
    human = models.BooleanField(default=False)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "handle"], name="seat_unique_handle")]

    def __str__(self) -> str:
        return self.handle


class TurnStatus(models.TextChoices):
    STREAMING = "streaming"
    COMMITTED = "committed"
    FAILED = "failed"


def turn_dom_id(key: str) -> str:
    """A DOM id usable as a CSS selector (htmx out-of-band swaps select by id)."""
    return "turn-" + re.sub(r"[^A-Za-z0-9_-]+", "-", key)


class Turn(UsageFields):
    run = models.ForeignKey(Run, related_name="turns", on_delete=models.CASCADE)
    key = models.CharField(max_length=200, help_text="Stable step key, e.g. r1/analysis/analyst-1.")
    seat = models.ForeignKey(Seat, related_name="turns", on_delete=models.CASCADE)
    stage = models.CharField(max_length=64)
    task = models.CharField(max_length=64)
    attempt = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=20, choices=TurnStatus.choices, default=TurnStatus.STREAMING)
    raw_text = models.TextField(blank=True, help_text="Streamed text; partial while streaming.")
    payload = models.JSONField(null=True, blank=True)
    schema_version = models.CharField(max_length=20, blank=True)
    citations = models.JSONField(default=list, blank=True)
    flags = models.JSONField(
        default=list,
        blank=True,
        help_text="What code found doubtful in the accepted answer: {kind, where, detail}.",
    )
    error = models.TextField(blank=True)
    human = models.BooleanField(default=False)
    # A turn copied into a fork from its parent run: text, payload and citations as the parent committed them,
    # usage zeroed (the parent paid for it and keeps it in its totals).
    copied_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="copies"
    )

    backend = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=100, blank=True)

    # Seq of the event that first showed this turn: snapshots include only turns shown at or before their seq.
    first_seq = models.PositiveBigIntegerField(default=0)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    first_token_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["first_seq", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="turn_unique_key")]
        # The run page reads a run's turns in this order.
        indexes = [models.Index(fields=["run", "first_seq", "id"], name="turn_run_order")]

    def __str__(self) -> str:
        return self.key

    @property
    def dom_id(self) -> str:
        return turn_dom_id(self.key)

    @property
    def is_streaming(self) -> bool:
        return self.status == TurnStatus.STREAMING


class RunEvent(models.Model):
    run = models.ForeignKey(Run, related_name="events", on_delete=models.CASCADE)
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq")]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.kind}"


class HumanActionKind(models.TextChoices):
    PAUSE = "pause"
    RESUME = "resume"
    STEP = "step"
    CANCEL = "cancel"
    SUBMIT_TURN = "submit_turn"
    CONSENT = "consent"
    BUDGET = "budget"
    MUTATION_DECIDE = "mutation_decide"
    PICK = "pick"


class HumanAction(models.Model):
    run = models.ForeignKey(Run, related_name="human_actions", on_delete=models.CASCADE)
    client_uuid = models.UUIDField(unique=True, default=uuid.uuid4)
    kind = models.CharField(max_length=20, choices=HumanActionKind.choices)
    step_key = models.CharField(max_length=200, blank=True)
    payload = models.JSONField(default=dict, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # One submission per human step: a double submit with a fresh uuid cannot answer a step twice.
            models.UniqueConstraint(
                fields=["run", "step_key"],
                condition=models.Q(kind="submit_turn"),
                name="humanaction_one_submission_per_step",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} on run {self.run_id}"
