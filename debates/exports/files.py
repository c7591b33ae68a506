"""The format registry: every `export_run` format as one file (bytes, file name, content type). `json` and
`transcript` are every run's; the others are the ones the protocols declare (`Protocol.export_formats`). The
command and the run page's downloads both use `export_file`, so they give identical files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from debates.contract import ExportFile, ExportFormat, ExportUnavailable
from debates.engine import registry
from debates.exports.run_json import run_export_json
from debates.exports.transcript import run_transcript_md, transcript_filename
from debates.models import Run

__all__ = [
    "ExportFile",
    "ExportUnavailable",
    "directory_formats",
    "directory_note",
    "export_file",
    "export_format",
    "export_formats",
    "export_write",
    "formats",
    "offered_formats",
]

GENERIC = ("json", "transcript")


def _declared() -> dict[str, list[ExportFormat]]:
    """Every protocol-declared format by name, with each protocol's declaration of it (registry order)."""
    declared: dict[str, list[ExportFormat]] = {}
    for protocol in registry.all_protocols():
        for format in protocol.export_formats:
            declared.setdefault(format.name, []).append(format)
    return declared


def formats() -> list[str]:
    """Every format name: `json`, those the protocols declare, `transcript`."""
    return [GENERIC[0], *_declared(), GENERIC[1]]


def directory_formats() -> list[str]:
    """The formats written as a directory unless --out ends in .zip (as one file, a zip: what the page
    downloads)."""
    return [name for name, declared in _declared().items() if any(f.write for f in declared)]


def directory_note(name: str) -> str:
    """How a directory format's refusal of a non-empty --out ends ("a run directory is written into a new one")."""
    return next((f.directory_note for f in _declared().get(name, []) if f.directory_note), "")


def __getattr__(name: str) -> Any:
    # FORMATS and DIRECTORY_FORMATS are read from the registry when asked for, never at import.
    if name == "FORMATS":
        return formats()
    if name == "DIRECTORY_FORMATS":
        return directory_formats()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def export_format(run: Run, name: str) -> ExportFormat:
    """The run's protocol's declaration of the format `name`; ExportUnavailable (with the reason) when its
    protocol has none."""
    for format in registry.get(run.protocol).export_formats:
        if format.name == name:
            return format
    declared = _declared().get(name)
    if not declared:
        raise ExportUnavailable(f"unknown format {name!r} (formats: {', '.join(formats())})")
    raise ExportUnavailable(declared[0].refusal.format(pk=run.pk, protocol=run.protocol))


def offered_formats(run: Run) -> list[ExportFormat]:
    """The protocol-declared formats this run offers (a cheap check: building one may still refuse)."""
    return [f for f in registry.get(run.protocol).export_formats if f.offered(run)]


def export_formats(run: Run) -> list[str]:
    """The formats this run offers, in `formats()` order."""
    offered = {*GENERIC, *(f.name for f in offered_formats(run))}
    return [name for name in formats() if name in offered]


def export_file(run: Run, format: str) -> ExportFile:
    """The run exported in `format` as one file; ExportUnavailable (with the reason) when it has none."""
    if format == "json":
        text = json.dumps(run_export_json(run), indent=2, ensure_ascii=False) + "\n"
        return ExportFile(f"disputa-run-{run.pk}.json", "application/json; charset=utf-8", text.encode())
    if format == "transcript":
        return ExportFile(
            transcript_filename(run), "text/markdown; charset=utf-8", run_transcript_md(run).encode()
        )
    return export_format(run, format).build(run)


def export_write(run: Run, name: str, out: Path) -> None:
    """The run exported in the directory format `name` into the directory `out`; ExportUnavailable (with the
    reason) when it has none."""
    format = export_format(run, name)
    if format.write is None:
        raise ExportUnavailable(f"{name} is not written as a directory")
    format.write(run, out)
