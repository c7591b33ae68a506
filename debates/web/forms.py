"""The new-run form: the shared fields, then one fieldset per protocol (only the chosen protocol's are read)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from django import forms

from debates import demo
from debates.agents.base import backend_choices
from debates.engine import registry
from debates.protocols.comparative import protocol as comparative
from debates.protocols.consultation import protocol as consultation
from debates.protocols.market_panel import protocol as market_panel

DEFAULT_ANALYSTS = (
    "Ada: economic costs and benefits\nBo: risks and second-order effects\nCy: evidence quality"
)
# Numbers end up in database columns (debates.models): the forms bound them to the columns' ranges, so an
# out-of-range value is an error on its field, never an overflow in the database.
BIGINT_MAX = 2**63 - 1  # Run.budget_tokens, Run.seed: BigIntegerField
SEED_MAX = 2**31  # the new-run form's range (any seed reproduces its debate; small ones are easy to type)
TOKENS_ERRORS = {"max_value": "That is more tokens than a budget can hold (at most %(limit_value)s)."}
# Run.budget_usd: DecimalField(max_digits=10, decimal_places=4).
USD_ERRORS = {
    "max_digits": "That is too large: at most 999999.9999 USD.",
    "max_whole_digits": "That is too large: at most 999999.9999 USD.",
    "max_decimal_places": "Use at most 4 decimal places.",
}
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
    # --- market panel (seed 004) ---
    mp_lenses = forms.MultipleChoiceField(
        choices=[(lens, lens.capitalize()) for lens in market_panel.DEFAULT_LENSES],
        initial=list(market_panel.DEFAULT_LENSES),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Lenses",
        help_text="Each lens seats a bull and a bear (e.g. tech_bull, tech_bear) who cross-examine each other.",
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
            ("2-4", "2–4 (the seed)"),
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
        label="Slices (optional)",
        help_text="One lens per line: 'lens: path, path' (dotted paths of the data KB). Blank: technical = indices, "
        "technicals; fundamental = fundamentals, sectors; macro = macro, global_markets; sentiment = sentiment.",
    )
    # --- consultation (seed 001) ---
    cons_agents = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        initial="\n".join(f"{name}: {lens}" for name, lens in consultation.DEFAULT_AGENTS),
        label="Agents (2–5)",
        help_text="One per line: 'Name: lens'. A judge synthesises their answers.",
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
        help_text="Converge mode stops after Round 2 at this mean consensus confidence (unless rubber-stamped).",
    )
    cons_rounds = forms.TypedChoiceField(
        choices=[(4, "4: full"), (3, "3: no verdict"), (2, "2: quick"), (1, "1: independent answers only")],
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
        help_text="The estimated cost a run starts at without your consent; 0 always asks. Blank: the site "
        "default. Simulated runs get a nominal estimate so the gate can be tried.",
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
    )
    seed = forms.IntegerField(
        min_value=0, max_value=SEED_MAX, required=False, help_text="Same seed, same debate."
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
    sim_mp_handshake = forms.BooleanField(
        required=False, initial=True, label="Market panel: the last lens's pair shakes hands (flagged)"
    )
    sim_mp_misquote = forms.BooleanField(
        required=False, initial=True, label="Market panel: the second lens's bull misquotes a figure"
    )
    sim_mp_judge_slip = forms.BooleanField(
        required=False, label="Market panel: the judge's weighted score slips"
    )
    sim_cons_consensus = forms.ChoiceField(
        choices=[
            ("mixed", "Mixed: real tensions (one invalid, dropped), dissent in the verdict"),
            ("strong", "Strong: converge mode stops early after Round 2"),
            ("rubber_stamp", "Rubber stamp: identical answers; the early stop is blocked"),
        ],
        initial="mixed",
        required=False,
        label="Consultation: the agents' agreement",
    )
    sim_cons_fail_agent = forms.BooleanField(
        required=False, label="Consultation: the last agent fails in Round 1"
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

    def _market_panel_clean(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """The market-panel config from its fieldset: a data KB is required, the weights must sum to 100, and
        every slice path must exist in the KB; errors go next to the field."""
        kb = data.get("kb")
        if kb is None:
            self.add_error(
                "kb", "The market panel needs a data knowledge base: choose one (e.g. market-2026-q4)."
            )
            return None
        if kb.kind != "data":
            self.add_error(
                "kb", f"'{kb.title}' is an argument graph; the market panel needs a data knowledge base."
            )
            return None
        lenses = [lens for lens in market_panel.DEFAULT_LENSES if lens in (data.get("mp_lenses") or [])]
        if not lenses:
            self.add_error("mp_lenses", "Tick at least one lens.")
            return None
        weights: dict[str, int] = {}
        for name, default in market_panel.DEFAULT_WEIGHTS.items():
            given = data.get(f"mp_weight_{name}")
            weights[name] = default if given is None else int(given)
        if sum(weights.values()) != 100:
            self.add_error(
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
            slices = market_panel.slices_parse(data.get("mp_slices") or "")
            unknown = sorted(set(slices) - set(lenses))
            if unknown:
                raise ValueError(f"Slices: {', '.join(unknown)} is not a ticked lens")
            config["slices"] = market_panel.slices_resolve({**config, "slices": slices}, kb.data)
        except ValueError as error:
            self.add_error("mp_slices", str(error))
            return None
        return config

    def _consultation_clean(self, data: dict[str, Any]) -> dict[str, Any] | None:
        agents = []
        for number, line in enumerate((data.get("cons_agents") or "").splitlines(), start=1):
            if not line.strip():
                continue
            name, _, lens = (part.strip() for part in line.partition(":"))
            if not name:
                self.add_error("cons_agents", f"Line {number}: write the agent as 'Name: lens'.")
                return None
            agents.append({"name": name[:60], "lens": lens[:300]})
        if not 2 <= len(agents) <= 5:
            self.add_error("cons_agents", f"{len(agents)} agents: a consultation takes 2 to 5.")
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
            consultation.ConsultationConfig.model_validate(config)
        except ValueError as error:
            self.add_error("cons_agents", str(error))
            return None
        return config

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
        data["consultation"] = (
            self._consultation_clean(data) if data.get("protocol") == "consultation" else None
        )
        data["market_panel"] = (
            self._market_panel_clean(data) if data.get("protocol") == "market-panel" else None
        )
        if data.get("protocol") == "adversarial" and not (data.get("material") or "").strip():
            # The challenger quotes the artifact; with nothing to quote, no concern could be checked.
            self.add_error("material", "Paste the artifact under review (the RFC, plan or proposal) here.")
        return data

    def clean_seed(self) -> int:
        seed = self.cleaned_data.get("seed")
        return random.randrange(1, 10**6) if seed is None else seed

    def run_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        analysts = data["analysts"]
        options: dict[str, Any] = {"answers": data["sim_answers"], "cps": data["sim_cps"]}
        if data["sim_fail_analyst"] and analysts:
            from debates.protocols.cross_examination.protocol import analyst_handle

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
        if data["protocol"] == "consultation":
            config = data["consultation"]
            options = {"cps": data["sim_cps"], "consensus": data.get("sim_cons_consensus") or "mixed"}
            if data["sim_cons_fail_agent"]:
                last = config["agents"][-1]["name"]
                options["fail"] = [consultation.key_independent(consultation.agent_handle(last))]
        if data["protocol"] == "market-panel":
            config = data["market_panel"]
            lenses = config["lenses"]
            options = {
                "cps": data["sim_cps"],
                "handshake": lenses[-1] if data["sim_mp_handshake"] else "",
                "misquote": market_panel.seat_handle(lenses[min(1, len(lenses) - 1)], "bull")
                if data["sim_mp_misquote"]
                else "",
            }
            if data["sim_mp_judge_slip"]:
                options["judge_slip"] = True
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
    budget_usd = forms.DecimalField(
        min_value=0, max_digits=10, decimal_places=4, error_messages=USD_ERRORS, required=False
    )
    budget_tokens = forms.IntegerField(
        min_value=0, max_value=BIGINT_MAX, error_messages=TOKENS_ERRORS, required=False
    )

    def error_list(self) -> list[str]:
        return [f"{field}: {' '.join(str(e) for e in errors)}" for field, errors in self.errors.items()]
