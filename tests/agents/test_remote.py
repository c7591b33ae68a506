"""What the remote backends share: one client per event loop, closed by the last holder of that loop."""

from __future__ import annotations

import asyncio

import pytest

from debates.agents.remote import ClientPerLoop, clients_held, clients_kept, tls_context


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
