"""The KB debate's section of the new-run form: who moderates, how long the debate runs, and whether proposed
KB changes skip the approval inbox."""

from __future__ import annotations

from typing import Any

from django import forms

from debates.protocols.form import FormSection


class KbDebateForm(FormSection):
    template = "debates/protocols/forms/kb_debate.html"

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

    def config(self, data: dict[str, Any]) -> dict[str, Any] | None:
        max_turns = data.get("max_turns") or 16
        return {
            "moderator": data.get("kb_moderator") or "agent",
            "max_turns": max_turns,
            "min_turns": min(12, max_turns),
            "auto_approve": data["auto_approve"],
        }
