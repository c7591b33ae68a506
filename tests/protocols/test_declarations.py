"""The protocol face: what each protocol declares for the generic code (its new-run form section, its exports, its
integrity signals, its headless defaults), and the rule that generic code never tests a protocol's name — it asks
the registry (DESIGN §2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.template.loader import get_template
from django.urls import reverse
from django.utils.module_loading import import_string

from debates.contract import Protocol
from debates.engine import registry
from debates.exports.files import directory_formats, export_formats, formats
from debates.protocols.form import FormSection
from debates.web.forms import RunForm

PROTOCOLS = registry.all_protocols()
NAMES = [p.name for p in PROTOCOLS]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=NAMES)
def test_a_protocols_form_section_resolves_and_has_its_partials(protocol: Protocol) -> None:
    section = import_string(protocol.form)
    assert issubclass(section, FormSection)
    assert set(section.simulation_fields) <= set(section.base_fields)
    get_template(f"{section.template}#setup")
    if section.simulation_fields:
        get_template(f"{section.template}#simulation")


def test_the_new_run_form_holds_every_sections_fields_once_and_starts_on_the_default() -> None:
    fields = [name for p in PROTOCOLS for name in import_string(p.form).base_fields]
    assert len(fields) == len(set(fields))
    assert set(fields) <= set(RunForm.base_fields)
    defaults = [p.name for p in PROTOCOLS if p.form_default]
    assert len(defaults) == 1 and RunForm().fields["protocol"].initial == defaults[0]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=NAMES)
def test_a_protocols_export_formats_are_complete(protocol: Protocol) -> None:
    for format in protocol.export_formats:
        assert format.name not in ("json", "transcript") and callable(format.build)
        assert reverse(format.url_name, args=[1])
        assert format.refusal.format(pk=1, protocol="other")
        assert (format.write is None) == (not format.directory_note)


def test_the_format_registry_lists_the_generic_and_every_declared_format() -> None:
    declared = {f.name for p in PROTOCOLS for f in p.export_formats}
    assert formats()[0] == "json" and formats()[-1] == "transcript"
    assert set(formats()) == {"json", "transcript", *declared}
    assert set(directory_formats()) == {f.name for p in PROTOCOLS for f in p.export_formats if f.write}


@pytest.mark.django_db
def test_a_run_offers_the_generic_formats_and_its_protocols_own(make_run) -> None:
    run = make_run()
    own = [f.name for f in registry.get(run.protocol).export_formats if f.offered(run)]
    assert export_formats(run) == ["json", *own, "transcript"]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=NAMES)
def test_signal_tasks_are_read_only_by_protocols_with_seat_signals(protocol: Protocol) -> None:
    has_seat_signals = type(protocol).seat_signals is not Protocol.seat_signals
    assert has_seat_signals or not protocol.signal_tasks


# Files outside debates/protocols/ that may name a protocol: data (demo runs, benchmarks).
NAMES_AS_DATA = {
    "debates/management/commands/bench.py",
    "debates/management/commands/demo.py",
    "debates/devtools/bench_fanout.py",
    "debates/devtools/bench_cpu.py",
}


def test_generic_code_never_names_a_protocol() -> None:
    root = Path(settings.BASE_DIR)
    quoted = re.compile("|".join(re.escape(f'"{name}"') for name in NAMES))
    found = []
    for path in [*(root / "debates").rglob("*.py"), *(root / "templates").rglob("*.html")]:
        relative = path.relative_to(root).as_posix()
        if relative.startswith("debates/protocols/") or relative in NAMES_AS_DATA:
            continue
        found += [
            f"{relative}:{n}"
            for n, line in enumerate(path.read_text().splitlines(), 1)
            if quoted.search(line)
        ]
    assert found == []
