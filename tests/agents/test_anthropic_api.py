"""The Anthropic backend, driven through the real SDK against a local server speaking the SSE wire format."""

from __future__ import annotations

import io
import json
import logging
import re
from decimal import Decimal
from typing import Any

import anthropic
import pytest
from django.core.management import call_command
from django.test import Client

from debates.agents import base as agents_base
from debates.agents.base import backend_choices
from debates.devtools.fake_llm import FakeLLMServer, Fault, RecordedRequest
from debates.engine import registry
from debates.exports.run_json import run_export_json
from debates.models import Run, RunEvent, RunStatus, TurnStatus
from debates.services import runs as services
from tests.conftest import EXPECTED_KEYS, FAKE_KEY, LONG_MATERIAL, run_to_stop

MODEL = "claude-sonnet-5-5"
# Sonnet 5.5, USD per million tokens, written out here independently of the settings' table.
SONNET = {"input": 2, "write": Decimal("2.50"), "read": Decimal("0.10"), "output": 10}


def step_key(request: RecordedRequest) -> str:
    """The step a request was made for ('' for a cache warm-up)."""
    last = request.body["messages"][0]["content"][-1]["text"]
    found = re.search(r'<step [^>]*key="([^"]+)"', last)
    return found.group(1) if found else ""


def calls(server: FakeLLMServer, key: str) -> list[RecordedRequest]:
    return [r for r in server.requests if r.api == "anthropic" and step_key(r) == key]


def warmups(server: FakeLLMServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.api == "anthropic" and r.body.get("max_tokens") == 0]


@pytest.fixture
def make_paid_run(make_run: Any, anthropic_api: FakeLLMServer) -> Any:
    def make(**overrides: Any) -> Run:
        return make_run(
            backend="anthropic", model=MODEL, material=LONG_MATERIAL, backend_options={}, **overrides
        )

    return make


@pytest.mark.django_db(transaction=True)
class FullDebateTests:
    def test_a_cross_examination_completes_on_the_real_sdk(self, make_paid_run: Any, anthropic_api: Any):
        run = make_paid_run()
        assert run_to_stop(run) == "done"
        assert run.status == RunStatus.COMPLETED
        turns = {t.key: t for t in run.turns.all()}
        assert set(turns) == EXPECTED_KEYS
        assert all(t.status == TurnStatus.COMMITTED and t.attempt == 1 for t in turns.values())
        assert all(t.model == MODEL and t.backend == "anthropic" for t in turns.values())
        turn_requests = [r for r in anthropic_api.requests if step_key(r)]
        assert len(turn_requests) == len(EXPECTED_KEYS)  # one call per turn: nothing was repeated
        for request in turn_requests:
            body = request.body
            assert body["output_config"]["format"]["type"] == "json_schema"
            assert "tool_choice" not in body and "tools" not in body  # forced tools return 400 on 5.5 models
            assert body["model"] == MODEL

    def test_the_sdk_streams_over_aiohttp_and_the_runs_connections_close_when_it_ends(
        self, make_paid_run: Any, anthropic_api: Any, monkeypatch: pytest.MonkeyPatch
    ):
        """aiohttp: reading a stream costs a third to a half of the httpx transport's CPU. A run's event loop may be
        its own (a worker's task), so its clients are closed with it, not left open for the garbage collector."""
        pool = agents_base.backend_get("anthropic")._clients  # type: ignore[attr-defined]
        made: list[anthropic.AsyncAnthropic] = []
        factory = pool._factory
        monkeypatch.setattr(pool, "_factory", lambda: made.append(factory()) or made[-1])
        run = make_paid_run()
        assert run_to_stop(run) == "done"
        assert len(made) == 1  # one client for the whole run
        assert isinstance(made[0]._client, anthropic.DefaultAioHttpClient)
        assert made[0].is_closed()

    def test_per_role_effort_and_max_tokens_are_sent(self, make_paid_run: Any, anthropic_api: Any):
        run = make_paid_run()
        run_to_stop(run)
        analyst = calls(anthropic_api, "r1/analysis/analyst-ada")[0].body
        examiner = calls(anthropic_api, "r2/questions/examiner")[0].body
        assert (analyst["max_tokens"], analyst["output_config"]["effort"]) == (4096, "medium")
        assert (examiner["max_tokens"], examiner["output_config"]["effort"]) == (6144, "high")

    def test_cache_fields_are_recorded_and_cost_is_exact(self, make_paid_run: Any, anthropic_api: Any):
        run = make_paid_run()
        run_to_stop(run)
        total = Decimal(0)
        for turn in run.turns.all():
            (request,) = calls(anthropic_api, turn.key)
            usage = request.usage
            assert turn.input_tokens == usage["input_tokens"]
            assert turn.cache_write_tokens == usage["cache_creation_input_tokens"]
            assert turn.cache_read_tokens == usage["cache_read_input_tokens"]
            assert turn.output_tokens == usage["output_tokens"]
            expected = (
                usage["input_tokens"] * SONNET["input"]
                + usage["cache_creation_input_tokens"] * SONNET["write"]
                + usage["cache_read_input_tokens"] * SONNET["read"]
                + usage["output_tokens"] * SONNET["output"]
            ) / Decimal(1_000_000)
            assert turn.cost_usd == expected.quantize(Decimal("0.000001"))
            total += turn.cost_usd
        for request in warmups(anthropic_api):
            usage = request.usage
            total += (
                (
                    usage["input_tokens"] * SONNET["input"]
                    + usage["cache_creation_input_tokens"] * SONNET["write"]
                    + usage["cache_read_input_tokens"] * SONNET["read"]
                )
                / Decimal(1_000_000)
            ).quantize(Decimal("0.000001"))
        assert run.cost_usd == total > 0
        export = run_export_json(run)
        assert Decimal(export["usage"]["cost_usd"]) == run.cost_usd
        by_seat = {seat["handle"]: Decimal(seat["cost_usd"]) for seat in export["seats"]}
        assert sum(by_seat.values()) + Decimal(export["usage"]["shared_cost_usd"]) == run.cost_usd
        assert by_seat["examiner"] == sum(t.cost_usd for t in run.turns.filter(seat__handle="examiner"))
        assert sum(t.cache_read_tokens for t in run.turns.all()) > 0  # caching really happened

    def test_the_shared_prefix_is_identical_across_seats_with_its_breakpoints(
        self, make_paid_run: Any, anthropic_api: Any
    ):
        run_to_stop(make_paid_run())
        answers = [calls(anthropic_api, f"r3/answers/analyst-{n}")[0].body for n in ("ada", "bo", "cy")]
        assessment = calls(anthropic_api, "r4/assessment/examiner")[0].body
        system = answers[0]["system"]
        assert system[0]["cache_control"] == {"type": "ephemeral"}
        prefixes = [body["messages"][0]["content"][:-1] for body in answers]
        assert prefixes[0] == prefixes[1] == prefixes[2]
        assert all(body["system"] == system for body in [*answers, assessment])
        assert len(prefixes[0]) == 4  # three analyses and the examiner's questions, one block per turn
        assert prefixes[0][-1]["cache_control"] == {"type": "ephemeral"}
        assert all("cache_control" not in block for block in prefixes[0][:-1])
        # The persona comes after every breakpoint and is the only part that differs between seats.
        personas = [body["messages"][0]["content"][-1] for body in answers]
        assert len({p["text"] for p in personas}) == 3 and all("cache_control" not in p for p in personas)
        # The judge-like examiner's last turn extends the same prefix with the answers.
        later = assessment["messages"][0]["content"][:-1]
        assert later[: len(prefixes[0]) - 1] == [
            {k: v for k, v in block.items() if k != "cache_control"} for block in prefixes[0][:-1]
        ]

    def test_a_calls_prompt_is_rendered_once_for_its_estimate_its_warm_up_and_the_call(
        self, make_paid_run: Any, anthropic_api: Any, monkeypatch: pytest.MonkeyPatch
    ):
        rendered: list[str] = []
        render = agents_base.prompt_render

        def render_counted(**kwargs: Any) -> Any:
            rendered.append(kwargs["step"].key)
            return render(**kwargs)

        monkeypatch.setattr(agents_base, "prompt_render", render_counted)
        run_to_stop(make_paid_run())
        assert len(warmups(anthropic_api)) == 2  # the parallel stages' members were estimated and warmed too
        calls_made = sorted(step_key(r) for r in anthropic_api.requests if step_key(r))
        assert sorted(calls_made) == sorted(EXPECTED_KEYS)
        assert sorted(rendered) == calls_made

    def test_a_parallel_stage_pays_one_cache_write(self, make_paid_run: Any, anthropic_api: Any):
        run_to_stop(make_paid_run())
        analyses = [calls(anthropic_api, f"r1/analysis/analyst-{n}")[0] for n in ("ada", "bo", "cy")]
        answers = [calls(anthropic_api, f"r3/answers/analyst-{n}")[0] for n in ("ada", "bo", "cy")]
        assert len(warmups(anthropic_api)) == 2  # before round 1 and before round 3, the parallel stages
        for request in [*analyses, *answers]:
            assert request.usage["cache_creation_input_tokens"] == 0
            assert request.usage["cache_read_input_tokens"] > 0
        warmed = RunEvent.objects.filter(kind="run_charged").count()
        assert warmed == 2


@pytest.mark.django_db(transaction=True)
class FaultTests:
    def test_a_mid_stream_error_is_retried_by_the_engine(self, make_paid_run: Any, anthropic_api: Any):
        anthropic_api.faults.append(
            Fault(kind="midstream", error_type="overloaded_error", match='key="r1/analysis/analyst-bo"')
        )
        run = make_paid_run()
        assert run_to_stop(run) == "done"
        turn = run.turns.get(key="r1/analysis/analyst-bo")
        assert turn.status == TurnStatus.COMMITTED and turn.attempt == 2
        first, second = calls(anthropic_api, turn.key)
        assert first.fault == "midstream:overloaded_error" and second.fault == ""
        restarted = RunEvent.objects.get(run=run, kind="turn_restarted")
        assert "overloaded" in restarted.payload["reason"] and "discarded" in restarted.payload["reason"]
        # Billed for both calls: the failed one's prompt (as reported at message_start) and the good one.
        assert turn.input_tokens == first.usage["input_tokens"] + second.usage["input_tokens"]
        assert turn.output_tokens >= second.usage["output_tokens"]

    def test_overload_and_rate_limit_before_the_stream_are_retried_by_the_sdk(
        self, make_paid_run: Any, anthropic_api: Any
    ):
        anthropic_api.faults += [
            Fault(kind="status", status=529, retry_after_ms=10, match='key="r1/analysis/analyst-ada"'),
            Fault(
                kind="status",
                status=429,
                error_type="rate_limit_error",
                message="Rate limited",
                retry_after_ms=10,
                match='key="r2/questions/examiner"',
            ),
        ]
        run = make_paid_run()
        assert run_to_stop(run) == "done"
        for key in ("r1/analysis/analyst-ada", "r2/questions/examiner"):
            requests = calls(anthropic_api, key)
            assert len(requests) == 2
            assert requests[1].headers["x-stainless-retry-count"] == "1"
            assert run.turns.get(key=key).attempt == 1  # the engine never saw it

    def test_rate_limits_past_the_sdk_retries_fail_the_turn_with_what_to_do(
        self, make_paid_run: Any, anthropic_api: Any, settings: Any
    ):
        settings.DISPUTA = {**settings.DISPUTA, "SDK_MAX_RETRIES": 0, "MAX_ATTEMPTS": 2}
        anthropic_api.faults.append(
            Fault(
                kind="status",
                status=429,
                error_type="rate_limit_error",
                message="Number of requests has exceeded your rate limit",
                match='key="r1/analysis/analyst-cy"',
                times=5,
            )
        )
        run = make_paid_run()
        run_to_stop(run)
        turn = run.turns.get(key="r1/analysis/analyst-cy")
        assert turn.status == TurnStatus.FAILED
        assert "Rate limited by Anthropic (429" in turn.error
        assert "run fewer seats in parallel or raise the rate limit" in turn.error
        assert "(after 2 attempts)" in turn.error
        assert run.status == RunStatus.COMPLETED  # the protocol degraded: two analysts went on

    def test_a_rejected_key_fails_the_run_at_once_and_names_the_fix(
        self, make_paid_run: Any, anthropic_api: Any
    ):
        anthropic_api.faults.append(
            Fault(
                kind="status",
                status=401,
                error_type="authentication_error",
                message="invalid x-api-key",
                times=50,
            )
        )
        run = make_paid_run()
        assert run_to_stop(run) == "failed"
        assert run.status == RunStatus.FAILED
        assert "rejected the API key" in run.status_reason
        assert "ANTHROPIC_API_KEY" in run.status_reason
        assert FAKE_KEY not in run.status_reason
        assert not run.turns.filter(status=TurnStatus.STREAMING).exists()
        assert not run.turns.filter(status=TurnStatus.COMMITTED).exists()

    def test_invalid_json_is_repaired_once(self, make_paid_run: Any, anthropic_api: Any):
        anthropic_api.faults.append(
            Fault(kind="text", text='{"summary": "cut', match='key="r1/analysis/analyst-ada"')
        )
        run = make_paid_run()
        assert run_to_stop(run) == "done"
        turn = run.turns.get(key="r1/analysis/analyst-ada")
        assert turn.status == TurnStatus.COMMITTED and turn.attempt == 2
        bad, repaired = calls(anthropic_api, turn.key)
        assert [m["role"] for m in repaired.body["messages"]] == ["user", "assistant", "user"]
        assert repaired.body["messages"][1]["content"] == '{"summary": "cut'
        assert "not valid JSON" in repaired.body["messages"][2]["content"]
        assert turn.input_tokens == bad.usage["input_tokens"] + repaired.usage["input_tokens"]

    def test_output_still_invalid_after_the_repair_fails_the_turn_honestly(
        self, make_paid_run: Any, anthropic_api: Any
    ):
        # Valid JSON, wrong shape: the schema check names the field.
        anthropic_api.faults.append(
            Fault(
                kind="text", text='{"summary": "no claims"}', match='key="r1/analysis/analyst-ada"', times=2
            )
        )
        run = make_paid_run()
        run_to_stop(run)
        turn = run.turns.get(key="r1/analysis/analyst-ada")
        assert turn.status == TurnStatus.FAILED
        assert turn.error.startswith("Invalid output: claims: Field required")
        assert turn.error.endswith("(still invalid after one repair)")
        assert len(calls(anthropic_api, turn.key)) == 2  # one repair, no more
        assert run.status == RunStatus.COMPLETED  # the protocol went on without that analyst

    def test_protocol_rules_the_schema_cannot_express_are_repaired_too(
        self, make_paid_run: Any, anthropic_api: Any, monkeypatch: pytest.MonkeyPatch
    ):
        # The cross-examination's schemas carry all its rules (issue 22): a protocol rule stands in for one.
        protocol = registry.get("cross-examination")

        def validate(step: Any, payload: Any, view: Any) -> list[str]:
            return (
                ["the summary must not be 'Off topic.'"]
                if getattr(payload, "summary", "") == "Off topic."
                else []
            )

        monkeypatch.setattr(protocol, "validate", validate)
        off_topic = {
            "summary": "Off topic.",
            "claims": [
                {"text": "A.", "evidence": [{"quote": "Traffic fell.", "source": "m"}], "confidence": 0.5}
            ],
        }
        anthropic_api.faults.append(
            Fault(kind="text", text=json.dumps(off_topic), match='key="r1/analysis/analyst-bo"')
        )
        run = make_paid_run()
        run_to_stop(run)
        _, repaired = calls(anthropic_api, "r1/analysis/analyst-bo")
        assert "the summary must not be 'Off topic.'" in repaired.body["messages"][2]["content"]
        assert run.turns.get(key="r1/analysis/analyst-bo").status == TurnStatus.COMMITTED


@pytest.mark.django_db(transaction=True)
class BudgetTests:
    def test_the_budget_stops_the_run_before_a_call_that_could_exceed_it(
        self, make_paid_run: Any, anthropic_api: Any
    ):
        run = make_paid_run(budget_usd=Decimal("0.10"))
        assert run_to_stop(run) == "paused"
        assert run.status == RunStatus.PAUSED and run.budget_stopped
        assert run.status_reason.startswith("Budget reached: $")
        assert "Raise the budget" in run.status_reason
        assert run.cost_usd <= Decimal("0.10")  # never over: every call is checked at its worst case
        committed = run.turns.filter(status=TurnStatus.COMMITTED).count()
        assert 0 < committed < len(EXPECTED_KEYS)
        made = len([r for r in anthropic_api.requests if step_key(r)])
        assert made == committed  # the call that did not fit was never made
        (held,) = run.turns.filter(status=TurnStatus.STREAMING)
        assert held.error.startswith("Held: Budget reached") and held.raw_text == ""
        assert RunEvent.objects.filter(run=run, kind="turn_held", payload__key=held.key).exists()

        services.run_budget_set(run_id=run.pk, budget_usd=Decimal("5"), budget_tokens=None, user=None)
        assert run_to_stop(run) == "done"
        assert run.status == RunStatus.COMPLETED and not run.budget_stopped
        assert run.turns.filter(status=TurnStatus.COMMITTED).count() == len(EXPECTED_KEYS)
        held.refresh_from_db()
        assert held.attempt == 1 and held.error == ""  # no call was made, so no attempt was spent
        restarted = RunEvent.objects.get(run=run, kind="turn_restarted", payload__key=held.key)
        assert restarted.payload["reason"] == "resumed after the budget stop"

    def test_a_token_budget_stops_the_run_too(self, make_paid_run: Any, anthropic_api: Any):
        run = make_paid_run(budget_tokens=30_000)
        assert run_to_stop(run) == "paused"
        assert run.status_reason.startswith("Token budget reached:")
        assert run.total_tokens <= 30_000


@pytest.mark.django_db(transaction=True)
class SecretTests:
    def test_the_key_never_reaches_the_database_pages_exports_or_logs(
        self, make_paid_run: Any, anthropic_api: Any, moderator_client: Client, caplog: Any
    ):
        caplog.set_level(logging.DEBUG)
        anthropic_api.faults.append(Fault(kind="midstream", match='key="r3/answers/analyst-bo"'))
        run = make_paid_run()
        run_to_stop(run)
        dump = io.StringIO()
        call_command("dumpdata", "debates", "kb", "auth", stdout=dump)
        assert FAKE_KEY not in dump.getvalue()
        page = moderator_client.get(f"/runs/{run.pk}/").content.decode()
        form = moderator_client.get("/runs/new/").content.decode()
        export = json.dumps(run_export_json(run))
        for text in (page, form, export, caplog.text):
            assert FAKE_KEY not in text
        sent = anthropic_api.requests[0].headers
        assert FAKE_KEY in sent.get("x-api-key", "") + sent.get("authorization", "")  # it was really used


class AvailabilityTests:
    def test_without_a_key_the_backend_is_listed_but_disabled_with_the_reason(
        self, monkeypatch: pytest.MonkeyPatch
    ):
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        choice = next(b for b in backend_choices() if b["name"] == "anthropic")
        assert choice["disabled_reason"] == "ANTHROPIC_API_KEY is not set in the server's environment."
        assert MODEL in [model for model, _ in choice["models"]]

    def test_with_a_key_it_is_enabled_with_the_priced_models(self, monkeypatch: pytest.MonkeyPatch):
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        choice = next(b for b in backend_choices() if b["name"] == "anthropic")
        assert choice["disabled_reason"] == ""
        assert choice["models"][0][0] == MODEL  # the default first
        assert "$2 in / $10 out per M tokens" in choice["models"][0][1]


@pytest.mark.django_db(transaction=True)
class ConnectionTests:
    def test_a_connection_dropped_mid_answer_is_retried_by_the_engine(
        self, make_paid_run: Any, anthropic_api: Any
    ):
        anthropic_api.faults.append(Fault(kind="drop", api="anthropic", match='key="r3/answers/analyst-cy"'))
        run = make_paid_run()
        assert run_to_stop(run) == "done"
        turn = run.turns.get(key="r3/answers/analyst-cy")
        assert turn.status == TurnStatus.COMMITTED and turn.attempt == 2
        assert [r.fault for r in calls(anthropic_api, turn.key)] == ["drop", ""]
        reason = RunEvent.objects.get(run=run, kind="turn_restarted").payload["reason"]
        assert "The connection to Anthropic" in reason and "retried" in reason


class CauseTests:
    def test_an_echoed_key_is_redacted_from_the_cause(self, monkeypatch: pytest.MonkeyPatch):
        from debates.agents.remote import status_error
        from debates.agents.usage import Usage

        monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-abcdefgh12345678")
        error = status_error(
            provider="the OpenAI-compatible server",
            key_variable="OPENAI_API_KEY",
            status=401,
            error_type="invalid_request_error",
            message="Incorrect API key provided: sk-proj-abcdefgh12345678 and sk-proj-****5678.",
            model="m",
            usage=Usage(),
        )
        assert "sk-proj" not in error.cause and "[key redacted]" in error.cause
        assert error.cause.startswith("The OpenAI-compatible server rejected the API key") and error.fatal

    def test_an_empty_account_is_a_billing_failure_not_a_rate_limit(self):
        from debates.agents.remote import status_error
        from debates.agents.usage import Usage

        error = status_error(
            provider="the OpenAI-compatible server",
            key_variable="OPENAI_API_KEY",
            status=429,
            error_type="insufficient_quota",
            message="You exceeded your current quota.",
            model="m",
            usage=Usage(),
        )
        assert error.kind == "billing" and error.fatal and not error.retryable

    def test_a_base_url_is_shown_without_its_credentials(self):
        from debates.agents.remote import url_shown

        assert url_shown("http://user:secret@proxy.local:8080/v1") == "http://proxy.local:8080/v1"


def test_a_streamed_answer_keeps_the_starts_usage_and_takes_the_deltas_cumulative_counts():
    """As the SDK's own accumulation: a message_delta's counts are totals so far (they overwrite), and one it
    leaves out keeps the value message_start gave. The events are their JSON, as the SDK's types accept it."""
    from anthropic.types import RawMessageDeltaEvent, RawMessageStartEvent

    from debates.agents.anthropic_api import _Answer

    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-served",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 900, "output_tokens": 1, "cache_read_input_tokens": 800},
        },
    }
    RawMessageStartEvent.model_validate(start)
    answer = _Answer(model=MODEL)
    answer.take(start)
    assert (answer.model, answer.stop_reason) == ("claude-served", None)
    for output in (40, 75):
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn" if output == 75 else None, "stop_sequence": None},
            "usage": {"output_tokens": output, "input_tokens": None, "cache_read_input_tokens": None},
        }
        RawMessageDeltaEvent.model_validate(delta)
        answer.take(delta)
    assert answer.stop_reason == "end_turn"
    assert answer.usage is not None
    assert (
        answer.usage["input_tokens"],
        answer.usage["cache_read_input_tokens"],
        answer.usage["output_tokens"],
    ) == (
        900,
        800,
        75,
    )
