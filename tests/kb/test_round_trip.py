"""Seed-002 fidelity: a KB imported from files and exported unchanged gives the same bytes, file by file; a debate's
change is edited into the imported text, so the export differs from the folder by exactly that change (a KB lives
in git); a folder that is not a KB is refused in one line that says what a KB folder holds."""

from __future__ import annotations

import difflib
import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from kb.discipline import DisciplineViolation, mutation_propose
from kb.formats import seed002_edit
from kb.formats.problems import NotAKnowledgeBase
from kb.models import Argument, KnowledgeBase, MutationStatus, OriginalFile, Source
from kb.services import kb_export, kb_files, kb_import_path, kb_import_zip

ROOT = Path(__file__).parents[2]
CORPUS = Path(__file__).parent / "corpus"
DEMO = ROOT / "kb" / "demo" / "congestion-pricing"
TRICKY = CORPUS / "valid" / "tricky"
FOLDERS = {
    "demo": DEMO,
    "tricky": TRICKY,
    "rich": CORPUS / "valid" / "rich",
    "remote-work": CORPUS / "valid" / "remote-work",
}
HANDLE = "debater-con-pricing"


def tree(root: Path) -> dict[str, bytes]:
    """{path relative to root: bytes} of every file under root."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def differing(expected: Path, actual: Path) -> list[str]:
    """The files that are not byte-identical (or are missing on one side) between two folders."""
    left, right = tree(expected), tree(actual)
    return sorted(rel for rel in left.keys() | right.keys() if left.get(rel) != right.get(rel))


def line_changes(before: bytes, after: bytes) -> tuple[list[str], list[str]]:
    """(lines removed, lines added) from before to after, line ends kept out."""
    removed, added = [], []
    for line in difflib.ndiff(before.decode().splitlines(), after.decode().splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def import_command(path: Path, slug: str) -> str:
    out = io.StringIO()
    call_command("import_kb", str(path), "--slug", slug, stdout=out)
    return out.getvalue().strip()


def export_command(slug: str, out: Path) -> None:
    call_command("export_kb", slug, "--out", str(out), stdout=io.StringIO())


def apply(kb: KnowledgeBase, kind: str, payload: dict, justification: str = "the traceback says so") -> None:
    mutation = mutation_propose(
        kb=kb,
        kind=kind,
        payload=payload,
        proposed_by=HANDLE,
        justification=justification,
        auto_approve=True,
    )
    assert mutation.status == MutationStatus.APPLIED, mutation.reason


def exported(kb: KnowledgeBase, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    kb_export(kb, out)
    return out


def crlf_copy(source: Path, target: Path) -> Path:
    """A copy of a KB folder whose markdown files end their lines with CRLF."""
    shutil.copytree(source, target)
    for file in target.rglob("*.md"):
        file.write_bytes(file.read_bytes().replace(b"\n", b"\r\n"))
    return target


def state(kb: KnowledgeBase) -> dict:
    """What the KB holds, as the debate and the views read it."""
    return {
        "arguments": [
            {
                k: v
                for k, v in a.__dict__.items()
                if k not in {"_state", "id", "kb_id", "created_during_run_id"}
            }
            for a in kb.arguments.all()
        ],
        "sources": [(s.path, s.frontmatter, s.title, s.fields, s.body) for s in kb.sources.all()],
        "entities": [(e.path, e.frontmatter, e.body) for e in kb.entities.all()],
        "edges": [(e.src, e.type, e.target, e.comment) for e in kb.edges.all()],
        "contradictions": [(c.c_id, c.title, c.type, c.status, c.fields) for c in kb.contradictions.all()],
        "revisions": [
            (r.r_id, r.heading, r.type, r.target, r.change, r.justification, r.triggered_by)
            for r in kb.revisions.all()
        ],
        "text": (kb.quality_summary, kb.log, kb.stable_statement),
    }


@pytest.fixture
def tricky(db) -> KnowledgeBase:
    return kb_import_path(TRICKY, slug="tricky")


@pytest.fixture
def demo(db) -> KnowledgeBase:
    return kb_import_path(DEMO, slug="demo")


class UnchangedTests:
    @pytest.mark.parametrize("name", list(FOLDERS))
    def test_importing_and_exporting_an_unchanged_kb_gives_the_same_bytes_file_by_file(
        self, db, tmp_path, name
    ):
        slug = import_command(FOLDERS[name], name)
        export_command(slug, tmp_path / "out")
        assert differing(FOLDERS[name], tmp_path / "out") == [], "these files differ after the round trip"

    def test_quotes_yaml_dates_comments_and_padding_come_back_as_written(self, tricky, tmp_path):
        files = tree(exported(tricky, tmp_path) / "kb")
        argument = files["arguments/arg-001-pricing-cuts-traffic.md"].decode()
        assert (
            'status: "strong"   # set in pass 2\n' in argument and "date_reviewed: 2025-03-10\n" in argument
        )
        assert "date_accessed: 2025-03-10\n" in files["sources/peer-reviewed/eliasson-2009-trial.md"].decode()
        assert files["edges.md"].startswith(b"# Edge log\n\n<!-- columns:")
        assert not files["arguments/arg-002-congestion-returned.md"].endswith(b"\n")  # as imported

    def test_files_that_are_not_nodes_come_back_too(self, tricky, tmp_path):
        files = tree(exported(tricky, tmp_path) / "kb")
        for name in [
            ".fetch-log.jsonl",
            ".arg-state.json",
            "NOTES.txt",
            "sources/agents/debater-con-pricing/index.md",
        ]:
            assert files[name] == (TRICKY / "kb" / name).read_bytes(), name

    def test_a_kb_with_crlf_line_ends_round_trips_byte_for_byte(self, db, tmp_path):
        folder = crlf_copy(TRICKY, tmp_path / "crlf")
        kb = kb_import_path(folder, slug="crlf")
        assert differing(folder, exported(kb, tmp_path)) == []

    def test_the_snapshot_of_an_imported_kb_is_its_files_as_imported(self, demo):
        assert kb_files(demo) == {f"kb/{rel}": data.decode() for rel, data in tree(DEMO / "kb").items()}

    def test_a_kb_made_otherwise_is_still_written_out_whole(self, small_kb):
        files = kb_files(small_kb)
        assert files["kb/edges.md"].startswith("# Edges\n\n")
        assert "Derived from the node files by Disputa" in files["kb/arguments/index.md"]
        assert "| arg-004 | weak | con-x | empirical | Argument 4 |" in files["kb/arguments/index.md"]
        assert "kb/arguments/arg-001-a1.md" in files and "kb/sources/index.md" in files

    def test_the_imported_text_is_never_rewritten_nor_deleted(self, tricky):
        original = OriginalFile.objects.get(kb=tricky, path="kb/edges.md")
        original.text += "arg-001 supports arg-002\n"
        with pytest.raises(DisciplineViolation, match="never rewritten"):
            original.save()
        with pytest.raises(DisciplineViolation):
            OriginalFile.objects.get(kb=tricky, path="kb/edges.md").delete()


class ChangeTests:
    def test_a_downgrade_changes_only_the_status_line_the_strength_assessment_and_the_index_row(
        self, tricky, tmp_path
    ):
        apply(tricky, "status-downgrade", {"arg_id": "arg-001", "to": "contested"})
        out = exported(tricky, tmp_path)
        node = "kb/arguments/arg-001-pricing-cuts-traffic.md"
        assert differing(TRICKY, out) == sorted(["kb/arguments/index.md", node, "kb/revisions.md"])
        removed, added = line_changes((TRICKY / node).read_bytes(), (out / node).read_bytes())
        assert removed == ['status: "strong"   # set in pass 2']
        assert added[0] == 'status: "contested"   # set in pass 2'
        assert added[1:] == [
            "",
            "- Downgraded strong → contested during debate (outside a debate): the traceback says so",
        ]
        index = "kb/arguments/index.md"
        removed, added = line_changes((TRICKY / index).read_bytes(), (out / index).read_bytes())
        assert removed == [
            '| strong      | arg-001 | pro-pricing  | Cordon traffic fell by about 20%: a "natural experiment". |'
        ]
        assert added == [
            '| contested   | arg-001 | pro-pricing  | Cordon traffic fell by about 20%: a "natural experiment". |'
        ]

    def test_a_downgrade_of_the_demo_kb_changes_one_line_of_its_node_and_one_cell_of_its_index(
        self, demo, tmp_path
    ):
        apply(demo, "status-downgrade", {"arg_id": "arg-002", "to": "contested"})
        out = exported(demo, tmp_path)
        node = "kb/arguments/arg-002-london-charge-cut-zone-traffic.md"
        assert differing(DEMO, out) == sorted(["kb/arguments/index.md", node, "kb/revisions.md"])
        removed, added = line_changes((DEMO / node).read_bytes(), (out / node).read_bytes())
        assert removed == ["status: strong"] and added[0] == "status: contested" and len(added) == 3
        index = "kb/arguments/index.md"
        removed, added = line_changes((DEMO / index).read_bytes(), (out / index).read_bytes())
        assert len(removed) == len(added) == 1
        assert removed[0].replace("| strong |", "| contested |") == added[0]
        revisions = (out / "kb" / "revisions.md").read_text()
        assert revisions.startswith("# KB Revisions Log\n\n## R-001 — ")  # the KB had none: written whole

    def test_a_new_edge_is_one_line_under_the_last_edge_in_its_columns(self, tricky, tmp_path):
        apply(
            tricky, "new-edge", {"src": "arg-002", "type": "exaggerates", "target": "arg-004", "comment": "x"}
        )
        out = exported(tricky, tmp_path)
        assert differing(TRICKY, out) == sorted(["kb/edges.md", "kb/revisions.md"])
        before = (TRICKY / "kb" / "edges.md").read_text().split("\n")
        after = (out / "kb" / "edges.md").read_text().split("\n")
        last = before.index('arg-003   addresses     arg-002   ""')
        assert after == [*before[: last + 1], 'arg-002   exaggerates   arg-004   "x"', *before[last + 1 :]]

    def test_the_revision_log_gains_entries_after_the_ones_it_had(self, tricky, tmp_path):
        apply(tricky, "status-downgrade", {"arg_id": "arg-003", "to": "strong"})
        apply(tricky, "status-downgrade", {"arg_id": "arg-003", "to": "contested"})
        out = exported(tricky, tmp_path)
        before = (TRICKY / "kb" / "revisions.md").read_text()
        after = (out / "kb" / "revisions.md").read_text()
        assert after.startswith(before) and after.count("\n## R-") == 3
        assert (
            "## R-002 — " in after and "- **Change**: status strong → contested" in after.split("## R-003")[1]
        )

    def test_a_new_node_adds_its_file_an_index_row_made_like_the_others_and_its_refines_edge(
        self, tricky, tmp_path
    ):
        apply(
            tricky,
            "new-node",
            {
                "statement": "Congestion returned where road space was taken away.",
                "slug": "road-space-explains-return",
                "summary": "Road space, not the charge, explains the return.",
                "position": "con-pricing",
                "layer": "empirical",
                "status": "weak",
                "refines": "arg-002",
            },
        )
        out = exported(tricky, tmp_path)
        node = "kb/arguments/arg-005-road-space-explains-return.md"
        assert differing(TRICKY, out) == sorted(
            ["kb/arguments/index.md", node, "kb/edges.md", "kb/revisions.md"]
        )
        index = "kb/arguments/index.md"
        removed, added = line_changes((TRICKY / index).read_bytes(), (out / index).read_bytes())
        assert removed == []
        assert added == [
            "| weak        | arg-005 | con-pricing  | Road space, not the charge, explains the return.          |"
        ]
        removed, added = line_changes(
            (TRICKY / "kb/edges.md").read_bytes(), (out / "kb/edges.md").read_bytes()
        )
        assert removed == [] and added == ['arg-005   refines       arg-002   ""']
        again = kb_import_path(out, slug="again")
        assert again.arguments.get(arg_id="arg-005").status == "weak"

    def test_a_criticism_changes_only_that_field_of_the_source(self, tricky, tmp_path):
        for path in ["kb/sources/peer-reviewed/eliasson-2009-trial.md", "kb/sources/media/blog-2019-toll.md"]:
            apply(tricky, "criticism-append", {"source": path, "text": "the counts are the city's own"})
        out = exported(tricky, tmp_path)
        assert differing(TRICKY, out) == sorted(
            [
                "kb/revisions.md",
                "kb/sources/media/blog-2019-toll.md",
                "kb/sources/peer-reviewed/eliasson-2009-trial.md",
            ]
        )
        entry = f"  - the counts are the city's own (outside a debate, {HANDLE})"
        for path in ["kb/sources/peer-reviewed/eliasson-2009-trial.md", "kb/sources/media/blog-2019-toll.md"]:
            assert line_changes((TRICKY / path).read_bytes(), (out / path).read_bytes()) == ([], [entry]), (
                path
            )

    def test_a_traceback_note_changes_only_that_section(self, tricky, tmp_path):
        apply(tricky, "traceback-append", {"arg_id": "arg-002", "text": "the press report quotes TfL"})
        out = exported(tricky, tmp_path)
        node = "kb/arguments/arg-002-congestion-returned.md"
        assert differing(TRICKY, out) == sorted([node, "kb/revisions.md"])
        before, after = (TRICKY / node).read_text(), (out / node).read_text()
        note = f"\n\n- (outside a debate, {HANDLE}) the press report quotes TfL"
        assert after == before.replace("Stops at a press report.", "Stops at a press report." + note)

    def test_a_new_contradiction_is_appended_to_contradictions_md(self, tricky, tmp_path):
        apply(
            tricky,
            "contradiction-added",
            {
                "type": "within-position-incoherence",
                "title": "Fair or not",
                "arguments": ["arg-004", "arg-002"],
            },
        )
        out = exported(tricky, tmp_path)
        assert differing(TRICKY, out) == sorted(["kb/contradictions.md", "kb/revisions.md"])
        before = (TRICKY / "kb" / "contradictions.md").read_text()
        after = (out / "kb" / "contradictions.md").read_text()
        assert after.startswith(
            before.rstrip("\n") + "\n\n## C-002: Fair or not\n\n- **Type**: within-position"
        )
        assert after.endswith("- **Status**: open\n")

    def test_an_edited_crlf_file_keeps_its_crlf_line_ends(self, db, tmp_path):
        folder = crlf_copy(TRICKY, tmp_path / "crlf")
        kb = kb_import_path(folder, slug="crlf")
        apply(kb, "status-downgrade", {"arg_id": "arg-004", "to": "refuted"})
        out = exported(kb, tmp_path)
        node = "kb/arguments/arg-004-charges-are-regressive.md"
        text = (out / node).read_bytes()
        assert text.count(b"\n") == text.count(b"\r\n") and b"status: refuted\r\n" in text
        assert differing(folder, out) == sorted(["kb/arguments/index.md", node, "kb/revisions.md"])

    def test_every_change_reads_back_as_the_kb_now(self, tricky, tmp_path):
        apply(tricky, "status-downgrade", {"arg_id": "arg-002", "to": "weak"})
        apply(tricky, "new-edge", {"src": "arg-004", "type": "tangential-to", "target": "arg-001"})
        apply(
            tricky, "criticism-append", {"source": "kb/sources/media/blog-2019-toll.md", "text": "anonymous"}
        )
        apply(tricky, "traceback-append", {"arg_id": "arg-003", "text": "the referendum went against it"})
        apply(
            tricky,
            "contradiction-added",
            {"type": "structural", "title": "A cycle", "arguments": ["arg-001"]},
        )
        apply(
            tricky,
            "new-node",
            {"statement": "Tolls fund buses.", "position": "pro-pricing", "layer": "empirical"},
        )
        again = kb_import_path(exported(tricky, tmp_path), slug="again")
        assert state(again) == state(tricky)

    def test_changes_made_outside_a_debate_are_edited_in_the_same_way(self, tricky, tmp_path):
        entity = tricky.entities.get()
        entity.frontmatter = {**entity.frontmatter, "summary": "Transport economist (KTH).", "born": 1970}
        entity.body += "\n\n## Cross-source criticism\n\nNone."
        entity.save()
        source = tricky.sources.get(path="kb/sources/media/blog-2019-toll.md")
        source.frontmatter = {
            **source.frontmatter,
            "key_finding": "Says the poor pay most.",
            "date_accessed": "2025-04-01",
        }
        source.save()
        Source.objects.create(
            kb=tricky,
            path="kb/sources/media/new-2020-x.md",
            title="New",
            frontmatter={"title": "New", "source_type": "media", "key_finding": "Something new."},
            frontmatter_order=["title", "source_type", "key_finding"],
            fields=[["Criticism", ""]],
        )
        out = exported(tricky, tmp_path)
        changes = {
            rel: line_changes((TRICKY / rel).read_bytes(), (out / rel).read_bytes())
            for rel in differing(TRICKY, out)
            if (TRICKY / rel).exists()
        }
        assert changes == {
            "kb/entities/jonas-eliasson.md": (
                ['summary: "Transport economist; first author of the trial overview."'],
                [
                    'summary: "Transport economist (KTH)."',
                    "born: 1970",
                    "",
                    "## Cross-source criticism",
                    "",
                    "None.",
                ],
            ),
            "kb/entities/index.md": (
                [
                    "- ent-001 [Jonas Eliasson](jonas-eliasson.md) (person): Transport economist; first author of the trial overview."
                ],
                ["- ent-001 [Jonas Eliasson](jonas-eliasson.md) (person): Transport economist (KTH)."],
            ),
            "kb/sources/media/blog-2019-toll.md": (
                [
                    "date_accessed: 2025-03-11",
                    "key_finding: 'Says low-income commuters pay \"most of the toll\".'",
                ],
                ["date_accessed: 2025-04-01", "key_finding: 'Says the poor pay most.'"],
            ),
            "kb/sources/index.md": (
                ['| `media/blog-2019-toll.md` | media | Says low-income commuters pay "most of the toll". |'],
                [
                    "| `media/blog-2019-toll.md` | media | Says the poor pay most. |",
                    "| `media/new-2020-x.md` | media | Something new. |",
                ],
            ),
        }
        assert (out / "kb/sources/media/new-2020-x.md").is_file()
        assert state(kb_import_path(out, slug="again")) == state(tricky)

    def test_a_change_that_cannot_be_made_in_place_regenerates_that_file_only(self, tricky, tmp_path):
        Argument.objects.filter(kb=tricky, arg_id="arg-003").update(extra_sections=[["Notes", "Rewritten."]])
        out = exported(tricky, tmp_path)
        assert differing(TRICKY, out) == sorted(["kb/arguments/arg-003-gothenburg-cut-traffic.md"])
        again = kb_import_path(out, slug="again")
        assert again.arguments.get(arg_id="arg-003").extra_sections == [["Notes", "Rewritten."]]


class NotAKnowledgeBaseTests:
    def test_import_kb_on_a_folder_that_is_not_a_kb_says_what_a_kb_folder_holds_in_one_line(
        self, db, tmp_path
    ):
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "README.md").write_text("# Not a KB\n")
        with pytest.raises(CommandError) as error:
            call_command("import_kb", str(tmp_path / "notes"))
        message = str(error.value)
        assert "\n" not in message and message.startswith(f"{tmp_path / 'notes'}: not a seed-002 KB folder")
        for expected in ["quality-summary.md", "arguments/", "edges.md", f"{tmp_path / 'notes' / 'kb'}/"]:
            assert expected in message
        assert message.endswith("nothing was imported.")
        assert not KnowledgeBase.objects.exists()

    def test_the_command_exits_1_with_that_line_on_stderr(self, tmp_path):
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}"}
        result = subprocess.run(  # noqa: S603 - this interpreter, this project's manage.py
            [sys.executable, str(ROOT / "manage.py"), "import_kb", str(tmp_path)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            check=False,
        )
        assert result.returncode == 1 and result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "not a seed-002 KB folder" in lines[0], result.stderr

    def test_a_zip_without_a_kb_is_refused_by_its_name(self, db):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("notes/README.md", "# Not a KB\n")
        with pytest.raises(NotAKnowledgeBase) as refused:
            kb_import_zip(buffer.getvalue(), name="notes.zip")
        assert refused.value.path == "notes.zip" and "quality-summary.md" in refused.value.message
        assert not KnowledgeBase.objects.exists()

    def test_a_kb_folder_with_a_missing_file_still_gets_every_problem_by_file_and_line(self, db):
        with pytest.raises(Exception, match="kb/quality-summary.md:1: missing quality summary"):
            kb_import_path(CORPUS / "broken" / "missing-quality-summary")


class EditTests:
    """The text edits alone (kb/formats/seed002_edit.py): each returns the edited text, or None to regenerate."""

    FRONTMATTER = (
        '---\n# kept\nid: arg-001\nscope: >-\n  two\n  lines\nstatus: "strong"  # note\nold: x\n---\nbody\n'
    )

    def test_a_folded_value_is_rewritten_whole_and_the_comments_stay(self):
        old = {"id": "arg-001", "scope": "two lines", "status": "strong", "old": "x"}
        new = {"id": "arg-001", "scope": "one", "status": "weak", "added": "2025-03-10"}
        edited = seed002_edit.frontmatter_edit(self.FRONTMATTER, old, new)
        assert (
            edited
            == '---\n# kept\nid: arg-001\nscope: one\nstatus: "weak"  # note\nadded: 2025-03-10\n---\nbody\n'
        )

    def test_a_value_that_would_read_back_otherwise_is_quoted(self):
        old = {"id": "arg-001", "scope": "two lines", "status": "strong", "old": "x"}
        edited = seed002_edit.frontmatter_edit(
            self.FRONTMATTER, old, {**old, "old": "yes: no # not a comment"}
        )
        assert edited is not None and "\nold: 'yes: no # not a comment'\n" in edited

    def test_an_index_line_naming_the_old_value_twice_is_not_guessed(self):
        kind = seed002_edit.ARGUMENT_INDEX
        before = seed002_edit.IndexRecord({"arg-001"}, {"key": "arg-001", "status": "strong"})
        after = seed002_edit.IndexRecord({"arg-001"}, {"key": "arg-001", "status": "weak"})
        text = "- arg-001 (strong): strong evidence\n"
        assert seed002_edit.index_edit(text, kind, [before], [(before, after)], []) is None
        text = "- arg-001 (strong): good evidence\n"
        assert (
            seed002_edit.index_edit(text, kind, [before], [(before, after)], [])
            == "- arg-001 (weak): good evidence\n"
        )

    def test_an_edge_log_without_edges_gets_them_after_its_header(self):
        edited = seed002_edit.edges_append("# Edges\n", [], [("arg-001", "supports", "arg-002", "")])
        assert (
            edited is not None
            and edited.startswith("# Edges\n\narg-001  supports")
            and edited.endswith('""\n')
        )

    def test_line_ends_are_given_back_as_the_file_had_them(self):
        text, crlf = seed002_edit.normalized("a\r\nb\r\n")
        assert (text, crlf) == ("a\nb\n", True) and seed002_edit.restored(text, crlf) == "a\r\nb\r\n"
        assert seed002_edit.normalized("a\r\nb\n") == ("a\nb\n", False)
