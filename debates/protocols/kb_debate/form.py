"""The KB debate's section of the new-run form: who moderates, how long the debate runs, and whether proposed
KB changes skip the approval inbox."""

from __future__ import annotations

from typing import Any

from django import forms

from debates.protocols.form import FormSection
from debates.protocols.kb_debate.ledger import TURN_CAP_MAX


class KbDebateForm(FormSection):
    template = "debates/protocols/forms/kb_debate.html"

    kb_moderator = forms.ChoiceField(
        choices=[
            ("agent", "An agent"),
            ("human", "Me: I rule on claims and call out dodges from the run page"),
        ],
        initial="agent",
        required=False,
        widget=forms.RadioSelect,
        label="Moderator",
        help_text="The moderator presses the debaters, calls out evasions and rules which claims are settled.",
    )
    max_turns = forms.IntegerField(
        min_value=4,
        max_value=TURN_CAP_MAX,
        required=False,
        label="Debate turns at most",
        help_text="Opening statements included. Leave it empty to let the debate run as long as its claims need "
        "(every opening claim answered); 12 or more leaves room for the moderator to rule. Claims still open at "
        "the end are listed in the synthesis with the reason.",
    )
    auto_approve = forms.BooleanField(
        required=False,
        label="Apply proposed knowledge-base changes without asking me",
        help_text="Debaters may propose lowering an argument's rating. Unticked, each proposal waits for a "
        "moderator's approval; either way ratings only go down, every change is logged and nothing is deleted.",
    )

    def config(self, data: dict[str, Any]) -> dict[str, Any] | None:
        config = {"moderator": data.get("kb_moderator") or "agent", "auto_approve": data["auto_approve"]}
        max_turns = data.get("max_turns")
        if max_turns:  # the user's cap; none: the cap follows the ledger (ledger.turn_cap)
            config |= {"max_turns": max_turns, "min_turns": min(12, max_turns)}
        return config
