"""Every form of the project (found by walking the debates and kb packages, so a new form is fuzzed without a line
here) gets hypothesis-generated values around a valid baseline: validation never raises, and a valid form's values
fit the database columns they are stored in. Then the same through the new-run view: never a 500, and an invalid
post creates no run."""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from typing import Any

import pytest
from django import forms
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import debates
import kb
from debates.models import Run
from tests.conftest import MATERIAL
from tests.web.world import World

pytestmark = pytest.mark.django_db

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _form_classes() -> list[type[forms.BaseForm]]:
    found = []
    for package in (debates, kb):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".migrations" in info.name or info.name.endswith((".asgi", ".wsgi")):
                continue
            module = importlib.import_module(info.name)
            found += [
                value
                for value in vars(module).values()
                if isinstance(value, type)
                and issubclass(value, forms.BaseForm)
                and value.__module__ == module.__name__
            ]
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


FORMS = _form_classes()

# Text that breaks naive code: control characters, bidi overrides, NULs, lone surrogates' neighbours, huge and
# negative numbers, very long strings, empty.
HOSTILE_TEXT = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=200),
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "\u202e\u200b\x07",
            "日本語",
            "-1",
            "0",
            str(10**30),
            str(2**63),
            str(-(2**63) - 1),
            "1e400",
            "-1e400",
            "NaN",
            "Infinity",
            "0.00001",
            "9999-12-31",
            "0001-01-01",
            "x" * 5000,
            "9" * 5000,
            "a: b\n" * 200,
        ]
    ),
    st.integers().map(str),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
    st.floats().map(str),
)


# Numbers at and past the columns' limits: 32- and 64-bit integers, Decimal(10, 4), and what parsers choke on.
EDGES = [
    str(n) for n in (2**31 - 1, 2**31, 2**31 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, -1, 0, 101, 100001)
] + ["999999.9999", "1000000", "1000000.0", "0.00001", "1e400", "-0", "NaN", "Infinity", "1_000", "٣"]


def _choices(field: forms.Field) -> list[str]:
    """The values a choice field accepts (its model's keys for a model choice)."""
    if isinstance(field, forms.ModelChoiceField):
        key = field.to_field_name or "pk"
        return [str(getattr(o, key)) for o in field.queryset.all()]  # type: ignore[union-attr]
    flat: list[Any] = []
    for value, label in field.choices:  # type: ignore[attr-defined]
        flat += [v for v, _ in label] if isinstance(label, (list, tuple)) else [value]
    return [str(v) for v in flat]


def _value(field: forms.Field) -> st.SearchStrategy[Any]:
    """Hostile values for a field, mixed with valid ones so the fuzz reaches past the first check."""
    if isinstance(field, forms.MultipleChoiceField):
        return st.lists(st.one_of(st.sampled_from(_choices(field) or [""]), HOSTILE_TEXT), max_size=6)
    if isinstance(field, forms.ChoiceField | forms.ModelChoiceField):
        return st.one_of(st.sampled_from(_choices(field) or [""]), HOSTILE_TEXT)
    if isinstance(field, forms.BooleanField):
        return st.one_of(st.sampled_from(["on", "", "false", "0"]), HOSTILE_TEXT)
    if isinstance(field, forms.IntegerField | forms.DecimalField | forms.FloatField):
        numbers = st.one_of(
            st.sampled_from(EDGES),
            st.integers(min_value=-(10**40), max_value=10**40).map(str),
            st.integers(min_value=-5, max_value=105).map(str),
            st.decimals(allow_nan=True, allow_infinity=True).map(str),
        )
        return st.one_of(numbers, HOSTILE_TEXT)
    if isinstance(field, forms.DateField):
        return st.one_of(st.dates().map(str), HOSTILE_TEXT)
    return HOSTILE_TEXT


# What a valid post needs beyond the initial values: the adversarial protocol reviews the material.
BASELINE = {"material": MATERIAL}


def _baseline(form: forms.BaseForm) -> dict[str, Any]:
    """A valid post: each field's initial value, and something for a required field without one."""
    data: dict[str, Any] = {name: value for name, value in BASELINE.items() if name in form.fields}
    for name, field in form.fields.items():
        initial = form[name].value()
        if isinstance(field, forms.BooleanField):
            data[name] = "on" if initial else ""
        elif isinstance(initial, (list, tuple)):
            data[name] = [str(v) for v in initial]
        elif initial not in (None, ""):
            data[name] = str(initial)
        elif field.required and name not in data:
            data[name] = "Should the city charge cars entering the centre?"
    return data


# Fields that pick which code reads the rest (RunForm's protocol and KB): a valid choice in every example, so each
# protocol's own cleaning is fuzzed, not only the default one's.
ROUTING = ("protocol", "kb")


def _posts(form_class: type[forms.BaseForm], field: str = "") -> st.SearchStrategy[dict[str, Any]]:
    """A valid baseline with `field` (or one drawn) and up to two more fields hostile: many at once would stop
    at the first error."""
    form = form_class()  # bound choices (RunForm sets protocols, backends, models, KBs per instance)
    fields, baseline = form.fields, _baseline(form)
    routing = {name: st.sampled_from(_choices(fields[name])) for name in ROUTING if name in fields}

    def changes(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries({**routing, **{name: _value(fields[name]) for name in names}})

    first = st.just(field) if field else st.sampled_from(sorted(fields))
    more = st.lists(st.sampled_from(sorted(fields)), max_size=2)
    picked = st.tuples(first, more).map(lambda p: sorted({p[0], *p[1]}))
    return picked.flatmap(changes).map(lambda changed: {**baseline, **changed})


def _fits(field: models.Field[Any, Any], value: Any) -> None:
    """Raise ValidationError unless the value fits the column (range, digits, length) on this database."""
    if value in (None, "") or field.is_relation:
        return
    field.run_validators(field.to_python(value))


def _model_values(form: forms.BaseForm) -> dict[str, Any]:
    """The cleaned values as the view stores them on a Run: RunForm through run_kwargs(), the rest by name."""
    run_kwargs = getattr(form, "run_kwargs", None)
    return run_kwargs() if run_kwargs else dict(form.cleaned_data)


def _check(form_class: type[forms.BaseForm], data: dict[str, Any]) -> None:
    form = form_class(data)
    if not form.is_valid():
        assert form.errors
        return
    for name, value in _model_values(form).items():
        try:
            column = Run._meta.get_field(name)
        except FieldDoesNotExist:
            continue
        try:
            _fits(column, value)  # type: ignore[arg-type]
        except ValidationError as error:
            pytest.fail(f"{form_class.__name__}: {name}={value!r} does not fit Run.{name}: {error.messages}")


def test_every_form_is_found() -> None:
    names = {c.__name__ for c in FORMS}
    assert {"RunForm", "BudgetForm", "ArchiveFilterForm"} <= names


@pytest.mark.parametrize("form_class", FORMS, ids=lambda c: c.__name__)
def test_the_baseline_is_valid(form_class: type[forms.BaseForm], world: World) -> None:
    """The fuzz starts from a valid post, so it explores what lies just past each check."""
    form = form_class(_baseline(form_class()))
    assert form.is_valid(), form.errors


FIELDS = [(form_class, name) for form_class in FORMS for name in form_class.base_fields]


@pytest.mark.parametrize(("form_class", "name"), FIELDS, ids=lambda v: getattr(v, "__name__", v))
def test_hostile_values_are_field_errors_or_fit_the_columns(
    form_class: type[forms.BaseForm], name: str, world: World
) -> None:
    """This field hostile (and up to two others, drawn by hypothesis) in an otherwise valid post; first, each
    edge value alone, so the limits are always tried whatever hypothesis draws."""
    form = form_class()
    numeric = isinstance(form.fields[name], forms.IntegerField | forms.DecimalField | forms.FloatField)
    for value in EDGES if numeric else ["", "\x00", "日本語\u202e", "x" * 5000]:
        _check(form_class, {**_baseline(form), name: value})

    @FUZZ
    @given(data=_posts(form_class, name))
    def fuzz(data: dict[str, Any]) -> None:
        _check(form_class, data)

    fuzz()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("budget_tokens", str(10**30), "more tokens than a budget can hold"),
        ("budget_usd", str(10**30), "at most 999999.9999 USD"),
        ("budget_usd", "0.00001", "at most 4 decimal places"),
        ("seed", str(10**30), "less than or equal to"),
        ("sim_cps", "-1", "greater than or equal to 0"),
    ],
)
def test_numbers_past_the_columns_are_errors_on_their_field(
    field: str, value: str, message: str, world: World
) -> None:
    from debates.web.forms import RunForm

    form = RunForm({**_baseline(RunForm()), field: value})
    assert not form.is_valid()
    assert list(form.errors) == [field] and message in " ".join(form.errors[field])


def test_the_budget_form_bounds_both_numbers() -> None:
    from debates.web.forms import BudgetForm

    form = BudgetForm({"budget_usd": str(10**30), "budget_tokens": str(10**30)})
    assert not form.is_valid() and set(form.errors) == {"budget_usd", "budget_tokens"}
    assert BudgetForm({"budget_usd": "999999.9999", "budget_tokens": str(2**63 - 1)}).is_valid()


@pytest.fixture
def no_quotas(settings: Any) -> None:
    """Valid posts start runs by the dozen: the per-user limits would answer 429 before the form is read."""
    settings.DISPUTA = {**settings.DISPUTA, "MAX_ACTIVE_RUNS_PER_USER": 0, "MAX_RUNS_PER_HOUR": 0}


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def test_the_new_run_view_answers_hostile_posts_without_a_server_error(world: World, no_quotas: None) -> None:
    from debates.web.forms import RunForm

    client = Client(raise_request_exception=False)
    client.force_login(world.moderator)

    @settings(FUZZ, max_examples=60)
    @given(data=_posts(RunForm))
    def fuzz(data: dict[str, Any]) -> None:
        # Each example is a fresh render of the form, with a key of its own (unless a hostile one was drawn).
        if _is_uuid(data.get("client_uuid")):
            data = {**data, "client_uuid": str(uuid.uuid4())}
        before = Run.objects.count()
        response = client.post("/runs/new/", data)
        assert response.status_code < 500, getattr(response, "exc_info", None)
        created = Run.objects.count() - before
        if response.status_code == 302:
            assert created == 1
            run = Run.objects.latest("pk")
            assert response["Location"] == f"/runs/{run.pk}/"
            for name in ("seed", "budget_tokens", "budget_usd"):
                _fits(Run._meta.get_field(name), getattr(run, name))  # type: ignore[arg-type]
        else:
            assert created == 0, f"{response.status_code} but a run was stored"

    fuzz()


def test_a_huge_budget_is_a_field_error_on_the_page_and_stores_nothing(world: World, no_quotas: None) -> None:
    from debates.web.forms import RunForm

    client = Client()
    client.force_login(world.moderator)
    before = Run.objects.count()
    response = client.post("/runs/new/", {**_baseline(RunForm()), "budget_tokens": str(10**30)})
    assert response.status_code == 200 and Run.objects.count() == before
    assert "That is more tokens than a budget can hold" in response.content.decode()
