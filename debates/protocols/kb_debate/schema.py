"""Structured turn outputs of the KB-grounded adversarial debate (seed 002). What depends on the KB and the
ledger (ids that exist, closures that need a downgrade, the verdict's consistency) is checked by the protocol."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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
        "status-downgrade", "new-edge", "contradiction-added", "criticism-append", "traceback-append"
    ]
    arg_id: str = Field(default="", description="status-downgrade / traceback-append: the argument.")
    to: str = Field(default="", description="status-downgrade: the new, lower status.")
    src: str = Field(default="", description="new-edge: from this argument.")
    edge_type: str = Field(default="", description="new-edge: refutes, exaggerates, confounds, ...")
    target: str = Field(default="", description="new-edge: to this argument or source path.")
    source: str = Field(default="", description="criticism-append: the source path.")
    title: str = Field(default="", max_length=300, description="contradiction-added: its title.")
    contradiction_type: str = Field(default="", description="contradiction-added: its type.")
    arguments: list[str] = Field(default_factory=list, max_length=6, description="contradiction-added.")
    text: str = Field(default="", max_length=2000, description="What is appended or described.")
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
