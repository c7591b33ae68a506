"""Turn outputs of the KB-grounded adversarial debate (seed 002), in two shapes.

The stored shape (`Opening`, `DebaterTurn`, `ModeratorTurn`, `Synthesis`, `VerdictReview`): what a committed turn's
payload holds and what the ledger, the page, the exports and the signals read.

The shape a seat is asked for (`opening_schema`, `turn_schema`, `moderator_schema`, `synthesis_schema`,
`REVIEW_SCHEMA`): built per step from the run's state, so an answer that honours the schema can only refer to what
exists. Argument ids and source paths are enums of the KB's, ledger entries and turns enums of those that exist, a
turn's move an enum of the moves open to its seat, the verdict an enum of the verdicts the ledger allows; what
code knows (the entry and turn a debater answers, the entry a pending objection is about) is not asked at all.
Lengths and counts are stated for the models that honour them, not enforced: the protocol's `accept` maps the
answer to the stored shape, trims and flags (debates.protocols.schemas)."""

from __future__ import annotations

import typing
from functools import lru_cache
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from debates.protocols.schemas import STRICT, choice
from kb.models import CONTRADICTION_TYPES, EDGE_TYPES, SOURCE_TYPES, STATUSES

SCHEMA_VERSION = "1.0"

ARG_ID = r"^arg-[0-9]{3,}$"
ENTRY_ID = r"^L-[0-9]{3,}$"
Strength = Literal["robust", "strong", "contested", "weak", "refuted", "baseless"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Claim(_Strict):
    text: str = Field(min_length=1, max_length=300, description="The claim in one line.")
    args: list[str] = Field(
        default_factory=list, max_length=8, description="Cited argument ids, e.g. arg-007."
    )
    sources: list[str] = Field(default_factory=list, max_length=5, description="Cited kb/sources/... paths.")
    presented_as: Strength = Field(
        description="How strong you present the claim; never above the KB rating of what you cite."
    )


class Mutation(_Strict):
    """A proposed KB change; applied only through the discipline (downgrade only, logged, never deleting)."""

    kind: Literal[
        "status-downgrade",
        "new-edge",
        "contradiction-added",
        "criticism-append",
        "traceback-append",
        "new-source",
    ]
    arg_id: str = Field(
        default="",
        description="status-downgrade / traceback-append: the argument; new-source: the one disputed.",
    )
    to: str = Field(default="", description="status-downgrade: the new, lower status.")
    src: str = Field(default="", description="new-edge: from this argument.")
    edge_type: str = Field(default="", description="new-edge: refutes, exaggerates, confounds, ...")
    target: str = Field(default="", description="new-edge: to this argument or source path.")
    source: str = Field(default="", description="criticism-append: the source path.")
    title: str = Field(default="", max_length=300, description="contradiction-added: its title.")
    contradiction_type: str = Field(default="", description="contradiction-added: its type.")
    arguments: list[str] = Field(default_factory=list, max_length=6, description="contradiction-added.")
    text: str = Field(
        default="",
        max_length=2000,
        description="What is appended or described; new-source: its content as read.",
    )
    # new-source: the source a debater read to settle a source dispute (seed 002's source-dispute sub-flow).
    authors: list[str] = Field(default_factory=list, max_length=8, description="new-source: its authors.")
    year: str = Field(default="", max_length=4, description="new-source: its year.")
    source_type: str = Field(default="", description="new-source: peer-reviewed, media, institutional, ...")
    journal_or_source: str = Field(default="", max_length=300, description="new-source: where it appeared.")
    url: str = Field(default="", max_length=500, description="new-source: the URL it was read at.")
    doi: str = Field(default="", max_length=200, description="new-source: its DOI.")
    key_finding: str = Field(default="", max_length=500, description="new-source: its key finding, one line.")
    disputes: str = Field(default="", description="new-source: the KB source whose traceback it settles.")
    criticism: str = Field(
        default="", max_length=1000, description="new-source: what it shows about `disputes`."
    )
    note: str = Field(default="", max_length=1000, description="new-source: the traceback note on `arg_id`.")
    justification: str = Field(min_length=1, max_length=1000, description="Cite the debate turn(s).")


class Opening(_Strict):
    summary: str = Field(min_length=1, max_length=2000)
    claims: list[Claim] = Field(min_length=1, max_length=5)
    mutations: list[Mutation] = Field(default_factory=list, max_length=3)


class RespondsTo(_Strict):
    entry: str = Field(pattern=ENTRY_ID, description="The ledger entry answered.")
    turn: int = Field(ge=1, description="The debate turn answered.")


class Objection(_Strict):
    entry: str = Field(pattern=ENTRY_ID, description="Your closed entry you object to (once).")
    text: str = Field(min_length=1, max_length=2000)
    new_args: list[str] = Field(default_factory=list, max_length=5)
    new_sources: list[str] = Field(default_factory=list, max_length=5)


class DebaterTurn(_Strict):
    responds_to: RespondsTo
    move: Literal["rebut", "partial-rebut", "defend", "concede"] = Field(
        description="rebut / partial-rebut an opponent's entry; defend or concede your own."
    )
    text: str = Field(min_length=1, max_length=4000)
    claims: list[Claim] = Field(default_factory=list, max_length=4)
    objection: Objection | None = None
    mutations: list[Mutation] = Field(default_factory=list, max_length=3)


class Press(_Strict):
    entry: str = Field(pattern=ENTRY_ID)
    text: str = Field(min_length=1, max_length=1000)


class Callout(_Strict):
    type: Literal[
        "overreach", "secondhand-citation", "baseless-as-robust", "ignored-contradiction", "reraised-closed"
    ]
    position: str
    turn: int = Field(ge=1)
    text: str = Field(min_length=1, max_length=1000)


class Deflection(_Strict):
    position: str
    cited_args: list[str] = Field(min_length=1, max_length=5)
    turns: list[int] = Field(min_length=1, max_length=8)
    target_arg: str = Field(pattern=ARG_ID)
    text: str = Field(default="", max_length=1000)


class Ruling(_Strict):
    entry: str = Field(pattern=ENTRY_ID)
    arg_id: str = Field(pattern=ARG_ID)
    closed_as: Literal["refuted", "baseless", "source-debunked"]
    justification: str = Field(min_length=1, max_length=1500, description="The traceback finding.")
    turns: list[int] = Field(min_length=1, max_length=10, description="Debate turns the ruling rests on.")


class ObjectionDecision(_Strict):
    entry: str = Field(pattern=ENTRY_ID)
    decision: Literal["reaffirm", "reverse"]
    text: str = Field(min_length=1, max_length=1000)


class ModeratorTurn(_Strict):
    text: str = Field(min_length=1, max_length=3000)
    presses: list[Press] = Field(default_factory=list, max_length=4)
    callouts: list[Callout] = Field(default_factory=list, max_length=6)
    deflections: list[Deflection] = Field(default_factory=list, max_length=3)
    rulings: list[Ruling] = Field(default_factory=list, max_length=3)
    objection_decisions: list[ObjectionDecision] = Field(default_factory=list, max_length=3)
    mutations: list[Mutation] = Field(default_factory=list, max_length=3)


VerdictLabel = Literal[
    "better-grounded", "engagement-asymmetry", "genuinely-contested", "unresolved-by-corpus"
]


class Verdict(_Strict):
    label: VerdictLabel
    position: str = Field(
        default="", description="For better-grounded / engagement-asymmetry: which position."
    )
    evidence: str = Field(
        min_length=1, max_length=2000, description="Evidentiary strength of central claims."
    )
    engagement: str = Field(min_length=1, max_length=2000, description="Engagement with central questions.")


class Synthesis(_Strict):
    text: str = Field(min_length=1, max_length=6000, description="The structured account, in Markdown.")
    verdict: Verdict


class VerdictReview(_Strict):
    decision: Literal["accept", "dissent"]
    text: str = Field(default="", max_length=3000)


# --- what a seat is asked: step schemas built from the run's state ------------------------------------------------

# A rating an argument can be downgraded to (nothing is downgraded to the top).
LOWER_STATUSES = tuple(status for status in STATUSES if status != "robust")
VERDICT_LABELS: tuple[str, ...] = typing.get_args(VerdictLabel)
# The labels that name the position they favour ("better-grounded:pro-x"); the others stand alone.
POSITIONED_LABELS = ("better-grounded", "engagement-asymmetry")
CALLOUT_TYPES = typing.get_args(typing.get_type_hints(Callout)["type"])
CLOSURE_KINDS = typing.get_args(typing.get_type_hints(Ruling)["closed_as"])


def _model(name: str, **fields: Any) -> type[BaseModel]:
    """A step schema's object: no property beyond its fields (additionalProperties false)."""
    return create_model(name, __config__=STRICT, **fields)


def _list_of(item: Any) -> Any:
    """The type of a list of `item` (a type built at run time)."""
    return list[item]  # type: ignore[valid-type]


def verdict_value(label: str, position: str) -> str:
    """A verdict as the synthesis picks it from its enum: "better-grounded:pro-x", "genuinely-contested"."""
    return f"{label}:{position}" if label in POSITIONED_LABELS else label


VERDICT_WORDS = {
    "better-grounded": "Better grounded",
    "engagement-asymmetry": "Engagement asymmetry",
    "genuinely-contested": "Genuinely contested",
    "unresolved-by-corpus": "Unresolved by the knowledge base",
}


def verdict_words(label: str, position_name: str = "") -> str:
    """A verdict as people read it: "Better grounded: For pricing", "Genuinely contested"."""
    words = VERDICT_WORDS.get(label, label.replace("-", " ").capitalize())
    return f"{words}: {position_name}" if position_name and label in POSITIONED_LABELS else words


def verdict_parts(value: str) -> tuple[str, str]:
    """(label, position) of a picked verdict; position "" for a balanced one."""
    label, _, position = value.partition(":")
    return label, position


def _asked(
    description: str = "", *, default: Any = ..., default_factory: Any = None, **constraints: Any
) -> Any:
    """A field as asked: its description, and the constraints the schema states for the models that honour them
    but validation does not enforce (debates.protocols.schemas.stated); `accept` trims and flags instead."""
    extra = constraints or None
    if default_factory is not None:
        return Field(
            default_factory=default_factory, description=description or None, json_schema_extra=extra
        )
    return Field(default, description=description or None, json_schema_extra=extra)


def _justification() -> Any:
    return (str, _asked("Why, citing the debate turn(s) it rests on.", minLength=1, maxLength=1000))


def _appended() -> Any:
    return (str, _asked("What is appended or described.", minLength=1, maxLength=2000))


@lru_cache(maxsize=64)
def _mutation_type(args: tuple[str, ...], sources: tuple[str, ...]) -> Any:
    """A proposed KB change, one object shape per kind, every reference an enum of what the KB holds. The
    discipline still refuses what breaks its rules (a promotion, an edge of the wrong kind) and keeps it as a
    finding."""
    arg = choice(args)
    models: list[type[BaseModel]] = [
        _model(
            "StatusDowngrade",
            kind=(choice(("status-downgrade",)), ...),
            arg_id=(arg, _asked("The argument whose rating goes down.")),
            to=(choice(LOWER_STATUSES), _asked("Its new rating, lower than its rating now.")),
            justification=_justification(),
        ),
        _model(
            "NewEdge",
            kind=(choice(("new-edge",)), ...),
            src=(arg, _asked("From this argument.")),
            edge_type=(choice(EDGE_TYPES), ...),
            target=(
                choice(args + sources),
                _asked("To this argument, or to a source path for derived-from-source."),
            ),
            justification=_justification(),
        ),
        _model(
            "TracebackAppend",
            kind=(choice(("traceback-append",)), ...),
            arg_id=(arg, _asked("The argument whose traceback gets the note.")),
            text=_appended(),
            justification=_justification(),
        ),
        _model(
            "ContradictionAdded",
            kind=(choice(("contradiction-added",)), ...),
            title=(str, _asked("The contradiction's title.", minLength=1, maxLength=300)),
            contradiction_type=(choice(CONTRADICTION_TYPES), ...),
            arguments=(_list_of(arg), _asked("The arguments involved.", maxItems=6)),
            text=_appended(),
            justification=_justification(),
        ),
    ]
    source: dict[str, Any] = {
        "kind": (choice(("new-source",)), ...),
        "title": (str, _asked("The source's title.", minLength=1, maxLength=300)),
        "authors": (
            _list_of(str),
            _asked("Its authors, if it names them.", default_factory=list, maxItems=8),
        ),
        "year": (str, _asked("Its year of publication (YYYY), if known.", default="", maxLength=4)),
        "source_type": (choice(SOURCE_TYPES), ...),
        "journal_or_source": (str, _asked("Where it appeared.", default="", maxLength=300)),
        "url": (
            str,
            _asked("The URL you read it at (https://…); a DOI may stand in.", default="", maxLength=500),
        ),
        "doi": (str, _asked("Its DOI (10.NNNN/…), if it has one.", default="", maxLength=200)),
        "key_finding": (str, _asked("Its key finding in one line.", minLength=1, maxLength=500)),
        "text": (
            str,
            _asked("Its content as you read it: figures, samples, CIs.", minLength=1, maxLength=2000),
        ),
        "arg_id": (arg, _asked("The contested argument whose traceback hinged on the disputed source.")),
        "note": (
            str,
            _asked(
                "The traceback note the argument gets: what this source shows.", minLength=1, maxLength=1000
            ),
        ),
    }
    if sources:
        source["disputes"] = (
            choice(sources) | None,
            _asked(
                "The KB source whose traceback was left unresolved, if one: null otherwise.", default=None
            ),
        )
        source["criticism"] = (
            str,
            _asked(
                "What this source shows about the disputed one (its Criticism field).",
                default="",
                maxLength=1000,
            ),
        )
    source["justification"] = _justification()
    models.append(_model("NewSource", **source))
    if sources:
        models.append(
            _model(
                "CriticismAppend",
                kind=(choice(("criticism-append",)), ...),
                source=(choice(sources), _asked("The source criticised.")),
                text=_appended(),
                justification=_justification(),
            )
        )
    return Union[tuple(models)]  # noqa: UP007 (a union of models built at run time)


def _mutations(args: tuple[str, ...], sources: tuple[str, ...]) -> Any:
    return (
        _list_of(_mutation_type(args, sources)),
        _asked(
            "Proposed KB changes (downgrades only; a new source only to settle a source dispute); usually none.",
            default_factory=list,
            maxItems=3,
        ),
    )


@lru_cache(maxsize=64)
def _claim_model(args: tuple[str, ...], sources: tuple[str, ...]) -> type[BaseModel]:
    fields: dict[str, Any] = {
        "text": (str, _asked("The claim in one line.", minLength=1, maxLength=300)),
        "args": (_list_of(choice(args)), _asked("The argument ids it cites.", maxItems=8)),
    }
    if sources:
        fields["sources"] = (
            _list_of(choice(sources)),
            _asked("The source paths behind them.", maxItems=5),
        )
    fields["presented_as"] = (
        Strength,
        _asked("How strong you present it; never above the KB rating of what it cites."),
    )
    return _model("Claim", **fields)


@lru_cache(maxsize=64)
def opening_schema(args: tuple[str, ...], sources: tuple[str, ...]) -> type[BaseModel]:
    """Every debater's opening (one schema for the whole parallel stage): the KB's argument ids and sources."""
    return _model(
        "KbOpening",
        summary=(str, _asked("Your opening in a few lines.", minLength=1, maxLength=2000)),
        claims=(
            _list_of(_claim_model(args, sources)),
            Field(min_length=1, description="Your claims.", json_schema_extra={"maxItems": 5}),
        ),
        mutations=_mutations(args, sources),
    )


@lru_cache(maxsize=256)
def turn_schema(
    args: tuple[str, ...], sources: tuple[str, ...], moves: tuple[str, ...], objectable: tuple[str, ...]
) -> type[BaseModel]:
    """A debater's turn: the moves open to it on the entry it answers (which code records), and an objection
    only when one of its closed claims may still be objected to."""
    fields: dict[str, Any] = {
        "move": (choice(moves), _asked("Your move on the entry you answer.")),
        "text": (str, _asked("Your answer.", minLength=1, maxLength=4000)),
        "claims": (
            _list_of(_claim_model(args, sources)),
            _asked("New claims, each a new ledger entry; only for evidence not cited before.", maxItems=4),
        ),
    }
    if objectable:
        objection: dict[str, Any] = {
            "entry": (choice(objectable), _asked("Your closed claim whose closure you object to.")),
            "text": (str, _asked("Why the ruling should be reconsidered.", minLength=1, maxLength=2000)),
            "new_args": (
                _list_of(choice(args)),
                _asked("Argument ids not cited for it before.", maxItems=5),
            ),
        }
        if sources:
            objection["new_sources"] = (
                _list_of(choice(sources)),
                _asked("Source paths not cited for it before.", maxItems=5),
            )
        fields["objection"] = (
            _model("Objection", **objection) | None,
            _asked("Only to object, once, to a closure: null otherwise.", default=None),
        )
    fields["mutations"] = _mutations(args, sources)
    return _model("KbTurn", **fields)


@lru_cache(maxsize=256)
def moderator_schema(
    args: tuple[str, ...],
    sources: tuple[str, ...],
    positions: tuple[str, ...],
    entries: tuple[str, ...],
    ruled_args: tuple[str, ...],
    turns: tuple[int, ...],
    pending: bool,
) -> type[BaseModel]:
    """A moderator's turn: ledger entries, positions, turns that happened and arguments are enums of those that
    exist; a pending objection's decision is required (the entry it is about is code's to record)."""
    fields: dict[str, Any] = {
        "text": (
            str,
            _asked(
                "Your turn in a few lines; your presses, callouts, deflections, rulings and decision go in their "
                "fields, which the transcript writes out, not here again.",
                minLength=1,
                maxLength=3000,
            ),
        ),
    }
    if entries:
        press = _model(
            "Press",
            entry=(choice(entries), _asked("The ledger entry pressed.")),
            text=(str, _asked("What it must show.", minLength=1, maxLength=1000)),
        )
        fields["presses"] = (_list_of(press), _asked(default_factory=list, maxItems=4))
    if turns:
        callout = _model(
            "Callout",
            type=(
                choice(CALLOUT_TYPES),
                ...,
            ),
            position=(choice(positions), ...),
            turn=(choice(turns), _asked("The turn of the breach.")),
            text=(str, _asked(minLength=1, maxLength=1000)),
        )
        deflection = _model(
            "Deflection",
            position=(choice(positions), ...),
            cited_args=(
                _list_of(choice(args)),
                Field(
                    min_length=1,
                    description="The orbiting arguments it cited.",
                    json_schema_extra={"maxItems": 5},
                ),
            ),
            turns=(
                _list_of(choice(turns)),
                Field(
                    min_length=1,
                    description="Turns in which it cited them.",
                    json_schema_extra={"maxItems": 8},
                ),
            ),
            target_arg=(choice(args), _asked("The central question's argument it did not engage.")),
            text=(
                str,
                _asked(
                    "How the cited arguments miss the target (the transcript writes the callout's opening "
                    "sentence from the fields).",
                    default="",
                    maxLength=1000,
                ),
            ),
        )
        fields["callouts"] = (_list_of(callout), _asked(default_factory=list, maxItems=6))
        fields["deflections"] = (_list_of(deflection), _asked(default_factory=list, maxItems=3))
    if entries and turns and ruled_args:
        ruling = _model(
            "Ruling",
            entry=(choice(entries), _asked("The ledger entry closed.")),
            arg_id=(choice(ruled_args), _asked("The argument it cites that the closure rests on.")),
            closed_as=(choice(CLOSURE_KINDS), ...),
            justification=(str, _asked("The traceback finding.", minLength=1, maxLength=1500)),
            turns=(
                _list_of(choice(turns)),
                Field(
                    min_length=1, description="Turns the ruling rests on.", json_schema_extra={"maxItems": 10}
                ),
            ),
        )
        fields["rulings"] = (_list_of(ruling), _asked(default_factory=list, maxItems=3))
    if pending:
        fields["objection_decision"] = (
            _model(
                "ObjectionDecision",
                decision=(choice(("reaffirm", "reverse")), ...),
                text=(str, _asked(minLength=1, maxLength=1000)),
            ),
            _asked("Your decision on the pending objection (context.pending_objection)."),
        )
    fields["mutations"] = _mutations(args, sources)
    return _model("KbModeration", **fields)


@lru_cache(maxsize=64)
def synthesis_schema(verdicts: tuple[str, ...]) -> type[BaseModel]:
    """The synthesis: its verdict is one of `verdicts` (those the ledger and the engagement findings allow)."""
    verdict = _model(
        "KbVerdict",
        label=(
            choice(verdicts),
            _asked("The verdict (label:position for better-grounded and engagement-asymmetry)."),
        ),
        evidence=(str, _asked("Evidentiary strength of central claims.", minLength=1, maxLength=2000)),
        engagement=(str, _asked("Engagement with central questions.", minLength=1, maxLength=2000)),
    )
    return _model(
        "KbSynthesis",
        text=(
            str,
            _asked(
                "The structured account, in Markdown, without a title or a verdict section of its own: the verdict "
                "field is written after it.",
                minLength=1,
                maxLength=6000,
            ),
        ),
        verdict=(verdict, ...),
    )


REVIEW_SCHEMA: type[BaseModel] = _model(
    "KbVerdictReview",
    decision=(choice(("accept", "dissent")), ...),
    text=(str, _asked(default="", maxLength=3000)),
)
