"""Token streaming: deltas are coalesced into at most 20 frames per second per turn, the partial text is saved at
each flush, and a streamed frame renders the structured fields parsed so far."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

from debates.engine import runner
from debates.models import Turn
from tests.conftest import run_to_stop


class RecordingLayer:
    def __init__(self) -> None:
        self.deltas: dict[int, list[tuple[float, str]]] = defaultdict(list)
        self.partials_saved: list[int] = []

    async def group_send(self, group: str, message: dict) -> None:
        if message["type"] == "turn.delta":
            self.deltas[message["first_seq"]].append((time.monotonic(), message["html"]))


@pytest.mark.django_db(transaction=True)
def test_deltas_are_coalesced_to_at_most_20_frames_per_second_per_turn(make_run, monkeypatch):
    layer = RecordingLayer()
    monkeypatch.setattr(runner, "get_channel_layer", lambda: layer)
    run = make_run(backend_options={"cps": 3000})  # a fast model: ~300 characters per flush window
    run_to_stop(run)
    assert run.status == "completed"
    assert len(layer.deltas) == 8
    for frames in layer.deltas.values():
        duration = frames[-1][0] - frames[0][0]
        assert len(frames) >= 2
        assert (len(frames) - 1) / max(duration, 1e-9) <= 20


@pytest.mark.django_db(transaction=True)
def test_each_flush_saves_the_partial_text_and_renders_parsed_fields(make_run, monkeypatch):
    layer = RecordingLayer()
    saved: list[str] = []
    original_flush = runner.turn_flush

    def recording_flush(turn_id, attempt, text, first_token_at):
        saved.append(text)
        original_flush(turn_id, attempt, text, first_token_at)

    monkeypatch.setattr(runner, "get_channel_layer", lambda: layer)
    monkeypatch.setattr(runner, "turn_flush", recording_flush)
    run = make_run(backend_options={"cps": 3000})
    run_to_stop(run)
    analysis = Turn.objects.get(run=run, key="r1/analysis/analyst-ada")
    frames = [html for _, html in layer.deltas[analysis.first_seq]]
    # Partial saves grow towards the committed text (the commit itself saves the whole of it).
    partials = [text for text in saved if analysis.raw_text.startswith(text)]
    assert len(partials) >= 2 and len(partials[0]) < len(analysis.raw_text)
    assert all(len(a) <= len(b) for a, b in zip(partials, partials[1:], strict=False))
    # An early frame already shows the summary as text, not as raw JSON.
    first_with_summary = next(html for html in frames if 'class="summary"' in html)
    assert '{"summary"' not in first_with_summary
    assert (
        f'id="{analysis.dom_id}-live"' in first_with_summary
        and 'hx-swap-oob="outerHTML"' in first_with_summary
    )
