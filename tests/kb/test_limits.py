"""Bounded KB inputs (kb/limits.py): every input over a limit is refused with a problem naming its file, line and
what was wrong, nothing is stored, and no page answers 500 — through the import services, the upload form (/kb/)
and `manage.py import_kb`."""

from __future__ import annotations

import contextlib
import html
import io
import json
import random
import re
import stat
import struct
import time
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from django.core.validators import slug_re

from kb import limits
from kb.discipline import kb_snapshot_take, mutation_propose
from kb.formats.problems import ImportRefused
from kb.formats.seed002 import parse_directory
from kb.models import KnowledgeBase, ProposedMutation
from kb.services import kb_import_json, kb_import_path, kb_import_zip

CORPUS = Path(__file__).parent / "corpus"

ARGUMENT = """---
id: arg-001
slug: traffic-fell
position: pro-charge
layer: empirical
scope: Stockholm, 2006
basis_type: empirical
status: strong
asserter: source-author
summary: Traffic across the cordon fell.
{extra}---

# Argument: Traffic across the cordon fell

## Statement

Traffic across the cordon fell by about 20 percent.
"""
SUMMARY = "# Quality summary: {title}\n\nGraph state: stable after pass 2.\n"


def kb_files(extra: str = "", title: str = "Congestion") -> dict[str, str | bytes]:
    """A one-argument seed-002 KB; `extra` is added to the argument's frontmatter (from line 11)."""
    return {
        "kb/quality-summary.md": SUMMARY.format(title=title),
        "kb/arguments/arg-001-traffic-fell.md": ARGUMENT.format(extra=extra),
    }


def zip_bytes(files: dict[str, str | bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", compression) as archive:
        warnings.simplefilter("ignore")  # duplicate names are written on purpose
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def incompressible(size: int) -> bytes:
    """Bytes that deflate does not shrink (a linear congruential sequence: deterministic, no os.urandom)."""
    state, out = 12345, bytearray()
    while len(out) < size:
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        out += state.to_bytes(8, "little")
    return bytes(out[:size])


# --- the three ways in -----------------------------------------------------------------------------------------

Refusal = Callable[..., str]


@pytest.fixture(params=["service", "upload", "command"])
def refused(request: pytest.FixtureRequest, db: None, tmp_path: Path) -> Refusal:
    """refused(name, content) imports `content` as the file `name` through one way in, expects it refused, checks
    that nothing was stored, and returns the problems as text."""
    channel = request.param

    def refuse(name: str, content: bytes) -> str:
        before = KnowledgeBase.objects.count()
        if channel == "service":
            importer = kb_import_json if name.endswith(".json") else kb_import_zip
            with pytest.raises(ImportRefused) as refusal:
                importer(content, name=name)
            text = str(refusal.value)
        elif channel == "upload":
            client = request.getfixturevalue("moderator_client")
            upload = io.BytesIO(content)
            upload.name = name
            response = client.post("/kb/", {"file": upload})
            assert response.status_code == 400
            page = response.content.decode()
            assert "Nothing was imported" in page
            items = re.findall(r"<li><code>(.*?)</code> (.*?)</li>", page, re.DOTALL)
            text = "\n".join(html.unescape(f"{where}: {message}") for where, message in items)
        else:
            path = tmp_path / name
            path.write_bytes(content)
            err = io.StringIO()
            with pytest.raises(CommandError, match="nothing was imported"):
                call_command("import_kb", str(path), stderr=err)
            text = err.getvalue()
        assert KnowledgeBase.objects.count() == before
        return text

    return refuse


def test_the_sample_kb_and_json_import_through_every_way_in(db, moderator_client, tmp_path):
    """The inputs below differ from these only by the part each test makes too big or hostile."""
    assert kb_import_zip(zip_bytes(kb_files()), name="ok.zip").arguments.count() == 1
    upload = io.BytesIO(zip_bytes(kb_files(title="Uploaded")))
    upload.name = "ok.zip"
    assert moderator_client.post("/kb/", {"file": upload}).status_code == 302
    (tmp_path / "ok.json").write_text('{"meta": {}, "macro": {"CPI": 3.1}}')
    out = io.StringIO()
    call_command("import_kb", str(tmp_path / "ok.json"), "--slug", "ok-json", stdout=out)
    assert out.getvalue().strip() == "ok-json"
    assert KnowledgeBase.objects.count() == 3


def test_the_limits_match_the_model_columns():
    assert KnowledgeBase._meta.get_field("slug").max_length == limits.SLUG_MAX_LENGTH
    assert KnowledgeBase._meta.get_field("title").max_length == limits.TITLE_MAX_LENGTH
    assert limits.SLUG_AUTO_MAX_LENGTH + len("-99999") <= limits.SLUG_MAX_LENGTH
    assert limits.JSON_MAX_BYTES <= limits.MAX_UPLOAD_BYTES


# --- zip archives ----------------------------------------------------------------------------------------------


class ZipTests:
    def test_too_many_entries(self, refused):
        files = {f"kb/sources/n{n}.md": "x" for n in range(limits.ZIP_MAX_ENTRIES + 1)}
        problems = refused("many.zip", zip_bytes(files))
        assert f"many.zip:1: the archive holds {limits.ZIP_MAX_ENTRIES + 1} entries" in problems

    def test_an_entry_that_expands_past_the_file_limit(self, refused):
        files = {**kb_files(), "kb/sources/big.md": incompressible(limits.ZIP_MAX_ENTRY_BYTES + 1)}
        problems = refused("big.zip", zip_bytes(files))
        assert f"kb/sources/big.md:1: expands to more than {limits.ZIP_MAX_ENTRY_BYTES} bytes" in problems

    def test_an_archive_that_expands_past_the_total_limit(self, refused, monkeypatch):
        monkeypatch.setattr(limits, "ZIP_MAX_TOTAL_BYTES", 1024 * 1024)  # so the archive can stay small
        files = {f"kb/sources/s{n}.md": incompressible(400 * 1024) for n in range(3)}
        problems = refused("total.zip", zip_bytes(files))
        assert "kb/sources/s2.md:1: the archive expands to more than 1048576 bytes" in problems

    def test_an_entry_compressed_beyond_the_ratio(self, refused):
        zeros = bytes(limits.ZIP_MAX_ENTRY_BYTES // 2)  # under the size limits, ~1000:1
        problems = refused("ratio.zip", zip_bytes({**kb_files(), "kb/sources/zeros.md": zeros}))
        assert (
            f"kb/sources/zeros.md:1: compressed more than {limits.ZIP_MAX_COMPRESSION_RATIO} to 1" in problems
        )

    @pytest.mark.parametrize(
        ("member", "why"),
        [
            ("../outside.md", "a path outside the archive"),
            ("kb/../../outside.md", "a path outside the archive"),
            ("/etc/kb.md", "an absolute path"),
            ("C:/kb.md", "an absolute path"),
        ],
    )
    def test_an_unsafe_path(self, refused, member, why):
        problems = refused("unsafe.zip", zip_bytes({**kb_files(), member: "x"}))
        assert f"unsafe path in archive: {member} is {why}" in problems

    def test_a_symbolic_link(self, refused):
        buffer = io.BytesIO(zip_bytes(kb_files()))
        with zipfile.ZipFile(buffer, "a") as archive:
            link = zipfile.ZipInfo("kb/sources/passwd.md")
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(link, "/etc/passwd")
        problems = refused("link.zip", buffer.getvalue())
        assert "unsafe path in archive: kb/sources/passwd.md is a symbolic link" in problems

    def test_two_entries_of_one_name(self, refused):
        content = zip_bytes({**kb_files(), "kb/sources/a.md": "first"})
        buffer = io.BytesIO(content)
        with warnings.catch_warnings(), zipfile.ZipFile(buffer, "a") as archive:
            warnings.simplefilter("ignore")
            archive.writestr("kb/sources/a.md", "second")
        problems = refused("dup.zip", buffer.getvalue())
        assert "kb/sources/a.md is a second entry of the same name" in problems

    def test_an_archive_that_understates_a_size_is_refused_as_damaged(self, refused):
        content = bytearray(zip_bytes({**kb_files(), "kb/sources/zeros.md": bytes(1024 * 1024)}))
        directory = content.rfind(b"PK\x01\x02")  # the last central directory entry: zeros.md
        content[directory + 24 : directory + 28] = struct.pack("<I", 1000)  # "uncompressed size: 1000"
        problems = refused("liar.zip", bytes(content))
        assert "kb/sources/zeros.md:1: cannot be decompressed" in problems

    def test_a_damaged_archive_is_refused_never_raised(self, db):
        """Bytes of a valid archive overwritten at random (seeded): each import succeeds or is refused."""
        content, rng, outcomes = zip_bytes(kb_files()), random.Random(7), set()
        for attempt in range(400):
            damaged = bytearray(content)
            for _ in range(rng.randint(1, 6)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            try:
                kb_import_zip(bytes(damaged), name=f"damaged-{attempt}.zip")
                outcomes.add("imported")
            except ImportRefused as refusal:
                outcomes.add(refusal.problems[0].message.split(":")[0])
        assert {"not a zip archive", "cannot be decompressed"} <= outcomes

    def test_not_a_zip(self, refused):
        assert "junk.zip:1: not a zip archive" in refused("junk.zip", b"PK\x03\x04 not really")


GIB = 1024**3


@pytest.fixture(scope="module")
def zip_bomb() -> bytes:
    """About 1 MB that expands to 1 GiB of zeros, after a valid KB's files (so something legitimate is written)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in kb_files().items():
            archive.writestr(name, text)
        with archive.open("kb/sources/bomb.md", "w") as member:
            chunk = bytes(1024 * 1024)
            for _ in range(GIB // len(chunk)):
                member.write(chunk)
    assert len(buffer.getvalue()) < 1.1 * 1024 * 1024
    return buffer.getvalue()


class RecordingTemporaryDirectory(TemporaryDirectory):  # type: ignore[type-arg]
    """Records the bytes the directory holds when it is removed: files are only ever added during an import, so
    that is the most it ever held."""

    held: list[int] = []

    def cleanup(self) -> None:
        files = [p for p in Path(self.name).rglob("*") if p.is_file()]
        self.held.append(sum(p.stat().st_size for p in files))
        super().cleanup()


# Not a speed target: a bound that only an expanded bomb could exceed (30**9 strings, an 8 GiB read take minutes
# to hours), loose enough for a loaded CI machine.
UNEXPANDED_SECONDS = 10


class ZipBombTests:
    def test_a_zip_bomb_is_refused_fast_without_writing_its_expansion(self, db, zip_bomb, monkeypatch):
        monkeypatch.setattr("kb.services.TemporaryDirectory", RecordingTemporaryDirectory)
        RecordingTemporaryDirectory.held = []
        started = time.perf_counter()
        with pytest.raises(ImportRefused, match="kb/sources/bomb.md:1: expands to more than"):
            kb_import_zip(zip_bomb, name="bomb.zip")
        elapsed = time.perf_counter() - started
        assert elapsed < UNEXPANDED_SECONDS, elapsed
        (held,) = RecordingTemporaryDirectory.held
        kb_bytes = sum(len(text.encode()) for text in kb_files().values())
        assert held == kb_bytes  # the KB's own files, and nothing of the bomb
        assert not KnowledgeBase.objects.exists()

    def test_a_zip_bomb_is_refused_by_the_upload_form_and_import_kb(self, refused, zip_bomb):
        started = time.perf_counter()
        problems = refused("bomb.zip", zip_bomb)
        assert f"kb/sources/bomb.md:1: expands to more than {limits.ZIP_MAX_ENTRY_BYTES} bytes" in problems
        assert time.perf_counter() - started < 5  # the whole request or command, bomb build excluded


class PathSizeTests:
    """import_kb of a file refuses it by its size, before reading it (the files are sparse: huge, yet free)."""

    @pytest.mark.parametrize(("suffix", "cap"), [(".zip", "MAX_UPLOAD_BYTES"), (".json", "JSON_MAX_BYTES")])
    def test_a_file_over_the_cap_is_refused_unread(self, db, tmp_path, suffix, cap):
        path = tmp_path / f"huge{suffix}"
        with path.open("wb") as file:
            file.truncate(8 * GIB)
        err = io.StringIO()
        started = time.perf_counter()
        with pytest.raises(CommandError):
            call_command("import_kb", str(path), stderr=err)
        assert time.perf_counter() - started < UNEXPANDED_SECONDS
        limit = getattr(limits, cap)
        assert f"huge{suffix}:1: the file is {8 * GIB} bytes; the limit is {limit} bytes" in err.getvalue()
        with pytest.raises(ImportRefused, match="the limit is"):
            kb_import_path(path)
        assert not KnowledgeBase.objects.exists()

    def test_an_upload_over_the_cap_is_refused(self, db, moderator_client):
        upload = io.BytesIO(bytes(limits.MAX_UPLOAD_BYTES + 1))
        upload.name = "large.zip"
        response = moderator_client.post("/kb/", {"file": upload})
        assert response.status_code == 400
        assert f"larger than 20 MB ({limits.MAX_UPLOAD_BYTES + 1} bytes" in response.content.decode()
        assert not KnowledgeBase.objects.exists()

    def test_a_json_file_over_its_cap_is_refused(self, refused):
        content = b'{"meta": {}, "x": "' + b"a" * limits.JSON_MAX_BYTES + b'"}'
        problems = refused("large.json", content)
        assert (
            f"large.json:1: the file is {len(content)} bytes; the limit is {limits.JSON_MAX_BYTES} bytes"
            in problems
        )


# --- YAML frontmatter ------------------------------------------------------------------------------------------

ARG_FILE = "kb/arguments/arg-001-traffic-fell.md"
FIRST_EXTRA_LINE = 11  # the line of the first `extra` frontmatter line in ARGUMENT


def billion_laughs() -> str:
    """Thirty aliases of thirty aliases, nine levels deep: 30**9 strings once expanded."""
    lines = ['lol0: &l0 ["lol lol lol lol lol lol lol lol lol lol lol lol lol lol lol lol lol lol lol lol"]']
    for level in range(1, 10):
        aliases = ", ".join([f"*l{level - 1}"] * 30)
        lines.append(f"lol{level}: &l{level} [{aliases}]")
    lines.append("laughs: *l9")
    return "\n".join(lines) + "\n"


class FrontmatterTests:
    def test_a_billion_laughs_alias_chain_is_refused_fast_and_unexpanded(self, refused):
        bomb = billion_laughs()
        assert len(bomb) > 1500
        started = time.perf_counter()
        problems = refused("laughs.zip", zip_bytes(kb_files(extra=bomb)))
        assert time.perf_counter() - started < UNEXPANDED_SECONDS
        assert (
            f"{ARG_FILE}:{FIRST_EXTRA_LINE}: YAML anchors and aliases are not allowed (found &l0)" in problems
        )

    def test_a_single_anchor_or_alias_is_refused(self, db):
        for extra, found in [("tag: &t one\n", "&t"), ("tag: *t\n", "*t")]:
            with pytest.raises(
                ImportRefused, match=f"YAML anchors and aliases are not allowed \\(found \\{found}"
            ):
                kb_import_zip(zip_bytes(kb_files(extra=extra)), name="anchor.zip")

    def test_no_bundled_or_test_kb_uses_anchors_and_the_valid_ones_still_parse(self):
        demo = Path(limits.__file__).parent / "demo"
        events = []
        for file in [*CORPUS.rglob("*.md"), *demo.rglob("*.md")]:
            text = file.read_text()
            if text.startswith("---\n") and "\n---" in text[3:]:
                with contextlib.suppress(yaml.YAMLError):  # the broken corpus has one bad frontmatter
                    events += yaml.parse(text[4 : text.index("\n---", 3)], Loader=yaml.SafeLoader)
        assert len(events) > 1000
        assert not [e for e in events if isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None)]
        for kb in [*(CORPUS / "valid").iterdir(), demo / "congestion-pricing"]:
            assert parse_directory(kb).problems == [], kb

    def test_nesting_deeper_than_the_limit(self, refused):
        # The frontmatter mapping is the first level.
        extra = "tree: " + "[" * limits.FRONTMATTER_MAX_DEPTH + "]" * limits.FRONTMATTER_MAX_DEPTH + "\n"
        problems = refused("deep.zip", zip_bytes(kb_files(extra=extra)))
        assert (
            f"{ARG_FILE}:{FIRST_EXTRA_LINE}: the YAML frontmatter nests deeper than "
            f"{limits.FRONTMATTER_MAX_DEPTH} levels"
        ) in problems

    def test_nesting_at_the_limit_imports(self, db):
        depth = limits.FRONTMATTER_MAX_DEPTH - 1
        extra = "tree: " + "[" * depth + "leaf" + "]" * depth + "\n"
        kb = kb_import_zip(zip_bytes(kb_files(extra=extra)), name="deep-ok.zip")
        assert kb.arguments.get().extra_frontmatter["tree"] == json.loads(
            "[" * depth + '"leaf"' + "]" * depth
        )

    def test_ten_thousand_levels_are_refused_without_recursion(self, db):
        extra = "tree: " + "[" * 10_000 + "]" * 10_000 + "\n"
        with pytest.raises(ImportRefused, match="nests deeper than"):
            kb_import_zip(zip_bytes(kb_files(extra=extra)), name="abyss.zip")

    def test_a_frontmatter_over_the_size_limit(self, refused):
        extra = "".join(f"note{n}: {'x' * 70}\n" for n in range(limits.FRONTMATTER_MAX_CHARS // 70))
        problems = refused("big-fm.zip", zip_bytes(kb_files(extra=extra)))
        assert re.search(
            rf"{ARG_FILE}:2: the YAML frontmatter is \d+ characters long; the limit is "
            rf"{limits.FRONTMATTER_MAX_CHARS}",
            problems,
        )

    def test_a_field_over_the_length_limit_is_named(self, refused):
        extra = f"abstract: {'y' * (limits.FRONTMATTER_FIELD_MAX_CHARS + 1)}\n"
        problems = refused("long-field.zip", zip_bytes(kb_files(extra=extra)))
        assert (
            f"{ARG_FILE}:{FIRST_EXTRA_LINE}: field 'abstract' is {limits.FRONTMATTER_FIELD_MAX_CHARS + 1} "
            f"characters long; the limit is {limits.FRONTMATTER_FIELD_MAX_CHARS}"
        ) in problems

    def test_a_long_string_deep_in_a_field_is_named_by_its_field(self, db):
        extra = f"reads:\n  - short\n  - {'z' * (limits.FRONTMATTER_FIELD_MAX_CHARS + 1)}\n"
        with pytest.raises(ImportRefused, match=f"{FIRST_EXTRA_LINE}: field 'reads' is"):
            kb_import_zip(zip_bytes(kb_files(extra=extra)), name="deep-long.zip")

    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            ("n: " + "9" * 5000 + "\n", "the number is 5000 characters long; the limit is 100"),
            ("blob: !!binary aGVsbG8=\n", "field 'blob' holds a value of type bytes"),
            ("when: !!timestamp 2026-01-01\n", "field 'when' holds a value of type date"),
            ("tags: !!set {a, b}\n", "field 'tags' holds a value of type set"),
            ("ratio: .nan\n", "field 'ratio' holds nan, which is not a finite number"),
            ("ratio: 1.0e+999\n", "field 'ratio' holds inf, which is not a finite number"),
            ('note: "a\\0b"\n', "field 'note' holds a NUL character"),
            ('note: "\\ud800"\n', "field 'note' holds an unpaired surrogate"),
            ("ratio: !!float abc\n", "the value 'abc' does not fit its YAML tag tag:yaml.org,2002:float"),
            ("flag: !!bool maybe\n", "the value 'maybe' does not fit its YAML tag tag:yaml.org,2002:bool"),
            ("meta:\n  ? !!binary aGk=\n  : x\n", "field 'meta' has a key of type bytes"),
        ],
    )
    def test_a_value_the_database_cannot_store(self, db, extra, message):
        with pytest.raises(ImportRefused) as refusal:
            kb_import_zip(zip_bytes(kb_files(extra=extra)), name="odd.zip")
        assert f"{ARG_FILE}:{FIRST_EXTRA_LINE}: {message}" in str(refusal.value)
        assert not KnowledgeBase.objects.exists()

    def test_a_value_longer_than_its_column(self, db):
        files = kb_files()
        files[ARG_FILE] = str(files[ARG_FILE]).replace("slug: traffic-fell", f"slug: {'s' * 201}")
        with pytest.raises(
            ImportRefused, match=f"{ARG_FILE}:2: slug 's+'… is 201 characters long; the limit is 200"
        ):
            kb_import_zip(zip_bytes(files), name="column.zip")
        assert not KnowledgeBase.objects.exists()

    def test_a_markdown_file_over_the_file_limit_in_a_directory(self, db, tmp_path):
        for name, text in kb_files().items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(str(text))
        (tmp_path / "kb" / "log.md").write_bytes(b"x" * (limits.MAX_FILE_BYTES + 1))
        with pytest.raises(
            ImportRefused, match=f"kb/log.md:1: the file is {limits.MAX_FILE_BYTES + 1} bytes"
        ):
            kb_import_path(tmp_path)


# --- JSON data KBs ---------------------------------------------------------------------------------------------


def nested(depth: int) -> str:
    """A data KB whose `x` nests so that the document is `depth` levels deep (the top object is one)."""
    inner = depth - 1
    return '{"meta": {},\n "x": ' + "[" * inner + "]" * inner + "}"


class JsonTests:
    @pytest.mark.parametrize(
        ("text", "line", "message"),
        [
            ('{"meta": {},\n "x": NaN}', 2, "NaN is not a number JSON allows"),
            ('{"meta": {},\n "x": [1,\n Infinity]}', 3, "Infinity is not a number JSON allows"),
            ('{"meta": {},\n\n "x": -Infinity}', 3, "-Infinity is not a number JSON allows"),
            ('{"meta": {"note": "1e999"},\n "x": 1e999}', 2, "the number 1e999 is too large"),
            (
                '{"meta": {},\n "x":\n' + "7" * 5000 + "}",
                3,
                "the number 77777777777777777777… is 5000 characters long; the limit is 100",
            ),
            (
                nested(limits.JSON_MAX_DEPTH + 1),
                2,
                f"the JSON nests deeper than {limits.JSON_MAX_DEPTH} levels",
            ),
            ("[" * 100_000, 1, "the JSON nests deeper than"),
            ('{"meta": {},\n "x": "a\\u0000b"}', 2, "the string at x holds a NUL character"),
            ('{"meta": {},\n "x": {"y": "\\udc00"}}', 2, "the string at x.y holds an unpaired surrogate"),
        ],
        ids=[
            "nan",
            "infinity",
            "minus-infinity",
            "overflow",
            "huge-int",
            "depth",
            "abyss",
            "nul",
            "surrogate",
        ],
    )
    def test_a_value_a_data_kb_cannot_hold(self, refused, text, line, message):
        problems = refused("market.json", text.encode())
        assert f"market.json:{line}: {message}" in problems

    def test_nesting_at_the_limit_imports(self, db):
        kb = kb_import_json(nested(limits.JSON_MAX_DEPTH), name="deep.json")
        assert kb.data["x"] == json.loads(
            "[" * (limits.JSON_MAX_DEPTH - 1) + "]" * (limits.JSON_MAX_DEPTH - 1)
        )

    def test_invalid_utf8_is_named_by_byte_and_line(self, refused):
        content = b'{"meta": {},\n "x": "caf\xe9"}'
        problems = refused("latin1.json", content)
        assert (
            f"latin1.json:2: not UTF-8 text: invalid continuation byte at byte {content.index(b'\xe9')}"
            in problems
        )

    def test_a_data_kb_whose_keys_hold_dots_renders(self, viewer_client):
        kb = kb_import_json('{"meta": {}, "prices": {"BRK.B": 412.5, "BRK": {"A": 1}}}', name="tickers.json")
        response = viewer_client.get(f"/kb/{kb.slug}/")
        assert response.status_code == 200
        assert "<code>prices.BRK.B</code>" in response.content.decode()

    def test_a_utf8_byte_order_mark_is_accepted(self, db):
        kb = kb_import_json(b'\xef\xbb\xbf{"meta": {}, "x": "caf\xc3\xa9"}', name="bom.json")
        assert kb.data["x"] == "café"


# --- slugs -----------------------------------------------------------------------------------------------------

REMOTE_WORK = CORPUS / "valid" / "remote-work"


class SlugTests:
    @pytest.mark.parametrize(
        ("slug", "message"),
        [
            ("<img src=x onerror=alert(1)>", "the slug '<img src=x onerror=alert(1)>' is not a slug"),
            ("a b/c", "the slug 'a b/c' is not a slug"),
            ("café", "the slug 'café' is not a slug"),
            (
                "s" * (limits.SLUG_MAX_LENGTH + 1),
                f"the slug is 101 characters long; the limit is {limits.SLUG_MAX_LENGTH}",
            ),
        ],
    )
    def test_import_kb_refuses_a_slug_that_is_not_one(self, db, tmp_path, slug, message):
        for path in [REMOTE_WORK, CORPUS.parent.parent.parent / "kb" / "demo" / "market-2026-q4.json"]:
            err = io.StringIO()
            with pytest.raises(CommandError, match="nothing was imported"):
                call_command("import_kb", str(path), "--slug", slug, stderr=err)
            assert message in err.getvalue()
            with pytest.raises(ImportRefused, match=re.escape(message)):
                kb_import_path(path, slug=slug)
        assert not KnowledgeBase.objects.exists()

    def test_a_taken_slug_is_refused_for_a_data_kb_too(self, db):
        kb_import_json('{"meta": {}, "x": 1}', name="a.json", slug="market")
        with pytest.raises(ImportRefused, match="a knowledge base with the slug 'market' exists already"):
            kb_import_json('{"meta": {}, "x": 2}', name="b.json", slug="market")
        assert KnowledgeBase.objects.count() == 1

    def test_a_title_over_the_column_is_refused(self, db):
        with pytest.raises(
            ImportRefused, match=f"the title is 301 characters long; the limit is {limits.TITLE_MAX_LENGTH}"
        ):
            kb_import_path(REMOTE_WORK, title="t" * 301)

    def test_an_uploaded_kb_gets_a_valid_slug_whatever_its_title(self, moderator_client):
        hostile = "<img src=x onerror=alert(1)> a b/c " + "é" * 300
        upload = io.BytesIO(zip_bytes(kb_files(title=hostile)))
        upload.name = "../../weird name.zip"
        response = moderator_client.post("/kb/", {"file": upload})
        assert response.status_code == 302
        kb = KnowledgeBase.objects.get()
        assert slug_re.match(kb.slug) and len(kb.slug) <= limits.SLUG_MAX_LENGTH
        assert len(kb.title) == limits.TITLE_MAX_LENGTH
        assert moderator_client.get("/kb/").status_code == 200
        assert moderator_client.get(f"/kb/{kb.slug}/").status_code == 200


# --- pages -----------------------------------------------------------------------------------------------------


class SnapshotParameterTests:
    @pytest.mark.parametrize("value", ["abc", "1" * 25, "9" * 5000, str(2**63), "-1", "٣", "1e3"])
    def test_a_snapshot_that_is_not_an_id_shows_no_snapshot(self, viewer_client, small_kb, value):
        kb_snapshot_take(kb=small_kb)
        response = viewer_client.get(f"/kb/{small_kb.slug}/", {"snapshot": value})
        assert response.status_code == 200
        assert "No debate has snapshotted this KB yet." in response.content.decode()

    def test_a_snapshot_id_still_selects_it(self, viewer_client, small_kb):
        snapshot = kb_snapshot_take(kb=small_kb)
        response = viewer_client.get(f"/kb/{small_kb.slug}/", {"snapshot": str(snapshot.pk)})
        assert f'<option value="{snapshot.pk}" selected>' in response.content.decode()


class DecisionRedirectTests:
    @pytest.fixture
    def mutation(self, small_kb) -> ProposedMutation:
        return mutation_propose(
            kb=small_kb,
            kind="status-downgrade",
            payload={"arg_id": "arg-002", "to": "contested"},
            proposed_by="x",
        )

    @pytest.mark.parametrize(
        "next_url",
        [
            "https://evil.example/",
            "//evil.example/kb/",
            "/\\evil.example",
            "foo",
            "kb-detail",
            "javascript:alert(1)",
            "",
        ],
    )
    def test_next_off_this_site_or_not_a_path_falls_back_to_the_inbox(
        self, moderator_client, mutation, next_url
    ):
        response = moderator_client.post(
            f"/kb/inbox/{mutation.pk}/decide/", {"decision": "approve", "next": next_url}
        )
        assert (response.status_code, response["Location"]) == (302, "/kb/inbox/")
        mutation.refresh_from_db()
        assert mutation.status == "applied"

    def test_next_on_this_site_is_followed(self, moderator_client, mutation, small_kb):
        response = moderator_client.post(
            f"/kb/inbox/{mutation.pk}/decide/",
            {"decision": "reject", "next": f"/kb/{small_kb.slug}/#proposals"},
        )
        assert (response.status_code, response["Location"]) == (302, f"/kb/{small_kb.slug}/#proposals")

    def test_line_breaks_in_next_cannot_add_headers(self, moderator_client, mutation):
        response = moderator_client.post(
            f"/kb/inbox/{mutation.pk}/decide/", {"decision": "approve", "next": "/kb/\r\nSet-Cookie: x=1"}
        )
        assert (response.status_code, response["Location"]) == (302, "/kb/%0D%0ASet-Cookie:%20x=1")
        assert "x" not in response.cookies
