"""Market panel (seed 004, the "Multi-Agent Debate × Market Analysis" series), generalised: seats are lens × stance
(default technical / fundamental / macro / sentiment × bull / bear, handles as the seed's: `tech_bull`,
`fund_bear`, `macro_bull`, `senti_bear`), each given only its slice of a JSON data KB, plus a judge that sees the
whole KB.

R1 openings in parallel (2–4 arguments each, ids `<seat>_arg_<n>`, zero-based) → R2 cross-examination paired
within a lens only: serial within a pair (the first stance challenges, then the second challenges back, having
read the first), the pairs in parallel; each side must challenge (refute, question the evidence or dispute in part)
at least half of the opponent's arguments: it answers them one property per argument (schema.cross_schema), an
answer short of half is sent back once to repair (`repair_asks`), and one still short is kept and flagged, its
pair shown as a handshake round when both sides are → R3 closings in parallel
(refined claims with adjusted confidence, concessions, a 50–100-word final stance, conviction change) → R4 the
judge scores every argument on logic / evidence / clarity / persuasiveness (1–10, weights configurable, default
30/30/20/20) and gives the argument trace table UPHELD / WEAKENED / REFUTED, the bull case, the bear case and the
key insight.

Code, not the judge, recomputes every weighted score (a judge's differing figure is shown as a mismatch, never
corrected) and verifies every cited data point against the KB (verified / mismatch / unverified path / inferred);
the judge is given the verification results, and the page shows them.

Each step's schema is built from the run (schema.py): a data point's path is an enum of the KB's paths, a challenge
a property per opponent argument number, an abandoned argument an enum of the stage's argument ids, the argument
count and "every argument scored" required properties. Every answer valid against it is accepted: code fills the
seat, the round, the argument ids, a challenge's target and a refined argument's original claim, and flags (never
refuses) what no schema can check: a figure that is not the KB's, a path outside the seat's slice, a challenge of an
argument the opponent did not make, too few challenges (after the one repair), a stance of the wrong length, a
number out of range.

A run keeps the seat handles it was created with: the plan finds each seat by its lens (`seat_of`), so a run created
before the sentiment seats took the seed's names (`sent_bull`, `r2/cross/sent/1`) still plans, renders and exports
with its own."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from debates import demo as demo_values
from debates.contract import (
    Accepted,
    DemoStart,
    Done,
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
from debates.protocols.fallback import failure_reason
from debates.protocols.market_panel import exports, schema, signals
from debates.protocols.schemas import at_most, clamped, said
from kb.citations import MISMATCH, UNVERIFIED, data_point_verify
from kb.formats.seed004 import leaf_paths, path_get, slice_for

if TYPE_CHECKING:
    from debates.models import Run

DIMENSIONS = schema.DIMENSIONS
DEFAULT_WEIGHTS = {"logic": 30, "evidence": 30, "clarity": 20, "persuasiveness": 20}
DEFAULT_LENSES = ("technical", "fundamental", "macro", "sentiment")
STANCES: tuple[Literal["bull", "bear"], ...] = ("bull", "bear")
# The seed's seat names: tech_bull, fund_bear, macro_bull, senti_bear. Runs created before the sentiment seats were
# named senti_* keep their sent_* seats: the plan finds each seat by its lens (`seat_of`), never by its name.
LENS_PREFIX = {"technical": "tech", "fundamental": "fund", "macro": "macro", "sentiment": "senti"}
# Default slices for the seed's KB shape (the seed's own slice_for_agent mapping was not recoverable: this is the
# obvious reading, see reference/seed-sources.md §4.1). Sections the KB lacks are dropped from the defaults.
DEFAULT_SLICES: dict[str, tuple[str, ...]] = {
    "technical": ("indices", "technicals"),
    "fundamental": ("fundamentals", "sectors"),
    "macro": ("macro", "global_markets"),
    "sentiment": ("sentiment",),
}
LENS_FOCUS = {
    "technical": "price action, trend (moving averages), momentum (RSI, MACD), volatility and volume",
    "fundamental": "valuation (P/E against its long-term average, earnings yield) and sector rotation",
    "macro": "growth, inflation, policy rates, the labour market, the yield curve and global markets",
    "sentiment": "volatility regime (VIX), breadth and the character of volume",
}
VERDICTS = ("UPHELD", "WEAKENED", "REFUTED")
CHALLENGING = ("refute", "question_evidence", "partial")  # a concede does not count toward the half
STANCE_WORDS = {"bull": "upside (bullish)", "bear": "downside (bearish)"}
ARG_ID = re.compile(r"^(?P<seat>[a-z][a-z0-9]*_(?:bull|bear))_arg_(?P<n>\d+)$")
ARG_NUMBER = re.compile(r"_arg_(?P<n>\d+)$")
# A provider caps an enum (OpenAI: 1,000 values, and 15,000 characters past 250): a KB with more paths than this is
# cited by free text, an unknown path flagged.
PATHS_ENUM_MAX = 500
PATHS_ENUM_CHARS = 12_000
MATERIAL_NOTE = (
    "A market panel over a data knowledge base. Each seat receives only its own slice of the data in its step "
    "context; the judge receives the whole knowledge base."
)

Stance = Literal["bull", "bear"]


class MarketPanelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lenses: list[str] = Field(
        default_factory=lambda: list(DEFAULT_LENSES),
        min_length=1,
        max_length=6,
        description="Analytical lenses; each seats a bull and a bear (technical, fundamental, macro, sentiment "
        "or a name of your own with its slice).",
    )
    stances: list[Stance] = Field(
        default_factory=lambda: list(STANCES),
        description="Both stances; the first challenges first in each pair's cross-examination.",
    )
    slices: dict[str, list[str]] = Field(
        default_factory=dict, description="Dotted KB paths per lens; empty: the defaults that the KB has."
    )
    weights: dict[str, int] = Field(
        default_factory=lambda: dict(DEFAULT_WEIGHTS),
        description="Judge weights in percent, summing to 100 (not normalised: a bad sum is refused).",
    )
    arguments_min: int = Field(default=2, ge=1, le=4)
    arguments_max: int = Field(default=4, ge=1, le=4)

    @model_validator(mode="after")
    def _check(self) -> MarketPanelConfig:
        for lens in self.lenses:
            if not re.fullmatch(r"[a-z][a-z0-9]{1,19}", lens):
                raise ValueError(f"lenses: {lens!r} is not a lens name (lowercase letters and digits)")
        if len(set(self.lenses)) != len(self.lenses):
            raise ValueError("lenses: a lens is listed twice")
        prefixes = [lens_prefix(lens) for lens in self.lenses]
        if len(set(prefixes)) != len(prefixes):
            raise ValueError("lenses: two lenses would share a seat prefix")
        if sorted(self.stances) != sorted(STANCES):
            raise ValueError("stances: a market panel seats exactly one bull and one bear per lens")
        if set(self.weights) != set(DIMENSIONS):
            raise ValueError(f"weights: give exactly {', '.join(DIMENSIONS)}")
        if any(w < 0 for w in self.weights.values()):
            raise ValueError("weights: a weight cannot be negative")
        total = sum(self.weights.values())
        if total != 100:
            raise ValueError(f"weights: must sum to 100 (they sum to {total})")
        if self.arguments_min > self.arguments_max:
            raise ValueError("arguments_min: more than arguments_max")
        unknown = set(self.slices) - set(self.lenses)
        if unknown:
            raise ValueError(f"slices: no lens {', '.join(sorted(unknown))} in this panel")
        return self


def lens_prefix(lens: str) -> str:
    return LENS_PREFIX.get(lens, lens)


def seat_handle(lens: str, stance: str) -> str:
    return f"{lens_prefix(lens)}_{stance}"


def seat_name(handle: str) -> str:
    """A seat as pages name it: "tech_bull" is "Technical bull", "judge" "Judge" (as `seats` names them)."""
    prefix, _, stance = handle.rpartition("_")
    if not prefix or not stance:
        return handle.replace("_", " ").capitalize()
    lens = next((lens for lens, p in LENS_PREFIX.items() if p == prefix), prefix)
    return f"{lens.capitalize()} {stance}"


def arg_id(seat: str, number: int) -> str:
    return f"{seat}_arg_{number}"


def arg_label(argument_id: str, *, seat: bool = True) -> str:
    """An argument as people read it: "tech_bull_arg_0" is "Technical bull, argument 1" ("Argument 1" without
    the seat, inside that seat's own turn). Agents cite the id, so pages show it beside this; anything not shaped
    like an id is shown as it is."""
    match = ARG_ID.match(argument_id)
    if match is None:
        # While a cross-examination streams, its targets are numbered before code names their seat ("…_arg_0").
        tail = ARG_NUMBER.search(argument_id)
        return f"Argument {int(tail['n']) + 1}" if tail else argument_id
    number = int(match["n"]) + 1
    return f"{seat_name(match['seat'])}, argument {number}" if seat else f"Argument {number}"


def other_stance(stance: str) -> str:
    return "bear" if stance == "bull" else "bull"


# --- step keys -----------------------------------------------------------------------------------------------------


def key_opening(seat: str) -> str:
    return f"r1/opening/{seat}"


def key_cross(prefix: str, order: int) -> str:
    """`prefix`: the pair's (`Pair.prefix`, its seats' handle before the stance). Order 1: the first stance
    challenges; order 2: the second stance, having read order 1."""
    return f"r2/cross/{prefix}/{order}"


def key_closing(seat: str) -> str:
    return f"r3/closing/{seat}"


KEY_JUDGEMENT = "r4/judgement/judge"


# --- the KB: slices and verification --------------------------------------------------------------------------------


def slices_resolve(config: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each lens's slice paths, checked against the KB: a given path that does not exist is refused by name; the
    defaults keep only the sections the KB has."""
    lenses = list(config.get("lenses") or DEFAULT_LENSES)
    given = dict(config.get("slices") or {})
    resolved: dict[str, list[str]] = {}
    for lens in lenses:
        if lens in given:
            paths = [str(p).strip() for p in given[lens] if str(p).strip()]
            for path in paths:
                try:
                    path_get(data, path)
                except KeyError as missing:
                    raise ValueError(
                        f"slices.{lens}: the knowledge base has no data at {path!r} (no {missing.args[0]!r})"
                    ) from None
        elif lens in DEFAULT_SLICES:
            paths = [p for p in DEFAULT_SLICES[lens] if p in data]
        else:
            raise ValueError(f"slices.{lens}: name the KB paths the {lens} seats may read")
        if not paths:
            raise ValueError(f"slices.{lens}: the knowledge base has none of the {lens} data; give paths")
        resolved[lens] = paths
    return resolved


def slices_parse(text: str) -> dict[str, list[str]]:
    """'lens: path, path' per line (the new-run form's box); an error names the line."""
    slices: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        lens, sep, rest = line.partition(":")
        paths = [p.strip() for p in rest.split(",") if p.strip()]
        if not sep or not lens.strip() or not paths:
            raise ValueError(f"Slices, line {number}: write 'lens: path, path' (got {line!r})")
        slices[lens.strip().lower()] = paths
    return slices


PATH_VALUE = re.compile(
    r"(?P<path>\b[A-Za-z_][\w-]*(?:\.[\w-]+)+)"
    r"(?:\s*(?:=|:|is|at|of|was|stands at)?\s*\(?\s*"
    r"(?P<value>[-+−]?\$?\d[\d,]*(?:\.\d+)?\s*%?(?:/\d+)?)"
    r"|\s*(?:=|:)\s*[\"']?(?P<word>[A-Za-z_][\w-]*))?"
)


def evidence_items(evidence: Any, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The data points an argument (or a challenge's new evidence) cites, in either schema variant: a list of
    {data_point, source} items, or a string in which dotted KB paths are named, each with the value quoted after
    it ('technicals.SPX.rsi_14 = 58.4', 'macro.CPI.latest_value (2.8)'). In a string, a dotted word counts as a
    path only if its first part is a section of the KB."""
    if isinstance(evidence, list):
        return [
            {
                "path": str(item.get("source", "")).strip(),
                "quoted": str(item.get("data_point", "")).strip(),
                "inferred": bool(item.get("inferred")),
            }
            for item in evidence
            if isinstance(item, Mapping)
        ]
    items = []
    for match in PATH_VALUE.finditer(str(evidence or "")):
        path = match.group("path").rstrip(".")
        if path.split(".")[0] not in data:
            continue
        quoted = match.group("value") or match.group("word") or ""
        items.append({"path": path, "quoted": quoted.strip(), "inferred": False})
    return items


def evidence_verify(
    evidence: Any, data: Mapping[str, Any], allowed: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Each cited data point with its verification status against the whole KB; `allowed`: the citing seat's
    slice, so a path outside it (which the seat cannot have read) is marked."""
    checked = []
    for item in evidence_items(evidence, data):
        result = data_point_verify(data, item["path"], item["quoted"] or None, inferred=item["inferred"])
        outside = allowed is not None and not any(
            item["path"] == p or item["path"].startswith(p + ".") for p in allowed
        )
        checked.append(
            {
                "path": item["path"],
                "quoted": item["quoted"],
                "status": result["status"],
                "detail": result["detail"],
                "kb_value": result.get("kb_value"),
                "outside_slice": bool(outside and result["status"] != UNVERIFIED),
            }
        )
    return checked


def evidence_text(evidence: Any) -> str:
    if isinstance(evidence, list):
        return "; ".join(
            f"{item.get('source', '')}: {item.get('data_point', '')}"
            for item in evidence
            if isinstance(item, Mapping)
        )
    return str(evidence or "")


def kb_paths(data: Mapping[str, Any], slices: Mapping[str, Sequence[str]]) -> tuple[str, ...] | None:
    """The KB's paths a data point may cite, as the step schemas' enum (every leaf, so all seats of a stage share
    one schema; a path outside a seat's slice is flagged); None when there are too many for an enum."""
    paths = list(dict.fromkeys(leaf_paths(data) or [p for lens in slices.values() for p in lens]))
    if len(paths) > PATHS_ENUM_MAX or sum(len(p) for p in paths) > PATHS_ENUM_CHARS:
        return None
    return tuple(paths)


def citation_flags(citations: Sequence[Mapping[str, Any]], where: Sequence[str], flags: list[Flag]) -> None:
    """Flag each cited data point that code could not verify: a value that is not the KB's, a path the KB does not
    have, a path outside the citing seat's slice. `where`: each citation's path in the payload."""
    for citation, at in zip(citations, where, strict=True):
        path = citation["path"]
        if citation["status"] == MISMATCH:
            flags.append(
                Flag(
                    "number_mismatch",
                    at,
                    f"{path}: quoted {citation['quoted']}, the knowledge base has {citation['kb_value']}.",
                )
            )
        elif citation["status"] == UNVERIFIED:
            flags.append(Flag("unknown_path", at, f"{path}: {citation['detail']} in the knowledge base."))
        if citation["outside_slice"]:
            flags.append(
                Flag("outside_slice", at, f"{path} is outside this seat's slice of the knowledge base.")
            )


def evidence_accept(
    evidence: Any,
    where: str,
    data: Mapping[str, Any],
    allowed: Sequence[str],
    flags: list[Flag],
    *,
    required: bool,
) -> Any:
    """Evidence as stored (either variant of the seed), with each cited data point verified against the KB and
    flagged where it does not hold; `required`: evidence that cites nothing is flagged (an argument's, not a
    challenge's)."""
    if isinstance(evidence, list):
        items = [
            {
                "data_point": str(item.get("data_point", "")).strip(),
                "source": str(item.get("source", "")).strip(),
                "inferred": bool(item.get("inferred")),
            }
            for item in evidence
            if isinstance(item, Mapping)
        ]
        for number, item in enumerate(items):
            if not item["data_point"] and not item["inferred"]:
                flags.append(Flag("empty", f"{where}.{number}", f"{item['source']}: no value quoted."))
        if required and not items:
            flags.append(Flag("no_citation", where, "No data point of the knowledge base is cited."))
        citations = evidence_verify(items, data, allowed)
        citation_flags(citations, [f"{where}.{n}" for n in range(len(citations))], flags)
        return items
    text = str(evidence or "").strip()
    citations = evidence_verify(text, data, allowed)
    if required and not citations:
        flags.append(Flag("no_citation", where, "The evidence names no path of the knowledge base."))
    citation_flags(citations, [where] * len(citations), flags)
    return text


def texts_accept(items: Sequence[str], limit: int, where: str, flags: list[Flag], what: str) -> list[str]:
    """Short texts (counterpoints, concessions ...) stripped, the empty ones dropped and flagged, at most `limit`."""
    kept = [text.strip() for text in items if text.strip()]
    if len(kept) < len(items):
        flags.append(Flag("empty", where, f"{len(items) - len(kept)} empty {what} dropped."))
    return at_most(kept, limit, where, flags, what)


def fraction_accept(value: float, where: str, flags: list[Flag]) -> float:
    """A confidence within 0–1: one outside is clamped and flagged (not a number: read as 0)."""
    if math.isnan(value):
        flags.append(Flag("out_of_range", where, "Not a number; read as 0."))
        return 0.0
    return clamped(value, 0.0, 1.0, where, flags)


def score_accept(value: int, where: str, flags: list[Flag]) -> int:
    """A judge's score within 1–10: one outside is clamped and flagged."""
    low, high = schema.SCORE_MIN, schema.SCORE_MAX
    if low <= value <= high:
        return value
    kept = min(max(value, low), high)
    shown = str(value) if len(str(value)) <= 12 else f"{str(value)[:12]}…"
    flags.append(Flag("out_of_range", where, f"{shown} is outside {low}–{high}; read as {kept}."))
    return kept


# --- cross-examination and handshakes ---------------------------------------------------------------------------------


def challenge_count(payload: Mapping[str, Any] | None, targets: Sequence[str]) -> int:
    """How many distinct opponent arguments a cross-examination challenged (refute, question_evidence, partial)."""
    if not payload:
        return 0
    wanted = set(targets)
    return len(
        {
            c["target_id"]
            for c in payload.get("challenges", [])
            if c.get("challenge_type") in CHALLENGING and c.get("target_id") in wanted
        }
    )


def half(count: int) -> int:
    return math.ceil(count / 2)


def cross_answers(answer: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """A cross-examination answer's challenges (one property per opponent argument number) as (number, challenge),
    in number order, the null ones left out."""
    found = []
    for key, value in answer.items():
        number = schema.challenge_number(key)
        if number is not None and isinstance(value, Mapping):
            found.append((number, value))
    return sorted(found, key=lambda item: item[0])


def cross_shortfall(payload: Mapping[str, Any] | None, targets: Sequence[str], opponent: str) -> str:
    """Why a cross-examination breaks the seed's rule (it challenges fewer than half of the opponent's
    arguments, a concession not counting), in one sentence; "" when it keeps it."""
    challenged = challenge_count(payload, targets)
    needed = half(len(targets))
    if challenged >= needed:
        return ""
    return (
        f"It challenges {challenged} of {seat_name(opponent)}'s {len(targets)} arguments; each side must challenge at least "
        f"{needed}."
    )


def side_check(seat: str, payload: Mapping[str, Any] | None, targets: Sequence[str]) -> dict[str, Any]:
    challenged = challenge_count(payload, targets)
    needed = half(len(targets))
    return {
        "seat": seat,
        "challenged": challenged,
        "targets": len(targets),
        "needed": needed,
        "short": payload is not None and challenged < needed,
        "missing": payload is None,
    }


# --- the judge's arithmetic -----------------------------------------------------------------------------------------


def weighted_score(scores: Mapping[str, Any], weights: Mapping[str, int]) -> Decimal:
    """Σ score × weight / Σ weights on the 1–10 scale, to two decimals (exact for percent weights)."""
    total = sum((Decimal(int(scores[d])) * weights[d] for d in DIMENSIONS), Decimal(0))
    return (total / sum(weights.values())).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


WEIGHTED_TOLERANCE = Decimal("0.05")  # the judge may round to one decimal


def score_rows(
    judgement: Mapping[str, Any] | None, weights: Mapping[str, int]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The judge's per-argument scores with the weighted score recomputed by code beside the judge's own figure;
    every difference is listed, nothing the judge wrote is changed."""
    rows: dict[str, dict[str, Any]] = {}
    mismatches = []
    for score in (judgement or {}).get("scores", []):
        code = weighted_score(score, weights)
        stated = score.get("weighted")
        differs = stated is not None and abs(Decimal(str(stated)) - code) > WEIGHTED_TOLERANCE
        if differs:
            formula = " + ".join(f"{score[d]} × {weights[d]}" for d in DIMENSIONS)
            mismatches.append(
                f"{score['argument_id']}: the judge wrote weighted {stated}, but ({formula}) / 100 = {float(code):g}"
            )
        rows[score["argument_id"]] = {
            **{d: score[d] for d in DIMENSIONS},
            "weighted": float(code),
            "judge_weighted": stated,
            "weighted_mismatch": differs,
            "status": score["status"],
            "note": score.get("note", ""),
        }
    return rows, mismatches


def words_count(text: str) -> int:
    return len(re.findall(r"[\w’'-]+", text))


# --- the plan ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    lens: str
    first: str  # the seat challenging first
    second: str

    @property
    def prefix(self) -> str:
        """What the pair's seats share before their stance (tech_bull, tech_bear: tech): its cross keys' part."""
        return self.first.rsplit("_", 1)[0]


def seat_of(view: RunView, lens: str, stance: str) -> str:
    """The run's seat for a lens and a stance, found by its lens among the run's seats: a run keeps the handles it
    was created with (one created before the sentiment seats were renamed has sent_bull, not senti_bull)."""
    wanted = f"{lens} / {stance}"
    return next(
        (s.handle for s in view.seats.values() if s.role == "debater" and s.lens == wanted),
        seat_handle(lens, stance),
    )


@dataclass
class Board:
    """Everything the debate has produced so far, read from the committed turns."""

    openings: dict[str, Mapping[str, Any] | None] = field(default_factory=dict)
    crosses: dict[str, Mapping[str, Any] | None] = field(default_factory=dict)  # by challenging seat
    closings: dict[str, Mapping[str, Any] | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@register
class MarketPanel(Protocol[MarketPanelConfig]):
    name = "market-panel"
    title = "Market panel (bulls and bears on market data)"
    task_labels = {
        "opening": "Open with a view",
        "cross": "Challenge another panellist",
        "closing": "Close with a final view",
        "judgement": "Judge the panel",
    }
    description = (
        "Bull and bear seats per analytical lens (technical, fundamental, macro, sentiment), each reading only its "
        "slice of a JSON data KB: openings, paired cross-examination within a lens, closings; a judge scores every "
        "argument on logic / evidence / clarity / persuasiveness and traces it UPHELD / WEAKENED / REFUTED. Code "
        "recomputes the weighted scores and verifies every cited figure against the KB."
    )
    config_model = MarketPanelConfig
    template = "debates/protocols/market_panel.html"
    stages = (
        Stage("openings", "Opening statements"),
        Stage("cross", "Cross-examination"),
        Stage("closings", "Closing statements"),
        Stage("judgement", "Judge"),
        Stage("done", "Trace table"),
    )
    form = "debates.protocols.market_panel.form.MarketPanelForm"
    # Needs --kb with a data KB (e.g. market-2026-q4); slices default to the sections that KB has.
    headless_config = {"lenses": ["technical", "fundamental", "macro", "sentiment"], "arguments_max": 4}
    purpose = (
        "For each angle of analysis (technical, fundamental, macro, sentiment) a bull and a bear argue from their "
        "own slice of a market data set, challenge each other and close; a judge scores every argument. Disputa "
        "checks every quoted figure against the data and recomputes the judge's scores."
    )
    when_to_use = (
        "You have a data set (prices, indicators, surveys) and want its bullish and bearish readings tested "
        "against the numbers."
    )
    demo = DemoStart(
        topic=demo_values.DEMO_MARKET_TOPIC,
        kb="market-2026-q4",
        config=headless_config,
    )

    def seat_signals(
        self,
        outcome: Mapping[str, Any],
        config: Mapping[str, Any],
        names: Mapping[str, str],
        turns: Sequence[tuple[str, str, Any]],
    ) -> SeatSignals:
        return signals.seat_signals(outcome, config, names, turns)

    def arithmetic_mismatches(self, outcome: Mapping[str, Any]) -> list[Any] | None:
        return signals.arithmetic_mismatches(outcome)

    def transcript_sections(self, run: Run) -> list[str]:
        """The Markdown transcript's part of this protocol (after the turns and the outcome): the argument trace
        table with the recomputed scores and the verified figures, as the run page shows it."""
        return exports.transcript_sections(run)

    def kb_material(self, kb: Any) -> str:
        return MATERIAL_NOTE  # never the whole data KB in the shared prompt: each seat reads only its slice

    def prepare(self, config: dict[str, Any], kb: Any) -> dict[str, Any]:
        if kb is None:
            raise ValueError(
                "kb: the market panel needs a data knowledge base (a seed-004 JSON, e.g. market-2026-q4)"
            )
        if getattr(kb, "kind", "") != "data" or not isinstance(kb.data, dict):
            raise ValueError(
                f"kb: '{kb.title}' is an argument graph; the market panel needs a data knowledge base "
                "(a seed-004 JSON)"
            )
        config = dict(config)
        config["slices"] = slices_resolve(config, kb.data)
        return config

    def seats(self, config: MarketPanelConfig) -> list[SeatSpec]:
        seats = [
            SeatSpec(
                seat_handle(lens, stance),
                seat_name(seat_handle(lens, stance)),
                "debater",
                f"{lens} / {stance}",
            )
            for lens in config.lenses
            for stance in config.stances
        ]
        return [*seats, SeatSpec("judge", "Judge", "judge")]

    # --- reading the board ---------------------------------------------------------------------------------------

    def pairs(self, view: RunView) -> list[Pair]:
        """The lenses' pairs with the run's own seat handles (`seat_of`), the first stance first."""
        config = self.view_config(view)
        first, second = config.stances
        return [Pair(lens, seat_of(view, lens, first), seat_of(view, lens, second)) for lens in config.lenses]

    @staticmethod
    def data(view: RunView) -> dict[str, Any]:
        return dict(view.kb.data) if view.kb is not None and view.kb.data is not None else {}

    @staticmethod
    def slice_of(view: RunView, lens: str) -> dict[str, Any]:
        config = view.config
        assert isinstance(config, MarketPanelConfig)
        return slice_for(MarketPanel.data(view), list(config.slices.get(lens, [])))

    def plan(self, view: RunView) -> Plan:
        if not self.data(view):
            return Done(
                {"protocol": self.name}, failed=True, reason="The run has no data knowledge base to debate."
            )
        pairs = self.pairs(view)
        seats = [seat for pair in pairs for seat in (pair.first, pair.second)]
        board = Board()

        pending = [s for s in seats if not view.finished(key_opening(s))]
        if pending:
            return Steps(tuple(self._opening_step(view, s) for s in pending))
        board.openings = {s: view.payload(key_opening(s)) for s in seats}
        for seat in seats:
            if board.openings[seat] is None:
                board.notes.append(
                    f"{seat}'s opening failed ({failure_reason(view, key_opening(seat))}): it has no arguments to score, "
                    "no cross-examination in its pair and no closing."
                )
        if not any(board.openings.values()):
            return Done(
                self._outcome(view, board, None),
                failed=True,
                reason="Every opening failed: nothing to judge.",
            )

        steps = []
        counts = self.opponent_counts(board, pairs)
        for pair in pairs:
            if board.openings[pair.first] is None or board.openings[pair.second] is None:
                continue
            for order, (seat, opponent) in enumerate(
                ((pair.first, pair.second), (pair.second, pair.first)), start=1
            ):
                key = key_cross(pair.prefix, order)
                if not view.finished(key):
                    steps.append(self._cross_step(view, pair, order, seat, opponent, counts))
                    break  # serial within the pair: the second challenges only after the first
                board.crosses[seat] = view.payload(key)
                if board.crosses[seat] is None:
                    board.notes.append(
                        f"{seat}'s cross-examination failed ({failure_reason(view, key)}): "
                        f"{opponent}'s arguments go unchallenged by it."
                    )
        if steps:
            return Steps(tuple(steps))

        live = [s for s in seats if board.openings[s] is not None]
        pending = [s for s in live if not view.finished(key_closing(s))]
        if pending:
            stage_ids = self.argument_ids(board)
            return Steps(tuple(self._closing_step(view, s, board, stage_ids) for s in pending))
        board.closings = {s: view.payload(key_closing(s)) for s in live}
        for seat in live:
            if board.closings[seat] is None:
                board.notes.append(
                    f"{seat}'s closing failed ({failure_reason(view, key_closing(seat))}): its arguments stand as opened."
                )

        if not view.finished(KEY_JUDGEMENT):
            return Steps((self._judgement_step(view, board),))
        judgement = view.payload(KEY_JUDGEMENT)
        if judgement is None:
            board.notes.append(
                f"The judge failed ({failure_reason(view, KEY_JUDGEMENT)}): the arguments, the verified figures and the "
                "handshake flags are shown unscored."
            )
            return Done(
                self._outcome(view, board, None),
                failed=True,
                reason=f"The judge failed ({failure_reason(view, KEY_JUDGEMENT)}).",
            )
        return Done(self._outcome(view, board, judgement))

    # --- steps ---------------------------------------------------------------------------------------------------

    def _seat_common(self, view: RunView, seat: str) -> dict[str, Any]:
        config = self.view_config(view)
        spec = view.seats[seat]
        lens, _, stance = spec.lens.partition(" / ")
        return {
            "name": spec.name,
            "seat": seat,
            "lens": lens,
            "lens_focus": LENS_FOCUS.get(lens, f"the {lens} data in your slice"),
            "stance": stance,
            "argue_for": STANCE_WORDS[stance],
            "slice_paths": list(config.slices[lens]),
            "kb_slice": self.slice_of(view, lens),
        }

    def paths(self, view: RunView) -> tuple[str, ...] | None:
        return kb_paths(self.data(view), self.view_config(view).slices)

    def argument_ids(self, board: Board) -> tuple[str, ...]:
        """Every argument of the committed openings, in seat order: the enum of the stage's references (the same
        for every seat of the stage, so they share one schema)."""
        return tuple(
            a["id"] for seat, opening in board.openings.items() for a in self._arguments(seat, opening)
        )

    def opponent_counts(self, board: Board, pairs: Sequence[Pair]) -> tuple[int, int]:
        """(fewest, most) arguments of a seat that is challenged in the cross-examination (both openings of its
        pair committed): the stage's cross schema requires the fewest and offers the most, the same for every
        seat of the stage (they share one schema)."""
        counts = [
            len(self._arguments(seat, board.openings[seat]))
            for pair in pairs
            if board.openings[pair.first] is not None and board.openings[pair.second] is not None
            for seat in (pair.first, pair.second)
        ]
        return (min(counts), max(counts)) if counts else (0, 0)

    def _opening_step(self, view: RunView, seat: str) -> Step:
        config = self.view_config(view)
        return Step(
            key=key_opening(seat),
            seat=seat,
            stage="openings",
            task="opening",
            schema=schema.opening_schema(self.paths(view), config.arguments_min, config.arguments_max),
            sees=(),  # openings are independent: no seat reads another's
            context={
                **self._seat_common(view, seat),
                "arguments_min": config.arguments_min,
                "arguments_max": config.arguments_max,
                "argument_ids": [arg_id(seat, n) for n in range(config.arguments_max)],
            },
        )

    def _arguments(self, seat: str, opening: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        return [
            {**dict(arg), "id": arg_id(seat, n)} for n, arg in enumerate((opening or {}).get("arguments", []))
        ]

    def _cross_step(
        self, view: RunView, pair: Pair, order: int, seat: str, opponent: str, counts: tuple[int, int]
    ) -> Step:
        opening = view.payload(key_opening(opponent))
        sees: tuple[str, ...] = (key_opening(pair.first), key_opening(pair.second))
        if order == 2:
            sees += (key_cross(pair.prefix, 1),)
        context = {
            **self._seat_common(view, seat),
            "opponent": opponent,
            "opponent_arguments": self._arguments(opponent, opening),
            "must_challenge": half(len((opening or {}).get("arguments", []))),
            "order": order,
        }
        if order == 2:
            context["challenges_received"] = list(
                (view.payload(key_cross(pair.prefix, 1)) or {}).get("challenges", [])
            )
        return Step(
            key=key_cross(pair.prefix, order),
            seat=seat,
            stage="cross",
            task="cross",
            schema=schema.cross_schema(self.paths(view), *counts),
            sees=sees,  # only this lens's openings (and the first challenge): no other pair's turns
            context=context,
        )

    def _closing_step(self, view: RunView, seat: str, board: Board, stage_ids: tuple[str, ...]) -> Step:
        lens = view.seats[seat].lens.partition(" / ")[0]
        pair = next(p for p in self.pairs(view) if p.lens == lens)
        opponent = pair.second if seat == pair.first else pair.first
        received = (board.crosses.get(opponent) or {}).get("challenges", [])
        return Step(
            key=key_closing(seat),
            seat=seat,
            stage="closings",
            task="closing",
            schema=schema.closing_schema(stage_ids),
            sees=(key_opening(pair.first), key_opening(pair.second), f"r2/cross/{pair.prefix}/"),
            context={
                **self._seat_common(view, seat),
                "opponent": opponent,
                "own_arguments": self._arguments(seat, board.openings[seat]),
                "challenges_received": list(received),
                "opponent_arguments": self._arguments(opponent, board.openings.get(opponent)),
            },
        )

    def _judgement_step(self, view: RunView, board: Board) -> Step:
        config = self.view_config(view)
        traced = self._trace(view, board, None)
        return Step(
            key=KEY_JUDGEMENT,
            seat="judge",
            stage="judgement",
            task="judgement",
            sees=None,  # the judge scores the whole panel
            schema=schema.judgement_schema(tuple(row["id"] for row in traced["rows"])),
            context={
                "name": view.seats["judge"].name,
                "lens": "neutral judge of debate quality",
                "weights": dict(config.weights),
                "kb": self.data(view),  # the whole KB: the judge cross-checks every citation
                "arguments": [
                    {
                        "id": row["id"],
                        "seat": row["seat"],
                        "claim": row["claim"],
                        "confidence": row["confidence"],
                        "citations": row["citations"],
                        "challenges": [
                            {"by": c["by"], "type": c["challenge_type"]} for c in row["challenges"]
                        ],
                        "closing": row["closing"],
                    }
                    for row in traced["rows"]
                ],
                "mismatches": traced["mismatches"],
                "unknown_paths": traced["unknown_paths"],
                "handshakes": traced["handshakes"],
                "notes": list(board.notes),
            },
        )

    # --- accepting an answer: what code knows filled in, what it cannot verify flagged --------------------------------

    def repair_asks(self, step: Step, payload: BaseModel, view: RunView) -> list[str]:
        """What a schema-valid answer is sent back once to repair, then committed whatever it says (`accept` flags
        what still breaks the rule): a cross-examination that challenges (refutes, questions the evidence of or
        partly disputes) fewer than half of the opponent's arguments. The seed's rule ("challenge or refute at
        least half"), which no schema can count: it is enforced by asking, not by refusing, so a model that only
        honours the schema still completes the run. The engine calls this on a turn's first answer only."""
        if step.task != "cross":
            return []
        targets = [a["id"] for a in step.context["opponent_arguments"]]
        answer = payload.model_dump(mode="json", by_alias=True)
        stored = {
            "challenges": [
                {"target_id": targets[n], "challenge_type": c["challenge_type"]}
                for n, c in cross_answers(answer)
                if n < len(targets)
            ]
        }
        short = cross_shortfall(stored, targets, step.context["opponent"])
        if not short:
            return []
        fields = ", ".join(schema.challenge_field(n) for n in range(len(targets)))
        return [
            f"{fields}: {short} Challenge (refute, question_evidence or partial) at least half; concede only what "
            "truly holds."
        ]

    def accept(self, step: Step, payload: BaseModel, view: RunView) -> Accepted:
        """Every answer valid against its step's schema is usable (`validate` has nothing to add): references are
        enums, the argument count and the challenges' targets are properties. Code fills the seat, the round, the
        argument ids, a challenge's target and a refined argument's original claim, maps the answer to the stored
        shape and flags what it cannot verify (a cross-examination still short of the half rule after its one
        repair, `repair_asks`, among them)."""
        answer = payload.model_dump(mode="json", by_alias=True)
        flags: list[Flag] = []
        if step.task == "opening":
            stored = self._accept_opening(step, answer, view, flags)
        elif step.task == "cross":
            stored = self._accept_cross(step, answer, view, flags)
        elif step.task == "closing":
            stored = self._accept_closing(step, answer, flags)
        elif step.task == "judgement":
            stored = self._accept_judgement(answer, flags)
        else:
            stored = answer
        return Accepted(stored, tuple(flags))

    def _accept_opening(
        self, step: Step, answer: Mapping[str, Any], view: RunView, flags: list[Flag]
    ) -> dict[str, Any]:
        context = step.context
        data, allowed = self.data(view), context["slice_paths"]
        given = [answer.get(schema.argument_field(n)) for n in range(context["arguments_max"])]
        arguments: list[dict[str, Any]] = []
        for argument in (a for a in given if a is not None):
            where = f"arguments.{len(arguments)}"
            claim = said(argument["claim"], f"{where}.claim", flags, "claim")
            if len(claim) > schema.CLAIM_MAX:
                flags.append(
                    Flag(
                        "claim_too_long", f"{where}.claim", f"{len(claim)} characters; a claim is under 100."
                    )
                )
            arguments.append(
                {
                    "id": arg_id(step.seat, len(arguments)),
                    "claim": claim,
                    "evidence": evidence_accept(
                        argument["evidence"], f"{where}.evidence", data, allowed, flags, required=True
                    ),
                    "confidence": fraction_accept(argument["confidence"], f"{where}.confidence", flags),
                    "counterpoints": texts_accept(
                        argument["counterpoints"],
                        schema.NOTES_MAX,
                        f"{where}.counterpoints",
                        flags,
                        "counterpoints",
                    ),
                    "assumptions": texts_accept(
                        argument["assumptions"],
                        schema.NOTES_MAX,
                        f"{where}.assumptions",
                        flags,
                        "assumptions",
                    ),
                }
            )
        return {"agent": step.seat, "round": "opening", "arguments": arguments}

    def _accept_cross(
        self, step: Step, answer: Mapping[str, Any], view: RunView, flags: list[Flag]
    ) -> dict[str, Any]:
        context = step.context
        data, allowed, opponent = self.data(view), context["slice_paths"], context["opponent"]
        targets = [a["id"] for a in context["opponent_arguments"]]
        challenges: list[dict[str, Any]] = []
        for number, challenge in cross_answers(answer):
            if number >= len(targets):
                flags.append(
                    Flag(
                        "not_opponent_argument",
                        schema.challenge_field(number),
                        f"{opponent} made no argument {number} (its arguments: {', '.join(targets)}): dropped.",
                    )
                )
                continue
            where = f"challenges.{len(challenges)}"
            challenges.append(
                {
                    "target_id": targets[number],
                    "challenge_type": challenge["challenge_type"],
                    "reasoning": said(challenge["reasoning"], f"{where}.reasoning", flags, "reasoning"),
                    "new_evidence": evidence_accept(
                        challenge["new_evidence"],
                        f"{where}.new_evidence",
                        data,
                        allowed,
                        flags,
                        required=False,
                    ),
                }
            )
        stored = {"challenges": challenges}
        if not challenges:
            flags.append(Flag("no_challenge", "", f"No challenge of {opponent}'s arguments is left."))
        elif short := cross_shortfall(stored, targets, opponent):
            flags.append(Flag("too_few_challenges", "challenges", short))
        return stored

    def _accept_closing(self, step: Step, answer: Mapping[str, Any], flags: list[Flag]) -> dict[str, Any]:
        claims = {a["id"]: a.get("claim", "") for a in step.context["own_arguments"]}

        def own(argument_id: str, what: str) -> bool:
            if argument_id not in claims:
                flags.append(
                    Flag(
                        "not_own_argument",
                        what,
                        f"{argument_id} is not one of {step.seat}'s arguments ({', '.join(claims)}): dropped.",
                    )
                )
            return argument_id in claims

        abandoned: list[str] = []
        for argument_id in answer["abandoned"]:
            if own(argument_id, "abandoned") and argument_id not in abandoned:
                abandoned.append(argument_id)
        refined: list[dict[str, Any]] = []
        for claim in answer["refined_claims"]:
            argument_id = claim["argument_id"]
            if not own(argument_id, "refined_claims"):
                continue
            if argument_id in abandoned:
                flags.append(
                    Flag(
                        "refined_and_abandoned",
                        "refined_claims",
                        f"{argument_id} is both refined and abandoned: read as abandoned.",
                    )
                )
                continue
            if any(r["argument_id"] == argument_id for r in refined):
                flags.append(
                    Flag("duplicate", "refined_claims", f"{argument_id} is refined twice: the first is kept.")
                )
                continue
            where = f"refined_claims.{len(refined)}"
            refined.append(
                {
                    "argument_id": argument_id,
                    "original": claims[argument_id],
                    "refinement": said(claim["refinement"], f"{where}.refinement", flags, "refinement"),
                    "confidence_adjusted": fraction_accept(
                        claim["confidence_adjusted"], f"{where}.confidence_adjusted", flags
                    ),
                }
            )
        stance = said(answer["final_stance"], "final_stance", flags, "final stance")
        words = words_count(stance)
        low, high = schema.STANCE_WORDS
        if stance and not low <= words <= high:
            flags.append(
                Flag("stance_length", "final_stance", f"{words} words; the final stance asks {low}–{high}.")
            )
        return {
            "refined_claims": refined,
            "abandoned": abandoned,
            "concessions": texts_accept(
                answer["concessions"], schema.CONCESSIONS_MAX, "concessions", flags, "concessions"
            ),
            "final_stance": stance,
            "conviction_change": answer["conviction_change"],
        }

    def _accept_judgement(self, answer: Mapping[str, Any], flags: list[Flag]) -> dict[str, Any]:
        scores = []
        for number, (argument_id, score) in enumerate(answer["scores"].items()):
            where = f"scores.{number}"
            scores.append(
                {
                    "argument_id": argument_id,
                    **{d: score_accept(score[d], f"{where}.{d}", flags) for d in DIMENSIONS},
                    "weighted": score["weighted"],  # the judge's own figure, compared, never corrected
                    "status": score["status"],
                    "note": score["note"].strip(),
                }
            )
        synthesis = {
            part: said(text, f"synthesis.{part}", flags, part.replace("_", " "))
            for part, text in answer["synthesis"].items()
        }
        return {
            "scores": scores,
            "synthesis": synthesis,
            "stronger_case": answer["stronger_case"],
            "evidence_issues": texts_accept(
                answer["evidence_issues"], schema.ISSUES_MAX, "evidence_issues", flags, "evidence issues"
            ),
        }

    # --- progress and outcome ------------------------------------------------------------------------------------

    def expected_turns(self, view: RunView) -> int:
        config = self.view_config(view)
        seats = 2 * len(config.lenses)
        return max(len(view.turns), 3 * seats + 1)

    def _trace(self, view: RunView, board: Board, judgement: Mapping[str, Any] | None) -> dict[str, Any]:
        """The argument rows (claims, verified citations, challenges received, closing status, scores), the
        pairs with their handshake checks, and the figures that do not match the KB."""
        config = self.view_config(view)
        data = self.data(view)
        scores, score_mismatches = score_rows(judgement, config.weights)
        rows: list[dict[str, Any]] = []
        mismatches: list[dict[str, Any]] = []
        unknown: list[dict[str, Any]] = []
        pairs: list[dict[str, Any]] = []

        def note_citations(citations: list[dict[str, Any]], seat: str, where: str, where_label: str) -> None:
            # `where` for exports and tests (the ids agents use); `where_label` for people, the id beside it.
            for c in citations:
                if c["status"] == MISMATCH:
                    mismatches.append({"seat": seat, "where": where, "where_label": where_label, **c})
                elif c["status"] == UNVERIFIED:
                    unknown.append({"seat": seat, "where": where, "where_label": where_label, **c})

        for pair in self.pairs(view):
            allowed = config.slices[pair.lens]
            sides = []
            for seat, opponent in ((pair.first, pair.second), (pair.second, pair.first)):
                targets = [a["id"] for a in self._arguments(opponent, board.openings.get(opponent))]
                if seat in board.crosses or (board.openings.get(seat) and board.openings.get(opponent)):
                    sides.append(side_check(seat, board.crosses.get(seat), targets))
                for number, challenge in enumerate((board.crosses.get(seat) or {}).get("challenges", [])):
                    citations = evidence_verify(challenge.get("new_evidence"), data, allowed)
                    target = str(challenge.get("target_id") or "")
                    note_citations(
                        citations,
                        seat,
                        f"challenge {number + 1} on {target}",
                        f"challenge {number + 1}, on {arg_label(target)} ({target})",
                    )
            shorts = [s for s in sides if s["short"]]
            pairs.append(
                {
                    "lens": pair.lens,
                    "first": pair.first,
                    "second": pair.second,
                    "sides": sides,
                    "handshake": len(shorts) == 2,
                    "short": [s["seat"] for s in shorts],
                }
            )
            for seat in (pair.first, pair.second):
                opponent = pair.second if seat == pair.first else pair.first
                received = [
                    {"by": opponent, **dict(c)}
                    for c in (board.crosses.get(opponent) or {}).get("challenges", [])
                ]
                closing = board.closings.get(seat)
                refined = {
                    c.get("argument_id"): c
                    for c in (closing or {}).get("refined_claims", [])
                    if c.get("argument_id")
                }
                abandoned = set((closing or {}).get("abandoned", []))
                for argument in self._arguments(seat, board.openings.get(seat)):
                    citations = evidence_verify(argument.get("evidence"), data, allowed)
                    note_citations(
                        citations,
                        seat,
                        argument["id"],
                        f"{arg_label(argument['id'], seat=False).lower()} ({argument['id']})",
                    )
                    if argument["id"] in abandoned:
                        after = {"state": "abandoned"}
                    elif argument["id"] in refined:
                        after = {
                            "state": "refined",
                            "refinement": refined[argument["id"]].get("refinement", ""),
                            "confidence_adjusted": refined[argument["id"]].get("confidence_adjusted"),
                        }
                    else:
                        after = {"state": "no closing" if closing is None else "not addressed"}
                    mine = [c for c in received if c.get("target_id") == argument["id"]]
                    rows.append(
                        {
                            "id": argument["id"],
                            "seat": seat,
                            "lens": pair.lens,
                            "stance": seat.rsplit("_", 1)[1],
                            "claim": argument.get("claim", ""),
                            "confidence": argument.get("confidence"),
                            "evidence": evidence_text(argument.get("evidence")),
                            "counterpoints": list(argument.get("counterpoints", [])),
                            "assumptions": list(argument.get("assumptions", [])),
                            "citations": citations,
                            "challenges": mine,
                            "closing": after,
                            "score": scores.get(argument["id"]),
                        }
                    )
        handshakes = []
        for p in pairs:
            for side in p["sides"]:
                if side["short"]:
                    handshakes.append(
                        {
                            "lens": p["lens"],
                            "seat": side["seat"],
                            "kind": "handshake" if p["handshake"] else "short",
                            "text": f"{side['seat']} challenged {side['challenged']} of {side['targets']} "
                            f"opposing arguments (each side must challenge at least {side['needed']})",
                        }
                    )
        return {
            "rows": rows,
            "pairs": pairs,
            "handshakes": handshakes,
            "mismatches": mismatches,
            "unknown_paths": unknown,
            "score_mismatches": score_mismatches,
        }

    def _outcome(self, view: RunView, board: Board, judgement: Mapping[str, Any] | None) -> dict[str, Any]:
        config = self.view_config(view)
        traced = self._trace(view, board, judgement)
        rows = traced["rows"]
        flags = []
        for row in rows:
            score = row["score"]
            if not score:
                continue
            bad = [c for c in row["citations"] if c["status"] == MISMATCH]
            if score["status"] == "UPHELD" and bad:
                flags.append(f"{row['id']} is UPHELD although it quotes a figure that does not match the KB.")
            if score["status"] == "UPHELD" and row["closing"]["state"] == "abandoned":
                flags.append(f"{row['id']} is UPHELD although {row['seat']} abandoned it in its closing.")
        if judgement:
            missing = sorted(
                {r["id"] for r in rows} - {s["argument_id"] for s in judgement.get("scores", [])}
            )
            flags += [f"{i} was not scored by the judge." for i in missing]
        means: dict[str, float | None] = {}
        for stance in config.stances:
            scored = [r["score"]["weighted"] for r in rows if r["stance"] == stance and r["score"]]
            means[stance] = round(sum(scored) / len(scored), 2) if scored else None
        lean = judgement.get("stronger_case", "") if judgement else ""
        if lean and all(m is not None for m in means.values()):
            leader = max(means, key=lambda s: means[s] or 0)
            if means["bull"] != means["bear"] and lean != leader:
                flags.append(
                    f"The judge finds the {lean} case stronger, but the {leader} arguments have the higher mean "
                    f"recomputed weighted score ({means[leader]} vs {means[lean]})."
                )
        verdicts = {v: sum(1 for r in rows if r["score"] and r["score"]["status"] == v) for v in VERDICTS}
        closings = {
            seat: {
                "conviction_change": c.get("conviction_change"),
                "concessions": list(c.get("concessions", [])),
                "final_stance": c.get("final_stance", ""),
            }
            for seat, c in board.closings.items()
            if c
        }
        outcome = {
            "protocol": self.name,
            "topic": view.topic,
            "kb": view.kb.slug if view.kb else "",
            "weights": dict(config.weights),
            "lenses": list(config.lenses),
            "slices": {k: list(v) for k, v in config.slices.items()},
            "seats": [seat for pair in self.pairs(view) for seat in (pair.first, pair.second)],
            "rows": rows,
            "pairs": traced["pairs"],
            "handshakes": traced["handshakes"],
            "mismatches": traced["mismatches"],
            "unknown_paths": traced["unknown_paths"],
            "score_mismatches": traced["score_mismatches"],
            "flags": flags,
            "verdicts": verdicts,
            "stance_means": means,
            "closings": closings,
            "notes": list(board.notes),
            "judged": judgement is not None,
            "synthesis": dict(judgement["synthesis"]) if judgement else None,
            "evidence_issues": list((judgement or {}).get("evidence_issues", [])),
            "judge_pick": lean,
            "pick_options": [["bull", "Bull case"], ["bear", "Bear case"]],
        }
        outcome["chart"] = chart_config(outcome) if judgement else None
        return outcome


STANCE_COLOURS = {
    "bull": ("#1f7a3f", "#5fa877", "#97c9a4", "#c7e3cd"),
    "bear": ("#b3261e", "#d3655d", "#e79a94", "#f3cbc7"),
}


def chart_config(outcome: Mapping[str, Any]) -> dict[str, Any]:
    """Chart.js config: each argument's recomputed weighted score (1–10), grouped by seat: one dataset per argument
    number, bull seats in greens and bear seats in reds."""
    seats = list(outcome["seats"])
    by_seat: dict[str, dict[int, float]] = {s: {} for s in seats}
    for row in outcome["rows"]:
        if row["score"]:
            number = int(row["id"].rsplit("_", 1)[1])
            by_seat[row["seat"]][number] = row["score"]["weighted"]
    most = max((len(v) for v in by_seat.values()), default=0)
    numbers = sorted({n for v in by_seat.values() for n in v}) or list(range(most))
    datasets = []
    for n in numbers:
        datasets.append(
            {
                "label": f"argument {n + 1}",
                "data": [by_seat[s].get(n) for s in seats],
                "backgroundColor": [STANCE_COLOURS[s.rsplit("_", 1)[1]][min(n, 3)] for s in seats],
            }
        )
    return {
        "type": "bar",
        "data": {"labels": [seat_name(s) for s in seats], "datasets": datasets},
        "options": {
            "animation": False,
            "maintainAspectRatio": False,
            "scales": {
                "y": {"min": 0, "max": 10, "title": {"display": True, "text": "weighted score (recomputed)"}}
            },
            "plugins": {
                "legend": {"display": False},
                "title": {"display": True, "text": "Argument scores by seat"},
            },
        },
    }
