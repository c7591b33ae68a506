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
    ("mixed", "Mixed: defend strong claims, concede weak ones, sometimes deflect"),
    ("defend", "Always defend"),
    ("concede", "Always concede"),
    ("deflect", "Always deflect (restate without evidence)"),
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
        help_text="One analyst per line: 'Name: lens'. Up to 6.",
    )
    examiner = forms.ChoiceField(
        choices=[("agent", "An agent"), ("human", "Me (the logged-in moderator)")],
        initial="agent",
        widget=forms.RadioSelect,
    )
    questions_per_analyst = forms.TypedChoiceField(
        choices=[(2, "2"), (3, "3")], coerce=int, initial=3, label="Questions per analyst"
    )
    sim_answers = forms.ChoiceField(choices=ANSWER_STYLES, initial="mixed", label="Simulated answers")
    sim_fail_analyst = forms.BooleanField(required=False, label="One analyst fails (analysis)")
    sim_no_questions = forms.BooleanField(required=False, label="Examiner produces no questions")
    sim_fail_assessment = forms.BooleanField(required=False, label="Examiner's assessment fails")

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
