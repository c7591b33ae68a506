"""`manage.py run_debate`: run a debate headless to the end with a progress bar; prints the run id last."""

from __future__ import annotations

import asyncio
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from pydantic import ValidationError
from tqdm import tqdm

from debates import demo
from debates.contract import Protocol
from debates.engine import registry
from debates.engine.runner import run_execute
from debates.engine.view import run_view_load
from debates.platform.conf import conf
from debates.services import runs as services
from kb.models import KnowledgeBase


def default_material(protocol: Protocol[Any], topic: str) -> str:
    """The material of a run given none: the demo's for a demo topic; none for any other topic, whose debate
    another topic's facts would only derail (the agents say they have no material)."""
    if protocol.demo is not None and topic.strip() == protocol.demo.topic:
        return str(protocol.demo.material)
    return demo.DEMO_MATERIAL if topic.strip() == demo.DEMO_TOPIC else ""


class Command(BaseCommand):
    help = "Run a debate headless to the end. Human seats are not allowed; prints the run id last."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--protocol", required=True)
        parser.add_argument("--topic", required=True)
        parser.add_argument("--kb", help="Slug of a knowledge base to debate over (see `import_kb`).")
        parser.add_argument(
            "--material",
            default=None,
            help="Free-text material; default: the demo's material for a demo topic, none for any other topic.",
        )
        parser.add_argument("--material-file", type=Path)
        parser.add_argument("--backend", default="simulated", choices=["simulated", "anthropic", "openai"])
        parser.add_argument("--model", default="")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--config", default="{}", help="Protocol config as JSON (merged over the default)."
        )
        parser.add_argument(
            "--options", default="{}", help="Backend options as JSON, e.g. simulation branches."
        )
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument("--budget-usd", type=Decimal, help="Stop before a call that could go past this.")
        parser.add_argument("--budget-tokens", type=int)
        parser.add_argument(
            "--yes",
            action="store_true",
            help="Approve the estimated cost even above the consent threshold (without it such a run is refused).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        kb = None
        if opts["kb"]:
            kb = KnowledgeBase.objects.filter(slug=opts["kb"]).first()
            if kb is None:
                slugs = ", ".join(KnowledgeBase.objects.values_list("slug", flat=True)) or "none imported"
                raise CommandError(f"--kb: no knowledge base {opts['kb']!r} (available: {slugs}).")
        try:
            protocol = registry.get(opts["protocol"])
        except LookupError as error:
            raise CommandError(str(error)) from None
        try:
            overrides = json.loads(opts["config"])
            backend_options = json.loads(opts["options"])
        except json.JSONDecodeError as error:
            raise CommandError(f"--config/--options is not valid JSON: {error}") from None
        config = {**protocol.headless_config, **overrides}  # the protocol's headless defaults
        if config.get("examiner") == "human" or config.get("moderator") == "human":
            raise CommandError("A headless run cannot seat a human: set the examiner / moderator to 'agent'.")
        if config.get("evidence_review") == "human":
            raise CommandError(
                "A headless run cannot wait at the evidence review: set evidence_review to 'proceed'."
            )
        material = opts["material"]
        if opts["material_file"]:
            material = opts["material_file"].read_text(encoding="utf-8")
        if material is None:
            material = "" if kb is not None else default_material(protocol, opts["topic"])
        backend_options.setdefault("cps", 0)
        try:
            run = services.run_create(
                protocol=opts["protocol"],
                topic=opts["topic"],
                material=material,
                config=config,
                backend=opts["backend"],
                model=opts["model"],
                seed=opts["seed"],
                backend_options=backend_options if opts["backend"] == "simulated" else {},
                kb=kb,
                budget_usd=opts["budget_usd"],
                budget_tokens=opts["budget_tokens"],
                consented=opts["yes"] or opts["backend"] == "simulated",
                enqueue=False,
            )
        except (ValidationError, ValueError) as error:
            raise CommandError(f"Invalid run: {error}") from None
        if run.consent == "required":
            services.run_consent(run_id=run.pk, approve=False, user=None)
            raise CommandError(
                f"Run {run.pk}: the estimated cost ${run.estimate_usd:.2f} is above the consent threshold "
                f"${conf('CONSENT_THRESHOLD_USD')}; re-run with --yes to approve it (the run was cancelled)."
            )

        total = protocol.expected_turns(run_view_load(run))
        stream: Any = self.stderr._out  # the raw stream: OutputWrapper would add a newline to every redraw
        bar = tqdm(
            total=total,
            unit="turn",
            desc=f"run {run.pk}",
            disable=opts["no_progress"],
            file=stream,
        )

        def observe(kind: str, payload: dict[str, Any]) -> None:
            if kind in {"turn_committed", "turn_failed"}:
                bar.update(1)
                bar.set_postfix_str(payload.get("key", ""))

        outcome = asyncio.run(run_execute(run.pk, observer=observe))
        bar.close()
        run.refresh_from_db()
        if run.status_reason:
            self.stderr.write(f"{run.status}: {run.status_reason}")
        if outcome == "waiting":
            self.stderr.write("The run waits for a human; open it in the browser to continue.")
        self.stdout.write(str(run.pk))
        if run.status == "failed":
            sys.exit(1)
