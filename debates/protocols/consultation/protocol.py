"""Consultation (seed 001, LLM_Conclave's 4-round consultation engine): 2–5 agents answer a question
independently and in parallel (R1); a judge synthesises consensus points (with supporting agents and confidence)
and tensions (at least two viewpoints each; an invalid tension is dropped with a warning) in priority order (R2);
in converge mode the consultation stops early when the mean consensus confidence reaches the threshold, unless
the consensus looks rubber-stamped; each agent then challenges the consensus or defends its own position, seeing
only its R1 position and the top consensus points and tensions, and the judge synthesises the challenges,
rebuttals and what stays unresolved (R3); the judge's verdict (R4) is one recommendation with its confidence,
evidence and dissent (converge) or a menu of options with pros, cons and when each is best (explore), from which
the human may pick.

The seed's 9-state machine is this module's own (`STATES`, `ALLOWED`, `transition`): every change is recorded
by the engine as a `state` event with from / to / reason and its time (Protocol.states). The cost estimate and
the consent gate are the engine's (services._consent_gate), with this protocol's own auto-approve amount; the
states say how the estimate was approved (automatically under the threshold, by a moderator, or when the run was
started); the plan aborts when the actual cost goes past 150 % of the estimate. Each round's artifact is built in
the seed's snake_case form, validated and stored in a `round_artifact` event with the consultation id (the seed's
`consultation:round_artifact`) when the round's turn commits. When no agent raises a challenge in Round 3, the
judge's `unresolved` is emptied (the seed's rule).

Each step's schema names only the agents who gave a Round 1 position (enums, one schema per round); what no
schema can check (an empty text, a self-challenge, a reply without a defense, a low-confidence verdict without
dissent...) is flagged on the committed turn, never refused (answers.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import combinations
from typing import Any, Literal

from django.utils import timezone
from django.utils.text import slugify
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from debates import demo as demo_values
from debates.contract import (
    Accepted,
    DemoStart,
    Done,
    Effects,
    ExportFormat,
    Flag,
    Panel,
    Plan,
    Protocol,
    RunView,
    SeatSpec,
    Stage,
    Step,
    Steps,
    Transition,
)
from debates.engine.registry import register
from debates.platform.conf import conf
from debates.protocols.consultation import exports, schema
from debates.protocols.consultation.answers import (
    accept_cross_exam,
    accept_independent,
    accept_reply,
    accept_synthesis,
    accept_verdict,
)
from debates.protocols.consultation.states import (
    TERMINAL,
    transitions_to,
)

# --- config -------------------------------------------------------------------------------------------------

# Seed 001's default panel (README personas), each with the lens it argues from.
DEFAULT_AGENTS = (
    ("Security Expert", "security: threats, data exposure and failure modes"),
    ("Architect", "systems architecture: structure, scalability and long-term maintainability"),
    ("Pragmatist", "pragmatic delivery: cost, effort and time to value"),
)
RUBBER_STAMP_CONFIDENCE = 0.85  # every R1 confidence above this ...
RUBBER_STAMP_OVERLAP = 0.6  # ... and no tensions, or agent texts this alike: the consensus is rubber-stamped
COST_ABORT_RATIO = Decimal("1.5")
R3_CONSENSUS_SHOWN, R3_TENSIONS_SHOWN = 3, 2  # the seed's filters: what Round 3 sees
R4_CHALLENGES_SHOWN = R4_REBUTTALS_SHOWN = 5  # ... and Round 4 (unresolved items are never cut)
CONSENSUS_AGENT = schema.CONSENSUS_AGENT


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=60)
    lens: str = Field(default="", max_length=300, description="The perspective the agent answers from.")


def _default_agents() -> list[AgentConfig]:
    return [AgentConfig(name=name, lens=lens) for name, lens in DEFAULT_AGENTS]


class ConsultationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agents: list[AgentConfig] = Field(default_factory=_default_agents, min_length=2, max_length=5)
    mode: Literal["converge", "explore"] = Field(
        default="converge",
        description="converge: one recommendation, may stop early; explore: a menu of options, never early.",
    )
    consensus_threshold: float = Field(
        default=0.90, ge=0.5, le=1.0, description="Converge mode stops after R2 at this mean confidence."
    )
    auto_approve_under_usd: Decimal | None = Field(
        default=None,
        ge=0,
        description="Estimated cost a run starts at without consent; None: the CONSENT_THRESHOLD_USD setting.",
    )
    max_rounds: int = Field(
        default=4, ge=1, le=4, description="4 = full; 2 = quick (no cross-exam, no verdict)."
    )

    @model_validator(mode="after")
    def _distinct(self) -> ConsultationConfig:
        handles = [agent_handle(a.name) for a in self.agents]
        repeated = sorted({a.name for a, h in zip(self.agents, handles, strict=True) if handles.count(h) > 1})
        if repeated:
            raise ValueError(f"agents: {' and '.join(repeated)} have the same name; name each agent once")
        if any(_norm(a.name) == _norm(CONSENSUS_AGENT) for a in self.agents):
            raise ValueError(f"agents: {CONSENSUS_AGENT!r} is reserved for challenges of the consensus")
        return self


def agent_handle(name: str) -> str:
    return "agent-" + (slugify(name) or "unnamed")


def key_independent(handle: str) -> str:
    return f"r1/independent/{handle}"


def key_reply(handle: str) -> str:
    return f"r3/cross_exam/{handle}"


KEY_SYNTHESIS = "r2/synthesis/judge"
KEY_CROSS_EXAM = "r3/cross_exam_judge/judge"
KEY_VERDICT = "r4/verdict/judge"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", str(text)).strip().lower()


# --- pure rules: tensions, confidence, rubber stamp, cost -----------------------------------------------------


def synthesis_clean(payload: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The synthesis with the tensions of fewer than 2 viewpoints dropped, and a warning for each (the seed
    drops an invalid tension rather than failing the artifact)."""
    kept, warnings = [], []
    for tension in payload.get("tensions") or []:
        viewpoints = tension.get("viewpoints") or []
        if len(viewpoints) < 2:
            who = f" (only {viewpoints[0].get('agent', '?')})" if viewpoints else ""
            warnings.append(
                f"Tension “{tension.get('topic', '?')}” dropped: it has {len(viewpoints)} viewpoint"
                f"{'' if len(viewpoints) == 1 else 's'}{who}; a tension needs at least 2."
            )
        else:
            kept.append(dict(tension))
    return (
        {
            "consensus_points": [dict(p) for p in payload.get("consensus_points") or []],
            "tensions": kept,
            "priority_order": list(payload.get("priority_order") or []),
        },
        warnings,
    )


def mean_confidence(consensus_points: Sequence[Mapping[str, Any]]) -> float:
    """The synthesis confidence: the mean of the consensus points' confidences (0 without any)."""
    if not consensus_points:
        return 0.0
    return sum(float(p["confidence"]) for p in consensus_points) / len(consensus_points)


STOPWORDS = frozenset(
    (  # noqa: SIM905
        "the and for that this with from are was were but not you your our their its have has had will would "
        "should could can into than then them they there these those what when which while who why how all any "
        "about over under more most less such only also very just been being each other"
    ).split()
)


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOPWORDS)


def text_overlap(texts: Sequence[str]) -> float:
    """How alike the agents' texts are: the mean pairwise Jaccard similarity of their content words (0–1)."""
    sets = [_words(t) for t in texts]
    pairs = list(combinations(sets, 2))
    if not pairs:
        return 0.0
    return sum(len(a & b) / len(a | b) if a | b else 1.0 for a, b in pairs) / len(pairs)


def position_text(position: Mapping[str, Any]) -> str:
    return " ".join([str(position.get("position", "")), *map(str, position.get("key_points") or [])])


@dataclass
class EarlyCheck:
    """The early-termination check after R2 (converge mode only)."""

    checked: bool
    confidence: float = 0.0
    threshold: float = 0.0
    meets: bool = False
    rubber_stamp: bool = False
    r1_confidences: list[float] = field(default_factory=list)
    overlap: float = 0.0
    tensions: int = 0
    terminate: bool = False
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "confidence": round(self.confidence, 3),
            "threshold": self.threshold,
            "meets": self.meets,
            "rubber_stamp": self.rubber_stamp,
            "r1_confidences": self.r1_confidences,
            "overlap": round(self.overlap, 3),
            "tensions": self.tensions,
            "terminate": self.terminate,
            "reason": self.reason,
        }


def early_termination(
    *, mode: str, threshold: float, positions: Sequence[Mapping[str, Any]], synthesis: Mapping[str, Any]
) -> EarlyCheck:
    """Converge mode, after R2: stop if the mean consensus confidence reaches the threshold, unless the consensus
    is rubber-stamped (every R1 confidence above 0.85 and either no tensions or agent texts overlapping ≥ 0.6).
    `synthesis`: the cleaned synthesis (invalid tensions dropped)."""
    if mode != "converge":
        return EarlyCheck(checked=False, reason="Explore mode never stops early.")
    confidence = mean_confidence(synthesis["consensus_points"])
    confidences = [float(p["confidence"]) for p in positions]
    overlap = text_overlap([position_text(p) for p in positions])
    tensions = len(synthesis["tensions"])
    check = EarlyCheck(
        checked=True,
        confidence=confidence,
        threshold=threshold,
        meets=confidence >= threshold,
        r1_confidences=confidences,
        overlap=overlap,
        tensions=tensions,
    )
    all_sure = bool(confidences) and all(c > RUBBER_STAMP_CONFIDENCE for c in confidences)
    thin = tensions == 0 or overlap >= RUBBER_STAMP_OVERLAP
    check.rubber_stamp = all_sure and thin
    if not check.meets:
        check.reason = f"Mean consensus confidence {confidence:.2f} is below the threshold {threshold:.2f}."
    elif check.rubber_stamp:
        why = "no tensions" if tensions == 0 else f"the agents' texts overlap {overlap:.0%}"
        check.reason = (
            f"Mean consensus confidence {confidence:.2f} reaches {threshold:.2f}, but the consensus looks "
            f"rubber-stamped (every R1 confidence above {RUBBER_STAMP_CONFIDENCE}, {why}): cross-examining anyway."
        )
    else:
        check.terminate = True
        check.reason = (
            f"Early termination: mean consensus confidence {confidence:.2f} reaches the threshold "
            f"{threshold:.2f}, and the consensus is not rubber-stamped."
        )
    return check


def consent_reasons(consent: str, state: str, estimate: Decimal, threshold: Decimal) -> tuple[str, str]:
    """Why the consultation enters awaiting_consent and then independent, from the cost gate's answer (the
    engine's: auto, approved, required, declined) and the state recorded so far. Under the threshold the run is
    approved automatically, whoever started it; above it, consent given when the run was started (run_debate
    --yes, a demo) is not a moderator's, which is given while the run waits in awaiting_consent."""
    under = "under" if estimate < threshold else "at"
    if consent == "auto":
        return (
            f"Estimated ${estimate:.4f}, {under} the ${threshold:.2f} threshold: approved automatically, "
            "no consent asked.",
            f"Approved automatically: the estimate ${estimate:.4f} is {under} the threshold ${threshold:.2f}.",
        )
    above = f"Estimated ${estimate:.4f}, above the ${threshold:.2f} approved automatically"
    if consent == "approved" and state != "awaiting_consent":
        return (
            f"{above}: consent was given when the run was started.",
            f"Approved when the run was started, without a moderator: the estimate ${estimate:.4f} is above the "
            f"threshold ${threshold:.2f}.",
        )
    return (
        f"{above}: this one waits for a moderator's consent.",
        f"A moderator approved the estimated ${estimate:.4f} (above the threshold ${threshold:.2f})."
        if consent == "approved"
        else "Started.",
    )


def cost_exceeded(view: RunView) -> str:
    """Why the run must abort on cost ("" when it need not): spent more than 150 % of the estimate."""
    estimate = view.estimate_usd
    if estimate is None or estimate <= 0 or view.cost_usd <= estimate * COST_ABORT_RATIO:
        return ""
    return (
        f"Cost exceeded estimate by >50%: ${view.cost_usd:.4f} spent against an estimate of ${estimate:.4f} "
        f"(limit ${estimate * COST_ABORT_RATIO:.4f})."
    )


# --- round artifacts (the seed's exported form) ---------------------------------------------------------------


def artifact_build(task: str, payload: Mapping[str, Any], *, agent: str, created_at: str) -> dict[str, Any]:
    """The round artifact of a committed turn, validated; raises ValidationError if it is not the seed's form.
    Round 3 replies of single agents have no artifact of their own (the judge's synthesis is the round's)."""
    model: type[BaseModel]
    if task == "independent":
        data: dict[str, Any] = {"agent_id": agent, **dict(payload)}
        model = schema.IndependentArtifact
    elif task == "synthesis":
        data, _ = synthesis_clean(payload)
        model = schema.SynthesisArtifact
    elif task == "cross_exam_judge":
        data = dict(payload)
        model = schema.CrossExamArtifact
    elif task == "verdict":
        data = {k: v for k, v in payload.items() if k != "analysis"}
        if payload.get("analysis"):
            data["_analysis"] = payload["analysis"]
        model = (
            schema.VerdictExploreArtifact if "recommendations" in payload else schema.VerdictConvergeArtifact
        )
    else:
        raise ValueError(f"{task} has no round artifact")
    artifact = model.model_validate({**data, "created_at": created_at})
    return artifact.model_dump(mode="json", by_alias=True, exclude_none=True)


ARTIFACT_TYPES = {
    "independent": (1, "independent"),
    "synthesis": (2, "synthesis"),
    "cross_exam_judge": (3, "cross_exam"),
    "verdict": (4, "verdict"),
}


@register
class Consultation(Protocol[ConsultationConfig]):
    name = "consultation"
    title = "Consultation (a panel of experts, then a verdict)"
    task_labels = {
        "independent": "Give an independent position",
        "synthesis": "Synthesise the positions",
        "cross_exam": "Cross-examine the synthesis",
        "cross_exam_judge": "Judge the cross-examination",
        "verdict": "Give the verdict",
    }
    description = (
        "2–5 agents answer independently; a judge synthesises consensus and tensions, stops early on a strong "
        "(not rubber-stamped) consensus, has the agents challenge or defend it, and gives a verdict — one "
        "recommendation with dissent, or a menu of options you pick from. Cost is estimated and gated first."
    )
    config_model = ConsultationConfig
    template = "debates/protocols/consultation.html"
    stages = (
        Stage("independent", "R1 Independent ∥"),
        Stage("synthesis", "R2 Synthesis"),
        Stage("cross_exam", "R3 Cross-exam"),
        Stage("verdict", "R4 Verdict"),
    )
    estimates_simulated = True
    form = "debates.protocols.consultation.form.ConsultationForm"
    # The default panel in converge mode. Its cost gate: a simulated run's nominal estimate is approved (it costs
    # nothing); a paid run above the auto-approve amount needs --yes, as the seed's non-interactive mode.
    headless_config = {"mode": "converge"}
    purpose = (
        "Two to five experts answer a question on their own; a judge finds where they agree and where they "
        "disagree, lets them challenge that summary, and gives one recommendation with the dissent, or a menu of "
        "options for you to pick from. The cost is estimated before anything is spent."
    )
    when_to_use = (
        "You want a considered answer from several points of view (security, architecture, delivery…) rather "
        "than one model's opinion."
    )
    demo = DemoStart(
        topic=demo_values.DEMO_CONSULTATION_TOPIC,
        material=demo_values.DEMO_COMPARISON_MATERIAL,
        config=headless_config,
        options={"consensus": "mixed"},
    )
    export_formats = (
        ExportFormat(
            "artifacts",
            build=exports.artifacts_file,
            refusal=exports.ARTIFACTS_REFUSAL,
            label="Round artifacts (zip)",
            url_name="run-export-artifacts",
            write=exports.artifacts_to,
            directory_note="artifacts go into a new one",
        ),
    )

    panels = (
        # What the panel shows comes from these events and the run's estimate and consent, not from the turns: a
        # commit alone leaves it as it was (re-rendered with every commit, it cost a debate about 20 ms of CPU).
        Panel(
            "consultation",
            refresh_on=frozenset({"state", "round_artifact", "run_status", "consent", "cost_estimated"}),
        ),
    )

    def seats(self, config: ConsultationConfig) -> list[SeatSpec]:
        seats = [SeatSpec(agent_handle(a.name), a.name, "agent", a.lens) for a in config.agents]
        seats.append(
            SeatSpec("judge", "Judge", "judge", "impartial synthesiser: names consensus and real tensions")
        )
        return seats

    def consent_threshold(self, config: ConsultationConfig) -> Decimal | None:
        return config.auto_approve_under_usd

    # --- planning -----------------------------------------------------------------------------------------------

    def plan(self, view: RunView) -> Plan:
        config = self.view_config(view)
        over = cost_exceeded(view)
        if over:
            return Done(self._outcome(view, "aborted", over), failed=True, reason=over)
        handles = self._agent_handles(view)
        pending = [h for h in handles if not view.finished(key_independent(h))]
        if pending:
            return Steps(tuple(self._independent_step(view, h) for h in pending))
        answered = [h for h in handles if view.payload(key_independent(h)) is not None]
        if not answered:
            return self._abort(view, "All agents failed in Round 1.")
        if config.max_rounds == 1:
            return Done(self._outcome(view, "complete", "Single-round consultation: Round 1 only."))

        if not view.finished(KEY_SYNTHESIS):
            return Steps((self._synthesis_step(view, answered),))
        synthesis = view.payload(KEY_SYNTHESIS)
        if synthesis is None:
            return self._abort(view, f"The judge's synthesis failed ({self._error(view, KEY_SYNTHESIS)}).")
        clean, _ = synthesis_clean(synthesis)
        early = self._early(view)
        if early.terminate:
            return Done(self._outcome(view, "complete", early.reason))
        if config.max_rounds == 2:
            return Done(self._outcome(view, "complete", "Quick consultation: 2 rounds."))

        pending = [h for h in answered if not view.finished(key_reply(h))]
        if pending:
            return Steps(tuple(self._reply_step(view, h, clean) for h in pending))
        replied = [h for h in answered if view.payload(key_reply(h)) is not None]
        if not replied:
            return self._abort(view, "All agents failed in Round 3.")
        if not view.finished(KEY_CROSS_EXAM):
            return Steps((self._cross_exam_step(view, replied, clean),))
        if view.payload(KEY_CROSS_EXAM) is None:
            return self._abort(
                view, f"The judge's cross-examination synthesis failed ({self._error(view, KEY_CROSS_EXAM)})."
            )
        if config.max_rounds == 3:
            return Done(self._outcome(view, "complete", "Three-round consultation: no verdict round."))

        if not view.finished(KEY_VERDICT):
            return Steps((self._verdict_step(view, clean),))
        if view.payload(KEY_VERDICT) is None:
            return self._abort(view, f"The judge's verdict failed ({self._error(view, KEY_VERDICT)}).")
        return Done(self._outcome(view, "complete", "The judge gave the verdict."))

    def _abort(self, view: RunView, reason: str) -> Done:
        return Done(self._outcome(view, "aborted", reason), failed=True, reason=reason)

    @staticmethod
    def _error(view: RunView, key: str) -> str:
        turn = view.turn(key)
        error = (turn.error if turn else "") or "no output"
        return error if len(error) <= 200 else error[:199] + "…"

    @staticmethod
    def _agent_handles(view: RunView) -> list[str]:
        return [seat.handle for seat in view.seats_with_role("agent")]

    def _names(self, view: RunView) -> dict[str, str]:
        return {h: view.seats[h].name for h in self._agent_handles(view)}

    def _positions(self, view: RunView) -> list[dict[str, Any]]:
        positions = []
        for handle, name in self._names(view).items():
            payload = view.payload(key_independent(handle))
            if payload is not None:
                positions.append({"agent": name, "handle": handle, **dict(payload)})
        return positions

    def _answered_names(self, view: RunView) -> tuple[str, ...]:
        """The agents who gave a Round 1 position, in seat order: the only agents a later answer may name."""
        return tuple(
            name
            for handle, name in self._names(view).items()
            if view.payload(key_independent(handle)) is not None
        )

    def _early(self, view: RunView) -> EarlyCheck:
        config = self.view_config(view)
        synthesis = view.payload(KEY_SYNTHESIS)
        if synthesis is None:
            return EarlyCheck(checked=False)
        clean, _ = synthesis_clean(synthesis)
        return early_termination(
            mode=config.mode,
            threshold=config.consensus_threshold,
            positions=self._positions(view),
            synthesis=clean,
        )

    def _common(self, view: RunView, seat: str) -> dict[str, Any]:
        config = self.view_config(view)
        return {
            "name": view.seats[seat].name,
            "lens": view.seats[seat].lens,
            "mode": config.mode,
            "agents": list(self._names(view).values()),
        }

    def _independent_step(self, view: RunView, handle: str) -> Step:
        return Step(
            key=key_independent(handle),
            seat=handle,
            stage="independent",
            task="independent",
            schema=schema.IndependentPosition,
            sees=(),  # independent: no agent sees another's position
            context=self._common(view, handle),
        )

    def _synthesis_step(self, view: RunView, answered: list[str]) -> Step:
        return Step(
            key=KEY_SYNTHESIS,
            seat="judge",
            stage="synthesis",
            task="synthesis",
            schema=schema.synthesis_schema(self._answered_names(view)),
            sees=tuple(key_independent(h) for h in answered),
            context={**self._common(view, "judge"), "positions": self._positions(view)},
        )

    def _reply_step(self, view: RunView, handle: str, synthesis: Mapping[str, Any]) -> Step:
        consensus = sorted(synthesis["consensus_points"], key=lambda p: -float(p["confidence"]))
        return Step(
            key=key_reply(handle),
            seat=handle,
            stage="cross_exam",
            task="cross_exam",
            schema=schema.cross_exam_reply_schema(self._answered_names(view)),
            # Its own R1 position and the filtered synthesis (in the context), nothing of the other agents'.
            sees=(key_independent(handle),),
            context={
                **self._common(view, handle),
                "own_position": dict(view.payload(key_independent(handle)) or {}),
                "consensus_points": consensus[:R3_CONSENSUS_SHOWN],
                "tensions": list(synthesis["tensions"])[:R3_TENSIONS_SHOWN],
                "instruction": "Challenge the consensus or defend your position.",
            },
        )

    def _cross_exam_step(self, view: RunView, replied: list[str], synthesis: Mapping[str, Any]) -> Step:
        names = self._names(view)
        return Step(
            key=KEY_CROSS_EXAM,
            seat="judge",
            stage="cross_exam",
            task="cross_exam_judge",
            sees=None,  # the judge synthesises every reply of the round
            schema=schema.cross_exam_synthesis_schema(
                tuple(names[h] for h in replied), self._answered_names(view)
            ),
            context={
                **self._common(view, "judge"),
                "replies": [{"agent": names[h], **dict(view.payload(key_reply(h)) or {})} for h in replied],
                "tensions": list(synthesis["tensions"]),
            },
        )

    def _verdict_step(self, view: RunView, synthesis: Mapping[str, Any]) -> Step:
        config = self.view_config(view)
        cross = view.payload(KEY_CROSS_EXAM) or {}
        return Step(
            key=KEY_VERDICT,
            seat="judge",
            stage="verdict",
            task="verdict",
            sees=None,  # the verdict weighs the whole consultation
            schema=(
                schema.verdict_explore_schema if config.mode == "explore" else schema.verdict_converge_schema
            )(self._answered_names(view)),
            context={
                **self._common(view, "judge"),
                "positions": self._positions(view),
                "consensus_points": list(synthesis["consensus_points"]),
                "tensions": list(synthesis["tensions"]),
                "mean_confidence": round(mean_confidence(synthesis["consensus_points"]), 3),
                "challenges": list(cross.get("challenges", []))[:R4_CHALLENGES_SHOWN],
                "rebuttals": list(cross.get("rebuttals", []))[:R4_REBUTTALS_SHOWN],
                "unresolved": list(cross.get("unresolved", [])),
            },
        )

    # --- the state machine --------------------------------------------------------------------------------------

    def states(self, view: RunView, plan: Plan | None) -> list[Transition]:
        current = view.state or "idle"
        if current in TERMINAL:
            return []
        target, reason = self._target(view, plan)
        reasons = {**self._reasons(view), target: reason}
        return transitions_to(current, target, reasons)

    def _target(self, view: RunView, plan: Plan | None) -> tuple[str, str]:
        if isinstance(plan, Done):
            if plan.failed:
                return "aborted", plan.reason or "Aborted."
            return "complete", plan.reason or str(plan.outcome.get("reason") or "Complete.")
        if isinstance(plan, Steps) and plan.steps:
            stage = plan.steps[0].stage
            return stage, self._reasons(view).get(stage, "")
        if view.consent == "declined":
            return "aborted", "The moderator declined the estimated cost: no model was called."
        reasons = self._reasons(view)
        if view.consent == "required":
            return "awaiting_consent", reasons["awaiting_consent"]
        return "independent", reasons["independent"]

    def _reasons(self, view: RunView) -> dict[str, str]:
        """Why the consultation enters each state, as far as the view tells."""
        config = self.view_config(view)
        agents = len(self._agent_handles(view))
        estimate = view.estimate_usd
        threshold = self.threshold(config)
        if estimate is None:
            estimated = "No priced model: there is no estimate to approve."
            started = "Started without consent: no estimate."
        else:
            estimated, started = consent_reasons(view.consent, view.state, estimate, threshold)
        return {
            "estimating": f"Consultation of {agents} agents created ({config.mode} mode): estimating its cost.",
            "awaiting_consent": estimated,
            "independent": started,
            "synthesis": f"Round 1 done: {len(self._positions(view))} of {agents} independent positions.",
            "cross_exam": self._early(view).reason or "Round 2 done: the agents cross-examine the synthesis.",
            "verdict": "Round 3 done: the judge gives the verdict.",
        }

    @staticmethod
    def threshold(config: ConsultationConfig) -> Decimal:
        """The estimated cost this consultation starts at without consent."""
        if config.auto_approve_under_usd is not None:
            return config.auto_approve_under_usd
        return Decimal(str(conf("CONSENT_THRESHOLD_USD")))

    # --- what code fills and flags ------------------------------------------------------------------------------

    def accept(self, step: Step, payload: BaseModel, view: RunView) -> Accepted:
        """The answer in the seed's stored shape, with what no schema can check flagged: empty texts, a
        confidence outside 0-1 (clamped), lists longer than stated (the first items kept), an agent named twice,
        a challenge of oneself, a reply that neither challenges nor defends, a low-confidence verdict without
        dissent and an option listed twice. Every reference to an agent is already an enum of the schema."""
        answer = payload.model_dump(mode="json")
        flags: list[Flag] = []
        if step.task == "independent":
            answer = accept_independent(answer, flags)
        elif step.task == "synthesis":
            answer = accept_synthesis(answer, flags)
        elif step.task == "cross_exam":
            answer = accept_reply(answer, flags, own=view.seats[step.seat].name)
        elif step.task == "cross_exam_judge":
            replies = step.context.get("replies") or []
            answer = accept_cross_exam(answer, flags, challenged=any(r.get("challenges") for r in replies))
        elif step.task == "verdict":
            answer = accept_verdict(answer, flags)
        return Accepted(answer, tuple(flags))

    # --- effects of a commit: the round artifact ----------------------------------------------------------------

    def on_commit(self, step: Step, payload: Mapping[str, Any], effects: Effects) -> None:
        if step.task not in ARTIFACT_TYPES:
            return
        round_number, artifact_type = ARTIFACT_TYPES[step.task]
        created_at = timezone.now().isoformat()
        event: dict[str, Any] = {
            "consultation_id": exports.consultation_id(effects.run_id),
            "round_number": round_number,
            "artifact_type": artifact_type,
            "turn": step.key,
            "agent": step.seat if step.task == "independent" else "",
        }
        try:
            event["artifact"] = artifact_build(
                step.task, payload, agent=str(step.context.get("name", step.seat)), created_at=created_at
            )
        except ValidationError as error:  # kept visible, never fails the commit of a turn already validated
            event["errors"] = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()]
        if step.task == "synthesis":
            event["warnings"] = synthesis_clean(payload)[1]
        effects.event_append("round_artifact", event)

    # --- progress and outcome -----------------------------------------------------------------------------------

    def expected_turns(self, view: RunView) -> int:
        config = self.view_config(view)
        agents = len(self._agent_handles(view))
        rounds = config.max_rounds
        if view.payload(KEY_SYNTHESIS) is not None and self._early(view).terminate:
            rounds = 2
        expected = (
            agents
            + (1 if rounds >= 2 else 0)
            + (agents + 1 if rounds >= 3 else 0)
            + (1 if rounds >= 4 else 0)
        )
        return max(expected, len(view.turns))

    def _outcome(self, view: RunView, status: str, reason: str) -> dict[str, Any]:
        config = self.view_config(view)
        names = self._names(view)
        synthesis_payload = view.payload(KEY_SYNTHESIS)
        synthesis, warnings = synthesis_clean(synthesis_payload) if synthesis_payload else (None, [])
        early = self._early(view)
        cross = view.payload(KEY_CROSS_EXAM)
        verdict = view.payload(KEY_VERDICT)
        replies = [
            {"agent": name, **dict(view.payload(key_reply(h)) or {})}
            for h, name in names.items()
            if view.payload(key_reply(h)) is not None
        ]
        rounds = [
            n
            for n, done in (
                (1, bool(self._positions(view))),
                (2, synthesis is not None),
                (3, cross is not None),
                (4, verdict is not None),
            )
            if done
        ]
        outcome: dict[str, Any] = {
            "protocol": self.name,
            "schema_version": schema.SCHEMA_VERSION,
            "question": view.topic,
            "mode": config.mode,
            "status": status,
            "reason": reason,
            "agents": list(names.values()),
            "failed_agents": [
                name
                for h, name in names.items()
                if view.finished(key_independent(h)) and view.payload(key_independent(h)) is None
            ],
            "consensus_threshold": config.consensus_threshold,
            "completed_rounds": rounds,
            "positions": self._positions(view),
            "synthesis": synthesis,
            "mean_confidence": round(mean_confidence(synthesis["consensus_points"]), 3)
            if synthesis
            else None,
            "warnings": warnings,
            "early_termination": early.as_dict() if synthesis else None,
            "replies": replies,
            "cross_exam": dict(cross) if cross else None,
            "verdict": dict(verdict) if verdict else None,
            "estimate_usd": str(view.estimate_usd) if view.estimate_usd is not None else None,
            "cost_usd": str(view.cost_usd),
        }
        if verdict and config.mode == "explore":
            options = [
                [f"o{n}", str(option["option"])]
                for n, option in enumerate(verdict["recommendations"], start=1)
            ]
            outcome["pick_options"] = options
            outcome["judge_pick"] = options[0][0]  # the judge lists the options most promising first
        return outcome
