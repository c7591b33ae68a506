"""The fault suite (issue 9): a hundred debates on the real Anthropic SDK against the fake server, which answers one
request in ten with a fault: 529 overloaded or 429 rate limited before the stream (the SDK retries those), an SSE
`error` event mid-answer, or the connection dropped mid-answer (the engine retries those, discarding the partial
text). At least 99 % of the debates must complete; any other must end failed or degraded with its reason on the run
page; and no turn may be billed for more calls than its attempts, nor for a call that never started."""

from __future__ import annotations

import asyncio
import re
from collections import Counter, defaultdict
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from debates.devtools.fake_llm import FakeLLMServer, prompt_text
from debates.engine.runner import run_execute
from debates.models import Run, RunStatus, Turn, TurnStatus
from tests.agents.test_anthropic_api import MODEL, step_key
from tests.conftest import EXPECTED_KEYS, FAKE_KEY, LONG_MATERIAL

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

DEBATES = 100
AT_ONCE = 10
FAULT_RATE = 0.10
DEBATE_NUMBER = re.compile(r"\(debate (\d{3})\)")


@pytest.fixture
def faulty_api(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Any:
    with FakeLLMServer(fault_rate=FAULT_RATE, fault_seed=2026, chunk_chars=200) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        settings.DISPUTA = {**settings.DISPUTA, "RETRY_BACKOFF_SECONDS": 0.01, "FLUSH_SECONDS": 0.05}
        yield server


def test_a_hundred_debates_under_ten_percent_faults(
    make_run: Any, faulty_api: FakeLLMServer, viewer_client: Client
):
    runs = [
        make_run(
            backend="anthropic",
            model=MODEL,
            material=LONG_MATERIAL,
            backend_options={},
            topic=f"Should the city charge cars entering the centre? (debate {n:03d})",
        )
        for n in range(DEBATES)
    ]

    async def drive_all() -> list[str]:
        gate = asyncio.Semaphore(AT_ONCE)

        async def drive(run: Run) -> str:
            async with gate:
                return await run_execute(run.pk)

        return await asyncio.gather(*(drive(run) for run in runs))

    async_to_sync(drive_all)()

    # The faults were really there, of every kind, and the SDK's own retries carried their count.
    requests = faulty_api.requests
    faults = Counter(r.fault for r in requests if r.fault)
    assert set(faults) == {"random:overloaded", "random:rate_limit", "random:midstream", "random:drop"}, (
        faults
    )
    injected = sum(faults.values())
    assert 0.07 <= injected / len(requests) <= 0.13, (injected, len(requests))
    assert any(r.headers.get("x-stainless-retry-count") == "1" for r in requests)

    completed = degraded = failed = 0
    for run in Run.objects.filter(pk__in=[r.pk for r in runs]):
        if run.status == RunStatus.COMPLETED and run.outcome.get("mode") == "full":
            completed += 1
            continue
        # Anything else says why, on the page a person reads.
        reason = run.status_reason or "; ".join(
            run.turns.filter(status=TurnStatus.FAILED).values_list("error", flat=True)
        )
        assert reason, f"run {run.pk} ({run.status}) gives no reason"
        page = viewer_client.get(f"/runs/{run.pk}/").content.decode()
        assert reason.split(";")[0][:60] in page, f"run {run.pk}: the reason is not on its page"
        if run.status == RunStatus.COMPLETED:
            degraded += 1
        else:
            assert run.status == RunStatus.FAILED
            failed += 1
    assert completed >= 0.99 * DEBATES, (completed, degraded, failed)

    # Billing: a call is billed when its stream started (message_start reported the prompt); a 429/529 answered
    # before the stream costs nothing. Every turn is billed for exactly the calls that started, and those are no
    # more than its attempts (the engine's retries), whatever the SDK retried underneath.
    started: dict[tuple[int, str], list[int]] = defaultdict(list)
    run_of_number = {n: run.pk for n, run in enumerate(runs)}
    for r in requests:
        key = step_key(r)
        if key and r.status == 200 and r.usage:
            started[(_run_of(r, run_of_number), key)].append(int(r.usage["input_tokens"]))
    retried = 0
    for turn in Turn.objects.filter(run__in=runs):
        calls = started[(turn.run_id, turn.key)]
        assert len(calls) <= turn.attempt, (
            f"run {turn.run_id} {turn.key}: {len(calls)} calls, {turn.attempt} attempts"
        )
        assert turn.input_tokens == sum(calls), f"run {turn.run_id} {turn.key}"
        retried += turn.attempt > 1
        if turn.status == TurnStatus.COMMITTED:
            assert set(turn.payload) and turn.raw_text.lstrip().startswith("{"), "a half answer was kept"
    assert retried > 0
    assert Turn.objects.filter(run__in=runs, status=TurnStatus.COMMITTED).count() >= 0.99 * DEBATES * len(
        EXPECTED_KEYS
    )
    print(
        f"\nfault suite: {DEBATES} debates, {len(requests):,} requests, "
        + " / ".join(f"{n} {kind.removeprefix('random:')}" for kind, n in sorted(faults.items()))
        + f" faults ({injected / len(requests):.1%}), {retried} turns retried by the engine; "
        f"{completed} completed, {degraded} degraded, {failed} failed"
    )


def _run_of(request: Any, run_of_number: dict[int, int]) -> int:
    """The run a request was made for: each debate's topic carries its number, and every prompt its topic."""
    found = DEBATE_NUMBER.search(prompt_text(request.body, request.api))
    assert found, "a request without its debate's topic"
    return run_of_number[int(found.group(1))]
