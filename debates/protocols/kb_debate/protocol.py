"""KB-grounded adversarial debate (seed 002): openings, a claims ledger, interleaved turns chosen by the
orchestrator (open threads first, contested / weak arguments first), a moderator who presses, calls out, rules
closures and hears one objection, downgrade-only KB mutations through the approval inbox, and a synthesis whose
verdict is picked among those the ledger and the engagement edges allow. The plan lives here; what each step asks
is built from the run's state in schema.py, and what an answer becomes when committed (filled in, flagged) in
answers.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from debates import demo as demo_values
from debates.contract import (
    MUTATION_PROPOSED_EVENT,
    Accepted,
    DemoStart,
    Done,
    Effects,
    ExportFormat,
    Panel,
    Plan,
    Protocol,
    RunView,
    SeatSignals,
    SeatSpec,
    Stage,
    Step,
    Steps,
    TurnView,
)
from debates.engine.registry import register
from debates.protocols.kb_debate import answers, exports, schema, signals
from debates.protocols.kb_debate.console import moderator_payload
from debates.protocols.kb_debate.ledger import (
    DEBATE_TASKS,
    FAILURES_IN_A_ROW,
    LIVE,
    RANK,
    KbDebateConfig,
    Ledger,
    debater_handle,
    dismantled,
    engagement,
    ledger_build,
    left_open,
    mutation_payload,
    non_engagement,
    position_label,
    position_of,
    turn_cap,
    turn_key,
    verdicts_allowed,
    verdicts_possible,
    was_answered,
)
from debates.protocols.kb_debate.page import kb_debate_context
from kb.models import KnowledgeBase
from kb.services import kb_graph_material_text, kb_positions

if TYPE_CHECKING:
    from debates.models import Run


# --- the protocol ------------------------------------------------------------------------------------------------


@register
class KbDebate(Protocol[KbDebateConfig]):
    name = "kb-debate"
    title = "Knowledge-base debate (sides argue from a curated KB)"
    task_labels = {
        "opening": "Open the debate",
        "turn": "Debate turn",
        "moderator": "Moderate the debate",
        "synthesis": "Write the synthesis",
        "verdict-review": "Review the verdict",
    }
    description = (
        "Debaters for each position of a knowledge base cite it by argument id; the orchestrator interleaves "
        "their turns on the open threads of a claims ledger, a moderator rules, and a synthesis gives a verdict "
        "on evidence and engagement."
    )
    config_model = KbDebateConfig
    template = "debates/protocols/kb_debate.html"
    panels = (
        # The approvals change only when a change is proposed or decided, not with every commit (most propose none).
        Panel(
            "approvals", per_user=True, refresh_on=frozenset({MUTATION_PROPOSED_EVENT, "mutation_decided"})
        ),
        Panel("ledger"),
    )
    stages = (
        Stage("openings", "Openings"),
        Stage("debate", "Interleaved debate"),
        Stage("synthesis", "Synthesis and verdict"),
        Stage("review", "Verdict review"),
    )
    form = "debates.protocols.kb_debate.form.KbDebateForm"
    # Headless: no human at the moderator's seat, and proposed KB changes are applied through the discipline.
    headless_config = {"moderator": "agent", "auto_approve": True}
    purpose = (
        "One debater per side of a knowledge base argues turn by turn, citing its arguments by id; a moderator "
        "keeps them on the open points of a claims ledger, and a synthesis says whose case is better grounded. "
        "Changes they propose to the knowledge base (downgrades only) wait for your approval."
    )
    when_to_use = (
        "You have a curated knowledge base with two or more positions and want to know which side's evidence "
        "holds up under attack."
    )
    # The demo: an agent moderates, and the KB changes the debaters propose wait in the approval inbox.
    demo = DemoStart(
        topic=demo_values.DEMO_KB_DEBATE_TOPIC,
        kb="congestion-pricing",
        config={"moderator": "agent", "auto_approve": False},
    )
    export_formats = (
        ExportFormat(
            "run-dir",
            build=exports.run_dir_file,
            refusal=exports.RUN_DIR_REFUSAL,
            label="Run directory (zip)",
            url_name="run-export-zip",
            label_id="run-dir-zip",
            needs_kb=True,
            write=exports.run_dir_to,
            directory_note="a run directory is written into a new one",
        ),
    )
    signal_tasks = signals.TASKS

    def seat_signals(
        self,
        outcome: Mapping[str, Any],
        config: Mapping[str, Any],
        names: Mapping[str, str],
        turns: Sequence[tuple[str, str, Any]],
    ) -> SeatSignals:
        return signals.seat_signals(outcome, config, names, turns)

    def page_context(self, run: Run) -> dict[str, Any] | None:

        return kb_debate_context(run) if run.kb_id else None

    def export_json(self, run: Run) -> Mapping[str, Any]:
        return exports.kb_debate_json(run)

    def kb_material(self, kb: Any) -> str:
        """What every seat reads first, in the prompt's shared (cached) part: the KB's argument index, edges,
        contradictions and quality summary as the debate starts (seed 002's debater spawn prompt). Live ratings
        are in each step's context."""
        return kb_graph_material_text(kb)

    def prepare(self, config: dict[str, Any], kb: Any) -> dict[str, Any]:

        if kb is None:
            raise ValueError("kb: a KB debate needs a knowledge base; choose one")
        if kb.kind != KnowledgeBase.GRAPH:
            raise ValueError(f"kb: '{kb.title}' is a data KB; a KB debate needs an argument graph")
        if not kb.is_stable:
            raise ValueError(
                f"kb: '{kb.title}' does not state a stable graph; confirm its stable state first"
            )
        found = kb_positions(kb)
        positions = config.get("positions") or found
        if len(positions) < 2:
            raise ValueError(f"kb: '{kb.title}' has fewer than two positions (pro-… / con-… arguments)")
        unknown = [p for p in positions if p not in found]
        if unknown:
            raise ValueError(
                f"positions: {', '.join(map(str, unknown))} is not a position of '{kb.title}' "
                f"(its positions: {', '.join(found) or 'none'})"
            )
        return {**config, "positions": list(positions)}

    def seats(self, config: KbDebateConfig) -> list[SeatSpec]:
        return [
            *(SeatSpec(debater_handle(p), position_label(p), "debater", lens=p) for p in config.positions),
            SeatSpec("moderator", "Moderator", "moderator", human=config.moderator == "human"),
            SeatSpec("orchestrator", "Orchestrator", "orchestrator"),
        ]

    def expected_turns(self, view: RunView) -> int:
        config = self.view_config(view)
        cap = turn_cap(view, ledger_build(view) if view.kb is not None else None)
        return max(len(view.turns), cap + 1 + (config.moderator == "human"))

    def current_stage(self, view: RunView, plan: Plan) -> str:
        if isinstance(plan, Steps) and plan.steps:
            return plan.steps[0].stage
        return "done" if isinstance(plan, Done) else ""

    # --- planning --------------------------------------------------------------------------------------------

    def plan(self, view: RunView) -> Plan:
        config = self.view_config(view)
        turns = list(view.turns.values())
        openings = [t for t in turns if t.task == "opening"]
        missing = [
            (i + 1, p)
            for i, p in enumerate(config.positions)
            if turn_key(i + 1, "opening", debater_handle(p)) not in view.turns
        ]
        if missing:  # all openings together (one by one when a paused run is stepped)
            return Steps(tuple(self._opening(view, number, p) for number, p in missing))
        unfinished = [t for t in turns if not t.finished]
        if unfinished:  # an interrupted turn is run again with the same key
            return Steps(tuple(self._replan(view, t) for t in unfinished))
        if all(t.failed for t in openings):
            return Done(self._outcome(view, None), failed=True, reason="Every opening failed.")
        ledger = ledger_build(view)
        synthesis = next((t for t in turns if t.task == "synthesis"), None)
        if synthesis is not None:
            return self._after_synthesis(view, ledger, synthesis)
        failed_in_a_row = 0
        for turn in reversed(turns):
            if not turn.failed:
                break
            failed_in_a_row += 1
        if failed_in_a_row >= FAILURES_IN_A_ROW:
            return Done(
                self._outcome(view, ledger),
                failed=True,
                reason=f"{failed_in_a_row} turns failed in a row; the debate cannot go on.",
            )
        number = len(turns) + 1
        debate_turns = sum(1 for t in turns if t.task in DEBATE_TASKS)
        live = [e for e in ledger.entries.values() if e.status in LIVE]
        pending = ledger.pending_objection()
        if debate_turns >= turn_cap(view, ledger) or (
            debate_turns >= config.min_turns and not live and pending is None and not ledger.unhandled_flags()
        ):
            return Steps((self._synthesis(view, ledger, number),))
        since = sum(1 for t in ledger.turns if t.number > ledger.last_moderator and t.task == "turn")
        last_moderator_failed = bool(ledger.turns) and ledger.turns[-1].task == "moderator"
        if not last_moderator_failed and (
            pending is not None or ledger.unhandled_flags() or since >= config.moderator_every
        ):
            return Steps((self._moderator(view, ledger, number),))
        step = self._debater(view, ledger, number)
        if step is None:  # nothing left to argue
            return Steps((self._synthesis(view, ledger, number),))
        return Steps((step,))

    def _replan(self, view: RunView, turn: TurnView) -> Step:
        """The same step as when the interrupted turn was first planned: planned from the turns before it."""
        before = {k: t for k, t in view.turns.items() if k != turn.key}
        earlier = RunView(**{**view.__dict__, "turns": before})
        number = int(turn.key[1:3])
        if turn.task == "opening":
            config = self.view_config(view)
            return self._opening(view, number, position_of(turn.seat, config.positions))
        plan = self.plan(earlier)
        same = next((s for s in plan.steps if s.key == turn.key), None) if isinstance(plan, Steps) else None
        if same is not None:
            return same
        # The KB changed under the plan meanwhile (a proposal approved in the inbox): same seat and task.
        ledger = ledger_build(earlier)
        step: Step | None = None
        if turn.task == "turn":
            config = self.view_config(view)
            step = self._debater(earlier, ledger, number, only=position_of(turn.seat, config.positions))
        elif turn.task == "moderator":
            step = self._moderator(earlier, ledger, number)
        elif turn.task == "synthesis":
            step = self._synthesis(earlier, ledger, number)
        if step is None or step.key != turn.key:
            raise LookupError(f"{turn.key} cannot be planned again: nothing is left for its seat to answer")
        return step

    def _opening(self, view: RunView, number: int, position: str) -> Step:
        seat = debater_handle(position)
        return Step(
            key=turn_key(number, "opening", seat),
            seat=seat,
            stage="openings",
            task="opening",
            schema=schema.opening_schema(*_references(view)),
            sees=(),  # seed 002: openings are independent; in step mode or after a resume no opening reads another
            context={
                "position": position,
                "name": position,
                "lens": position,
                "turn": number,
                **self._kb_brief(view, position),
            },
        )

    def _kb_brief(self, view: RunView, position: str) -> dict[str, Any]:
        kb = view.kb
        assert kb is not None
        return {
            "own_arguments": [
                {"arg": a.arg_id, "status": a.status, "layer": a.layer, "title": a.title}
                for a in kb.arguments.values()
                if a.position == position
            ],
            "central_questions": [
                {"question": n, "text": text, "addressed_by": list(args)}
                for n, text, args in kb.central_questions
            ],
        }

    def _debater(self, view: RunView, ledger: Ledger, number: int, *, only: str = "") -> Step | None:
        """The thread that most needs progressing, and who answers it. In order: the claim the moderator just
        pressed (or reopened) is answered by its asserter; speakers alternate; the exchange of the latest debater
        turn goes on unless it is long already (the asserter defends right after a rebuttal, the rebutter answers
        the defence); claims resting on contested / weak arguments first, the weakest first; open threads before
        partially rebutted ones; older threads first."""
        config = self.view_config(view)
        kb = view.kb
        assert kb is not None
        last_speaker = next((t.position for t in reversed(ledger.turns) if t.task in ("turn", "opening")), "")
        last_debater = max((t.number for t in ledger.turns if t.task in ("turn", "opening")), default=0)
        latest = ledger.turns[-1] if ledger.turns else None
        debate_turns = sum(1 for t in ledger.turns if t.task in DEBATE_TASKS)
        cap = turn_cap(view, ledger)
        covering = self._covering(ledger, cap - debate_turns, config.moderator_every)
        candidates = []
        for entry in ledger.entries.values():
            if entry.status not in LIVE or (covering and entry.id not in covering):
                continue
            last = ledger.turns[entry.thread[-1] - 1]
            if last.task == "moderator" or (last.position and last.position != entry.position):
                answerer = entry.position  # the asserter answers a rebuttal, a press or a reopening
            else:
                others = [p for p in config.positions if p != entry.position]
                answerer = min(
                    others, key=lambda p: sum(1 for n in entry.thread if ledger.turns[n - 1].position == p)
                )
            natural = not only or answerer == only
            answerer = only or answerer
            pressed_now = latest is not None and latest.task == "moderator" and last.number == latest.number
            ratings = [kb.arguments[a].status for a in entry.args if a in kb.arguments]
            shaky = any(status in ("contested", "weak") for status in ratings)
            score = (
                not natural,  # replanning an interrupted turn keeps its seat
                not pressed_now,
                answerer == last_speaker,
                entry.thread[-1] < last_debater or len(entry.thread) > 3,  # a long exchange yields
                not shaky,
                min((RANK.get(status, 3) for status in ratings), default=3),
                entry.status != "open",
                entry.thread[-1],
                entry.id,
            )
            candidates.append((score, entry, answerer, last))
        if not candidates:
            return None
        _, entry, answerer, answered = min(candidates, key=lambda c: c[0])
        seat = debater_handle(answerer)
        answered_payload = dict(answered.payload or {})
        closed = [e.as_dict(kb) for e in ledger.entries.values() if e.closed]
        # An objection must be heard by the moderator: none is taken in the debate's last turn.
        objectable = [
            e.id
            for e in ledger.entries.values()
            if e.closed and e.position == answerer and e.objection is None
        ]
        if debate_turns + 1 >= cap:
            objectable = []
        return Step(
            key=turn_key(number, "turn", seat),
            seat=seat,
            stage="debate",
            task="turn",
            sees=None,  # an interleaved debate: each turn answers what came before
            schema=schema.turn_schema(
                *_references(view),
                ("defend", "concede") if answerer == entry.position else ("rebut", "partial-rebut"),
                tuple(objectable),
            ),
            context={
                "position": answerer,
                "name": answerer,
                "lens": answerer,
                "turn": number,
                "entry": entry.as_dict(kb),
                "answer_turn": answered.number,
                "answer_speaker": answered.position or answered.seat,
                "answer_text": str(answered_payload.get("text") or answered_payload.get("summary") or ""),
                "role": "defend or concede your own claim" if answerer == entry.position else "rebut it",
                "closed_entries": closed,
                "may_object_to": objectable,
                **self._kb_brief(view, answerer),
            },
        )

    @staticmethod
    def _waiting(ledger: Ledger) -> list[str]:
        """The opening claims still live that no debater has answered yet: the claims the turn cap is made for
        (turn_cap); a claim made later may be left unanswered, and the synthesis lists it (left_open)."""
        openings = {t.number for t in ledger.turns if t.task == "opening"}
        return [
            e.id
            for e in ledger.entries.values()
            if e.turn in openings and e.status in LIVE and not was_answered(ledger, e)
        ]

    @classmethod
    def _covering(cls, ledger: Ledger, turns_left: int, moderator_every: int) -> list[str]:
        """The opening claims to take up first, so that each gets an answer before the cap: the unanswered ones,
        once the debater turns left are no more than they are; none until then (the exchanges go on). The turns
        left are counted with the moderator's cadence (a turn every `moderator_every` debater turns)."""
        waiting = cls._waiting(ledger)
        since = sum(1 for t in ledger.turns if t.number > ledger.last_moderator and t.task == "turn")
        debater_turns_left = 0
        for _ in range(max(0, turns_left)):
            if since >= moderator_every:
                since = 0
            else:
                debater_turns_left, since = debater_turns_left + 1, since + 1
        return waiting if debater_turns_left <= len(waiting) else []

    def _moderator(self, view: RunView, ledger: Ledger, number: int) -> Step:
        kb = view.kb
        assert kb is not None
        pending = ledger.pending_objection()
        return Step(
            key=turn_key(number, "moderator", "moderator"),
            seat="moderator",
            stage="debate",
            task="moderator",
            sees=None,  # the moderator rules on the whole debate so far
            schema=schema.moderator_schema(
                *_references(view),
                tuple(self.view_config(view).positions),
                tuple(ledger.entries),
                # The arguments a ruling may rest on: those the ledger's claims cite (which one, code checks).
                tuple(dict.fromkeys(a for e in ledger.entries.values() for a in e.args if a in kb.arguments)),
                tuple(range(1, number)),
                pending is not None,
            ),
            context={
                "name": "Moderator",
                "turn": number,
                "flags": [f.__dict__ for f in ledger.unhandled_flags()],
                "pending_objection": pending.as_dict(kb) if pending else None,
                "ledger": [e.as_dict(kb) for e in ledger.entries.values()],
                "recent_turns": [
                    {"turn": t.number, "position": t.position, "task": t.task}
                    for t in ledger.turns
                    if t.number > ledger.last_moderator
                ],
            },
        )

    def _synthesis(self, view: RunView, ledger: Ledger, number: int) -> Step:
        return Step(
            key=turn_key(number, "synthesis", "orchestrator"),
            seat="orchestrator",
            stage="synthesis",
            task="synthesis",
            sees=None,  # the synthesis reads the whole debate
            # The verdicts the ledger allows; should it allow none, every verdict, and accept flags the pick.
            schema=schema.synthesis_schema(
                tuple(verdicts_allowed(view, ledger) or verdicts_possible(self.view_config(view).positions))
            ),
            context={"name": "Orchestrator", "turn": number, **self._findings(view, ledger)},
        )

    def _findings(self, view: RunView, ledger: Ledger) -> dict[str, Any]:
        config = self.view_config(view)
        kb = view.kb
        assert kb is not None
        return {
            "positions": list(config.positions),
            "engagement": engagement(view, ledger),
            "closed": [e.as_dict(kb) for e in ledger.entries.values() if e.closed],
            "baseless": [
                e.id
                for e in ledger.entries.values()
                if e.args
                and all(kb.arguments.get(a) and kb.arguments[a].status == "baseless" for a in e.args)
            ],
            "dismantled": {p: dismantled(view, ledger, p) for p in config.positions},
            "non_engagement": non_engagement(view, ledger),
            "revisions": [m.revision for m in kb.mutations if m.revision],
            "turn_cap": turn_cap(view, ledger),
            # The claims still live, each with why it was left open.
            "left_open": left_open(ledger, turn_cap(view, ledger)),
        }

    def _after_synthesis(self, view: RunView, ledger: Ledger, synthesis: TurnView) -> Plan:
        config = self.view_config(view)
        if synthesis.failed:
            return Done(
                self._outcome(view, ledger), failed=True, reason=f"The synthesis failed: {synthesis.error}"
            )
        if config.moderator == "human":
            review = next((t for t in view.turns.values() if t.task == "verdict-review"), None)
            if review is None:
                number = len(view.turns) + 1
                return Steps(
                    (
                        Step(
                            key=turn_key(number, "verdict-review", "moderator"),
                            seat="moderator",
                            stage="review",
                            task="verdict-review",
                            sees=None,  # the review reads the verdict and its debate
                            schema=schema.REVIEW_SCHEMA,
                            context={
                                "name": "Moderator",
                                "verdict": dict((synthesis.payload or {})["verdict"]),
                            },
                        ),
                    )
                )
        return Done(self._outcome(view, ledger))

    def _outcome(self, view: RunView, ledger: Ledger | None) -> dict[str, Any]:
        kb = view.kb
        synthesis = next((t for t in view.turns.values() if t.task == "synthesis" and t.committed), None)
        review = next((t for t in view.turns.values() if t.task == "verdict-review" and t.committed), None)
        outcome: dict[str, Any] = {
            "mode": "full" if synthesis else "degraded",
            "verdict": dict(synthesis.payload["verdict"]) if synthesis and synthesis.payload else None,
            "synthesis": synthesis.payload.get("text") if synthesis and synthesis.payload else "",
            "review": dict(review.payload) if review and review.payload else None,
            "turns": sum(1 for t in view.turns.values() if t.task in DEBATE_TASKS),
        }
        if ledger is not None and kb is not None:
            outcome["ledger"] = [e.as_dict(kb) for e in ledger.entries.values()]
            outcome.update(self._findings(view, ledger))
        return outcome

    # --- validation and acceptance -----------------------------------------------------------------------------

    def validate(self, step: Step, payload: BaseModel, view: RunView) -> list[str]:
        """Only a human moderator's turn is refused (the console shows why and offers the downgrade a closure
        needs): what the schema cannot rule out of an agent's answer, `accept` leaves out and flags."""
        seat = view.seats.get(step.seat)
        if step.task != "moderator" or seat is None or not seat.human:
            return []
        kb = view.kb
        assert kb is not None
        dumped = payload.model_dump(mode="json")
        problems = answers.moderator_problems(
            dumped.get("rulings", []),
            dumped.get("deflections", []),
            dumped.get("mutations", []),
            ledger_build(_before(view, step)),
            kb,
        )
        return [p.error for p in problems]

    def accept(self, step: Step, payload: BaseModel, view: RunView) -> Accepted:
        kb = view.kb
        assert kb is not None
        if step.task == "opening":
            return answers.opening_accept(payload, kb)
        if step.task == "verdict-review":
            return answers.review_accept(payload)
        before = _before(view, step)
        ledger = ledger_build(before)
        if step.task == "turn":
            return answers.turn_accept(step.context, payload, kb, ledger)
        if step.task == "moderator":
            return answers.moderator_accept(payload, kb, ledger)
        return answers.synthesis_accept(payload, before, ledger)

    # --- effects and human seats -------------------------------------------------------------------------------

    def on_commit(self, step: Step, payload: Mapping[str, Any], effects: Effects) -> None:
        mutations = payload.get("mutations") or []
        if not mutations:
            return
        auto_approve = bool(effects.run_config.get("auto_approve"))
        for mutation in mutations:
            effects.mutation_propose(
                kind=mutation["kind"],
                payload=mutation_payload(mutation),
                proposed_by=step.seat,
                justification=mutation["justification"],
                auto_approve=auto_approve,
            )

    def human_payload(self, step: Step, data: Mapping[str, Any]) -> dict[str, Any]:
        if step.task == "verdict-review":
            return {
                "decision": str(data.get("decision", "")).strip(),
                "text": str(data.get("text", "")).strip(),
            }
        return moderator_payload(data)


def _references(view: RunView) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The KB's argument ids and source paths, the enums every citing step shares (one schema per parallel
    stage)."""
    kb = view.kb
    assert kb is not None
    return tuple(sorted(kb.arguments)), tuple(sorted(kb.sources))


def _before(view: RunView, step: Step) -> RunView:
    """The run as the step was planned: without the step's own turn."""
    return RunView(**{**view.__dict__, "turns": {k: t for k, t in view.turns.items() if k != step.key}})
