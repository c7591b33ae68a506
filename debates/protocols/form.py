"""The new-run form's protocol sections: each protocol names one (Protocol.form), declared in its package's
form.py. The generic form (debates.web.forms.RunForm) holds every section's fields — the page shows each
protocol's fieldset and the browser shows only the chosen one's — and reads only the chosen protocol's section:
its config and the simulated backend's options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django import forms
from django.forms.forms import DeclarativeFieldsMetaclass

# Money fields end up in DecimalField(max_digits=10, decimal_places=4) columns: their errors say so.
USD_ERRORS = {
    "max_digits": "That is too large: at most 999999.9999 USD.",
    "max_whole_digits": "That is too large: at most 999999.9999 USD.",
    "max_decimal_places": "Use at most 4 decimal places.",
}


class FormSection(metaclass=DeclarativeFieldsMetaclass):
    """A protocol's part of the new-run form. Its fields are declared on the class as on a Form (names stay
    unique across sections: they share one form); `template` holds its partials, `setup` (the fieldset's
    content, from its legend on) and, when it has `simulation_fields`, `simulation` (the simulation fieldset's
    part)."""

    base_fields: ClassVar[dict[str, forms.Field]]
    template: ClassVar[str] = ""
    dom_id: ClassVar[str] = ""  # the fieldset's id, where the page has one
    simulation_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, form: forms.Form, protocol: str) -> None:
        self.form = form
        self.protocol = protocol

    @property
    def setup_template(self) -> str:
        return f"{self.template}#setup"

    @property
    def simulation_template(self) -> str:
        return f"{self.template}#simulation" if self.simulation_fields else ""

    def prepare(self) -> None:
        """When the form is built: what depends on the posted data (e.g. choices listed in another field)."""

    def config(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """The protocol's config from the form's cleaned data; None when it is invalid (the errors are added
        next to their fields with `self.form.add_error`)."""
        return {}

    def field_refresh(self, name: str, query: Mapping[str, str]) -> tuple[str, str] | None:
        """Field `name`'s new value, and a note for the user, when a field it depends on has changed (the page asks
        with htmx, sending the form's current values in `query`); None when the section has no such field."""
        return None

    def options(self, data: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        """The simulated backend's options (`data["sim_cps"]` is the streaming pace)."""
        return {"cps": data["sim_cps"]}
