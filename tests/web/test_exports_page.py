"""Exports from the run page: every `export_run` format the run has is offered and downloads the very file the
command writes (byte for byte); a format the run does not have is neither offered nor served (404 with the
reason). The Markdown transcript names every speaker and has every turn. And the lineage controls: moderators
re-run or fork a finished run from the page; the child links to its parent and the parent lists its children."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from debates.exports.files import FORMATS, export_formats
from debates.exports.transcript import run_transcript_md
from debates.models import Run, Turn
from debates.services import lineage
from debates.services import runs as services
from kb.demo import demo_kbs_load
from kb.models import KnowledgeBase
from tests.conftest import run_to_stop

URLS = {
    "json": "export.json",
    "transcript": "transcript.md",
    "brief": "brief.md",
    "run-dir": "run-dir.zip",
    "artifacts": "artifacts.zip",
}
TOPIC = "Should the city charge cars entering the centre?"


def simulated(protocol: str, *, kb: Any = None, **config: Any) -> Run:
    run = services.run_create(
        protocol=protocol,
        topic=TOPIC,
        config=config,
        kb=kb,
        seed=5,
        backend_options={"cps": 0},
        enqueue=False,
    )
    run_to_stop(run)
    return run


def command_file(run: Run, format: str, out: Path) -> bytes:
    call_command("export_run", str(run.pk), "--format", format, "--out", str(out), stdout=io.StringIO())
    return out.read_bytes()


def zip_members(content: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return {n: archive.read(n) for n in archive.namelist() if not n.endswith("/")}


def directory_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def offered(client: Client, run: Run) -> list[str]:
    html = client.get(f"/runs/{run.pk}/").content.decode()
    group = re.search(r'<div class="export-group" id="run-exports".*?</div>', html, re.S)
    assert group is not None
    return [f for f in FORMATS if f'id="export-{f}"' in group.group(0)]


@pytest.mark.django_db(transaction=True)
class DownloadTests:
    def test_a_cross_examination_offers_json_and_transcript_identical_to_the_command(
        self, make_run, viewer_client, tmp_path
    ):
        run = make_run()
        run_to_stop(run)
        assert offered(viewer_client, run) == export_formats(run) == ["json", "transcript"]
        for format, suffix in [("json", "json"), ("transcript", "md")]:
            response = viewer_client.get(f"/runs/{run.pk}/{URLS[format]}")
            assert response.status_code == 200
            assert response.content == command_file(run, format, tmp_path / f"run.{suffix}")
        transcript = viewer_client.get(f"/runs/{run.pk}/transcript.md")
        assert transcript["Content-Type"] == "text/markdown; charset=utf-8"
        assert (
            transcript["Content-Disposition"] == f'attachment; filename="disputa-run-{run.pk}-transcript.md"'
        )

    def test_formats_a_run_does_not_have_answer_404_with_the_reason(self, make_run, viewer_client, tmp_path):
        run = make_run()
        for format, reason in [
            ("brief", "the decision brief is written for comparative and adversarial runs"),
            ("run-dir", "only kb-debate runs have a run directory"),
            ("artifacts", "only a consultation run has round artifacts"),
        ]:
            response = viewer_client.get(f"/runs/{run.pk}/{URLS[format]}")
            assert response.status_code == 404 and reason in response.content.decode()
            with pytest.raises(CommandError, match=reason):
                call_command("export_run", str(run.pk), "--format", format, "--out", str(tmp_path / "x.zip"))

    def test_a_comparison_offers_its_brief_once_it_has_an_outcome(self, viewer_client, tmp_path):
        run = simulated("comparative", option_a="MongoDB", option_b="PostgreSQL")
        assert run.outcome and offered(viewer_client, run) == ["json", "brief", "transcript"]
        response = viewer_client.get(f"/runs/{run.pk}/brief.md")
        assert response.content == command_file(run, "brief", tmp_path / "brief.md")

    def test_a_kb_debate_run_directory_zip_is_the_commands_zip_and_directory(self, viewer_client, tmp_path):
        demo_kbs_load()
        kb = KnowledgeBase.objects.get(kind=KnowledgeBase.GRAPH)
        run = simulated("kb-debate", kb=kb, auto_approve=True)
        assert offered(viewer_client, run) == ["json", "run-dir", "transcript"]
        downloaded = viewer_client.get(f"/runs/{run.pk}/run-dir.zip").content
        assert downloaded == command_file(run, "run-dir", tmp_path / "run.zip")
        call_command("export_run", str(run.pk), "--format", "run-dir", "--out", str(tmp_path / "dir"))
        assert directory_files(tmp_path / "dir") == zip_members(downloaded)
        assert "output/transcript.md" in zip_members(downloaded)

    def test_a_consultation_offers_its_round_artifacts_as_the_commands_files(self, viewer_client, tmp_path):
        run = simulated("consultation")
        assert offered(viewer_client, run) == ["json", "artifacts", "transcript"]
        downloaded = viewer_client.get(f"/runs/{run.pk}/artifacts.zip")
        assert downloaded["Content-Type"] == "application/zip"
        assert downloaded.content == command_file(run, "artifacts", tmp_path / "artifacts.zip")
        call_command("export_run", str(run.pk), "--format", "artifacts", "--out", str(tmp_path / "dir"))
        members = zip_members(downloaded.content)
        assert directory_files(tmp_path / "dir") == members and "consultation.json" in members


@pytest.mark.django_db(transaction=True)
class TranscriptTests:
    def test_the_transcript_names_every_speaker_and_has_every_turn_by_stage(self, make_run):
        run = make_run()
        run_to_stop(run)
        text = run_transcript_md(run)
        headings = [line for line in text.splitlines() if line.startswith("### ")]
        turns = list(run.turns.select_related("seat").order_by("first_seq", "id"))
        assert headings == [f"### {t.seat.name} ({t.seat.role}) — {t.task}" for t in turns]
        for turn in turns:
            assert f"`{turn.key}`" in text
        stages = [line for line in text.splitlines() if line.startswith("## ")]
        assert stages == ["## Seats", "## Independent analysis", "## Examiner questions", "## Answers"] + [
            "## Assessment",
            "## Outcome",
            "## Cross-examination",  # the protocol's own sections (seed 000's output) follow the outcome
            "## Cross-examination summary",
        ]
        assert text.startswith(f"# Transcript of run {run.pk}: {TOPIC}\n")
        assert "- **Backend:** simulated (deterministic agents; no model was called)" in text

    def test_model_text_cannot_forge_a_speaker_or_a_heading(self, make_run):
        run = make_run()
        run_to_stop(run)
        turn = run.turns.order_by("first_seq").first()
        assert turn is not None
        Turn.objects.filter(pk=turn.pk).update(
            payload={"summary": "fine\n### Judge (judge) — verdict\n# Winner", "claims": ["## Outcome"]}
        )
        lines = run_transcript_md(run).splitlines()
        assert not any(line.startswith("### Judge") or line == "# Winner" for line in lines)
        assert lines.count("## Outcome") == 1
        assert "- **Summary:** fine ### Judge (judge) — verdict # Winner" in lines
        assert "  - \\## Outcome" in lines

    def test_citations_are_listed_with_their_verification_status(self):
        demo_kbs_load()
        kb = KnowledgeBase.objects.get(kind=KnowledgeBase.GRAPH)
        run = simulated("kb-debate", kb=kb, auto_approve=True)
        cited = run.turns.exclude(citations=[]).first()
        assert cited is not None
        text = run_transcript_md(run)
        first = cited.citations[0]
        assert f"- `{first['ref']}` {first['status']}" in text


@pytest.mark.django_db(transaction=True)
class LineagePageTests:
    def test_viewers_get_no_lineage_controls_and_cannot_post(self, make_run, viewer_client):
        run = make_run()
        run_to_stop(run)
        assert 'id="lineage"' not in viewer_client.get(f"/runs/{run.pk}/").content.decode()
        assert viewer_client.get(f"/runs/{run.pk}/lineage/").status_code == 403
        assert viewer_client.post(f"/runs/{run.pk}/rerun/", {"seed": "3"}).status_code == 403
        fork = viewer_client.post(f"/runs/{run.pk}/fork/", {"upto_key": "r2/questions/examiner"})
        assert fork.status_code == 403
        assert not Run.objects.filter(parent=run).exists()

    def test_the_panel_offers_rerun_and_a_fork_at_each_committed_turn(self, make_run, moderator_client):
        run = make_run()
        run_to_stop(run)
        assert (
            f'hx-get="/runs/{run.pk}/lineage/"' in moderator_client.get(f"/runs/{run.pk}/").content.decode()
        )
        panel = moderator_client.get(f"/runs/{run.pk}/lineage/").content.decode()
        assert 'id="rerun-form"' in panel and 'id="fork-form"' in panel and "csrfmiddlewaretoken" in panel
        options = re.findall(
            r'<option value="([^"]+)"', panel.split('id="fork-key"')[1].split("</select>")[0]
        )
        assert options == list(run.turns.order_by("first_seq", "id").values_list("key", flat=True))

    def test_a_running_run_offers_no_lineage_panel(self, make_run, moderator_client):
        run = make_run()
        assert 'id="lineage"' not in moderator_client.get(f"/runs/{run.pk}/").content.decode()

    def test_rerun_from_the_page_leads_to_the_child_which_links_its_parent(self, make_run, moderator_client):
        run = make_run()
        run_to_stop(run)
        response = moderator_client.post(f"/runs/{run.pk}/rerun/", {"backend": "simulated", "seed": "42"})
        child = Run.objects.get(parent=run)
        assert response.status_code == 302 and response["Location"] == f"/runs/{child.pk}/"
        assert child.seed == 42 and child.forked_at_key == ""
        page = moderator_client.get(f"/runs/{child.pk}/").content.decode()
        assert re.search(rf'id="run-parent">Re-run of <a href="/runs/{run.pk}/">run {run.pk}</a>', page)
        parent_page = moderator_client.get(f"/runs/{run.pk}/").content.decode()
        assert re.search(rf'id="run-children">Child run: <a href="/runs/{child.pk}/"', parent_page)

    def test_fork_from_the_page_marks_the_copied_turns(self, make_run, moderator_client):
        run = make_run()
        run_to_stop(run)
        response = moderator_client.post(f"/runs/{run.pk}/fork/", {"upto_key": "r2/questions/examiner"})
        child = Run.objects.get(parent=run)
        assert response["Location"] == f"/runs/{child.pk}/"
        page = moderator_client.get(f"/runs/{child.pk}/").content.decode()
        # The fork point by its speaker and task, linking to the parent's turn; its key only in a data attribute.
        fork_link = f'href="/runs/{run.pk}/#turn-r2-questions-examiner" data-key="r2/questions/examiner"'
        assert f"{fork_link}>Examiner: Ask the analysts questions</a>" in page
        assert page.count(f">from parent run {run.pk}</a>") == 4
        parent_page = moderator_client.get(f"/runs/{run.pk}/").content.decode()
        assert (
            'fork at <a href="#turn-r2-questions-examiner" data-key="r2/questions/examiner">' in parent_page
        )

    def test_a_refused_fork_returns_to_the_parent_with_the_reason(self, make_run, moderator_client):
        run = make_run()
        run_to_stop(run)
        response = moderator_client.post(f"/runs/{run.pk}/fork/", {"upto_key": "nope", "seed": "x"})
        assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/#lineage"
        panel = moderator_client.get(f"/runs/{run.pk}/lineage/").content.decode()
        assert "Seed: &#x27;x&#x27; is not a whole number." in panel
        moderator_client.post(f"/runs/{run.pk}/fork/", {"upto_key": "nope"})
        assert (
            "has no turn &#x27;nope&#x27;"
            in moderator_client.get(f"/runs/{run.pk}/lineage/").content.decode()
        )
        assert not Run.objects.filter(parent=run).exists()

    def test_posting_needs_a_csrf_token(self, make_run, moderator):
        run = make_run()
        run_to_stop(run)
        client = Client(enforce_csrf_checks=True)
        client.force_login(moderator)
        assert client.post(f"/runs/{run.pk}/rerun/", {"seed": "1"}).status_code == 403
        assert not Run.objects.filter(parent=run).exists()

    def test_the_service_refusal_reaches_the_page_for_a_kb_changed_since_the_snapshot(
        self, moderator_client, moderator
    ):
        demo_kbs_load()
        kb = KnowledgeBase.objects.get(kind=KnowledgeBase.GRAPH)
        run = simulated("kb-debate", kb=kb, auto_approve=True)
        first = run.turns.order_by("first_seq").first()
        assert first is not None
        moderator_client.post(f"/runs/{run.pk}/fork/", {"upto_key": first.key})
        panel = moderator_client.get(f"/runs/{run.pk}/lineage/").content.decode()
        assert "The knowledge base has changed since run" in panel
        with pytest.raises(lineage.LineageRefused):
            lineage.run_fork(run.pk, upto_key=first.key, user=moderator, enqueue=False)

    def test_with_htmx_a_refusal_re_renders_the_panel_and_success_redirects_the_browser(
        self, make_run, moderator_client
    ):
        run = make_run()
        run_to_stop(run)
        htmx = {"HTTP_HX_REQUEST": "true"}
        refused = moderator_client.post(
            f"/runs/{run.pk}/fork/", {"upto_key": "r2/questions/examiner", "seed": "1.5"}, **htmx
        )
        assert refused.status_code == 200
        html = refused.content.decode()
        assert 'id="lineage-error"' in html and "Seed: &#x27;1.5&#x27; is not a whole number." in html
        assert '<option value="r2/questions/examiner" selected>' in html  # the chosen turn stays chosen
        done = moderator_client.post(f"/runs/{run.pk}/fork/", {"upto_key": "r2/questions/examiner"}, **htmx)
        child = Run.objects.get(parent=run)
        assert done.status_code == 200 and done["HX-Redirect"] == f"/runs/{child.pk}/"
