"""`manage.py demo`: set up SQLite, create a moderator (credentials printed), start the server, start a demo run."""

from __future__ import annotations

import secrets
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.core.management.base import BaseCommand

from debates import demo
from debates.agents.catalog import anthropic_unavailable_reason
from debates.services import runs as services
from kb.demo import demo_kbs_load


def account_ensure(username: str, password: str, *, moderator: bool) -> None:
    user, _ = get_user_model().objects.get_or_create(username=username)
    user.set_password(password)
    user.is_staff = moderator
    user.save()
    if moderator:
        user.user_permissions.add(
            Permission.objects.get(codename="moderate", content_type__app_label="debates")
        )


class Command(BaseCommand):
    help = (
        "Run Disputa's demo: database, accounts, a live cross-examination with simulated agents, the server."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-serve", action="store_true", help="Set up only; do not start the server.")
        parser.add_argument(
            "--simulated", action="store_true", help="Simulated agents even when ANTHROPIC_API_KEY is set."
        )

    def handle(
        self, *args: Any, host: str, port: int, no_serve: bool, simulated: bool, **options: Any
    ) -> None:
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", interactive=False, verbosity=0)
        # One password each: the viewer's must never open the moderator's account.
        passwords = {"moderator": secrets.token_urlsafe(12), "viewer": secrets.token_urlsafe(12)}
        account_ensure("moderator", passwords["moderator"], moderator=True)
        account_ensure("viewer", passwords["viewer"], moderator=False)

        kbs = demo_kbs_load()
        # Real agents when the server has a key (the demo run is estimated and budgeted like any other).
        backend = "simulated" if simulated or anthropic_unavailable_reason() else "anthropic"
        run = services.run_create(
            protocol="cross-examination",
            topic=demo.DEMO_TOPIC,
            material=demo.DEMO_MATERIAL,
            config={"analysts": demo.DEMO_ANALYSTS, "examiner": "agent", "questions_per_analyst": 3},
            backend=backend,
            seed=7,
            backend_options={"answers": "mixed", "cps": 250} if backend == "simulated" else {},
            budget_usd=None if backend == "simulated" else Decimal("1.00"),
            start=True,
            enqueue=False,  # the server's start-up resumer picks it up once the event loop runs
        )
        comparison = services.run_create(
            protocol="comparative",
            topic=demo.DEMO_COMPARISON_TOPIC,
            material=demo.DEMO_COMPARISON_MATERIAL,
            config={**demo.DEMO_COMPARISON, "evidence_review": "proceed"},
            backend=backend,
            seed=11,
            backend_options={"cps": 400} if backend == "simulated" else {},
            budget_usd=None if backend == "simulated" else Decimal("1.00"),
            start=True,
            enqueue=False,
        )
        agents = (
            "simulated (set ANTHROPIC_API_KEY for real agents)"
            if backend == "simulated"
            else f"Anthropic {run.model}, estimated ${run.estimate_usd or 0:.2f}, budget $1.00 ({run.get_consent_display()})"
        )
        self.stdout.write(
            "\nDisputa demo\n"
            f"  open        http://{host}:{port}/runs/{run.pk}/\n"
            f"  comparison  http://{host}:{port}/runs/{comparison.pk}/ (scorecard, then pick the winner)\n"
            f"  moderator   username 'moderator'  password '{passwords['moderator']}'\n"
            f"  viewer      username 'viewer'     password '{passwords['viewer']}'\n"
            f"  agents      {agents}\n"
            f"  KBs         {', '.join(kb.slug for kb in kbs)} (http://{host}:{port}/kb/)\n"
        )
        if not no_serve:
            call_command("serve", host=host, port=port)
