"""The new-run form: the shared fields, then one section per protocol (its package's form.py, named by
Protocol.form), of which only the chosen protocol's is read."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from debates.agents.base import backend_choices
from debates.engine import registry
from debates.protocols.form import USD_ERRORS, FormSection
from kb.models import KnowledgeBase

# Numbers end up in database columns (debates.models): the forms bound them to the columns' ranges, so an
# out-of-range value is an error on its field, never an overflow in the database.
BIGINT_MAX = 2**63 - 1  # Run.budget_tokens, Run.seed: BigIntegerField
SEED_MAX = 2**31  # the new-run form's range (any seed reproduces its debate; small ones are easy to type)
TOKENS_ERRORS = {"max_value": "That is more tokens than a budget can hold (at most %(limit_value)s)."}


def form_sections() -> list[tuple[str, type[FormSection]]]:
    """(protocol name, its section class) for every protocol that has one, in the registry's order."""
    sections = []
    for protocol in registry.all_protocols():
        if protocol.form:
            section = import_string(protocol.form)
            if not (isinstance(section, type) and issubclass(section, FormSection)):
                raise ImproperlyConfigured(
                    f"{protocol.name}: Protocol.form {protocol.form!r} is not a FormSection"
                )
            sections.append((protocol.name, section))
    return sections


class RunForm(forms.Form):
    protocol = forms.ChoiceField()
    topic = forms.CharField(
        max_length=500,
        label="Question or topic",
        help_text='What the agents debate, e.g. "Should the city charge cars entering the centre?"',
    )
    kb: forms.ModelChoiceField = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label="Knowledge base",
        empty_label="— none: use the material below —",
        help_text="A curated set of arguments and sources (see Knowledge bases). The debate works on a frozen "
        "copy taken when it starts, and every argument the agents cite is checked against it. The "
        "knowledge-base debate and the market panel need one.",
    )
    material = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        required=False,
        label="Material to analyse",
        help_text="Text the agents may quote as evidence: facts, notes, or the document under review. With a "
        "knowledge base and no material, the knowledge base's own text is used.",
    )
    # (each protocol's section's fields come here)
    backend = forms.ChoiceField(widget=forms.RadioSelect, initial="simulated")
    model = forms.ChoiceField(
        initial="simulated",
        help_text="The model every participant (seat) uses, unless you name another for it below.",
    )
    seat_models = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        label="Model per seat (optional)",
        help_text="One per line: 'seat: model', e.g. 'examiner: claude-opus-5-5'. Seats are named as on the run "
        "page: analyst-<name>, examiner, judge, advocate-a…",
    )
    budget_usd = forms.DecimalField(
        min_value=0,
        max_digits=10,
        decimal_places=4,
        error_messages=USD_ERRORS,
        required=False,
        label="Budget (USD)",
        help_text="The run stops before any call that could take it past this; blank = no limit.",
    )
    budget_tokens = forms.IntegerField(
        min_value=0,
        max_value=BIGINT_MAX,
        error_messages=TOKENS_ERRORS,
        required=False,
        label="Budget (tokens)",
        help_text="The run stops before any call that could take it past this many tokens; blank = no limit.",
    )
    # Rehearsal options (the simulated backend only): the seed, each section's switches that make the simulated
    # agents take a branch of the protocol, then the pace.
    seed = forms.IntegerField(
        min_value=0,
        max_value=SEED_MAX,
        required=False,
        help_text="Simulated agents answer the same way for the same seed: reuse a run's seed to replay it. "
        "Leave empty for a random one.",
    )
    sim_cps = forms.IntegerField(
        min_value=0,
        max_value=100000,
        initial=400,
        label="Streaming pace (characters per second, 0 = instant)",
        help_text="How fast the simulated answers appear, as if a model were typing them.",
    )
    # Made anew each time the form is rendered (a callable initial): a resubmit of the same form finds the run
    # the first submit created (debates.services.runs.run_create) instead of starting a second one.
    client_uuid = forms.UUIDField(
        widget=forms.HiddenInput,
        required=False,
        initial=uuid.uuid4,
        error_messages={"invalid": "This form's id is damaged: reload the page and submit it again."},
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

        self.fields["kb"].queryset = KnowledgeBase.objects.all()  # type: ignore[attr-defined]
        protocols = registry.all_protocols()
        self.fields["protocol"].choices = [(p.name, p.title) for p in protocols]  # type: ignore[attr-defined]
        self.fields["protocol"].initial = next((p.name for p in protocols if p.form_default), None)
        self.protocols = protocols
        for field in self.fields.values():
            if isinstance(field, forms.BooleanField):
                field.label_suffix = ""  # "☐ Review the evidence first", not "…first:"
        self.sections = [section(self, name) for name, section in SECTIONS]
        for section in self.sections:
            section.prepare()
        self.backends = backend_choices()
        self.fields["backend"].choices = [(b["name"], b["label"]) for b in self.backends]  # type: ignore[attr-defined]
        self.fields["model"].choices = [  # type: ignore[attr-defined]
            (b["label"], list(b["models"])) for b in self.backends if b["models"]
        ]

    @classmethod
    def initial_for(cls, query: Mapping[str, str]) -> dict[str, Any]:
        """The form's initial values from the address: `?protocol=<name>` chooses that protocol (the home page's
        cards link here), and the bundled demo KB its demo debates over, when that KB is loaded."""
        try:
            protocol = registry.get(query.get("protocol") or "")
        except LookupError:
            return {}
        initial: dict[str, Any] = {"protocol": protocol.name}
        if protocol.demo is not None and protocol.demo.kb:
            kb = KnowledgeBase.objects.filter(slug=protocol.demo.kb).first()
            if kb is not None:
                initial["kb"] = kb.pk
        return initial

    @property
    def rehearsal_errors(self) -> bool:
        """Whether a rehearsal option (the seed, the pace, a section's simulation switch) has an error: the page
        then opens them."""
        names = {"seed", "sim_cps", *(n for s in self.sections for n in s.simulation_fields)}
        return self.is_bound and any(name in self.errors for name in names)

    def section(self, protocol: str | None) -> FormSection | None:
        """The chosen protocol's section (None: no valid protocol was chosen, or it has none)."""
        return next((s for s in self.sections if s.protocol == protocol), None)

    def clean_backend(self) -> str:
        name = self.cleaned_data["backend"]
        backend = next(b for b in self.backends if b["name"] == name)
        if backend["disabled_reason"]:
            raise forms.ValidationError(f"{backend['label']} cannot be used: {backend['disabled_reason']}")
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        backend = next((b for b in self.backends if b["name"] == data.get("backend")), None)
        if backend is None:
            return data
        offered = [model for model, _ in backend["models"]]
        if data.get("model") not in offered:
            if data.get("model") == "simulated" and offered:
                data["model"] = offered[0]
            else:
                self.add_error("model", f"{backend['label']} does not offer {data.get('model')!r}.")
        seat_models: dict[str, str] = {}
        for number, line in enumerate((data.get("seat_models") or "").splitlines(), start=1):
            if not line.strip():
                continue
            handle, _, model = (part.strip() for part in line.partition(":"))
            if not handle or not model:
                self.add_error("seat_models", f"Line {number}: write 'seat: model'.")
            elif model not in offered:
                self.add_error("seat_models", f"Line {number}: {backend['label']} does not offer {model!r}.")
            else:
                seat_models[handle] = model
        data["seat_models"] = seat_models
        section = self.section(data.get("protocol"))
        data["config"] = section.config(data) if section is not None else {}
        return data

    def clean_seed(self) -> int:
        seed = self.cleaned_data.get("seed")
        return random.randrange(1, 10**6) if seed is None else seed

    def run_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        config = data["config"]
        section = self.section(data["protocol"])
        options = section.options(data, config) if section is not None else {"cps": data["sim_cps"]}
        return {
            "protocol": data["protocol"],
            "topic": data["topic"],
            "material": data["material"],
            "kb": data.get("kb"),
            "config": config,
            "backend": data["backend"],
            "model": data["model"] or "simulated",
            "seed": data["seed"],
            "backend_options": options if data["backend"] == "simulated" else {},
            "seat_models": data["seat_models"],
            "budget_usd": data.get("budget_usd"),
            "budget_tokens": data.get("budget_tokens"),
            "client_uuid": data.get("client_uuid"),
        }


def _fields_compose() -> dict[str, forms.Field]:
    """RunForm's fields: the shared ones up to the material, every section's setup fields, the shared ones up to
    the seed, every section's simulation fields, the pace."""
    shared = dict(RunForm.base_fields)
    names = list(shared)
    head, tail = names[: names.index("material") + 1], names[names.index("material") + 1 :]
    setup: dict[str, forms.Field] = {}
    simulation: dict[str, forms.Field] = {}
    for protocol, section in SECTIONS:
        for name, field in section.base_fields.items():
            if name in shared or name in setup or name in simulation:
                raise ImproperlyConfigured(f"{protocol}: the new-run form already has a field {name!r}")
            (simulation if name in section.simulation_fields else setup)[name] = field
    return {
        **{n: shared[n] for n in head},
        **setup,
        **{n: shared[n] for n in tail if n != "sim_cps"},
        **simulation,
        "sim_cps": shared["sim_cps"],
    }


# Composed when the form is imported, from the registry (filled when the app is ready).
if not registry.all_protocols():
    raise ImproperlyConfigured(
        "debates.web.forms is imported before the protocols are registered (apps not ready)"
    )
SECTIONS = form_sections()
RunForm.base_fields = _fields_compose()


class BudgetForm(forms.Form):
    budget_usd = forms.DecimalField(
        min_value=0, max_digits=10, decimal_places=4, error_messages=USD_ERRORS, required=False
    )
    budget_tokens = forms.IntegerField(
        min_value=0, max_value=BIGINT_MAX, error_messages=TOKENS_ERRORS, required=False
    )

    def error_list(self) -> list[str]:
        return [f"{field}: {' '.join(str(e) for e in errors)}" for field, errors in self.errors.items()]
