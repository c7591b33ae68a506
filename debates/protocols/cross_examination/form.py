"""The cross-examination's section of the new-run form: the analysts, the examiner and how many questions each
analyst gets; simulation branches for the answers and the degradation paths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from debates.protocols.cross_examination.protocol import analyst_handle
from debates.protocols.form import FormSection

DEFAULT_ANALYSTS = (
    "Ada: economic costs and benefits\nBo: risks and second-order effects\nCy: evidence quality"
)
ANSWER_STYLES = [
    ("mixed", "Mixed: defend strong claims, concede weak ones, sometimes dodge"),
    ("defend", "Always defend with evidence"),
    ("concede", "Always concede"),
    ("deflect", "Always dodge (restate the claim without evidence)"),
]


def parse_analysts(text: str) -> list[dict[str, str]]:
    analysts = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, _, lens = line.partition(":")
        if not name.strip():
            raise forms.ValidationError(f"Line {number}: write the analyst as 'Name: lens'.")
        # The config's limits (cross_examination.AnalystConfig), said next to the field.
        if len(name.strip()) > 60 or len(lens.strip()) > 300:
            raise forms.ValidationError(f"Line {number}: a name is at most 60 characters, a lens 300.")
        analysts.append({"name": name.strip(), "lens": lens.strip()})
    if not analysts:
        raise forms.ValidationError("Name at least one analyst, one per line as 'Name: lens'.")
    return analysts


class CrossExaminationForm(FormSection):
    template = "debates/protocols/forms/cross_examination.html"
    simulation_fields = ("sim_answers", "sim_fail_analyst", "sim_no_questions", "sim_fail_assessment")

    analysts = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        initial=DEFAULT_ANALYSTS,
        required=False,
        help_text="One per line as 'Name: angle', e.g. 'Ada: costs and benefits'. Each studies the question from "
        "that angle on their own; up to 6.",
    )
    examiner = forms.ChoiceField(
        choices=[("agent", "An agent"), ("human", "Me: I ask the questions and classify the answers")],
        initial="agent",
        widget=forms.RadioSelect,
        help_text="The examiner questions each analyst on a claim they made, then says whether each answer "
        "defended the claim, conceded it or dodged.",
    )
    questions_per_analyst = forms.TypedChoiceField(
        choices=[(2, "2"), (3, "3")], coerce=int, initial=3, label="Questions per analyst"
    )
    sim_answers = forms.ChoiceField(
        choices=ANSWER_STYLES, initial="mixed", label="Simulated answers to the examiner"
    )
    sim_fail_analyst = forms.BooleanField(required=False, label="The last analyst's analysis fails")
    sim_no_questions = forms.BooleanField(required=False, label="The examiner asks no questions")
    sim_fail_assessment = forms.BooleanField(
        required=False, label="The examiner's final classification fails"
    )

    def config(self, data: dict[str, Any]) -> dict[str, Any] | None:
        try:
            analysts = parse_analysts(data.get("analysts") or "")
            if len(analysts) > 6:
                raise forms.ValidationError(f"{len(analysts)} analysts: at most 6.")
        except forms.ValidationError as error:
            self.form.add_error("analysts", error)
            return None
        return {
            "analysts": analysts,
            "examiner": data.get("examiner"),
            "questions_per_analyst": data.get("questions_per_analyst"),
        }

    def options(self, data: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        analysts = config["analysts"]
        options: dict[str, Any] = {"answers": data["sim_answers"], "cps": data["sim_cps"]}
        if data["sim_fail_analyst"] and analysts:
            options["fail"] = [f"r1/analysis/{analyst_handle(analysts[-1]['name'])}"]
        if data["sim_no_questions"]:
            options["no_questions"] = True
        if data["sim_fail_assessment"]:
            options.setdefault("fail", []).append("r4/assessment/*")
        return options
