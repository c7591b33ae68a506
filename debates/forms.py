"""The new-run form: the shared fields, then one fieldset per protocol (only the chosen protocol's are read)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from django import forms

from debates import demo
from debates.agents.base import backend_choices
from debates.protocols import comparative, registry

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
        analysts.append({"name": name.strip(), "lens": lens.strip()})
    if not analysts:
        raise forms.ValidationError("Name at least one analyst, one per line as 'Name: lens'.")
    return analysts


class RunForm(forms.Form):
    protocol = forms.ChoiceField(initial="cross-examination")
    topic = forms.CharField(max_length=500, label="Question or topic")
    kb: forms.ModelChoiceField = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label="Knowledge base",
        empty_label="— none: analyse the material below —",
        help_text="Debate over a knowledge base: its snapshot is taken when the run starts, and citations of its "
        "arguments are verified.",
    )
    material = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        required=False,
        label="Material to analyse",
        help_text="Free text the analysts cite from (sentences are quoted as evidence).",
    )
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
    kb_moderator = forms.ChoiceField(
        choices=[("agent", "An agent"), ("human", "Me (the logged-in moderator)")],
        initial="agent",
        required=False,
        widget=forms.RadioSelect,
        label="Moderator",
    )
    max_turns = forms.IntegerField(
        min_value=4,
        max_value=60,
        initial=16,
        required=False,
        label="Debate turns at most",
        help_text="Openings included; aim for 12+.",
    )
    auto_approve = forms.BooleanField(
        required=False,
        label="Apply proposed KB changes without the approval inbox",
        help_text="Still only through the discipline: downgrade only, logged, never deleting.",
    )
    # --- comparative (seed 003) ---
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
        choices=[(t, t.capitalize()) for t in comparative.DECISION_TYPES],
        initial=demo.DEMO_COMPARISON["decision_type"],
        required=False,
        help_text="Pre-fills the default criteria for this kind of decision.",
    )
    criteria = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 7}),
        required=False,
        initial=comparative.criteria_text(
            comparative.default_criteria(str(demo.DEMO_COMPARISON["decision_type"]))
        ),
        help_text="One per line: 'Criterion | High', 'Medium' or 'Low' (weights 3 / 2 / 1). Add, remove and "
        "re-weight freely.",
    )
    evidence_a = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label="Evidence for A",
        help_text="One source per line: 'Source | Type | Summary' (type: Doc, Web, Slack, Email, Interview…).",
    )
    evidence_b = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Evidence for B"
    )
    evidence_both = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, label="Evidence bearing on both"
    )
    stakeholders = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="One per line: 'Name | Known position | stated or inferred | notes'.",
    )
    evidence_gaps = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, help_text="One gap per line."
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
    # --- adversarial (seed 003 family) ---
    artifact_type = forms.CharField(
        max_length=60,
        required=False,
        initial="RFC",
        label="What is reviewed",
        help_text="The artifact under review is the material above (an RFC, a plan, a proposal…).",
    )
    framework = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label="Evaluation framework (optional)",
        help_text="One criterion per line, e.g. 'Rollback plan exists'.",
    )
    backend = forms.ChoiceField(widget=forms.RadioSelect, initial="simulated")
    model = forms.ChoiceField(
        initial="simulated",
        help_text="For every seat, unless the seat is named below. Leaving 'simulated' with a real backend picks "
        "that backend's default model.",
    )
    seat_models = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        label="Model per seat (optional)",
        help_text="One per line: 'seat: model', e.g. 'examiner: claude-opus-5-5'. Seats: analyst-<name>, examiner.",
    )
    budget_usd = forms.DecimalField(
        min_value=0,
        max_digits=10,
        decimal_places=4,
        required=False,
        label="Budget (USD)",
        help_text="The run stops before any call that could take it past this; blank = no limit.",
    )
    budget_tokens = forms.IntegerField(min_value=0, required=False, label="Budget (tokens)")
    seed = forms.IntegerField(
        min_value=0, max_value=2**31, required=False, help_text="Same seed, same debate."
    )
    # Simulation settings: make the simulated agents take every branch of the protocol.
    sim_answers = forms.ChoiceField(choices=ANSWER_STYLES, initial="mixed", label="Simulated answers")
    sim_fail_analyst = forms.BooleanField(required=False, label="One analyst fails (analysis)")
    sim_no_questions = forms.BooleanField(required=False, label="Examiner produces no questions")
    sim_fail_assessment = forms.BooleanField(required=False, label="Examiner's assessment fails")
    sim_fail_rebuttal = forms.BooleanField(
        required=False, label="Comparative: advocate B's rebuttal fails (team → subagent)"
    )
    sim_fail_judge = forms.BooleanField(required=False, label="Comparative: the judge fails (raw outputs)")
    sim_judge_slip = forms.BooleanField(required=False, label="Comparative: the judge's arithmetic slips")
    sim_hedge = forms.BooleanField(required=False, label="Comparative: advocate B hedges")
    sim_adv_concerns = forms.ChoiceField(
        choices=[
            ("mixed", "Mixed severities"),
            ("severe", "Severe: the judge rejects"),
            ("mild", "Mild: the judge approves, the challenge looks performative"),
        ],
        initial="mixed",
        required=False,
        label="Adversarial: the challenger's concerns",
    )
    sim_adv_softeners = forms.BooleanField(
        required=False, label="Adversarial: the challenger softens a concern"
    )
    sim_cps = forms.IntegerField(
        min_value=0,
        max_value=100000,
        initial=400,
        label="Streaming pace (characters per second, 0 = instant)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from kb.models import KnowledgeBase

        self.fields["kb"].queryset = KnowledgeBase.objects.all()  # type: ignore[attr-defined]
        self.fields["protocol"].choices = [(p.name, p.title) for p in registry.all_protocols()]  # type: ignore[attr-defined]
        listed = comparative.options_triage(str(self.data.get("cmp_options", "")))  # before field validation
        self.fields["cmp_triage"].choices = [(o, o) for o in listed]  # type: ignore[attr-defined]
        self.backends = backend_choices()
        self.fields["backend"].choices = [(b["name"], b["label"]) for b in self.backends]  # type: ignore[attr-defined]
        self.fields["model"].choices = [  # type: ignore[attr-defined]
            (b["label"], list(b["models"])) for b in self.backends if b["models"]
        ]

    def clean_analysts(self) -> list[dict[str, str]]:
        if self.data.get("protocol", "cross-examination") != "cross-examination":
            return []
        analysts = parse_analysts(self.cleaned_data["analysts"])
        if len(analysts) > 6:
            raise forms.ValidationError(f"{len(analysts)} analysts: at most 6.")
        return analysts

    def _comparative_clean(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """The comparative config from its fieldset; errors go next to the field and name the line."""
        options = comparative.options_triage(data.get("cmp_options") or "")
        if len(options) > 2:
            ticked = [o for o in options if o in (data.get("cmp_triage") or [])]
            if len(ticked) == 2:
                options = ticked
            else:
                self.add_error(
                    "cmp_options",
                    f"You listed {len(options)} options ({', '.join(options)}); a comparison takes exactly two. "
                    "Tick the two strongest below, or shorten the list.",
                )
                return None
        if len(options) < 2:
            self.add_error("cmp_options", "Name the two options to compare, one per line.")
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
            "criteria": lambda text: {"criteria": comparative.criteria_parse(text)},
            "evidence_a": lambda text: {
                "evidence": comparative.evidence_parse(text, "A", f"Evidence for {names['A']}")
            },
            "evidence_b": lambda text: {
                "evidence": comparative.evidence_parse(text, "B", f"Evidence for {names['B']}")
            },
            "evidence_both": lambda text: {
                "evidence": comparative.evidence_parse(text, "both", "Evidence for both")
            },
            "stakeholders": lambda text: {"stakeholders": comparative.stakeholders_parse(text)},
            "evidence_gaps": lambda text: {"evidence_gaps": comparative.lines_parse(text)},
        }
        ok = True
        for name, parse in parsers.items():
            try:
                for key, value in parse(data.get(name) or "").items():
                    config[key] = config.get(key, []) + value if key == "evidence" else value
            except ValueError as error:
                self.add_error(name, str(error))
                ok = False
        return config if ok else None

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
        data["comparative"] = self._comparative_clean(data) if data.get("protocol") == "comparative" else None
        return data

    def clean_seed(self) -> int:
        seed = self.cleaned_data.get("seed")
        return random.randrange(1, 10**6) if seed is None else seed

    def run_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        analysts = data["analysts"]
        options: dict[str, Any] = {"answers": data["sim_answers"], "cps": data["sim_cps"]}
        if data["sim_fail_analyst"] and analysts:
            from debates.protocols.cross_examination import analyst_handle

            options["fail"] = [f"r1/analysis/{analyst_handle(analysts[-1]['name'])}"]
        if data["sim_no_questions"]:
            options["no_questions"] = True
        if data["sim_fail_assessment"]:
            options.setdefault("fail", []).append("r4/assessment/*")
        config: dict[str, Any] = {
            "analysts": analysts,
            "examiner": data["examiner"],
            "questions_per_analyst": data["questions_per_analyst"],
        }
        if data["protocol"] == "kb-debate":
            max_turns = data.get("max_turns") or 16
            config = {
                "moderator": data.get("kb_moderator") or "agent",
                "max_turns": max_turns,
                "min_turns": min(12, max_turns),
                "auto_approve": data["auto_approve"],
            }
        if data["protocol"] == "comparative":
            config = data["comparative"]
            options = {"cps": data["sim_cps"]}
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
        if data["protocol"] == "adversarial":
            config = {
                "artifact_type": (data.get("artifact_type") or "proposal").strip(),
                "framework": [
                    line.strip() for line in (data.get("framework") or "").splitlines() if line.strip()
                ],
            }
            options = {"cps": data["sim_cps"], "concerns": data.get("sim_adv_concerns") or "mixed"}
            if data["sim_adv_softeners"]:
                options["softeners"] = True
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
        }


class BudgetForm(forms.Form):
    budget_usd = forms.DecimalField(min_value=0, max_digits=10, decimal_places=4, required=False)
    budget_tokens = forms.IntegerField(min_value=0, required=False)

    def error_list(self) -> list[str]:
        return [f"{field}: {' '.join(str(e) for e in errors)}" for field, errors in self.errors.items()]
