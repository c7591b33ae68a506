"""The durable runner: lease the run, then loop plan -> execute ready steps concurrently -> commit, until a
human wait, a pause, a cancel or Done. A crash loses at most the turns in flight, which the next runner re-runs
(attempt + 1); a turn is committed once (compare-and-set on its attempt), so nothing is lost or duplicated.

Its parts: `lease` (one runner per run), `turns` (the writes: decide, claim, commit), `budget` (usage and the
reservations of calls in flight), `stream` (live frames and event publishing). This module is the loop.

Every write goes through `Runner._write`, which publishes every event the write appended (its own, a protocol's
effects', the state records'): a viewer is sent the events in seq order, so one left unpublished would hold back
everything after it until a replay found it, seconds later.

A lost database connection (a PostgreSQL restart, a blip) is never the debate's failure: a write is tried again
once the database answers (each is guarded by the lease and the turn's attempt, so one whose commit was lost
with the connection changes nothing the second time), the heartbeat, the cancel poll and a streaming turn's
partial saves skip a beat, and anything else that met the outage makes the runner decide again from what is
persisted, as a runner taking the run over would: the turns in flight are re-run. Only errors of the debate
itself fail it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection
from pydantic import ValidationError

from debates.agents.base import AgentRequest, BackendError, InvalidOutput, Repair, Result, Usage, backend_get
from debates.agents.remote import clients_held
from debates.contract import RunView, Step
from debates.engine import registry
from debates.engine.attention import attention_sent_on
from debates.engine.budget import BudgetExceeded, BudgetReservations, run_budget_stop, run_charge
from debates.engine.crash import crash_point
from debates.engine.effects import TurnEffects
from debates.engine.events import events_collected
from debates.engine.lease import LeaseLost, lease_release, lease_renew, lease_try_acquire, owner_id
from debates.engine.progress import run_plan_forget, run_plan_note
from debates.engine.stream import EventOutbox, LiveFrames, turn_stream
from debates.engine.turns import (
    ClaimedTurn,
    RunnerOutcome,
    human_submission,
    run_decide,
    run_fail,
    turn_commit,
    turn_fail,
    turn_hold,
    turn_retry,
)
from debates.models import Run
from debates.platform.conf import conf
from debates.platform.db_retry import (
    Backoff,
    CommitOutcomeUnknown,
    Outage,
    adb_call_retrying,
    db_connection_reset,
    db_error_is_transient,
    db_write_once,
)

log = logging.getLogger("debates.engine")

Observer = Callable[[str, dict[str, Any]], None]


def run_cancel_requested(run_id: int) -> bool:
    # Read through database_sync_to_async, never the async ORM: that one keeps its thread's connection checked out
    # of the pool (a connection per event loop that ever ran a runner). A fixed statement, not the ORM: every
    # runner asks several times a second.
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "cancel_requested" FROM "{Run._meta.db_table}" WHERE "id" = %s', [run_id])
        row = cursor.fetchone()
    return bool(row and row[0])


def _agent_request(step: Step, claimed: ClaimedTurn, view: RunView, run: Run) -> AgentRequest:
    roles = cast(dict[str, dict[str, Any]], settings.DISPUTA_ROLES)  # role, stage:<id> -> call settings
    limits: dict[str, Any] = {
        **roles["default"],
        **roles.get(claimed.seat.role, {}),
        **roles.get(f"stage:{step.stage}", {}),
    }
    temperature = limits.get("temperature")
    return AgentRequest(
        step=step,
        view=view,
        protocol=run.protocol,
        options=run.backend_options,
        attempt=claimed.attempt,
        model=claimed.seat.model,
        role=claimed.seat.role,
        max_tokens=int(limits["max_tokens"]),
        effort=str(limits.get("effort", "")),
        temperature=float(temperature) if temperature is not None else None,
    )


def _output_errors(protocol: Any, step: Step, result: Result, view: RunView) -> list[str]:
    """What is wrong with an answer, field by field: the schema first, then the protocol's own rules."""
    try:
        model = step.schema.model_validate(result.payload)
    except ValidationError as error:
        return [
            f"{'.'.join(str(part) for part in item['loc']) or 'answer'}: {item['msg']}"
            for item in error.errors()
        ]
    return list(protocol.validate(step, model, view))


RECONSIDER_REASON = "Asked the model to reconsider it."
# Tries to give the lease back at the end (about 3 s of backoff) before leaving it to expire.
LEASE_RELEASE_TRIES = 6


class RunFailedFatally(Exception):
    pass


class Runner:
    def __init__(self, run_id: int, *, owner: str | None = None, observer: Observer | None = None) -> None:
        self.run_id = run_id
        self.owner = owner or owner_id()
        self.observer = observer
        self.lease_lost = False
        self.cancel_seen = False
        self._step_tasks: set[asyncio.Task[None]] = set()
        self._budget = BudgetReservations(run_id)
        self._outbox = EventOutbox(run_id)
        self._live = LiveFrames(run_id)

    async def _write[**P, T](self, write: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """One of the runner's writes, on the database thread. Every event it appends, whoever appends it, is
        queued for publishing as soon as the write ends, even when the task awaiting it was cancelled meanwhile
        (the write carries on in its thread: a cancelled step's commit is published too)."""
        loop = asyncio.get_running_loop()

        def collected() -> T:
            with events_collected() as seqs, attention_sent_on(loop):
                try:
                    return write(*args, **kwargs)
                except Exception as error:
                    if db_error_is_transient(error) or isinstance(error, CommitOutcomeUnknown):
                        db_connection_reset()  # the next try opens a fresh connection
                    raise
                finally:
                    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is left to publish
                        loop.call_soon_threadsafe(self._outbox.put, seqs)

        what = f"run {self.run_id}: {getattr(write, '__name__', 'write')}"
        return await adb_call_retrying(database_sync_to_async(collected), what=what)

    def _notify(self, kind: str, **payload: Any) -> None:
        if self.observer is not None:
            self.observer(kind, payload)

    async def execute(self, *, lease_wait: float | None = None) -> RunnerOutcome:
        wait = conf("LEASE_SECONDS") + 1 if lease_wait is None else lease_wait
        deadline = time.monotonic() + wait
        acquire = database_sync_to_async(partial(lease_try_acquire, self.run_id, self.owner))
        while not await adb_call_retrying(acquire, what=f"run {self.run_id}: lease"):
            if time.monotonic() >= deadline:
                return RunnerOutcome.LEASE_BUSY
            await asyncio.sleep(0.25)
        watcher = asyncio.create_task(self._watch())
        publisher = asyncio.create_task(self._outbox.publish())
        backoff = Backoff()
        try:
            while True:
                try:
                    return await self._loop()
                except LeaseLost:
                    log.warning(
                        "run %s: lease lost by %s; another runner carries on", self.run_id, self.owner
                    )
                    return RunnerOutcome.LOST_LEASE
                except Exception as error:
                    if db_error_is_transient(error):
                        # Not the debate's fault: decide again from what is persisted once the database answers
                        # (run_decide's write waits for it); the turns in flight are re-run, as on a takeover.
                        delay = backoff.next_delay()
                        log.warning(
                            "run %s: the database connection was lost (%s); deciding again in %.1f s",
                            self.run_id,
                            error,
                            delay,
                        )
                        await asyncio.sleep(delay)
                        continue
                    # An engine bug must not leave the run spinning: fail it, visibly.
                    log.exception("run %s failed inside the engine", self.run_id)
                    await self._write(
                        run_fail,
                        self.run_id,
                        self.owner,
                        f"Internal error in the debate engine: {error!r}. Re-run the debate.",
                    )
                    return RunnerOutcome.FAILED
        finally:
            run_plan_forget(self.run_id)
            watcher.cancel()
            self._live.stop()
            try:
                # After every write of this runner (one database thread, in order), a cancelled step's too: their
                # events are all in the outbox once the lease is back.
                await self._lease_release()
            finally:
                self._outbox.close()
                await publisher

    async def _lease_release(self) -> None:
        """Give the lease back; when the database does not answer within a few tries, it expires by itself."""
        release = database_sync_to_async(partial(lease_release, self.run_id, self.owner))
        try:
            await adb_call_retrying(release, what=f"run {self.run_id}: lease", attempts=LEASE_RELEASE_TRIES)
        except Exception as error:
            if not db_error_is_transient(error):
                raise
            log.warning(
                "run %s: the lease could not be given back (%s); it expires within %s s",
                self.run_id,
                error,
                conf("LEASE_SECONDS"),
            )

    async def _watch(self) -> None:
        """Heartbeat the lease and notice a cancel while turns stream. While the database is unreachable both
        wait: the lease may expire meanwhile, and the first write after the outage finds out who holds it."""
        renew_every = conf("LEASE_SECONDS") / 3
        last_renew = time.monotonic()
        outage = Outage(f"run {self.run_id}: heartbeat")
        while True:
            await asyncio.sleep(conf("CONTROL_POLL_SECONDS"))
            try:
                if time.monotonic() - last_renew >= renew_every:
                    if not await database_sync_to_async(lease_renew)(self.run_id, self.owner):
                        self.lease_lost = True
                        self._cancel_steps()
                        return
                    last_renew = time.monotonic()
                cancel = await database_sync_to_async(run_cancel_requested)(self.run_id)
            except Exception as error:
                if not db_error_is_transient(error):
                    raise
                outage.failed(error, conf("CONTROL_POLL_SECONDS"))
                continue
            outage.recovered()
            if cancel and not self.cancel_seen:
                self.cancel_seen = True
                self._cancel_steps()

    def _cancel_steps(self) -> None:
        for task in self._step_tasks:
            task.cancel()

    async def _loop(self) -> RunnerOutcome:
        while True:
            if self.lease_lost:
                raise LeaseLost("heartbeat failed")
            try:
                decision = await self._write(run_decide, self.run_id, self.owner)
            finally:
                self._outbox.release()  # the next stage's start joins the last commit (hold, below)
            if decision.outcome != RunnerOutcome.STEPS:
                run_plan_forget(self.run_id)
                self._notify(decision.outcome)
                return decision.outcome
            assert decision.view is not None and decision.run is not None
            view, run = decision.view, decision.run
            run_plan_note(
                run,
                expected_turns=decision.expected_turns,
                notices=decision.notices,
                seq=decision.seq,
                view=decision.view_after,
            )
            claimed_steps = [
                (step, claimed)
                for step, claimed in zip(decision.steps, decision.claims, strict=True)
                if claimed is not None
            ]
            requests = {
                step.key: _agent_request(step, claimed, view, run)
                for step, claimed in claimed_steps
                if not claimed.seat.human
            }
            await self._warm(claimed_steps, requests)
            if self.cancel_seen or self.lease_lost:  # noticed during the warm-up: no call is started
                continue
            self._step_tasks = {
                asyncio.create_task(self._run_step(step, claimed, view, run, requests.get(step.key)))
                for step, claimed in claimed_steps
            }
            results = await asyncio.gather(*self._step_tasks, return_exceptions=True)
            if len(self._step_tasks) == 1:
                # One turn handing over to the next: its end and the next start go out together. Not after a
                # parallel stage: its runners' decisions queue on the worker's database thread as its turns
                # end together, and in `bench fanout` holding them lengthened the market panel's silences.
                self._outbox.hold()
            self._step_tasks = set()
            budget_stop: BudgetExceeded | None = None
            for result in results:
                if isinstance(result, LeaseLost):
                    raise result
                if isinstance(result, RunFailedFatally):
                    self._notify(RunnerOutcome.FAILED)
                    return RunnerOutcome.FAILED
            for result in results:
                if isinstance(result, BudgetExceeded):
                    budget_stop = budget_stop or result
                elif isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                    raise result
            if budget_stop is not None:
                _, stopped = await self._write(run_budget_stop, self.run_id, self.owner, budget_stop)
                if stopped:
                    self._notify(RunnerOutcome.PAUSED)
                    return RunnerOutcome.PAUSED

    async def _warm(
        self, claimed_steps: list[tuple[Step, ClaimedTurn]], requests: dict[str, AgentRequest]
    ) -> None:
        """Let each backend write the prompt prefix its parallel calls share once, before they start."""
        by_backend: dict[str, list[AgentRequest]] = {}
        for step, claimed in claimed_steps:
            if step.key in requests:
                by_backend.setdefault(claimed.seat.backend, []).append(requests[step.key])
        for name, group in by_backend.items():
            if len(group) < 2:
                continue
            try:
                backend = backend_get(name)
                # Budget-checked like a call (an over-estimate: the warm-up writes the prefix, outputs nothing).
                estimate = backend.estimate(group[0])
            except BackendError:
                continue  # the calls will meet the same error and report it
            try:
                await self._budget.reserve(estimate, "cache warm-up")
            except BudgetExceeded:
                continue  # the calls will be checked one by one and stop the run if they do not fit
            try:
                usage = await backend.warm(group)
            finally:
                self._budget.release(estimate)
            if usage != Usage():
                try:
                    await self._write(db_write_once, run_charge, self.run_id, usage, "cache warm-up")
                except CommitOutcomeUnknown:  # charged once or not at all, never twice
                    log.exception("run %s: the cache warm-up's usage may not be recorded", self.run_id)

    async def _run_step(
        self, step: Step, claimed: ClaimedTurn, view: RunView, run: Run, request: AgentRequest | None
    ) -> None:
        if claimed.seat.human:
            submitted = await adb_call_retrying(
                database_sync_to_async(partial(human_submission, self.run_id, step.key)),
                what=f"run {self.run_id}: human submission",
            )
            protocol = registry.get(run.protocol)
            # A person's answer is completed like a model's (seat names, ids), and flagged the same way.
            accepted = protocol.accept(step, step.schema.model_validate(submitted), view)
            payload = accepted.payload
            await self._write(
                turn_commit,
                self.run_id,
                claimed.turn_id,
                claimed.attempt,
                key=step.key,
                text="",
                payload=payload,
                model="human",
                flags=[flag.as_json() for flag in accepted.flags],
                effects=partial(
                    protocol.on_commit,
                    step,
                    payload,
                    TurnEffects(run_id=self.run_id, turn_id=claimed.turn_id),
                ),
            )
            self._notify("turn_committed", key=step.key)
            return
        assert request is not None
        protocol = registry.get(run.protocol)
        attempt = claimed.attempt
        repair: Repair | None = claimed.repair
        failures = 0
        while True:
            try:
                backend = backend_get(claimed.seat.backend)
                request = request.again(attempt=attempt, repair=repair)
                estimate = backend.estimate(request)
            except BackendError as error:
                return await self._fail_run(error)
            try:
                await self._budget.reserve(estimate, f"{view.seats[step.seat].name}, {step.task}")
            except BudgetExceeded as stop:
                await self._write(turn_hold, self.run_id, claimed.turn_id, attempt, str(stop))
                raise
            result: Result | None = None
            released = False
            try:
                try:
                    result = await turn_stream(backend, request, claimed, attempt, self._live)
                    used = result.usage
                except BackendError as error:
                    failure: BackendError = error
                    used = error.usage
                await self._budget.settle(claimed.turn_id, estimate, used)
                released = True
            finally:
                if not released:  # cancelled (lease lost, run cancelled): nothing more is spent by this call
                    self._budget.release(estimate)
            if result is not None:
                errors = _output_errors(protocol, step, result, view)
                asks = (
                    protocol.repair_asks(step, step.schema.model_validate(result.payload), view)
                    if not errors and repair is None
                    else []
                )
                if asks:  # a seed's rule no schema counts: asked once, then committed and flagged
                    repair = Repair(result.text, tuple(asks))
                    reason = f"{'; '.join(asks)} {RECONSIDER_REASON}"
                    if not await self._retry(claimed, attempt, reason, repair):
                        return
                    attempt += 1
                    continue
                if not errors:
                    accepted = protocol.accept(step, step.schema.model_validate(result.payload), view)
                    payload = accepted.payload
                    crash_point("before_commit")
                    await self._write(
                        turn_commit,
                        self.run_id,
                        claimed.turn_id,
                        attempt,
                        key=step.key,
                        text=result.text,
                        payload=payload,
                        model=result.model,
                        flags=[flag.as_json() for flag in accepted.flags],
                        effects=partial(
                            protocol.on_commit,
                            step,
                            payload,
                            TurnEffects(run_id=self.run_id, turn_id=claimed.turn_id),
                        ),
                    )
                    crash_point("after_commit")
                    self._notify("turn_committed", key=step.key)
                    return
                failure = InvalidOutput(result.text, errors)
            if isinstance(failure, InvalidOutput):
                if repair is None:  # one repair: the model sees its answer and what was wrong with it
                    repair = Repair(failure.text, failure.errors)
                    if not await self._retry(
                        claimed, attempt, f"{failure.cause}. Asked the model to repair it.", repair
                    ):
                        return
                    attempt += 1
                    continue
                return await self._fail_turn(
                    step, claimed, attempt, f"{failure.cause} (still invalid after one repair)"
                )
            if failure.fatal:
                return await self._fail_run(failure)
            failures += 1
            if failure.retryable and failures < conf("MAX_ATTEMPTS"):
                if not await self._retry(claimed, attempt, failure.cause):
                    return
                attempt += 1
                await asyncio.sleep(conf("RETRY_BACKOFF_SECONDS") * 2 ** (failures - 1))
                continue
            return await self._fail_turn(
                step, claimed, attempt, f"{failure.cause} (after {failures} attempts)"
            )

    async def _retry(
        self, claimed: ClaimedTurn, attempt: int, reason: str, repair: Repair | None = None
    ) -> bool:
        seq = await self._write(turn_retry, self.run_id, self.owner, claimed.turn_id, attempt, reason, repair)
        return seq is not None

    async def _fail_turn(self, step: Step, claimed: ClaimedTurn, attempt: int, error: str) -> None:
        await self._write(turn_fail, self.run_id, claimed.turn_id, attempt, error)
        self._notify("turn_failed", key=step.key)

    async def _fail_run(self, error: BackendError) -> None:
        """No turn of this run can succeed (bad key, unknown model): fail the run now with the cause."""
        await self._write(run_fail, self.run_id, self.owner, error.cause)
        for task in self._step_tasks:
            if task is not asyncio.current_task():
                task.cancel()
        raise RunFailedFatally(error.cause)


async def run_execute(
    run_id: int,
    *,
    owner: str | None = None,
    observer: Observer | None = None,
    lease_wait: float | None = None,
) -> RunnerOutcome:
    """Drive a run until it completes, waits for a human, pauses or is cancelled. Returns what stopped it."""
    async with clients_held():  # the model connections close with the last run driven on this event loop
        return await Runner(run_id, owner=owner, observer=observer).execute(lease_wait=lease_wait)
