"""Shared fixtures. Tests mirror the code layout; e2e browser tests live in tests/e2e and run separately."""

from __future__ import annotations

import fnmatch
import multiprocessing
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission, User
from django.test import Client

from debates.devtools.fake_llm import FakeLLMServer
from debates.engine.runner import run_execute
from debates.models import Run
from debates.services import runs as services

DUMMY_TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
IMMEDIATE_TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}

MATERIAL = (
    "Stockholm ran a seven-month congestion-charge trial in 2006. Traffic across the cordon fell by about "
    "20 percent. Public support rose above 50 percent after the trial. London introduced its charge in 2003 at "
    "five pounds a day. Congestion in central London drifted back towards earlier levels by 2007. Critics argue "
    "that a flat charge is regressive for poorer drivers. Singapore has priced road use since 1975."
)
# The turns of a complete cross-examination with the three ANALYSTS below.
EXPECTED_KEYS = frozenset(
    {
        "r1/analysis/analyst-ada",
        "r1/analysis/analyst-bo",
        "r1/analysis/analyst-cy",
        "r2/questions/examiner",
        "r3/answers/analyst-ada",
        "r3/answers/analyst-bo",
        "r3/answers/analyst-cy",
        "r4/assessment/examiner",
    }
)
ANALYSTS = [
    {"name": "Ada", "lens": "economics"},
    {"name": "Bo", "lens": "equity"},
    {"name": "Cy", "lens": "evidence"},
]


def pytest_configure(config: pytest.Config) -> None:
    # A live Daphne started with fork inherits stale asgiref executors and channel-layer state from earlier
    # async tests; spawn gives it a clean interpreter.
    multiprocessing.set_start_method("spawn", force=True)
    _postgres_flush_by_delete()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and os.environ.get("REDIS_URL"):
        # Parallel workers have their own databases, hence the same run ids: on one Redis, their runs' groups
        # (and their cached frames) would be the same. This process and the servers and workers it starts get a
        # prefix of their own.
        from django.conf import settings

        os.environ["DISPUTA_CHANNEL_PREFIX"] = f"asgi-{worker}"
        settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = os.environ["DISPUTA_CHANNEL_PREFIX"]
        settings.CACHES["default"]["KEY_PREFIX"] = os.environ["DISPUTA_CHANNEL_PREFIX"]


# What the scaled pass (PostgreSQL, Redis, the database task queue) runs besides tests/scaled: the tests whose
# outcome can depend on the database or the channel layer (locking, leases, transactions, jsonb key order, the
# pub/sub fan-out, whole debates and what is exported from them). Forms, page layout, schemas, prompts and the
# model-fault suite read the same on both and run in the SQLite pass only, which keeps CI within its time.
BACKEND_SENSITIVE = (
    "tests/engine/test_budget.py",
    "tests/engine/test_crash_safety.py",
    "tests/engine/test_database_outage.py",
    "tests/engine/test_progress.py",
    "tests/engine/test_publishing.py",
    "tests/engine/test_runner.py",
    "tests/engine/test_streaming.py",
    "tests/kb/",
    "tests/services/",
    "tests/selectors/",
    "tests/management/",
    "tests/web/test_consumers.py",
    "tests/web/test_exports_page.py",
    "tests/web/test_inbox.py",
    "tests/protocols/*/test_protocol.py",
    "tests/protocols/*/test_exports.py",
)


# The longest tests (minutes each in CI: .ci/dev prints the slowest), run first: collected last, they started when
# the other xdist worker had nothing left to take, and the pass ended with one worker idle for minutes.
LONGEST_FIRST = (
    "tests/scaled/test_kill_suite.py",
    "tests/scaled/test_chaos.py",
    "tests/engine/test_fault_suite.py",
    "tests/engine/test_crash_safety.py",
    "tests/scaled/test_database_outage.py",
    "tests/management/test_bench_fanout.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parent.parent
    paths = {item: Path(item.path).resolve().relative_to(root).as_posix() for item in items}
    for item in items:
        if any(fnmatch.fnmatch(paths[item], f"{pattern}*") for pattern in BACKEND_SENSITIVE):
            item.add_marker(pytest.mark.backend)
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(
        key=lambda item: rank.get(paths[item], len(LONGEST_FIRST))
    )  # stable: the rest keep their order


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The chaos suite's scenario table (tests/scaled/test_chaos.py, recorded as a property of its test), passed or
    failed: the test prints it too, but a run under xdist (the scaled pass) or without -s shows only this."""
    for report in [*terminalreporter.stats.get("passed", []), *terminalreporter.stats.get("failed", [])]:
        shown = config.getoption("capture") == "no" and getattr(report, "node", None) is None
        for name, value in getattr(report, "user_properties", []):
            if name == "chaos_table" and not shown:
                terminalreporter.write_sep("=", "chaos suite")
                terminalreporter.write_line(str(value))


def _postgres_flush_by_delete() -> None:
    """Tests only: empty the tables after a transactional test with DELETE instead of PostgreSQL's TRUNCATE, which
    makes new files for every table and cost about 0.3 s per test (the whole scaled pass: minutes). The test
    tables hold a few rows; Django's foreign keys are deferrable, so one transaction deletes them in any order."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(
        self: DatabaseOperations,
        style: Any,
        tables: Any,
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        if reset_sequences or not tables:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return ["SET CONSTRAINTS ALL DEFERRED;", *(f"DELETE FROM {self.quote_name(t)};" for t in tables)]

    DatabaseOperations.sql_flush = sql_flush  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _tasks_are_recorded_not_run(settings: Any) -> None:
    """Views enqueue runs; unit tests assert that and drive the runner explicitly."""
    settings.TASKS = DUMMY_TASKS


@pytest.fixture(autouse=True)
def _no_connect_limit(settings: Any) -> None:
    """The per-IP websocket connect count outlives a test (a minute, in Redis in the scaled pass); tests that open
    sockets from the same address by the dozen must not trip it. tests/test_quotas.py sets it."""
    settings.DISPUTA = {**settings.DISPUTA, "MAX_WS_CONNECTS_PER_MINUTE": 0}


@pytest.fixture
def channel_layer_down(settings: Any) -> None:
    """The scaled setup's channel layer on a Redis that does not answer (stopped, or restarting)."""
    from tests.engine.crash_helpers import free_port

    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": f"redis://127.0.0.1:{free_port()}/0"}], "prefix": "down"},
        }
    }


def _user(username: str, *, moderate: bool) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username)
    if moderate:
        user.user_permissions.add(
            Permission.objects.get(codename="moderate", content_type__app_label="debates")
        )
    return user


@pytest.fixture
def moderator(db: None) -> User:
    return _user("mod", moderate=True)


@pytest.fixture
def viewer(db: None) -> User:
    return _user("view", moderate=False)


@pytest.fixture
def moderator_client(moderator: User) -> Client:
    client = Client()
    client.force_login(moderator)
    return client


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture
def make_run(db: None) -> Callable[..., Run]:
    """A queued cross-examination run with instant simulated agents; nothing is enqueued."""

    def make(**overrides: Any) -> Run:
        options = {"cps": 0, **overrides.pop("backend_options", {})}
        config = {"analysts": ANALYSTS, "examiner": "agent", **overrides.pop("config", {})}
        kwargs: dict[str, Any] = {
            "protocol": "cross-examination",
            "topic": "Should the city charge cars entering the centre?",
            "material": MATERIAL,
            "config": config,
            "seed": 7,
            "backend_options": options,
            "enqueue": False,
            **overrides,
        }
        return services.run_create(**kwargs)

    return make


def run_to_stop(run: Run) -> str:
    """Drive the runner in this thread until the run completes, waits for a human, pauses or is cancelled."""
    outcome = async_to_sync(run_execute)(run.pk)
    run.refresh_from_db()
    return outcome


# A long material, so the shared prompt prefix is above the models' minimum cacheable length.
LONG_MATERIAL = (
    MATERIAL
    + " "
    + " ".join(
        f"Study {n} of the {('Stockholm', 'London', 'Singapore', 'Gothenburg')[n % 4]} scheme measured a traffic "
        f"change of {10 + n % 17} percent over {2 + n % 5} years, with {('higher', 'lower', 'unchanged')[n % 3]} "
        f"bus ridership and {('rising', 'falling', 'stable')[n % 3]} retail footfall in the charged zone."
        for n in range(60)
    )
)
FAKE_KEY = "sk-ant-test-DO-NOT-LEAK-4242"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A local server speaking the Anthropic and OpenAI streaming wire formats, driven by the real SDKs."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def anthropic_api(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, settings: Any) -> FakeLLMServer:
    """The Anthropic backend pointed at the fake server, with a key only in the environment."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.url)
    settings.DISPUTA = {**settings.DISPUTA, "RETRY_BACKOFF_SECONDS": 0.01, "FLUSH_SECONDS": 0.02}
    return fake_llm


@pytest.fixture
def openai_api(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, settings: Any) -> FakeLLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    settings.DISPUTA = {
        **settings.DISPUTA,
        "OPENAI_BASE_URL": fake_llm.openai_url,
        "OPENAI_MODELS": ["local-model"],
        "RETRY_BACKOFF_SECONDS": 0.01,
        "FLUSH_SECONDS": 0.02,
    }
    return fake_llm
