"""Real objects for the fuzzers: a run of every protocol (finished, or stopped where it waits for a human), the
demo KBs, and proposed KB changes (one from a run, one from the inbox)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from debates.models import Run
from debates.services import runs as services
from kb.models import KnowledgeBase, ProposedMutation
from tests.conftest import ANALYSTS, MATERIAL, _user, run_to_stop

TOPIC = "Should the city charge cars entering the centre?"


@dataclass
class World:
    moderator: User
    viewer: User
    runs: dict[str, Run] = field(default_factory=dict)
    kbs: dict[str, KnowledgeBase] = field(default_factory=dict)
    mutations: list[ProposedMutation] = field(default_factory=list)
    arg_id: str = ""
    form_fields: list[str] = field(default_factory=list)  # every field name the pages render


def _run(protocol: str, *, stop: bool = True, **kwargs: Any) -> Run:
    run = services.run_create(
        protocol=protocol,
        topic=TOPIC,
        material=kwargs.pop("material", MATERIAL),
        config=kwargs.pop("config", {}),
        seed=3,
        backend_options={"cps": 0},
        enqueue=False,
        **kwargs,
    )
    if stop:
        run_to_stop(run)
    return run


def world_build() -> World:
    from kb.demo import demo_kbs_load
    from kb.discipline import mutation_propose

    world = World(moderator=_user("fuzz-mod", moderate=True), viewer=_user("fuzz-view", moderate=False))
    graph, data = demo_kbs_load()
    world.kbs = {"graph": graph, "data": data}
    world.arg_id = graph.arguments.order_by("arg_id").values_list("arg_id", flat=True).first() or "arg-001"
    runs = world.runs
    runs["cross-examination"] = _run("cross-examination", config={"analysts": ANALYSTS})
    runs["human-examiner"] = _run("cross-examination", config={"analysts": ANALYSTS, "examiner": "human"})
    runs["kb-debate"] = _run("kb-debate", kb=graph, material="", config={"moderator": "human"})
    runs["comparative"] = _run("comparative", config={"option_a": "Trams", "option_b": "Buses"})
    runs["adversarial"] = _run("adversarial", config={"artifact_type": "RFC"})
    runs["consultation"] = _run("consultation")
    runs["market-panel"] = _run("market-panel", kb=data, material="")
    runs["queued"] = _run("cross-examination", config={"analysts": ANALYSTS}, stop=False)
    argument = graph.arguments.filter(status__in=["strong", "contested"]).order_by("arg_id").last()
    assert argument is not None
    world.mutations = [
        mutation_propose(
            kb=graph,
            kind="status-downgrade",
            payload={"arg_id": argument.arg_id, "to": "weak"},
            proposed_by="fuzz",
            run=runs["kb-debate"],
        ),
        *ProposedMutation.objects.filter(run=None),
    ]
    for run in runs.values():
        run.refresh_from_db()
    world.form_fields = _form_fields(world)
    return world


def _form_fields(world: World) -> list[str]:
    """The names of the inputs, selects and textareas of the pages a moderator sees (the human-turn forms of the
    waiting runs among them), so hostile posts fill the fields the views really read."""
    client = Client()
    client.force_login(world.moderator)
    pages = ["/", "/runs/new/", "/kb/", "/kb/inbox/", *(f"/kb/{kb.slug}/" for kb in world.kbs.values())]
    for run in world.runs.values():
        pages += [f"/runs/{run.pk}/", f"/runs/{run.pk}/lineage/"]
    names: set[str] = set()
    for page in pages:
        html = client.get(page).content.decode()
        names.update(re.findall(r'<(?:input|select|textarea)\b[^>]*\bname="([^"]+)"', html))
    return sorted(names - {"csrfmiddlewaretoken"})
