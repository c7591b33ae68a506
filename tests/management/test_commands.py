"""The stable commands of DESIGN §8 (run_debate, export_run, resume_runs, demo set-up, bench); the worker's warm-up."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from debates.models import Run
from tests.conftest import FAKE_KEY


def run_command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db(transaction=True)
class RunDebateTests:
    def test_it_runs_to_the_end_and_prints_the_run_id_last(self):
        out, err = run_command(
            "run_debate",
            "--protocol",
            "cross-examination",
            "--topic",
            "Is a four-day week good?",
            "--seed",
            "7",
        )
        run = Run.objects.get()
        assert out.strip().splitlines()[-1] == str(run.pk)
        assert run.status == "completed" and run.turns.count() == 8
        assert "8/8" in err  # the progress bar reached the end

    def test_a_human_seat_is_refused_headless(self):
        with pytest.raises(CommandError, match="cannot seat a human"):
            run_command(
                "run_debate",
                "--protocol",
                "cross-examination",
                "--topic",
                "x",
                "--config",
                '{"examiner": "human"}',
            )
        assert not Run.objects.exists()

    def test_an_unknown_protocol_names_the_available_ones(self):
        with pytest.raises(
            CommandError,
            match="available: adversarial, comparative, consultation, cross-examination, kb-debate, market-panel",
        ):
            run_command("run_debate", "--protocol", "nope", "--topic", "x")

    def test_it_debates_over_a_knowledge_base_by_slug(self):
        from kb.demo import demo_kbs_load

        demo_kbs_load()
        out, _ = run_command(
            "run_debate",
            "--protocol",
            "cross-examination",
            "--topic",
            "Charge?",
            "--kb",
            "congestion-pricing",
        )
        run = Run.objects.get(pk=int(out.split()[-1]))
        assert run.kb is not None and run.kb.slug == "congestion-pricing"
        assert run.status == "completed" and run.material  # the KB's arguments are the material

    def test_an_unknown_knowledge_base_names_the_available_ones(self):
        with pytest.raises(CommandError, match="no knowledge base 'nope' .available: none imported"):
            run_command("run_debate", "--protocol", "cross-examination", "--topic", "x", "--kb", "nope")

    def test_on_anthropic_a_cost_above_the_threshold_needs_yes(self, anthropic_api, settings):
        settings.DISPUTA = {**settings.DISPUTA, "CONSENT_THRESHOLD_USD": "0.01"}
        args = [
            "run_debate",
            "--protocol",
            "cross-examination",
            "--topic",
            "Charge?",
            "--backend",
            "anthropic",
        ]
        with pytest.raises(CommandError, match="re-run with --yes"):
            run_command(*args)
        refused = Run.objects.get()
        assert refused.status == "cancelled" and not anthropic_api.requests
        out, _ = run_command(*args, "--yes", "--budget-usd", "3")
        run = Run.objects.get(pk=int(out.split()[-1]))
        assert run.status == "completed" and run.consent == "approved"
        assert run.model == "claude-sonnet-5-5" and run.budget_usd == 3 and run.cost_usd > 0

    def test_bad_config_json_is_reported(self):
        with pytest.raises(CommandError, match="not valid JSON"):
            run_command("run_debate", "--protocol", "cross-examination", "--topic", "x", "--config", "{oops")


@pytest.mark.django_db(transaction=True)
class ExportRunTests:
    def test_json_export_writes_the_whole_run(self, tmp_path):
        run_command(
            "run_debate",
            "--protocol",
            "cross-examination",
            "--topic",
            "Is a four-day week good?",
            "--no-progress",
        )
        run = Run.objects.get()
        target = tmp_path / "run.json"
        run_command("export_run", str(run.pk), "--format", "json", "--out", str(target))
        data = json.loads(target.read_text())
        assert data["run"]["id"] == run.pk and data["run"]["backend_label"] == "simulated"
        assert [s["handle"] for s in data["seats"]] == ["analyst-ada", "analyst-bo", "analyst-cy", "examiner"]
        assert len(data["turns"]) == 8 and all(t["status"] == "committed" for t in data["turns"])
        assert [e["seq"] for e in data["events"]] == list(range(1, run.last_seq + 1))
        assert data["outcome"]["mode"] == "full"
        assert data["usage"]["input_tokens"] == run.input_tokens > 0
        for key in ["ledger", "revisions", "proposed_mutations", "scorecard", "decision", "human_actions"]:
            assert key in data

    def test_an_unknown_run_is_an_error(self, tmp_path):
        with pytest.raises(CommandError, match="No run with id 999"):
            run_command("export_run", "999", "--out", str(tmp_path / "x.json"))


@pytest.mark.django_db(transaction=True)
def test_resume_runs_finishes_a_run_whose_runner_died(make_run):
    run = make_run()
    Run.objects.filter(pk=run.pk).update(status="running", lease_owner="dead-process", lease_expires_at=None)
    out, _ = run_command("resume_runs")
    run.refresh_from_db()
    assert run.status == "completed"
    assert f"run {run.pk}: done" in out


@pytest.mark.django_db(transaction=True)
def test_bench_cache_prints_the_read_share_and_the_round_one_writes():
    out, _ = run_command("bench", "cache", "--database", "configured")
    share = re.search(r"cache reads from round 2 on: ([\d.]+)% of prompt tokens", out)
    writes = re.search(r"cache writes in round 1: (\d+) of (\d+) requests", out)
    assert share and writes, out
    assert float(share.group(1)) >= 80  # a token ratio of the reference debate, not a timing
    assert writes.groups() == ("1", "4")  # the warm-up writes; the three analysts read
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_bench_robustness_prints_a_row_per_protocol_and_the_targets():
    out, _ = run_command(
        "bench",
        "robustness",
        "--protocols",
        "cross-examination",
        "--backends",
        "openai",
        "--database",
        "configured",
    )
    row = re.search(r"^\s+cross-examination\s+(yes|NO)((?:\s+\d+){8})\s+[\d.]+\s+completed$", out, re.M)
    summary = re.search(
        r"OpenAI-compatible: (\d+)/1 complete .* (\d+) failed turns .* (\d+) repairs \(asks included\) = ([\d.]+)%",
        out,
    )
    assert row and summary, out
    turns, failed, repairs, asks, _flags, downs, calls, _obeying = (int(n) for n in row.group(2).split())
    assert row.group(1) == "yes" and turns >= 4 and failed == 0 and downs == 0 and calls >= turns
    assert summary.group(1) == "1" and summary.group(2) == "0" and int(summary.group(3)) == repairs + asks
    assert float(summary.group(4)) <= 5
    assert out.rstrip().endswith("OK")


@pytest.mark.django_db(transaction=True)
def test_bench_overhead_prints_both_ratios():
    out, _ = run_command(
        "bench", "overhead", "--runs", "1", "--ttft", "0.05", "--cps", "20000", "--database", "configured"
    )
    assert "wall / critical path:" in out and "parallel stage span / slowest turn:" in out
    assert not Run.objects.exists()  # bench runs clean up after themselves


@pytest.mark.django_db(transaction=True)
class DemoTests:
    def test_without_a_key_the_demo_run_is_simulated(self, monkeypatch):
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        out, _ = run_command("demo", "--no-serve")
        run = Run.objects.get(protocol="cross-examination")
        assert run.backend == "simulated" and run.status == "queued"
        comparison = Run.objects.get(protocol="comparative")
        assert comparison.backend == "simulated" and comparison.status == "queued"
        assert (
            comparison.config["option_a"] == "MongoDB" and comparison.config["evidence_review"] == "proceed"
        )
        assert f"/runs/{comparison.pk}/ (scorecard, then pick the winner)" in out
        assert "agents      simulated (set ANTHROPIC_API_KEY for real agents)" in out
        assert "username 'moderator'" in out

    def test_with_a_key_the_demo_run_uses_anthropic_under_a_budget(self, anthropic_api):
        out, _ = run_command("demo", "--no-serve")
        run = Run.objects.get(protocol="cross-examination")
        assert Run.objects.get(protocol="comparative").budget_usd == 1
        assert (run.backend, run.model, run.budget_usd) == ("anthropic", "claude-sonnet-5-5", 1)
        assert run.consent == "auto" and run.status == "queued"
        assert "agents      Anthropic claude-sonnet-5-5, estimated $" in out
        assert FAKE_KEY not in out

    def test_each_account_gets_its_own_printed_password_and_the_viewers_opens_only_the_viewer(self):
        import re

        from django.contrib.auth import authenticate
        from django.test import RequestFactory

        out, _ = run_command("demo", "--no-serve")
        printed = dict(re.findall(r"username '(\w+)'\s+password '([^']+)'", out))
        assert set(printed) == {"moderator", "viewer"}
        assert printed["moderator"] != printed["viewer"]
        request = RequestFactory().post("/accounts/login/")  # django-axes wants the request
        assert authenticate(request, username="viewer", password=printed["viewer"]).username == "viewer"
        assert (
            authenticate(request, username="moderator", password=printed["moderator"]).username == "moderator"
        )
        assert authenticate(request, username="moderator", password=printed["viewer"]) is None

    def test_simulated_can_be_forced(self, anthropic_api):
        run_command("demo", "--no-serve", "--simulated")
        assert set(Run.objects.values_list("backend", flat=True)) == {"simulated"}


@pytest.mark.django_db
def test_a_worker_compiles_the_templates_of_every_protocols_frames_before_it_takes_a_debate(
    monkeypatch: pytest.MonkeyPatch,
):
    from django.template import loader

    from debates.engine import registry
    from debates.management.commands import worker

    compiled: list[str] = []
    real = loader.get_template
    monkeypatch.setattr(loader, "get_template", lambda name: compiled.append(name) or real(name))
    worker.worker_warm_up()
    assert {p.template for p in registry.all_protocols()} <= set(compiled)
    assert {"debates/run_detail.html", "debates/integrity.html"} <= set(compiled)


# Run in a fresh process: warm up as a worker does, drive one debate, and list the modules of the project and of its
# dependencies that the debate imported. The standard library's are left out: the simulated agents seed their random
# numbers with a string, which loads the C module _sha2 on first use.
FIRST_DEBATE_OF_A_WARMED_WORKER = """
import json, sys
import django
django.setup()
from asgiref.sync import async_to_sync
from django.conf import settings
from debates.engine.runner import run_execute
from debates.management.commands.worker import worker_warm_up

worker_warm_up()
before = set(sys.modules)
outcome = async_to_sync(run_execute)(int(sys.argv[1]))
ours = (str(settings.BASE_DIR), "site-packages")
imported = [
    name
    for name in sorted(set(sys.modules) - before)
    if any(part in (getattr(sys.modules[name], "__file__", None) or "") for part in ours)
]
print(json.dumps({"outcome": outcome, "imported": imported}))
"""


@pytest.mark.django_db(transaction=True)
def test_a_warmed_worker_imports_nothing_while_it_drives_its_first_debate(make_run):
    """Ten fresh workers importing the Redis client and the agents as their debates began lagged their viewers by
    0.3 s (bench fanout): everything the first debate needs is loaded before the worker says it is ready."""
    import os
    import subprocess
    import sys

    from django.conf import settings

    from tests.engine.crash_helpers import subprocess_env

    run = make_run(backend_options={"cps": 3000})  # streams, so live frames are rendered and sent too
    env = subprocess_env()
    if os.environ.get("REDIS_URL"):  # the scaled pass: the Redis channel layer, as its workers have
        env["REDIS_URL"] = os.environ["REDIS_URL"]
    done = subprocess.run(
        [sys.executable, "-c", FIRST_DEBATE_OF_A_WARMED_WORKER, str(run.pk)],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"outcome": "done", "imported": []}
