"""The consultation's section of the new-run form (seed 001): the agents, the mode, the early-stop threshold,
the rounds and the cost gate's amount; simulation branches for the agents' agreement and a failing agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from debates.protocols.consultation.protocol import (
    DEFAULT_AGENTS,
    ConsultationConfig,
    agent_handle,
    key_independent,
)
from debates.protocols.form import USD_ERRORS, FormSection


class ConsultationForm(FormSection):
    template = "debates/protocols/forms/consultation.html"
    dom_id = "consultation-setup"
    simulation_fields = ("sim_cons_consensus", "sim_cons_fail_agent")

    cons_agents = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        initial="\n".join(f"{name}: {lens}" for name, lens in DEFAULT_AGENTS),
        label="Agents (2–5)",
        help_text="One per line as 'Name: angle', e.g. 'Architect: structure and maintainability'. A judge, "
        "added for you, sums up their answers.",
    )
    cons_mode = forms.ChoiceField(
        choices=[
            ("converge", "Converge: one recommendation with dissent; may stop early on a strong consensus"),
            ("explore", "Explore: a menu of options you pick from; never stops early"),
        ],
        initial="converge",
        required=False,
        widget=forms.RadioSelect,
        label="Mode",
    )
    cons_threshold = forms.FloatField(
        min_value=0.5,
        max_value=1.0,
        initial=0.90,
        required=False,
        label="Early-stop threshold",
        help_text="In converge mode the consultation ends after round 2 when the agents' average confidence in "
        "the consensus reaches this (0.5–1), unless they agree without real reasons (rubber-stamping).",
    )
    cons_rounds = forms.TypedChoiceField(
        choices=[
            (4, "4: full (answers, synthesis, challenges, verdict)"),
            (3, "3: no verdict"),
            (2, "2: quick (answers and synthesis)"),
            (1, "1: independent answers only"),
        ],
        coerce=int,
        initial=4,
        required=False,
        label="Rounds",
    )
    cons_auto_approve = forms.DecimalField(
        min_value=0,
        max_digits=10,
        decimal_places=4,
        error_messages=USD_ERRORS,
        required=False,
        label="Auto-approve under (USD)",
        help_text="A run whose estimated cost is at most this starts without asking you; 0 always asks. Blank: "
        "the site's default. Simulated runs get a nominal estimate, so you can try the question.",
    )
    sim_cons_consensus = forms.ChoiceField(
        choices=[
            ("mixed", "Mixed: real disagreements (one invalid, dropped), dissent in the verdict"),
            ("strong", "Strong: converge mode stops early after round 2"),
            ("rubber_stamp", "Rubber stamp: identical answers, so the early stop is blocked"),
        ],
        initial="mixed",
        required=False,
        label="How much the simulated agents agree",
    )
    sim_cons_fail_agent = forms.BooleanField(required=False, label="The last agent fails in round 1")

    def config(self, data: dict[str, Any]) -> dict[str, Any] | None:
        agents = []
        for number, line in enumerate((data.get("cons_agents") or "").splitlines(), start=1):
            if not line.strip():
                continue
            name, _, lens = (part.strip() for part in line.partition(":"))
            if not name:
                self.form.add_error("cons_agents", f"Line {number}: write the agent as 'Name: lens'.")
                return None
            agents.append({"name": name[:60], "lens": lens[:300]})
        if not 2 <= len(agents) <= 5:
            self.form.add_error("cons_agents", f"{len(agents)} agents: a consultation takes 2 to 5.")
            return None
        config: dict[str, Any] = {
            "agents": agents,
            "mode": data.get("cons_mode") or "converge",
            "consensus_threshold": data.get("cons_threshold") or 0.90,
            "max_rounds": data.get("cons_rounds") or 4,
        }
        if data.get("cons_auto_approve") is not None:
            config["auto_approve_under_usd"] = str(data["cons_auto_approve"])
        try:
            ConsultationConfig.model_validate(config)
        except ValueError as error:
            self.form.add_error("cons_agents", str(error))
            return None
        return config

    def options(self, data: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = {
            "cps": data["sim_cps"],
            "consensus": data.get("sim_cons_consensus") or "mixed",
        }
        if data["sim_cons_fail_agent"]:
            last = config["agents"][-1]["name"]
            options["fail"] = [key_independent(agent_handle(last))]
        return options
