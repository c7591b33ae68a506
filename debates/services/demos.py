"""A protocol's demo run, started from its card on the home page: simulated agents on the demo values the protocol
declares (Protocol.demo), over a bundled demo KB when it needs one (imported on first use)."""

from __future__ import annotations

import random
from typing import Any

from debates.engine import registry
from debates.models import Run
from debates.services.runs import run_create
from kb.demo import demo_kbs_load
from kb.models import KnowledgeBase

# Characters per second of a demo's simulated agents: fast enough to finish in a minute or two, slow enough to
# watch the turns stream in.
DEMO_CPS = 400


def run_demo_start(*, protocol: str, user: Any = None) -> Run:
    """Create and queue the protocol's demo run on the simulated backend. LookupError: no such protocol, or it
    has no demo; ValueError: its demo KB cannot be loaded or its demo config is refused."""

    proto = registry.get(protocol)
    demo = proto.demo
    if demo is None:
        raise LookupError(f"{protocol} has no demo run")
    kb = None
    if demo.kb:
        kb = next((k for k in demo_kbs_load() if k.slug == demo.kb), None)
        if kb is None:
            raise ValueError(f"kb: the demo knowledge base {demo.kb!r} is not bundled")
    return run_create(
        protocol=proto.name,
        topic=demo.topic,
        material=demo.material,
        kb=kb,
        config=dict(demo.config),
        backend="simulated",
        seed=random.randrange(1, 10**6),
        backend_options={"cps": DEMO_CPS, **demo.options},
        user=user,
    )


def run_headless_demo_create(
    *,
    protocol: str,
    seed: int,
    backend: str = "simulated",
    model: str = "",
    backend_options: dict[str, Any] | None = None,
) -> Run:
    """A queued, consented, not enqueued run of the protocol's demo with no human seat: its demo values (topic,
    material or demo KB) under its headless config (which wins: no seat waits for a person). For the benches and
    the tests that drive a protocol end to end."""
    proto = registry.get(protocol)
    demo = proto.demo
    if demo is None:
        raise LookupError(f"{protocol} has no demo run")
    kb = None
    if demo.kb:
        kb = KnowledgeBase.objects.filter(slug=demo.kb).first() or next(
            k for k in demo_kbs_load() if k.slug == demo.kb
        )
    return run_create(
        protocol=proto.name,
        topic=demo.topic,
        material=demo.material,
        kb=kb,
        config={**demo.config, **proto.headless_config},
        backend=backend,
        model=model,
        seed=seed,
        backend_options=backend_options or {},
        consented=True,
        enqueue=False,
    )
