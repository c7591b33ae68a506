"""The archive: every run, newest first, paginated, filtered by GET parameters (protocol, status, KB,
backend, model, the judge's and the human's pick, the verdict label, override, date range) and a text search over
topics and turn text: the database's own full-text search (PostgreSQL's tsvector with GIN indexes, SQLite's FTS5 via
debates.platform.search_sqlite), stemmed, every word required.

A page costs a fixed number of queries whatever the number of runs on it or in the database: the count, the page's
runs (with their creator and KB), their committed-turn counts, their integrity signals (debates.selectors.integrity) and the
human-vs-judge agreement over the filtered runs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL

from debates.engine import registry
from debates.models import Run, RunStatus, Turn, TurnStatus
from debates.platform.search_sqlite import fts5_query
from debates.selectors.integrity import agreement_aggregates, agreement_from, runs_signals
from kb.models import KnowledgeBase

PAGE_SIZE = 25
# Must match the expressions of the GIN indexes in debates/migrations/0005_archive_indexes.py.
FULL_TEXT_CONFIG = "english"
BACKENDS = [("simulated", "simulated"), ("anthropic", "anthropic"), ("openai", "openai")]
VERDICT_LABELS = [
    "better-grounded",
    "engagement-asymmetry",
    "genuinely-contested",
    "unresolved-by-corpus",
    "approve",
    "reject",
]


def _protocol_choices() -> list[tuple[str, str]]:

    return [("", "any protocol")] + [(p.name, p.name) for p in registry.all_protocols()]


class ArchiveFilterForm(forms.Form):
    """GET-only filters; every field is optional and a bad value is reported, never a server error."""

    q = forms.CharField(required=False, max_length=200, label="Search topics and turns")
    protocol = forms.ChoiceField(required=False, choices=_protocol_choices)
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *RunStatus.choices])
    kb = forms.ModelChoiceField(
        required=False,
        queryset=KnowledgeBase.objects.order_by("slug"),
        to_field_name="slug",
        empty_label="any KB",
    )
    backend = forms.ChoiceField(required=False, choices=[("", "any backend"), *BACKENDS])
    model = forms.CharField(required=False, max_length=100)
    # The option's name as the table shows it (any case), or its code.
    judge_pick = forms.CharField(required=False, max_length=100, label="Judge's pick")
    human_pick = forms.CharField(required=False, max_length=100, label="Human's pick")
    verdict = forms.CharField(required=False, max_length=100, label="Verdict label")
    override = forms.ChoiceField(
        required=False,
        choices=[
            ("", "any decision"),
            ("yes", "human overrode the judge"),
            ("no", "human agreed with the judge"),
        ],
    )
    date_from = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="From")
    date_to = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="To")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and start > end:
            self.add_error("date_to", "The end date is before the start date.")
        return data


def _day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


def text_search(queryset: QuerySet[Run], text: str) -> QuerySet[Run]:
    """Runs whose topic or any turn's raw text matches `text`: full-text search (websearch syntax, stemmed) on
    PostgreSQL, FTS5 on SQLite. A semi-join, never a join that repeats a run."""
    text = text.strip()
    if not text:
        return queryset
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery, SearchVector

        query = SearchQuery(text, config=FULL_TEXT_CONFIG, search_type="websearch")
        matching = (
            Turn.objects.annotate(document=SearchVector("raw_text", config=FULL_TEXT_CONFIG))
            .filter(document=query)
            .values("run_id")
        )
        # Both sides as id subqueries: each is a bitmap scan of its GIN index (a to_tsvector of the topic in the
        # outer WHERE would be computed for every run instead).
        topics = (
            Run.objects.annotate(document=SearchVector("topic", config=FULL_TEXT_CONFIG))
            .filter(document=query)
            .values("pk")
        )
        return queryset.filter(Q(pk__in=topics) | Q(pk__in=matching))
    words = fts5_query(text) if connection.vendor == "sqlite" else ""
    # SQLite's FTS5 indexes (debates.platform.search_sqlite): the same semantics as above without websearch syntax.
    if words:
        topic_ids = RawSQL("SELECT rowid FROM debates_run_fts WHERE debates_run_fts MATCH %s", [words])
        turn_run_ids = RawSQL(
            "SELECT t.run_id FROM debates_turn_fts f JOIN debates_turn t ON t.id = f.rowid "
            "WHERE debates_turn_fts MATCH %s",
            [words],
        )
        return queryset.filter(Q(pk__in=topic_ids) | Q(pk__in=turn_run_ids))
    # Text without a word (punctuation only), or a database with neither: a plain substring match.
    turns = Turn.objects.filter(run=OuterRef("pk"), raw_text__icontains=text)
    return queryset.filter(Q(topic__icontains=text) | Exists(turns))


PICK_FIELDS = ("judge_pick", "human_pick")


def _runs_picking_by_name(field: str, name: str) -> RawSQL:
    """The ids of runs whose `field` (judge_pick or human_pick) holds the code of an option whose name, in the run's
    outcome `pick_options` ([[code, name], …]), is `name` in any case (ASCII case only on SQLite, whose lower() folds
    nothing else). A semi-join over the runs' JSON, never a join that repeats a run."""
    assert field in PICK_FIELDS
    table = connection.ops.quote_name(Run._meta.db_table)
    column, outcome = connection.ops.quote_name(field), connection.ops.quote_name("outcome")  # no db_column
    if connection.vendor == "postgresql":
        sql = (
            f"SELECT r.id FROM {table} r CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN "
            f"jsonb_typeof(r.{outcome}->'pick_options') = 'array' THEN r.{outcome}->'pick_options' ELSE '[]'::jsonb "
            f"END) o WHERE r.{column} <> '' AND jsonb_typeof(o) = 'array' AND o->>0 = r.{column} "
            "AND lower(o->>1) = lower(%s)"
        )
    else:
        # json_each over each run's options; CASE keeps json_extract off the options that are plain strings.
        sql = (
            f"SELECT r.id FROM {table} r, json_each(r.{outcome}, '$.pick_options') o WHERE r.{column} <> '' "
            f"AND (CASE WHEN o.type = 'array' THEN json_extract(o.value, '$[0]') END) = r.{column} "
            "AND lower(CASE WHEN o.type = 'array' THEN json_extract(o.value, '$[1]') END) = lower(%s)"
        )
    return RawSQL(sql, [name])


def pick_filter(field: str, text: str) -> Q:
    """A pick as the archive table shows it (the option's name, e.g. "Buses") or as stored (its code, e.g. "B"),
    in any case."""
    text = text.strip()
    return Q(**{f"{field}__iexact": text}) | Q(pk__in=_runs_picking_by_name(field, text))


def archive_queryset(data: dict[str, Any]) -> QuerySet[Run]:
    """The runs the cleaned filters select, newest first (no rows are read here)."""
    runs = Run.objects.all()
    for name in ("protocol", "status", "backend", "model"):
        if data.get(name):
            runs = runs.filter(**{name: data[name]})
    for name in PICK_FIELDS:
        if (data.get(name) or "").strip():
            runs = runs.filter(pick_filter(name, data[name]))
    if data.get("kb"):
        runs = runs.filter(kb=data["kb"])
    if data.get("verdict"):
        label = data["verdict"]
        runs = runs.filter(Q(outcome__verdict__label=label) | Q(outcome__verdict=label))
    if data.get("override") == "yes":
        runs = runs.exclude(judge_pick="").exclude(human_pick="").exclude(human_pick=F("judge_pick"))
    elif data.get("override") == "no":
        runs = runs.exclude(judge_pick="").filter(human_pick=F("judge_pick"))
    if data.get("date_from"):
        runs = runs.filter(created_at__gte=_day_start(data["date_from"]))
    # The last date there is (9999-12-31) bounds nothing, and has no next day to stop before.
    if data.get("date_to") and data["date_to"] < dt.date.max:
        runs = runs.filter(created_at__lt=_day_start(data["date_to"] + dt.timedelta(days=1)))
    runs = text_search(runs, data.get("q") or "")
    return runs.order_by("-created_at", "-id")


@dataclass
class ArchivePage:
    form: ArchiveFilterForm
    page: Page[int]  # the page of run ids; `runs` holds the runs themselves
    runs: list[Run]
    count: int
    agreement: dict[str, Any]
    filtered: bool
    errors: list[str] = field(default_factory=list)
    live: bool = False


def archive_page(params: Any, page_number: Any = 1, per_page: int = PAGE_SIZE) -> ArchivePage:
    """The archive page for these GET parameters: the runs of the page with `turns_committed` and `signals`
    (debates.selectors.integrity) set on each, the total count, and the human-vs-judge agreement over the filtered runs."""
    form = ArchiveFilterForm(params)
    form.is_valid()
    data = form.cleaned_data  # the valid fields: a bad one is reported and ignored, the others still filter
    errors = [
        f"{form[name].label if name in form.fields else name}: {' '.join(str(e) for e in errs)}"
        for name, errs in form.errors.items()
    ]
    queryset = archive_queryset(data)
    totals = queryset.order_by().aggregate(total=Count("id"), **agreement_aggregates())
    paginator = Paginator(queryset.values_list("pk", flat=True), per_page)
    paginator.count = totals["total"]  # counted with the agreement above: one pass over the filtered runs
    page = paginator.get_page(page_number)
    ids = list(page.object_list)
    by_id = Run.objects.select_related("created_by", "kb").defer("material", "estimate").in_bulk(ids)
    runs = [by_id[pk] for pk in ids if pk in by_id]
    counts = dict(
        Turn.objects.filter(run_id__in=ids, status=TurnStatus.COMMITTED)
        .values("run_id")
        .annotate(n=Count("id"))
        .values_list("run_id", "n")
    )
    signals = runs_signals(runs)
    for run in runs:
        run.turns_committed = counts.get(run.pk, 0)  # type: ignore[attr-defined]
        run.signals = signals[run.pk]  # type: ignore[attr-defined]
    filtered = any(v not in (None, "") for v in data.values())
    return ArchivePage(
        form=form,
        page=page,
        runs=runs,
        count=paginator.count,
        agreement=agreement_from(totals),
        filtered=filtered,
        errors=errors,
        live=any(not run.is_terminal for run in runs),
    )
