"""The market panel's section of the new-run form (seed 004): the lenses, the judge's weights, how many
arguments each seat makes and the KB slices; simulation branches for the handshake, a misquote and the judge's
arithmetic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from debates.protocols.form import FormSection
from debates.protocols.market_panel.protocol import (
    DEFAULT_LENSES,
    DEFAULT_WEIGHTS,
    seat_handle,
    slices_parse,
    slices_resolve,
)


class MarketPanelForm(FormSection):
    template = "debates/protocols/forms/market_panel.html"
    dom_id = "market-panel-setup"
    simulation_fields = ("sim_mp_handshake", "sim_mp_misquote", "sim_mp_judge_slip")

    mp_lenses = forms.MultipleChoiceField(
        choices=[(lens, lens.capitalize()) for lens in DEFAULT_LENSES],
        initial=list(DEFAULT_LENSES),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Angles of analysis (lenses)",
        help_text="Each angle seats a bull and a bear (named e.g. tech_bull and tech_bear) who read only their "
        "slice of the data and challenge each other.",
    )
    mp_weight_logic = forms.IntegerField(
        min_value=0, max_value=100, initial=30, required=False, label="Logic %"
    )
    mp_weight_evidence = forms.IntegerField(
        min_value=0, max_value=100, initial=30, required=False, label="Evidence %"
    )
    mp_weight_clarity = forms.IntegerField(
        min_value=0, max_value=100, initial=20, required=False, label="Clarity %"
    )
    mp_weight_persuasiveness = forms.IntegerField(
        min_value=0, max_value=100, initial=20, required=False, label="Persuasiveness %"
    )
    mp_arguments = forms.ChoiceField(
        choices=[
            ("2-4", "2–4 (the default)"),
            ("2-3", "2–3"),
            ("3-4", "3–4"),
            ("2-2", "exactly 2"),
            ("3-3", "exactly 3"),
            ("4-4", "exactly 4"),
        ],
        initial="2-4",
        required=False,
        label="Arguments per seat",
    )
    mp_slices = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label="Data each angle reads (optional)",
        help_text="One angle per line: 'angle: path, path' (dotted paths into the data knowledge base). Blank: "
        "technical reads indices and technicals; fundamental reads fundamentals and sectors; macro reads macro "
        "and global_markets; sentiment reads sentiment.",
    )
    sim_mp_handshake = forms.BooleanField(
        required=False,
        initial=True,
        label="The last angle's bull and bear go easy on each other (flagged as a handshake)",
    )
    sim_mp_misquote = forms.BooleanField(
        required=False, initial=True, label="The second angle's bull misquotes a figure (flagged)"
    )
    sim_mp_judge_slip = forms.BooleanField(
        required=False, label="The judge's weighted score slips (Disputa flags the mismatch)"
    )

    def config(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """The market-panel config from its fieldset: a data KB is required, the weights must sum to 100, and
        every slice path must exist in the KB; errors go next to the field."""
        form = self.form
        kb = data.get("kb")
        if kb is None:
            form.add_error(
                "kb", "The market panel needs a data knowledge base: choose one (e.g. market-2026-q4)."
            )
            return None
        if kb.kind != "data":
            form.add_error(
                "kb", f"'{kb.title}' is an argument graph; the market panel needs a data knowledge base."
            )
            return None
        lenses = [lens for lens in DEFAULT_LENSES if lens in (data.get("mp_lenses") or [])]
        if not lenses:
            form.add_error("mp_lenses", "Tick at least one lens.")
            return None
        weights: dict[str, int] = {}
        for name, default in DEFAULT_WEIGHTS.items():
            given = data.get(f"mp_weight_{name}")
            weights[name] = default if given is None else int(given)
        if sum(weights.values()) != 100:
            form.add_error(
                "mp_weight_logic", f"The four weights must sum to 100 (they sum to {sum(weights.values())})."
            )
            return None
        low, _, high = (data.get("mp_arguments") or "2-4").partition("-")
        config: dict[str, Any] = {
            "lenses": lenses,
            "weights": weights,
            "arguments_min": int(low),
            "arguments_max": int(high),
        }
        try:
            slices = slices_parse(data.get("mp_slices") or "")
            unknown = sorted(set(slices) - set(lenses))
            if unknown:
                raise ValueError(f"Slices: {', '.join(unknown)} is not a ticked lens")
            config["slices"] = slices_resolve({**config, "slices": slices}, kb.data)
        except ValueError as error:
            form.add_error("mp_slices", str(error))
            return None
        return config

    def options(self, data: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        lenses = config["lenses"]
        options: dict[str, Any] = {
            "cps": data["sim_cps"],
            "handshake": lenses[-1] if data["sim_mp_handshake"] else "",
            "misquote": seat_handle(lenses[min(1, len(lenses) - 1)], "bull")
            if data["sim_mp_misquote"]
            else "",
        }
        if data["sim_mp_judge_slip"]:
            options["judge_slip"] = True
        return options
