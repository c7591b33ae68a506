"""What the remote backends share: one client per event loop, closed by the last holder of that loop."""

from __future__ import annotations

import asyncio

from debates.agents.remote import ClientPerLoop, clients_held


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
