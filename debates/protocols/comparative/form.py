"""The comparison's section of the new-run form (seed 003): the two options (triaged when more are listed), the
decision type and its weighted criteria, the evidence per option, the stakeholders and evidence gaps, the
evidence-review gate and the mode; simulation branches for the degradation paths."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django import forms

from debates import demo
from debates.protocols.comparative.protocol import (
    DECISION_TYPES,
    ConfigError,
    config_check,
    criteria_parse,
    criteria_text,
    default_criteria,
    evidence_parse,
    lines_parse,
    options_triage,
    stakeholders_parse,
)
from debates.protocols.form import FormSection

# The form field each config setting comes from.
SETTING_FIELDS = {
    "option_a": "cmp_options",
    "option_b": "cmp_options",
    "options": "cmp_options",
    "decision_type": "decision_type",
    "criteria": "criteria",
    "stakeholders": "stakeholders",
    "evidence_gaps": "evidence_gaps",
    "evidence_review": "evidence_review",
    "mode": "cmp_mode",
}


class ComparativeForm(FormSection):
    template = "debates/protocols/forms/comparative.html"
    dom_id = "comparative-setup"
    simulation_fields = ("sim_fail_rebuttal", "sim_fail_judge", "sim_judge_slip", "sim_hedge")

    cmp_options = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        initial=f"{demo.DEMO_COMPARISON['option_a']}\n{demo.DEMO_COMPARISON['option_b']}",
        label="Options (exactly two)",
        help_text="One per line: the first is A (argued for its long-term strategic fit), the second B (argued "
        "for pragmatic near-term execution). List more and you will be asked to triage them to two.",
    )
    cmp_triage = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Triage: tick the two options to compare"
    )
    decision_type = forms.ChoiceField(
        choices=[(t, t.capitalize()) for t in DECISION_TYPES],
        initial=demo.DEMO_COMPARISON["decision_type"],
        required=False,
        help_text="Fills the criteria box with the usual criteria for this kind of decision.",
    )
    criteria = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 7}),
        required=False,
        initial=criteria_text(default_criteria(str(demo.DEMO_COMPARISON["decision_type"]))),
        help_text="What the judge scores, one per line: 'Criterion | High', 'Medium' or 'Low' (counting 3, 2 or "
        "1 times). Add, remove and re-weight freely.",
    )
    evidence_a = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label="Evidence for A",
        help_text="Optional. One source per line: 'Source | Type | Summary' (type: Doc, Web, Slack, Email, "
        "Interview…).",
    )
    evidence_b = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label="Evidence for B",
        help_text="Optional, as for A.",
    )
    evidence_both = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        label="Evidence bearing on both",
        help_text="Optional, as for A.",
    )
    stakeholders = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="Optional: who cares about the decision. One per line: 'Name | Known position | stated or "
        "inferred | notes'.",
    )
    evidence_gaps = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        help_text="Optional: what you know you do not know, one per line. The judge weighs it.",
    )
    evidence_review = forms.BooleanField(
        required=False,
        initial=True,
        label="Review the evidence before the debate starts",
        help_text="The run waits for you to proceed, add evidence or adjust the criteria.",
    )
    cmp_mode = forms.ChoiceField(
        choices=[
            ("team", "Team debate: openings, rebuttals, separate judge (3 rounds)"),
            ("subagent", "Quick debate: openings and judge, no rebuttals"),
            ("single", "Single-agent scorecard"),
        ],
        initial="team",
        required=False,
        label="Mode",
    )
    sim_fail_rebuttal = forms.BooleanField(
        required=False, label="Advocate B's rebuttal fails (the debate carries on without rebuttals)"
    )
    sim_fail_judge = forms.BooleanField(
        required=False, label="The judge fails (both advocates' outputs are shown side by side)"
    )
    sim_judge_slip = forms.BooleanField(
        required=False, label="The judge's arithmetic slips (Disputa flags the mismatch)"
    )
    sim_hedge = forms.BooleanField(required=False, label='Advocate B hedges ("it depends"; flagged)')

    def field_refresh(self, name: str, query: Mapping[str, str]) -> tuple[str, str] | None:
        """The criteria box for a decision type: its default criteria, unless the user has edited the box (then
        it is kept, and the note says how to get the defaults)."""
        if name != "criteria":
            return None
        decision_type = query.get("decision_type", "vendor")
        current = query.get("criteria", "")
        untouched = {criteria_text(default_criteria(t)) for t in DECISION_TYPES}
        if current.strip() and current.replace("\r\n", "\n").strip() not in untouched:
            return current, f"Kept your edited criteria; empty the box to get the {decision_type} defaults."
        return criteria_text(default_criteria(decision_type)), ""

    def prepare(self) -> None:
        listed = options_triage(str(self.form.data.get("cmp_options", "")))  # before field validation
        self.form.fields["cmp_triage"].choices = [(o, o) for o in listed]  # type: ignore[attr-defined]

    def config(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """The comparative config from its fieldset; errors go next to the field and name the line."""
        options = options_triage(data.get("cmp_options") or "")
        if len(options) > 2:
            ticked = [o for o in options if o in (data.get("cmp_triage") or [])]
            if len(ticked) == 2:
                options = ticked
            else:
                self.form.add_error(
                    "cmp_options",
                    f"You listed {len(options)} options ({', '.join(options)}); a comparison takes exactly two. "
                    "Tick the two strongest below, or shorten the list.",
                )
                return None
        if len(options) < 2:
            self.form.add_error("cmp_options", "Name the two options to compare, one per line.")
            return None
        config: dict[str, Any] = {
            "option_a": options[0],
            "option_b": options[1],
            "decision_type": data.get("decision_type") or "vendor",
            "evidence_review": "human" if data.get("evidence_review") else "proceed",
            "mode": data.get("cmp_mode") or "team",
        }
        names = {"A": options[0], "B": options[1]}
        parsers: dict[str, Callable[[str], dict[str, Any]]] = {
            "criteria": lambda text: {"criteria": criteria_parse(text)},
            "evidence_a": lambda text: {"evidence": evidence_parse(text, "A", f"Evidence for {names['A']}")},
            "evidence_b": lambda text: {"evidence": evidence_parse(text, "B", f"Evidence for {names['B']}")},
            "evidence_both": lambda text: {"evidence": evidence_parse(text, "both", "Evidence for both")},
            "stakeholders": lambda text: {"stakeholders": stakeholders_parse(text)},
            "evidence_gaps": lambda text: {"evidence_gaps": lines_parse(text)},
        }
        ok = True
        for name, parse in parsers.items():
            try:
                for key, value in parse(data.get(name) or "").items():
                    config[key] = config.get(key, []) + value if key == "evidence" else value
            except ValueError as error:
                self.form.add_error(name, str(error))
                ok = False
        if not ok:
            return None
        try:  # what the lines cannot show (too many criteria, two options that differ only in case, ...)
            config_check(
                {**config, "criteria": config.get("criteria") or default_criteria(config["decision_type"])}
            )
        except ConfigError as error:
            field = self._field_of(error, config)
            label = (
                str(self.form.fields[field].label or field.replace("_", " ").capitalize()) if field else ""
            )
            message = str(error)
            if label and message.startswith(f"{error.setting}:"):
                message = f"{label}:{message.removeprefix(f'{error.setting}:')}"
            self.form.add_error(field, message)
            return None
        return config

    @staticmethod
    def _field_of(error: ConfigError, config: Mapping[str, Any]) -> str | None:
        """The form field a config error belongs next to (None: the form's own errors)."""
        if error.setting == "evidence":
            items = config.get("evidence") or []
            option = (
                items[error.index]["option"] if error.index is not None and error.index < len(items) else "A"
            )
            return {"A": "evidence_a", "B": "evidence_b"}.get(option, "evidence_both")
        return SETTING_FIELDS.get(error.setting)

    def options(self, data: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = {"cps": data["sim_cps"]}
        fail = [
            key
            for key, wanted in (
                ("r2/rebuttal/advocate-b", data["sim_fail_rebuttal"]),
                ("r3/judgement/judge", data["sim_fail_judge"]),
            )
            if wanted
        ]
        if fail:
            options["fail"] = fail
        if data["sim_judge_slip"]:
            options["judge_slip"] = True
        if data["sim_hedge"]:
            options["hedge"] = True
        return options
