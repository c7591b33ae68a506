"""Numbers past the database's columns, in paths, query strings and forms: a 404 or an error on the field, nothing
stored, never a 500 (the fuzzers beside this file sweep every URL and form; these pin the answers)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from debates.models import Run
from debates.web.converters import MAX_ID, IdConverter, parse_id

pytestmark = pytest.mark.django_db

HUGE = str(10**23)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", 1), (" 42 ", 42), (str(MAX_ID), MAX_ID), (str(MAX_ID + 1), None), (HUGE, None), ("-1", None)]
    + [("", None), (None, None), ("abc", None), ("1.5", None), ("٣", None), ("1_000", None), ("+1", None)],
)
def test_parse_id_takes_only_ids_that_fit_a_bigint(value: Any, expected: int | None) -> None:
    assert parse_id(value) == expected


def test_the_converter_refuses_what_does_not_fit() -> None:
    converter = IdConverter()
    assert converter.to_python("7") == 7 and converter.to_url(7) == "7"
    with pytest.raises(ValueError, match="not a database id"):
        converter.to_python(str(2**63))


@pytest.mark.parametrize(
    "path",
    [f"/runs/{HUGE}/", f"/runs/{2**63}/read/", f"/runs/{HUGE}/export.json", f"/kb/inbox/{HUGE}/decide/"],
)
def test_a_huge_id_in_a_path_is_not_found(viewer_client: Client, path: str) -> None:
    response = viewer_client.get(path) if "decide" not in path else viewer_client.post(path)
    assert response.status_code == 404


def test_a_huge_id_in_the_comparison_is_no_run(viewer_client: Client, make_run: Any) -> None:
    run = make_run()
    response = viewer_client.get(f"/runs/compare/?a={HUGE}&b={run.pk}")
    assert response.status_code == 404
    assert f"No run &#x27;{HUGE}&#x27;" in response.content.decode()


def test_the_last_date_there_is_filters_the_archive(viewer_client: Client, make_run: Any) -> None:
    run = make_run()
    response = viewer_client.get("/?date_from=0001-01-01&date_to=9999-12-31")
    assert response.status_code == 200 and f"/runs/{run.pk}/" in response.content.decode()


def test_a_huge_budget_raise_is_refused_on_the_field(moderator_client: Client, make_run: Any) -> None:
    run = make_run(budget_tokens=1000)
    response = moderator_client.post(
        f"/runs/{run.pk}/budget/",
        {"budget_tokens": str(10**30), "budget_usd": str(10**30)},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "budget_tokens: That is more tokens than a budget can hold" in html
    assert "budget_usd: That is too large: at most 999999.9999 USD." in html
    run.refresh_from_db()
    assert (run.budget_tokens, run.budget_usd) == (1000, None)


@pytest.mark.parametrize(
    ("seed", "message"), [(str(10**30), "use a whole number from 0 to"), ("-1", "from 0")]
)
def test_a_rerun_seed_out_of_range_is_refused_and_starts_nothing(
    moderator_client: Client, make_run: Any, seed: str, message: str
) -> None:
    run = make_run()
    response = moderator_client.post(f"/runs/{run.pk}/rerun/", {"seed": seed}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert 'id="lineage-error"' in response.content.decode() and message in response.content.decode()
    assert not Run.objects.filter(parent=run).exists()


def test_deciding_a_mutation_on_a_run_without_approvals_is_not_found(
    moderator_client: Client, make_run: Any
) -> None:
    run = make_run()  # a cross-examination: it proposes no KB changes
    response = moderator_client.post(
        f"/runs/{run.pk}/mutations/1/decide/", {"decision": "approve"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 404
    assert f"Run {run.pk} proposed no KB change #1." in response.content.decode()
