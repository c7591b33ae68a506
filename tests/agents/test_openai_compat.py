"""The OpenAI-compatible backend, driven through the real openai SDK against a local server speaking the
Chat Completions SSE wire format (a local model: not OpenAI's base URL, no price)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from decimal import Decimal
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from debates.agents.base import AgentRequest, Repair, backend_choices, backend_get
from debates.agents.openai_compat import request_params
from debates.agents.pricing import tokens_estimate
from debates.contract import Steps
from debates.devtools.fake_llm import FakeLLMServer, Fault, RecordedRequest
from debates.engine import registry
from debates.engine.view import run_view_load
from debates.models import Run, RunEvent, RunStatus, TurnStatus
from tests.conftest import EXPECTED_KEYS, FAKE_KEY, LONG_MATERIAL, run_to_stop

MODEL = "local-model"
SCHEMA_IN_PROMPT = "Your answer must be one JSON object valid against this JSON schema:"
# A price for the local model, USD per million tokens, written out here independently of pricing.py.
LOCAL_PRICE = {"input": Decimal("0.60"), "cache_read": Decimal("0.15"), "output": Decimal("2.40")}
ANALYSTS = ("ada", "bo", "cy")


def step_key(request: RecordedRequest) -> str:
    """The step a request was made for: named in the user message (the persona and task)."""
    found = re.search(r'<step [^>]*key="([^"]+)"', request.body["messages"][1]["content"])
    return found.group(1) if found else ""


def calls(server: FakeLLMServer, key: str) -> list[RecordedRequest]:
    return [r for r in server.requests if r.api == "openai" and step_key(r) == key]


def system(request: RecordedRequest) -> str:
    message = request.body["messages"][0]
    assert message["role"] == "system"
    return message["content"]


def user(request: RecordedRequest) -> str:
    message = request.body["messages"][1]
    assert message["role"] == "user"
    return message["content"]


def restarts(run: Run, key: str) -> list[RunEvent]:
    return [e for e in RunEvent.objects.filter(run=run, kind="turn_restarted") if e.payload["key"] == key]


def first_request(run: Run, **fields: Any) -> AgentRequest:
    """The request for the run's first step (Ada's analysis), built as the runner builds it."""
    view = run_view_load(run)
    plan = registry.get(run.protocol).plan(view)
    assert isinstance(plan, Steps)
    defaults: dict[str, Any] = {"model": MODEL, "role": "analyst", "max_tokens": 4096}
    return AgentRequest(
        step=plan.steps[0],
        view=view,
        protocol=run.protocol,
        options={},
        attempt=1,
        **{**defaults, **fields},
    )


@pytest.fixture
def step_schemas(monkeypatch: pytest.MonkeyPatch) -> dict[str, type[BaseModel]]:
    """The schema of every step the runs plan, by step key: a step's schema is built from the run's state."""
    protocol = registry.get("cross-examination")
    plan = protocol.plan
    schemas: dict[str, type[BaseModel]] = {}

    def recording(view: Any) -> Any:
        planned = plan(view)
        if isinstance(planned, Steps):
            schemas.update({step.key: step.schema for step in planned.steps})
        return planned

    monkeypatch.setattr(protocol, "plan", recording)
    return schemas


@pytest.fixture
def make_local_run(make_run: Any, openai_api: FakeLLMServer) -> Any:
    def make(**overrides: Any) -> Run:
        return make_run(
            backend="openai", model=MODEL, material=LONG_MATERIAL, backend_options={}, **overrides
        )

    return make


@pytest.fixture
def local_price(settings: Any) -> dict[str, Decimal]:
    """A price for the local model, added to a copy of the settings' table."""
    table = settings.DISPUTA_PRICES
    entry = {"provider": "openai", "label": "Local model", **{k: str(v) for k, v in LOCAL_PRICE.items()}}
    settings.DISPUTA_PRICES = {**table, "models": {**table["models"], MODEL: entry}}
    return LOCAL_PRICE


@pytest.mark.django_db(transaction=True)
class FullDebateTests:
    def test_a_cross_examination_completes_on_the_real_sdk(self, make_local_run: Any, openai_api: Any):
        run = make_local_run()
        assert run_to_stop(run) == "done"
        assert run.status == RunStatus.COMPLETED
        turns = {t.key: t for t in run.turns.all()}
        assert set(turns) == EXPECTED_KEYS
        assert all(t.status == TurnStatus.COMMITTED and t.attempt == 1 for t in turns.values())
        assert all(t.model == MODEL and t.backend == "openai" for t in turns.values())
        assert len(openai_api.requests) == len(EXPECTED_KEYS)  # one call per turn, no warm-up, no repeats
        assert {step_key(r) for r in openai_api.requests} == EXPECTED_KEYS

    def test_the_sdk_streams_over_aiohttp_and_the_runs_connections_close_when_it_ends(
        self, make_local_run: Any, openai_api: Any, monkeypatch: pytest.MonkeyPatch
    ):
        pool = backend_get("openai")._clients  # type: ignore[attr-defined]
        made: list[openai.AsyncOpenAI] = []
        factory = pool._factory
        monkeypatch.setattr(pool, "_factory", lambda: made.append(factory()) or made[-1])
        assert run_to_stop(make_local_run()) == "done"
        assert len(made) == 1
        assert isinstance(made[0]._client, openai.DefaultAioHttpClient)
        assert made[0].is_closed()

    def test_every_request_asks_for_the_step_schema_and_streamed_usage(
        self, make_local_run: Any, openai_api: Any, step_schemas: dict[str, type[BaseModel]]
    ):
        run_to_stop(make_local_run())
        for request in openai_api.requests:
            body = request.body
            step_schema = step_schemas[step_key(request)]
            assert body["model"] == MODEL
            assert body["stream"] is True
            assert body["stream_options"] == {"include_usage": True}
            assert body["response_format"]["type"] == "json_schema"
            assert body["response_format"]["json_schema"]["name"] == step_schema.__name__
            assert body["response_format"]["json_schema"]["schema"] == step_schema.model_json_schema()
            assert SCHEMA_IN_PROMPT not in user(request)  # the server enforces it; no need to spell it out

    def test_the_key_is_a_bearer_token_and_max_tokens_is_the_roles(
        self, make_local_run: Any, openai_api: Any
    ):
        run_to_stop(make_local_run())
        for request in openai_api.requests:
            assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"
        analyst = calls(openai_api, "r1/analysis/analyst-ada")[0].body
        examiner = calls(openai_api, "r2/questions/examiner")[0].body
        # Not OpenAI's own base URL: a local server may not know `max_completion_tokens`.
        assert "max_completion_tokens" not in analyst and "max_completion_tokens" not in examiner
        assert (analyst["max_tokens"], examiner["max_tokens"]) == (4096, 6144)

    def test_openai_itself_is_sent_max_completion_tokens(self, make_local_run: Any, settings: Any):
        request = first_request(make_local_run())
        settings.DISPUTA = {**settings.DISPUTA, "OPENAI_BASE_URL": ""}  # OpenAI's own API
        params = request_params(request)
        assert params["max_completion_tokens"] == 4096
        assert "max_tokens" not in params  # OpenAI's reasoning models refuse it


@pytest.mark.django_db(transaction=True)
class UsageTests:
    def _run_with_a_repair(self, make_local_run: Any, openai_api: FakeLLMServer) -> Run:
        """A complete run in which Ada's analysis is repaired once: the repair re-sends the whole first
        prompt, which the server then reads from its prefix cache."""
        openai_api.faults.append(Fault(kind="text", text="not JSON", match='key="r1/analysis/analyst-ada"'))
        run = make_local_run()
        assert run_to_stop(run) == "done"
        return run

    def test_cached_prompt_tokens_are_recorded_as_cache_reads(self, make_local_run: Any, openai_api: Any):
        run = self._run_with_a_repair(make_local_run, openai_api)
        for turn in run.turns.all():
            usages = [r.usage for r in calls(openai_api, turn.key)]
            cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
            assert turn.cache_read_tokens == cached
            assert turn.input_tokens == sum(u["prompt_tokens"] for u in usages) - cached
            assert turn.output_tokens == sum(u["completion_tokens"] for u in usages)
            assert turn.cache_write_tokens == 0  # the server caches by itself; nothing is written on demand
        bad, repaired = calls(openai_api, "r1/analysis/analyst-ada")
        assert repaired.usage["prompt_tokens_details"]["cached_tokens"] == bad.usage["prompt_tokens"] > 0
        assert run.cache_read_tokens == sum(t.cache_read_tokens for t in run.turns.all()) > 0

    def test_an_unpriced_local_model_costs_nothing(self, make_local_run: Any, openai_api: Any):
        run = self._run_with_a_repair(make_local_run, openai_api)
        assert run.input_tokens > 0 and run.output_tokens > 0
        assert run.cost_usd == 0
        assert all(t.cost_usd == 0 for t in run.turns.all())

    def test_a_priced_model_costs_exactly_its_tokens(
        self, make_local_run: Any, openai_api: Any, local_price: Any
    ):
        run = self._run_with_a_repair(make_local_run, openai_api)
        total = Decimal(0)
        for turn in run.turns.all():
            expected = Decimal(0)
            for request in calls(openai_api, turn.key):  # each call is priced (and rounded) on its own
                usage = request.usage
                cached = usage["prompt_tokens_details"]["cached_tokens"]
                cost = (
                    (usage["prompt_tokens"] - cached) * local_price["input"]
                    + cached * local_price["cache_read"]
                    + usage["completion_tokens"] * local_price["output"]
                ) / Decimal(1_000_000)
                expected += cost.quantize(Decimal("0.000001"))
            assert turn.cost_usd == expected > 0
            total += expected
        assert run.cost_usd == total


@pytest.mark.django_db(transaction=True)
class SharedPrefixTests:
    def test_all_seats_of_a_stage_share_the_system_message(self, make_local_run: Any, openai_api: Any):
        run_to_stop(make_local_run())
        for stage in ("r1/analysis", "r3/answers"):
            seats = [calls(openai_api, f"{stage}/analyst-{name}")[0] for name in ANALYSTS]
            assert system(seats[0]) == system(seats[1]) == system(seats[2])
            # The persona and the task are the user message, the only part that differs between seats.
            assert len({user(request) for request in seats}) == 3
            assert all("<step " not in system(request) for request in seats)
            assert all(len(request.body["messages"]) == 2 for request in seats)

    def test_each_stage_extends_the_previous_stages_system_message(
        self, make_local_run: Any, openai_api: Any
    ):
        run_to_stop(make_local_run())
        stages = [
            system(calls(openai_api, key)[0])
            for key in (
                "r1/analysis/analyst-ada",
                "r2/questions/examiner",
                "r3/answers/analyst-ada",
                "r4/assessment/examiner",
            )
        ]
        assert json.dumps(LONG_MATERIAL)[:200] in stages[0]  # the material is in the shared prefix
        assert "<turn " not in stages[0]
        for earlier, later in zip(stages, stages[1:], strict=False):
            assert later.startswith(earlier + "\n\n<turn ")  # append-only: the transcript grows at the end
        # One transcript block per committed turn: 3 analyses, then the questions, then 3 answers.
        assert [s.count("<turn ") for s in stages] == [0, 3, 4, 7]


@pytest.mark.django_db(transaction=True)
class FaultTests:
    def test_a_mid_stream_error_chunk_is_retried_by_the_engine(self, make_local_run: Any, openai_api: Any):
        openai_api.faults.append(
            Fault(
                kind="midstream",
                error_type="server_error",
                message="The server had an error while processing your request.",
                match='key="r1/analysis/analyst-bo"',
            )
        )
        run = make_local_run()
        assert run_to_stop(run) == "done"
        turn = run.turns.get(key="r1/analysis/analyst-bo")
        assert turn.status == TurnStatus.COMMITTED and turn.attempt == 2
        first, second = calls(openai_api, turn.key)
        assert first.fault == "midstream:server_error" and second.fault == ""
        (restarted,) = restarts(run, turn.key)
        reason = restarted.payload["reason"]
        assert restarted.payload["attempt"] == 2
        assert "server_error: The server had an error while processing your request." in reason
        assert "broke off mid-turn" in reason and "discarded" in reason
        # A broken stream never reaches its usage chunk: only the completed call can be recorded.
        assert turn.output_tokens == second.usage["completion_tokens"]

    def test_a_503_before_the_stream_is_retried_by_the_sdk(self, make_local_run: Any, openai_api: Any):
        openai_api.faults.append(
            Fault(
                kind="status",
                status=503,
                error_type="server_error",
                message="The server is overloaded or not ready yet.",
                retry_after_ms=10,
                match='key="r2/questions/examiner"',
            )
        )
        run = make_local_run()
        assert run_to_stop(run) == "done"
        refused, answered = calls(openai_api, "r2/questions/examiner")
        assert (refused.status, answered.status) == (503, 200)
        assert answered.headers["x-stainless-retry-count"] == "1"
        assert run.turns.get(key="r2/questions/examiner").attempt == 1  # the engine never saw it
        assert not RunEvent.objects.filter(run=run, kind="turn_restarted").exists()

    def test_invalid_json_is_repaired_once(self, make_local_run: Any, openai_api: Any):
        openai_api.faults.append(
            Fault(kind="text", text='{"summary": "cut', match='key="r1/analysis/analyst-ada"')
        )
        run = make_local_run()
        assert run_to_stop(run) == "done"
        turn = run.turns.get(key="r1/analysis/analyst-ada")
        assert turn.status == TurnStatus.COMMITTED and turn.attempt == 2
        bad, repaired = calls(openai_api, turn.key)
        messages = repaired.body["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
        assert messages[:2] == bad.body["messages"]  # the same conversation, continued
        assert messages[2]["content"] == '{"summary": "cut'
        assert "rejected by the validator" in messages[3]["content"]
        assert "not valid JSON" in messages[3]["content"]
        (restarted,) = restarts(run, turn.key)
        assert "not valid JSON" in restarted.payload["reason"]
        assert "repair" in restarted.payload["reason"]

    def test_output_still_invalid_after_the_repair_fails_the_turn(self, make_local_run: Any, openai_api: Any):
        # Valid JSON, wrong shape: the schema check names the field.
        openai_api.faults.append(
            Fault(
                kind="text", text='{"summary": "no claims"}', match='key="r1/analysis/analyst-ada"', times=2
            )
        )
        run = make_local_run()
        run_to_stop(run)
        turn = run.turns.get(key="r1/analysis/analyst-ada")
        assert turn.status == TurnStatus.FAILED
        assert turn.error.startswith("Invalid output: claims: Field required")
        assert turn.error.endswith("(still invalid after one repair)")
        assert len(calls(openai_api, turn.key)) == 2  # one repair, no more
        assert run.status == RunStatus.COMPLETED  # the protocol went on without that analyst

    def test_a_rejected_key_fails_the_run_at_once_and_names_the_fix(
        self, make_local_run: Any, openai_api: Any
    ):
        masked = f"{FAKE_KEY[:7]}{'*' * 16}{FAKE_KEY[-4:]}"  # what OpenAI's 401 message shows of the key
        openai_api.faults.append(
            Fault(
                kind="status",
                status=401,
                error_type="invalid_request_error",
                message=f"Incorrect API key provided: {masked}.",
                times=50,
            )
        )
        run = make_local_run()
        assert run_to_stop(run) == "failed"
        assert run.status == RunStatus.FAILED
        assert "rejected the API key" in run.status_reason
        assert "OPENAI_API_KEY" in run.status_reason
        assert FAKE_KEY not in run.status_reason
        assert not run.turns.filter(status__in=[TurnStatus.STREAMING, TurnStatus.COMMITTED]).exists()
        assert all(r.status == 401 for r in openai_api.requests)
        assert all(r.headers["x-stainless-retry-count"] == "0" for r in openai_api.requests)  # not retried
        assert {step_key(r) for r in openai_api.requests} <= {f"r1/analysis/analyst-{n}" for n in ANALYSTS}

    def test_failure_causes_read_as_sentences(self, make_local_run: Any, openai_api: Any):
        openai_api.faults.append(
            Fault(kind="midstream", error_type="server_error", match='key="r1/analysis/analyst-bo"')
        )
        run = make_local_run()
        run_to_stop(run)
        (restarted,) = restarts(run, "r1/analysis/analyst-bo")
        reason = restarted.payload["reason"]
        assert reason[0].isupper()
        assert "The the" not in reason


@pytest.mark.django_db(transaction=True)
class ResponseFormatTests:
    def test_json_object_mode_spells_the_schema_out_in_the_prompt(
        self, make_local_run: Any, openai_api: Any, settings: Any, step_schemas: dict[str, type[BaseModel]]
    ):
        settings.DISPUTA = {**settings.DISPUTA, "OPENAI_RESPONSE_FORMAT": "json_object"}
        run = make_local_run()
        assert run_to_stop(run) == "done"
        assert len(openai_api.requests) == len(EXPECTED_KEYS)
        for request in openai_api.requests:
            step_schema = step_schemas[step_key(request)]
            assert request.body["response_format"] == {"type": "json_object"}
            spelled = f"{SCHEMA_IN_PROMPT}\n{json.dumps(step_schema.model_json_schema(), ensure_ascii=False)}"
            assert user(request).endswith(spelled)
            assert SCHEMA_IN_PROMPT not in system(request)  # the shared prefix stays the same for every seat

    def test_none_mode_sends_no_response_format_and_spells_the_schema_out(
        self, make_local_run: Any, openai_api: Any, settings: Any, step_schemas: dict[str, type[BaseModel]]
    ):
        settings.DISPUTA = {**settings.DISPUTA, "OPENAI_RESPONSE_FORMAT": "none"}
        run = make_local_run()
        assert run_to_stop(run) == "done"
        assert len(openai_api.requests) == len(EXPECTED_KEYS)
        for request in openai_api.requests:
            step_schema = step_schemas[step_key(request)]
            assert "response_format" not in request.body
            assert json.dumps(step_schema.model_json_schema(), ensure_ascii=False) in user(request)


def sent_text(params: dict[str, Any]) -> str:
    return "\n\n".join(message["content"] for message in params["messages"])


@pytest.mark.django_db(transaction=True)
class EstimateTests:
    """The engine checks the budget against `estimate` before every call: it must count all that is sent."""

    @pytest.mark.parametrize(
        ("mode", "repair"),
        [
            pytest.param("json_schema", False, id="first-call"),
            pytest.param("json_object", False, id="schema-in-prompt"),
            pytest.param("json_schema", True, id="repair"),
        ],
    )
    def test_the_estimate_counts_every_character_sent(
        self, make_local_run: Any, settings: Any, mode: str, repair: bool
    ):
        settings.DISPUTA = {**settings.DISPUTA, "OPENAI_RESPONSE_FORMAT": mode}
        request = first_request(make_local_run())
        if repair:
            request = replace(
                request, attempt=2, repair=Repair(text="x" * 20_000, errors=("not valid JSON",))
            )
        estimate = backend_get("openai").estimate(request)
        assert estimate.output_tokens == request.max_tokens
        assert estimate.input_tokens >= tokens_estimate(sent_text(request_params(request)))


class AvailabilityTests:
    def test_without_a_base_url_or_a_key_the_backend_is_disabled_with_the_reason(
        self, monkeypatch: pytest.MonkeyPatch, settings: Any
    ):
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        settings.DISPUTA = {**settings.DISPUTA, "OPENAI_BASE_URL": "", "OPENAI_MODELS": [MODEL]}
        choice = next(b for b in backend_choices() if b["name"] == "openai")
        assert "OPENAI_BASE_URL" in choice["disabled_reason"]
        assert "OPENAI_API_KEY" in choice["disabled_reason"]

    def test_with_a_base_url_but_no_models_the_reason_names_the_models_setting(
        self, monkeypatch: pytest.MonkeyPatch, settings: Any
    ):
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        settings.DISPUTA = {
            **settings.DISPUTA,
            "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
            "OPENAI_MODELS": [],
        }
        choice = next(b for b in backend_choices() if b["name"] == "openai")
        assert "DISPUTA_OPENAI_MODELS" in choice["disabled_reason"]
        assert choice["models"] == []

    def test_with_a_base_url_and_models_it_is_enabled_and_lists_them(
        self, monkeypatch: pytest.MonkeyPatch, settings: Any
    ):
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs no key
        settings.DISPUTA = {
            **settings.DISPUTA,
            "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
            "OPENAI_MODELS": [MODEL, "qwen3:32b"],
        }
        choice = next(b for b in backend_choices() if b["name"] == "openai")
        assert choice["disabled_reason"] == ""
        assert [model for model, _ in choice["models"]] == [MODEL, "qwen3:32b"]

    def test_with_a_key_and_models_openai_itself_is_enabled(
        self, monkeypatch: pytest.MonkeyPatch, settings: Any
    ):
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        settings.DISPUTA = {**settings.DISPUTA, "OPENAI_BASE_URL": "", "OPENAI_MODELS": ["gpt-5"]}
        choice = next(b for b in backend_choices() if b["name"] == "openai")
        assert choice["disabled_reason"] == ""
        assert [model for model, _ in choice["models"]] == ["gpt-5"]

    @pytest.mark.django_db(transaction=True)
    def test_a_run_on_an_unavailable_backend_fails_at_once_with_the_reason(
        self, make_local_run: Any, openai_api: Any, settings: Any
    ):
        run = make_local_run()
        settings.DISPUTA = {**settings.DISPUTA, "OPENAI_MODELS": []}  # the setting was removed since
        assert run_to_stop(run) == "failed"
        assert "DISPUTA_OPENAI_MODELS" in run.status_reason
        assert openai_api.requests == []  # nothing was sent
