"""Adversarial review (seed 003 family, the Adversarial Debate pattern): an advocate biased toward approval and a
challenger biased toward real issues (exactly 5 concerns ranked by severity, each quoting the artifact, naming the
concrete risk and a fix) work in parallel on the same artifact; a judge then says which advocate arguments
survived, scores every concern genuine vs stretch (1–5), checks whether the challenger pulled its punches, names
agreement and contested zones and 2–3 key narratives, and gives a binary verdict the human confirms or overrides.

Softeners and hedges ("minor nitpick", "it depends", ...) are flagged, not refused: they are shown to the judge
and to the human. So are a quote that is not the artifact's words and a ranking that is not by severity (the
turn's flags, from `accept`); what a schema can carry (one concern per rank, one verdict per strength id, the
score as an enum) the step's schema carries (schema.py). Every rule of the protocol, including its graceful
degradation, lives in this module:

    one side fails   -> the judge judges the survivor alone           (mode "one-sided")
    both sides fail  -> the judge reviews the artifact alone          (mode "single")
    the judge fails  -> both outputs side by side, the human decides  (mode "raw")
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from debates import demo as demo_values
from debates.contract import (
    Accepted,
    DemoStart,
    Done,
    ExportFormat,
    Flag,
    Plan,
    Protocol,
    RunView,
    SeatSignals,
    SeatSpec,
    Stage,
    Step,
    Steps,
)
from debates.engine.registry import register
from debates.protocols.adversarial import exports, schema, signals
from debates.protocols.fallback import Chain, failure_reason
from debates.protocols.schemas import at_most, said

KEY_CASE = "r1/case/advocate"
KEY_CONCERNS = "r1/concerns/challenger"
KEY_JUDGEMENT = "r2/judgement/judge"
KEY_REVIEW = "r2/review/judge"  # the single-agent review, when both sides failed

# The seed bans these in the challenger's brief; the comparative pattern bans the hedges. Both are flagged.
SOFTENERS = ("minor nitpick", "probably fine but", "just a thought")
HEDGES = ("it depends", "either could work")
BANNED_PHRASES = SOFTENERS + HEDGES

VERDICTS = ("approve", "reject")
MODES = ("full", "one-sided", "single", "raw")


class AdversarialConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    artifact_type: str = Field(
        default="proposal",
        min_length=1,
        max_length=60,
        description="What is under review (RFC, design doc, proposal, ...): named in the briefs and the verdict.",
    )
    framework: list[
        Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
    ] = Field(
        default_factory=list, max_length=12, description="Evaluation criteria both sides argue against."
    )


QUOTE_MARKS = str.maketrans("“”‘’", "\"\"''")


def _normalise(text: str) -> str:
    """For quote matching: curly quotes made straight, whitespace collapsed, outer quotes and a trailing
    ellipsis dropped, lower case."""
    text = text.translate(QUOTE_MARKS)
    text = re.sub(r"\s+", " ", text).strip().strip("\"'").strip()
    text = re.sub(r"(\.\.\.|…)$", "", text).strip()
    return text.lower()


MIN_QUOTE_WORDS = 3  # "the" occurs in any artifact: a quote must be long enough to pin a place down


def quote_in(quote: str, material: str) -> bool:
    """Does the quote occur in the material (after normalisation), and is it at least MIN_QUOTE_WORDS words
    (or the whole material, if that is shorter)?"""
    needle, haystack = _normalise(quote), _normalise(material)
    if len(needle.split()) < min(MIN_QUOTE_WORDS, len(haystack.split())):
        return False
    return bool(needle) and needle in haystack


_PHRASE_PATTERNS = {
    phrase: re.compile(r"\b" + r"[\s,;:–—-]+".join(map(re.escape, phrase.split())) + r"\b")
    for phrase in BANNED_PHRASES
}


def softeners_find(texts: Mapping[str, str]) -> list[dict[str, str]]:
    """Banned softeners and hedges in a side's own words: [{phrase, where, excerpt}] in the order of `texts`.
    Quotes of the artifact are not the side's words and are not passed here."""
    found = []
    for where, text in texts.items():
        lowered = re.sub(r"\s+", " ", str(text)).lower()
        for phrase, pattern in _PHRASE_PATTERNS.items():
            for match in pattern.finditer(lowered):
                start = max(0, match.start() - 40)
                found.append({"phrase": phrase, "where": where, "excerpt": lowered[start : match.end() + 40]})
    return found


def case_texts(case: Mapping[str, Any]) -> dict[str, str]:
    texts = {"summary": str(case.get("summary", ""))}
    for strength in case.get("strengths", []) or []:
        texts[f"strength {strength.get('id', '?')}"] = (
            f"{strength.get('point', '')} {strength.get('why_it_matters', '')}"
        )
    for number, tradeoff in enumerate(case.get("tradeoffs_acknowledged", []) or [], start=1):
        texts[f"trade-off {number}"] = str(tradeoff)
    for number, blocker in enumerate(case.get("addressable_blockers", []) or [], start=1):
        texts[f"blocker {number}"] = f"{blocker.get('blocker', '')} {blocker.get('how_addressed', '')}"
    return texts


def concerns_texts(concerns: Mapping[str, Any]) -> dict[str, str]:
    texts = {}
    for number, strength in enumerate(concerns.get("acknowledged_strengths", []) or [], start=1):
        texts[f"acknowledged strength {number}"] = str(strength)
    for concern in concerns.get("concerns", []) or []:
        texts[f"concern {concern.get('rank', '?')}"] = " ".join(
            str(concern.get(k, "")) for k in ("title", "risk", "fix")
        )
    return texts


def _quote_flag(quote: str, where: str, label: str, material: str, artifact: str, flags: list[Flag]) -> str:
    """The quote stripped; one that is not the artifact's words (or too short to pin a place down) is kept and
    flagged, for the judge and the human to discount."""
    quote = quote.strip()
    if not quote_in(quote, material):
        shown = f"“{quote[:80]}”" if quote else "an empty quote"
        flags.append(Flag("unverified_quote", where, f"{label}: not the words of the {artifact}: {shown}."))
    return quote


def _texts(items: Sequence[str], limit: int, where: str, flags: list[Flag], what: str) -> list[str]:
    """A list of free texts: empty ones dropped (flagged), the first `limit` kept (the rest flagged)."""
    kept = []
    for number, text in enumerate(items):
        if text.strip():
            kept.append(text.strip())
        else:
            flags.append(Flag("empty", f"{where}.{number}", f"An empty item of the {what} was dropped."))
    return at_most(kept, limit, where, flags, what)


def _too_few(count: int, least: int, where: str, flags: list[Flag], what: str) -> None:
    if count < least:
        flags.append(Flag("too_few", where, f"{count} {what} given, {least} asked for."))


def _ranked_concerns(
    by_rank: Mapping[str, Mapping[str, Any]], material: str, artifact: str, flags: list[Flag]
) -> list[dict[str, Any]]:
    """One concern per rank (the schema's one property per rank) as the stored list, most severe first; a
    ranking that is not by severity is kept as the seat gave it and flagged."""
    concerns = []
    for index, rank in enumerate(sorted(by_rank, key=int)):
        concern = by_rank[rank]
        where = f"concerns.{index}"
        concerns.append(
            {
                "rank": int(rank),
                "severity": concern["severity"],
                "title": said(concern["title"], f"{where}.title", flags, "title"),
                "quote": _quote_flag(
                    concern["quote"], f"{where}.quote", f"Concern #{rank}", material, artifact, flags
                ),
                "risk": said(concern["risk"], f"{where}.risk", flags, "risk"),
                "fix": said(concern["fix"], f"{where}.fix", flags, "fix"),
            }
        )
    for index, (higher, lower) in enumerate(zip(concerns, concerns[1:], strict=False), start=1):
        if schema.SEVERITY_ORDER[lower["severity"]] > schema.SEVERITY_ORDER[higher["severity"]]:
            flags.append(
                Flag(
                    "severity_order",
                    f"concerns.{index}.severity",
                    f"Concern #{lower['rank']} ({lower['severity']}) is more severe than #{higher['rank']} "
                    f"({higher['severity']}): the ranking is not by severity.",
                )
            )
    return concerns


@register
class Adversarial(Protocol[AdversarialConfig]):
    name = "adversarial"
    title = "Adversarial review (an advocate against a challenger)"
    task_labels = {
        "case": "Make the case",
        "concerns": "Raise the concerns",
        "review": "Review the artifact",
        "judgement": "Judge the review",
    }
    description = (
        "An advocate makes the strongest case that the artifact is ready while a challenger raises exactly 5 "
        "concerns ranked by severity, each quoting the artifact with its risk and a fix; a judge scores each "
        "concern genuine or stretch, checks for pulled punches and gives a binary verdict you confirm or override."
    )
    config_model = AdversarialConfig
    template = "debates/protocols/adversarial.html"
    stages = (
        Stage("positions", "Advocate ∥ Challenger"),
        Stage("judgement", "Judge"),
        Stage("done", "Competitive review"),
    )
    form = "debates.protocols.adversarial.form.AdversarialForm"
    purpose = (
        "An advocate makes the best honest case that a document (an RFC, a design, a plan) is ready, while a "
        "challenger raises its five most serious concerns, each quoting the text; a judge weighs both and says "
        "approve or reject, and you confirm or override."
    )
    when_to_use = "You want a document reviewed hard, from both sides, before you approve it."
    demo = DemoStart(
        topic=demo_values.DEMO_REVIEW_TOPIC,
        material=demo_values.DEMO_REVIEW_MATERIAL,
        config={"artifact_type": "RFC"},
        options={"concerns": "mixed"},
    )
    export_formats = (
        ExportFormat(
            "brief",
            build=exports.review_file,
            refusal=exports.BRIEF_REFUSAL,
            label="Competitive review",
            url_name="run-export-brief",
            outcome_label="Competitive review (Markdown)",
            needs_outcome=True,
        ),
    )

    def seat_signals(
        self,
        outcome: Mapping[str, Any],
        config: Mapping[str, Any],
        names: Mapping[str, str],
        turns: Sequence[tuple[str, str, Any]],
    ) -> SeatSignals:
        return signals.seat_signals(outcome, config, names, turns)

    def seats(self, config: AdversarialConfig) -> list[SeatSpec]:
        artifact = config.artifact_type
        return [
            SeatSpec(
                "advocate",
                "Advocate",
                "advocate",
                f"biased toward approval: the strongest honest case that the {artifact} is ready",
            ),
            SeatSpec(
                "challenger",
                "Challenger",
                "challenger",
                f"senior staff engineer who has seen 50+ {artifact}s fail",
            ),
            SeatSpec(
                "judge", "Judge", "judge", "impartial: discounts nitpicks, rewards evidence from the artifact"
            ),
        ]

    # --- planning -------------------------------------------------------------------------------------------

    def plan(self, view: RunView) -> Plan:
        config = self.view_config(view)
        artifact = config.artifact_type
        if not view.material.strip():
            return Done(
                {}, failed=True, reason=f"There is no {artifact} to review: the run's material is empty."
            )
        pending = [key for key in (KEY_CASE, KEY_CONCERNS) if not view.finished(key)]
        if pending:
            return Steps(tuple(self._side_step(view, key) for key in pending))

        case, concerns = view.payload(KEY_CASE), view.payload(KEY_CONCERNS)
        chain = Chain("full")
        if case is None and concerns is None:
            chain.down(
                "single",
                f"Both sides failed (advocate: {failure_reason(view, KEY_CASE)}; challenger: "
                f"{failure_reason(view, KEY_CONCERNS)}): the judge reviews the {artifact} alone, as a single agent.",
            )
            if not view.finished(KEY_REVIEW):
                return Steps((self._review_step(view),), notices=chain.notices())
            if view.payload(KEY_REVIEW) is None:
                chain.notes.append(
                    f"The single-agent review failed too ({failure_reason(view, KEY_REVIEW)})."
                )
                return Done(
                    self._outcome(view, chain),
                    failed=True,
                    reason="The advocate, the challenger and the single-agent review all failed.",
                )
            return Done(self._outcome(view, chain))

        if case is None or concerns is None:
            failed, survivor = ("advocate", "challenger") if case is None else ("challenger", "advocate")
            chain.down(
                "one-sided",
                f"The {failed} failed ({failure_reason(view, KEY_CASE if case is None else KEY_CONCERNS)}): "
                f"the judge judges the {survivor}'s output alone.",
            )
        if not view.finished(KEY_JUDGEMENT):
            return Steps((self._judgement_step(view, case, concerns, chain.mode),), notices=chain.notices())
        if view.payload(KEY_JUDGEMENT) is None:
            shown = (
                "both outputs are shown side by side"
                if chain.mode == "full"
                else "the surviving output is shown"
            )
            chain.down(
                "raw",
                f"The judge failed ({failure_reason(view, KEY_JUDGEMENT)}): {shown} for you to adjudicate.",
            )
        return Done(self._outcome(view, chain))

    def _common_context(self, view: RunView) -> dict[str, Any]:
        config = self.view_config(view)
        return {"artifact_type": config.artifact_type, "framework": list(config.framework)}

    def _side_step(self, view: RunView, key: str) -> Step:
        model: type[BaseModel]
        if key == KEY_CASE:
            seat, task, model = "advocate", "case", schema.AdvocateCase
            extra: dict[str, Any] = {}
        else:
            seat, task, model = "challenger", "concerns", schema.ChallengerConcerns
            extra = {"concern_count": schema.CONCERN_COUNT, "banned_softeners": list(SOFTENERS)}
        return Step(
            key=key,
            seat=seat,
            stage="positions",
            task=task,
            schema=model,
            sees=(),  # the case and the concerns are written independently of each other
            context={
                "name": view.seats[seat].name,
                "lens": view.seats[seat].lens,
                **self._common_context(view),
                **extra,
            },
        )

    def _judgement_step(
        self,
        view: RunView,
        case: Mapping[str, Any] | None,
        concerns: Mapping[str, Any] | None,
        mode: str,
    ) -> Step:
        return Step(
            key=KEY_JUDGEMENT,
            seat="judge",
            stage="judgement",
            task="judgement",
            sees=None,  # the judge weighs both positions
            schema=schema.judgement_schema(
                tuple(dict.fromkeys(str(s["id"]) for s in (case or {}).get("strengths", []))),
                tuple(
                    str(rank)
                    for rank in sorted({int(c["rank"]) for c in (concerns or {}).get("concerns", [])})
                ),
                case is not None,
            ),
            context={
                "name": view.seats["judge"].name,
                "lens": view.seats["judge"].lens,
                **self._common_context(view),
                "mode": mode,
                "missing": [side for side, p in (("advocate", case), ("challenger", concerns)) if p is None],
                "case": dict(case) if case else None,
                "concerns": dict(concerns) if concerns else None,
                "softeners": self._softeners(case, concerns),
            },
        )

    def _review_step(self, view: RunView) -> Step:
        return Step(
            key=KEY_REVIEW,
            seat="judge",
            stage="judgement",
            task="review",
            sees=None,  # a single reviewer reads the whole record
            schema=schema.SingleReview,
            context={
                "name": view.seats["judge"].name,
                "lens": view.seats["judge"].lens,
                **self._common_context(view),
                "mode": "single",
                "concern_count": schema.CONCERN_COUNT,
                "banned_softeners": list(SOFTENERS),
            },
        )

    @staticmethod
    def _softeners(
        case: Mapping[str, Any] | None, concerns: Mapping[str, Any] | None
    ) -> dict[str, list[dict[str, str]]]:
        return {
            "advocate": softeners_find(case_texts(case)) if case else [],
            "challenger": softeners_find(concerns_texts(concerns)) if concerns else [],
        }

    # --- accepting an answer: what code knows filled in, what no schema can check flagged ------------------

    def accept(self, step: Step, payload: BaseModel, view: RunView) -> Accepted:
        answer = payload.model_dump(mode="json", by_alias=True)
        artifact = str(step.context.get("artifact_type") or "artifact")
        flags: list[Flag] = []
        if step.task == "case":
            stored = self._case_accept(answer, view.material, artifact, flags)
        elif step.task == "concerns":
            stored = self._concerns_accept(answer, view.material, artifact, flags)
        elif step.task == "judgement":
            stored = self._judgement_accept(answer, step, flags)
        else:
            stored = self._review_accept(answer, view.material, artifact, flags)
        return Accepted(stored, tuple(flags))

    @staticmethod
    def _case_accept(
        answer: Mapping[str, Any], material: str, artifact: str, flags: list[Flag]
    ) -> dict[str, Any]:
        given = at_most(answer["strengths"], schema.STRENGTHS_MAX, "strengths", flags, "strengths")
        _too_few(len(given), schema.STRENGTHS_MIN, "strengths", flags, "strengths")
        strengths = []
        for index, strength in enumerate(given):
            strength_id, where = f"s{index + 1}", f"strengths.{index}"
            strengths.append(
                {
                    "id": strength_id,  # numbered by code, in the advocate's order
                    "point": said(strength["point"], f"{where}.point", flags, "point"),
                    "quote": _quote_flag(
                        strength["quote"],
                        f"{where}.quote",
                        f"Strength {strength_id}",
                        material,
                        artifact,
                        flags,
                    ),
                    "why_it_matters": said(strength["why_it_matters"], f"{where}.why_it_matters", flags),
                }
            )
        blockers = at_most(
            answer["addressable_blockers"], schema.LIST_MAX, "addressable_blockers", flags, "blockers"
        )
        return {
            "summary": said(answer["summary"], "summary", flags, "summary"),
            "strengths": strengths,
            "tradeoffs_acknowledged": _texts(
                answer["tradeoffs_acknowledged"],
                schema.LIST_MAX,
                "tradeoffs_acknowledged",
                flags,
                "trade-offs",
            ),
            "addressable_blockers": [
                {
                    "blocker": said(b["blocker"], f"addressable_blockers.{n}.blocker", flags, "blocker"),
                    "how_addressed": said(
                        b["how_addressed"], f"addressable_blockers.{n}.how_addressed", flags, "fix"
                    ),
                }
                for n, b in enumerate(blockers)
            ],
        }

    @staticmethod
    def _concerns_accept(
        answer: Mapping[str, Any], material: str, artifact: str, flags: list[Flag]
    ) -> dict[str, Any]:
        acknowledged = _texts(
            answer["acknowledged_strengths"],
            schema.ACKNOWLEDGED_MAX,
            "acknowledged_strengths",
            flags,
            "acknowledged strengths",
        )
        return {
            "acknowledged_strengths": acknowledged,
            "concerns": _ranked_concerns(answer["concerns"], material, artifact, flags),
        }

    @staticmethod
    def _judgement_accept(answer: Mapping[str, Any], step: Step, flags: list[Flag]) -> dict[str, Any]:
        advocate = step.context.get("case") is not None
        verdicts = (answer.get("advocate_strengths") or {}).items()
        survived: dict[bool, list[dict[str, str]]] = {True: [], False: []}
        for strength_id, verdict in verdicts:
            kept = survived[bool(verdict["survived"])]
            where = f"{'surviving' if verdict['survived'] else 'fallen'}_arguments.{len(kept)}.why"
            kept.append({"strength_id": strength_id, "why": said(verdict["why"], where, flags, "reason")})
        assessments = []
        for rank, assessed in sorted(
            (answer.get("concern_assessments") or {}).items(), key=lambda i: int(i[0])
        ):
            score = int(assessed["score"])
            assessments.append(
                {
                    "rank": int(rank),
                    # Without an advocate nothing was addressed: the schema does not ask.
                    "addressed_by_advocate": bool(assessed.get("addressed_by_advocate")) and advocate,
                    "genuine": "genuine" if score >= schema.GENUINE_FROM else "stretch",
                    "score": score,
                    "note": assessed["note"].strip(),
                }
            )
        pulled = answer.get("pulled_punches")
        narratives = _texts(
            answer["key_narratives"], schema.NARRATIVES_MAX, "key_narratives", flags, "key narratives"
        )
        _too_few(len(narratives), schema.NARRATIVES_MIN, "key_narratives", flags, "key narratives")
        return {
            "surviving_arguments": survived[True],
            "fallen_arguments": survived[
                False
            ],  # the judge's reasons are kept for the strengths that fell too
            "concern_assessments": assessments,
            "pulled_punches": {
                "verdict": pulled["verdict"],
                "explanation": said(
                    pulled["explanation"], "pulled_punches.explanation", flags, "explanation"
                ),
            }
            if pulled
            else None,
            "agreement_zones": _texts(
                answer["agreement_zones"], schema.LIST_MAX, "agreement_zones", flags, "agreement zones"
            ),
            "contested_zones": _texts(
                answer["contested_zones"], schema.LIST_MAX, "contested_zones", flags, "contested zones"
            ),
            "key_narratives": narratives,
            "verdict": answer["verdict"],
            "rationale": said(answer["rationale"], "rationale", flags, "rationale"),
        }

    @staticmethod
    def _review_accept(
        answer: Mapping[str, Any], material: str, artifact: str, flags: list[Flag]
    ) -> dict[str, Any]:
        given = at_most(answer["strengths"], schema.REVIEW_STRENGTHS_MAX, "strengths", flags, "strengths")
        narratives = _texts(
            answer["key_narratives"], schema.NARRATIVES_MAX, "key_narratives", flags, "key narratives"
        )
        _too_few(len(narratives), schema.NARRATIVES_MIN, "key_narratives", flags, "key narratives")
        return {
            "summary": said(answer["summary"], "summary", flags, "summary"),
            "strengths": [
                {
                    "point": said(s["point"], f"strengths.{n}.point", flags, "point"),
                    "quote": _quote_flag(
                        s["quote"], f"strengths.{n}.quote", f"Strength {n + 1}", material, artifact, flags
                    ),
                }
                for n, s in enumerate(given)
            ],
            "concerns": _ranked_concerns(answer["concerns"], material, artifact, flags),
            "key_narratives": narratives,
            "verdict": answer["verdict"],
            "rationale": said(answer["rationale"], "rationale", flags, "rationale"),
        }

    # --- progress and outcome -------------------------------------------------------------------------------

    def expected_turns(self, view: RunView) -> int:
        return max(3, len(view.turns))  # two sides and one judge, whichever way it degrades

    def _outcome(self, view: RunView, chain: Chain) -> dict[str, Any]:
        config = self.view_config(view)
        case = view.payload(KEY_CASE)
        concerns_payload = view.payload(KEY_CONCERNS)
        judgement = view.payload(KEY_JUDGEMENT) if chain.mode in {"full", "one-sided"} else None
        review = view.payload(KEY_REVIEW) if chain.mode == "single" else None
        softeners = self._softeners(case, concerns_payload)

        concerns = None
        if concerns_payload:
            flagged: dict[str, list[str]] = {}
            for flag in softeners["challenger"]:
                flagged.setdefault(flag["where"], []).append(flag["phrase"])
            concerns = {
                "acknowledged_strengths": list(concerns_payload["acknowledged_strengths"]),
                "concerns": [
                    {**dict(c), "softeners": flagged.get(f"concern {c['rank']}", [])}
                    for c in sorted(concerns_payload["concerns"], key=lambda c: c["rank"])
                ],
            }

        assessments = {a["rank"]: a for a in (judgement or {}).get("concern_assessments", [])}
        listed = (concerns or {}).get("concerns") or sorted(
            (review or {}).get("concerns", []), key=lambda c: c["rank"]
        )
        table = []
        for concern in listed:
            assessed = assessments.get(concern["rank"])
            table.append(
                {
                    "rank": concern["rank"],
                    "severity": concern["severity"],
                    "title": concern["title"],
                    "quote": concern["quote"],
                    "addressed": assessed["addressed_by_advocate"] if assessed else None,
                    "genuine": assessed["genuine"] if assessed else "",
                    "score": assessed["score"] if assessed else None,
                    "note": assessed.get("note", "") if assessed else "",
                    "softened": bool(concern.get("softeners")),
                }
            )
        rows = [r for r in table if r["score"] is not None]
        counts = {
            "total": len(table),
            "assessed": len(rows),
            "genuine": sum(1 for r in rows if r["genuine"] == "genuine"),
            "stretch": sum(1 for r in rows if r["genuine"] == "stretch"),
            "unaddressed": sum(1 for r in rows if not r["addressed"]),
            "genuine_unaddressed": sum(1 for r in rows if r["genuine"] == "genuine" and not r["addressed"]),
            "serious_unaddressed": sum(
                1 for r in rows if r["genuine"] == "genuine" and not r["addressed"] and r["score"] >= 4
            ),
        }

        strengths = {s["id"]: s for s in (case or {}).get("strengths", [])}
        surviving = [
            {
                "strength_id": s["strength_id"],
                "point": strengths.get(s["strength_id"], {}).get("point", ""),
                "quote": strengths.get(s["strength_id"], {}).get("quote", ""),
                "why": s["why"],
            }
            for s in (judgement or {}).get("surviving_arguments", [])
        ]
        verdict_from = judgement or review
        verdict = str(verdict_from["verdict"]) if verdict_from else ""
        pulled = (judgement or {}).get("pulled_punches")
        notes = list(chain.notes)
        if pulled and pulled.get("verdict") == "genuine" and softeners["challenger"]:
            phrases = ", ".join(sorted({f"“{f['phrase']}”" for f in softeners["challenger"]}))
            notes.append(
                f"The judge found the challenge genuine although the challenger softened it ({phrases})."
            )
        checks = []
        if verdict == "approve" and counts["serious_unaddressed"] >= 2:
            checks.append(
                f"The judge approves although {counts['serious_unaddressed']} genuine concerns scored 4+ "
                "went unaddressed by the advocate."
            )
        if verdict == "reject" and judgement and counts["assessed"] and not counts["genuine"]:
            checks.append("The judge rejects although it scored every concern a stretch.")

        artifact = config.artifact_type
        return {
            "protocol": self.name,
            "schema_version": schema.SCHEMA_VERSION,
            "question": view.topic,
            "artifact_type": artifact,
            "framework": list(config.framework),
            "mode": chain.mode,
            "degradations": chain.degradations,
            "notes": notes,
            "case": dict(case) if case else None,
            "concerns": concerns,
            "judgement": dict(judgement) if judgement else None,
            "review": dict(review) if review else None,
            "softeners": softeners,
            "concern_table": table,
            "concern_counts": counts,
            "surviving_arguments": surviving,
            "pulled_punches": dict(pulled) if pulled else None,
            "agreement_zones": list((judgement or {}).get("agreement_zones", [])),
            "contested_zones": list((judgement or {}).get("contested_zones", [])),
            "key_narratives": list((verdict_from or {}).get("key_narratives", [])),
            "verdict": verdict,
            "rationale": str(verdict_from["rationale"]) if verdict_from else "",
            "verdict_by": "judge" if judgement else ("single-review" if review else ""),
            "verdict_checks": checks,
            "sided_with": {"approve": "advocate", "reject": "challenger"}.get(verdict, "")
            if judgement
            else "",
            "judge_pick": verdict,
            "pick_options": [["approve", f"Approve the {artifact}"], ["reject", f"Reject the {artifact}"]],
        }
