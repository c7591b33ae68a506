"""The adversarial review's section of the new-run form: what is reviewed (the material is the artifact) and an
optional evaluation framework; simulation branches for the challenger's concerns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from debates.protocols.form import FormSection


class AdversarialForm(FormSection):
    template = "debates/protocols/forms/adversarial.html"
    simulation_fields = ("sim_adv_concerns", "sim_adv_softeners")

    artifact_type = forms.CharField(
        max_length=60,
        required=False,
        initial="RFC",
        label="What is reviewed",
        help_text="The kind of document in the material box: an RFC, a design, a plan, a proposal…",
    )
    framework = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label="Review criteria (optional)",
        help_text="One per line, e.g. 'Rollback plan exists': both sides argue against them.",
    )
    sim_adv_concerns = forms.ChoiceField(
        choices=[
            ("mixed", "Mixed severities"),
            ("severe", "Severe: the judge rejects"),
            ("mild", "Mild: the judge approves, and the challenge looks like going through the motions"),
        ],
        initial="mixed",
        required=False,
        label="How serious the challenger's concerns are",
    )
    sim_adv_softeners = forms.BooleanField(
        required=False, label='The challenger softens a concern ("minor nitpick"; flagged)'
    )

    def config(self, data: dict[str, Any]) -> dict[str, Any] | None:
        if not (data.get("material") or "").strip():
            # The challenger quotes the artifact; with nothing to quote, no concern could be checked.
            self.form.add_error(
                "material", "Paste the artifact under review (the RFC, plan or proposal) here."
            )
            return None
        return {
            "artifact_type": (data.get("artifact_type") or "proposal").strip(),
            "framework": [
                line.strip() for line in (data.get("framework") or "").splitlines() if line.strip()
            ],
        }

    def options(self, data: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = {
            "cps": data["sim_cps"],
            "concerns": data.get("sim_adv_concerns") or "mixed",
        }
        if data["sim_adv_softeners"]:
            options["softeners"] = True
        return options
