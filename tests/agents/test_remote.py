"""What the remote backends share: one client per event loop, closed by the last holder of that loop."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest

from debates.agents.base import AgentRequest, BackendError, backend_get
from debates.agents.remote import ClientPerLoop, clients_held, clients_kept, tls_context
from debates.contract import Steps
from debates.engine import registry
from debates.engine.view import run_view_load
from tests.conftest import FAKE_KEY


class Client:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def client_of(pool: ClientPerLoop[Client]) -> Client:
    return pool.get(unavailable_reason="", base_url="http://model.local", key_variable="DISPUTA_TEST_NO_KEY")


def test_a_loops_clients_stay_open_until_its_last_holder_lets_go():
    pool: ClientPerLoop[Client] = ClientPerLoop(Client)

    async def two_runs() -> tuple[Client, bool, Client]:
        async with clients_held():  # the first run
            first = client_of(pool)
            async with clients_held():  # a second run on the same loop, which outlives the first
                assert client_of(pool) is first  # shared: one pool of connections per loop
            still_open = not first.closed
        return first, still_open, client_of(pool)

    first, open_while_held, after = asyncio.run(two_runs())
    assert open_while_held
    assert first.closed
    assert after is not first  # a run starting afterwards builds a new one


class SlowClient(Client):
    async def close(self) -> None:
        await asyncio.sleep(0.01)
        self.closed = True


def test_a_run_starting_while_the_last_one_closes_its_clients_gets_new_ones_that_stay_open():
    first_pool: ClientPerLoop[Client] = ClientPerLoop(SlowClient)
    second_pool: ClientPerLoop[Client] = ClientPerLoop(SlowClient)

    async def runs() -> tuple[list[Client], Client]:
        async with clients_held():
            old = [client_of(first_pool), client_of(second_pool)]
        return old, client_of(second_pool)

    async def overlapping() -> tuple[list[Client], Client, bool]:
        ending = asyncio.create_task(runs())
        await asyncio.sleep(0.005)  # the first run is closing its clients now
        async with clients_held():
            new = client_of(second_pool)
            old, _ = await ending
            return old, new, new.closed

    old, new, closed_under_the_run = asyncio.run(overlapping())
    assert all(client.closed for client in old)
    assert new not in old and not closed_under_the_run


def test_every_loop_has_its_own_clients():
    pool: ClientPerLoop[Client] = ClientPerLoop(Client)

    async def one_run() -> Client:
        async with clients_held():
            return client_of(pool)

    first, second = asyncio.run(one_run()), asyncio.run(one_run())
    assert first is not second and first.closed and second.closed


def test_a_servers_loop_keeps_its_clients_from_one_run_to_the_next():
    pool: ClientPerLoop[Client] = ClientPerLoop(Client)

    async def server() -> tuple[Client, Client]:
        clients_kept(asyncio.get_running_loop())  # as the one-process server does when it starts
        async with clients_held():
            first = client_of(pool)
        async with clients_held():
            second = client_of(pool)
        return first, second

    first, second = asyncio.run(server())
    assert first is second and not first.closed


def test_every_model_client_shares_the_processs_tls_context(monkeypatch: pytest.MonkeyPatch):
    """Building a TLS context loads the CA bundle: once per process, not once per client (a client per run)."""
    from debates.agents import anthropic_api, openai_compat

    monkeypatch.setenv("OPENAI_BASE_URL", "http://model.local/v1")
    clients = [anthropic_api._new_client(), anthropic_api._new_client(), openai_compat._new_client()]
    assert {id(client._client._transport.ssl_context) for client in clients} == {id(tls_context())}


@pytest.fixture
def unreachable(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Points both backends at `url`, with no SDK retries and a short timeout."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)

    def point(url: str) -> None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        settings.DISPUTA = {
            **settings.DISPUTA,
            "OPENAI_BASE_URL": url + "/v1",
            "OPENAI_MODELS": ["local-model"],
            "SDK_MAX_RETRIES": 0,
            "API_TIMEOUT_SECONDS": 0.5,
        }

    return point


def failure(backend: str, run: Any) -> BackendError:
    view = run_view_load(run)
    plan = registry.get(run.protocol).plan(view)
    assert isinstance(plan, Steps)
    request = AgentRequest(
        step=plan.steps[0],
        view=view,
        protocol=run.protocol,
        options={},
        attempt=1,
        model="claude-sonnet-5-5" if backend == "anthropic" else "local-model",
        role="analyst",
        max_tokens=1024,
    )

    async def call() -> BackendError:
        async with clients_held():
            with pytest.raises(BackendError) as raised:
                async for _ in backend_get(backend).stream(request):
                    pass
            return raised.value

    return asyncio.run(call())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_a_server_that_refuses_the_connection_is_a_connection_failure_not_a_timeout(
    backend: str, make_run: Any, unreachable: Callable[[str], None]
):
    """A local model server that is not running: what to check is the address, not the timeout."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable(f"http://127.0.0.1:{port}")
    error = failure(backend, make_run())
    assert error.kind == "connection", error
    assert f"127.0.0.1:{port}" in str(error) and "check the network or the address" in str(error)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_a_server_that_never_answers_is_a_timeout(
    backend: str, make_run: Any, unreachable: Callable[[str], None]
):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        unreachable(f"http://127.0.0.1:{silent.getsockname()[1]}")
        error = failure(backend, make_run())
    assert error.kind == "timeout", error
    assert "did not answer in time" in str(error) and "DISPUTA_API_TIMEOUT_SECONDS" in str(error)
