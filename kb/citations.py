"""Citation verification: every cited argument id, source path and data path is resolved against the KB (or the
debate's snapshot); a quoted figure is compared with the KB's value, tolerant of formatting (4,850 / 4850.0;
28.5% / 0.285). Each citation gets one of: verified / unverified / mismatch / inferred."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from kb.formats.seed004 import path_get
from kb.models import KnowledgeBase

VERIFIED, UNVERIFIED, MISMATCH, INFERRED = "verified", "unverified", "mismatch", "inferred"
ARG_REF = re.compile(r"\barg-\d{3,}\b")
SOURCE_REF = re.compile(r"\bkb/sources/[\w./-]+\.md\b")
NUMBER = re.compile(r"[-+−]?\$?€?£?\d[\d,  ]*(?:\.\d+)?\s*%?")


def figure_parse(text: Any) -> tuple[Decimal, bool] | None:
    """(value, was a percentage) from '4,850', '4850.0', '28.5%', '$1.2', '−3.4'; None if no number."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float | Decimal):
        return Decimal(str(text)), False
    match = NUMBER.search(str(text))
    if not match:
        return None
    raw = match.group(0)
    percent = raw.strip().endswith("%")
    cleaned = re.sub(r"[,  $€£%\s]", "", raw).replace("−", "-")
    try:
        return Decimal(cleaned), percent
    except InvalidOperation:
        return None


def figures_match(quoted: Any, actual: Any) -> bool:
    q, a = figure_parse(quoted), figure_parse(actual)
    if q is None or a is None:
        return False
    (qv, q_percent), (av, _) = q, a
    candidates = [av]
    if q_percent:
        candidates.append(av * 100)  # the KB stores 0.285 for 28.5%
    exponent = qv.as_tuple().exponent
    places = max(0, -exponent) if isinstance(exponent, int) else 0
    step = Decimal(1).scaleb(-places) / 2  # half a unit of the quote's last digit
    return any(abs(candidate - qv) <= step for candidate in candidates)


def citation_verify(
    *, kb: KnowledgeBase | None, citation: dict[str, Any], snapshot: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Resolve one citation {kind: arg|source|data, ref, quote?, inferred?} and say how it stands."""
    kind, ref = citation.get("kind"), str(citation.get("ref", ""))
    quote = citation.get("quote")
    if citation.get("inferred"):
        return {**citation, "status": INFERRED, "detail": "labelled inferred: not a fact from the KB"}
    if kb is None:
        return {**citation, "status": UNVERIFIED, "detail": "no knowledge base to check against"}
    if kind == "arg":
        arguments = (
            snapshot
            if snapshot is not None
            else {a.arg_id: {"status": a.status} for a in kb.arguments.filter(arg_id=ref)}
        )
        if ref not in arguments:
            return {**citation, "status": UNVERIFIED, "detail": f"no argument {ref} in the KB"}
        return {
            **citation,
            "status": VERIFIED,
            "detail": f"{ref} is rated {arguments[ref]['status']}",
            "kb_status": arguments[ref]["status"],
        }
    if kind == "source":
        if not kb.sources.filter(path=ref).exists():
            return {**citation, "status": UNVERIFIED, "detail": f"no source {ref} in the KB"}
        return {**citation, "status": VERIFIED, "detail": "source exists"}
    if kind == "data":
        try:
            value = path_get(kb.data or {}, ref)
        except KeyError as missing:
            return {**citation, "status": UNVERIFIED, "detail": f"no data at {missing.args[0]}"}
        if quote is None or quote == "":
            return {**citation, "status": VERIFIED, "detail": f"{ref} = {value}", "kb_value": value}
        if figures_match(quote, value) or str(quote).strip().lower() == str(value).strip().lower():
            return {**citation, "status": VERIFIED, "detail": f"{ref} = {value}", "kb_value": value}
        return {
            **citation,
            "status": MISMATCH,
            "detail": f"quoted {quote}, the KB has {value}",
            "kb_value": value,
        }
    return {**citation, "status": UNVERIFIED, "detail": f"unknown citation kind {kind!r}"}


def citations_extract(text: str) -> list[dict[str, Any]]:
    """Argument ids and source paths named in free text, in order, once each."""
    found: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for match in sorted([*ARG_REF.finditer(text), *SOURCE_REF.finditer(text)], key=lambda m: m.start()):
        kind = "arg" if match.group(0).startswith("arg-") else "source"
        if (kind, match.group(0)) not in seen:
            seen.add((kind, match.group(0)))
            found.append({"kind": kind, "ref": match.group(0)})
    return found


def data_point_verify(data: Any, path: str, quoted: Any = None, *, inferred: bool = False) -> dict[str, Any]:
    """One cited data point checked against a data KB's tree (a plain dict: usable from a protocol's plan).
    verified: the path exists and the quote holds the KB's value (any figure in it matches, tolerant of
    formatting; a word matches case-insensitively) or quotes nothing; mismatch: the quote holds figures and none
    is the KB's value (or a word that is not it); unverified: no such path; inferred: labelled so by the agent."""
    citation: dict[str, Any] = {"kind": "data", "ref": path, "quote": quoted}
    if inferred:
        return {**citation, "status": INFERRED, "detail": "labelled inferred: not a fact from the KB"}
    try:
        value = path_get(data or {}, path)
    except KeyError as missing:
        return {**citation, "status": UNVERIFIED, "detail": f"no data at {missing.args[0]}"}
    if isinstance(value, dict | list):
        return {**citation, "status": VERIFIED, "detail": f"{path} is a section", "kb_value": None}
    text = "" if quoted is None else str(quoted).strip()
    found = {**citation, "kb_value": value}
    if not text or text.lower() == str(value).strip().lower():
        return {**found, "status": VERIFIED, "detail": f"{path} = {value}"}
    if figure_parse(value) is None:  # a word (bullish, above, narrowing): the quote must say it
        if re.search(r"\b" + re.escape(str(value).strip().lower()) + r"\b", text.lower()):
            return {**found, "status": VERIFIED, "detail": f"{path} = {value}"}
        return {**found, "status": MISMATCH, "detail": f"quoted {text}, the KB has {value}"}
    figures = [m.group(0) for m in NUMBER.finditer(text)]
    if not figures:
        return {**found, "status": VERIFIED, "detail": f"{path} = {value} (no figure quoted)"}
    if any(figures_match(f, value) for f in figures):
        return {**found, "status": VERIFIED, "detail": f"{path} = {value}"}
    return {**found, "status": MISMATCH, "detail": f"quoted {text}, the KB has {value}"}
