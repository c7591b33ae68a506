"""Token streaming: deltas are coalesced into at most 20 frames per second per turn, the partial text is saved at
the first flush and then at most every PARTIAL_SAVE_SECONDS (every frame carries the whole text so far), and a
streamed frame renders the structured fields parsed so far."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

from debates.engine import stream
from debates.models import Turn
from tests.conftest import run_to_stop


class RecordingLayer:
    def __init__(self) -> None:
        self.deltas: dict[int, list[tuple[float, str]]] = defaultdict(list)
        self.messages: list[tuple[float, dict]] = []

    async def group_send(self, group: str, message: dict) -> None:
        if message["type"] == "turn.delta":
            self.messages.append((time.time(), message))
            for part in message["parts"]:
                self.deltas[part["first_seq"]].append((time.monotonic(), part["html"]))


@pytest.fixture
def layer(monkeypatch) -> RecordingLayer:
    """The runner's channel layer, recording the live messages it is sent."""
    recording = RecordingLayer()
    monkeypatch.setattr(stream, "get_channel_layer", lambda: recording)
    return recording


@pytest.mark.django_db(transaction=True)
def test_deltas_are_coalesced_to_at_most_20_frames_per_second_per_turn(make_run, layer):
    run = make_run(backend_options={"cps": 1000})  # ~200 characters a flush: every turn takes several
    run_to_stop(run)
    assert run.status == "completed"
    assert len(layer.deltas) == 8
    # A turn's last frame may be left unsent when its stream ends first (its commit shows the whole text).
    rated = [frames for frames in layer.deltas.values() if len(frames) >= 2]
    assert len(rated) >= 7
    for frames in rated:
        duration = frames[-1][0] - frames[0][0]
        assert (len(frames) - 1) / max(duration, 1e-9) <= 20


@pytest.mark.django_db(transaction=True)
def test_the_parallel_turns_of_a_stage_share_one_live_message_per_flush_interval(make_run, layer, settings):
    settings.DISPUTA = {**settings.DISPUTA, "FLUSH_SECONDS": 0.05}
    run = make_run(backend_options={"cps": 1000})
    run_to_stop(run)
    analyses = {t.first_seq for t in Turn.objects.filter(run=run, key__startswith="r1/analysis/")}
    assert len(analyses) == 3  # the cross-examination's independent analyses stream at once
    shared = [m for _, m in layer.messages if len({p["first_seq"] for p in m["parts"]} & analyses) >= 2]
    assert len(shared) >= 3
    # One message per interval, except that a turn's first text goes out at once (once per turn).
    sent = [at for at, _ in layer.messages]
    sooner = [b - a for a, b in zip(sent, sent[1:], strict=False) if b - a < 0.05 - 0.01]
    assert len(sooner) <= Turn.objects.filter(run=run).count()
    # Nothing of a turn is sent once its stream is over (its commit event shows it from then on).
    finished = {t.first_seq: t.finished_at.timestamp() for t in Turn.objects.filter(run=run)}
    assert all(at <= finished[p["first_seq"]] for at, m in layer.messages for p in m["parts"])


def _record_saves(monkeypatch) -> list[tuple[float, int, str]]:
    """Each partial save as the stream asks for it (not when a busy thread pool gets round to running it)."""
    saved: list[tuple[float, int, str]] = []
    real_to_async = stream.database_sync_to_async

    def recording_to_async(func, **kwargs):
        call = real_to_async(func, **kwargs)
        if func is not stream.turn_flush:
            return call

        async def recorded(turn_id, attempt, text, first_token_at):
            saved.append((time.monotonic(), turn_id, text))
            return await call(turn_id, attempt, text, first_token_at)

        return recorded

    monkeypatch.setattr(stream, "database_sync_to_async", recording_to_async)
    return saved


def _first_analysis_streamed(make_run, layer, monkeypatch, settings, *, cps: float, **disputa: float):
    """Run a debate with these settings; its first analysis, that turn's partial saves and its live frames."""
    settings.DISPUTA = {**settings.DISPUTA, **disputa}
    saved = _record_saves(monkeypatch)
    run = make_run(backend_options={"cps": cps})
    run_to_stop(run)
    analysis = Turn.objects.get(run=run, key="r1/analysis/analyst-ada")
    saves = [(at, text) for at, turn_id, text in saved if turn_id == analysis.pk]
    return analysis, saves, layer.deltas[analysis.first_seq]


@pytest.mark.wall_clock  # intervals between saves and frames: on a loaded machine frames go out less often
@pytest.mark.django_db(transaction=True)
def test_the_partial_text_is_saved_at_the_first_frame_then_at_most_every_save_interval(
    make_run, layer, monkeypatch, settings
):
    analysis, saves, frames = _first_analysis_streamed(
        make_run, layer, monkeypatch, settings, cps=1000, FLUSH_SECONDS=0.05, PARTIAL_SAVE_SECONDS=0.3
    )
    # This turn streamed for over two save intervals in many frames, and was saved when its first frame went out.
    assert frames[-1][0] - frames[0][0] > 0.6 and len(frames) >= 10
    assert saves and saves[0][0] <= frames[0][0]
    assert 2 <= len(saves) < len(frames) / 3
    gaps = [b[0] - a[0] for a, b in zip(saves, saves[1:], strict=False)]
    assert min(gaps) >= 0.3 - 0.01


@pytest.mark.django_db(transaction=True)
def test_partial_saves_grow_towards_the_committed_text_and_frames_render_parsed_fields(
    make_run, layer, monkeypatch, settings
):
    # Every flush saves, and a turn streams in several flushes.
    analysis, saves, deltas = _first_analysis_streamed(
        make_run, layer, monkeypatch, settings, cps=3000, PARTIAL_SAVE_SECONDS=0, FLUSH_SECONDS=0.05
    )
    frames = [html for _, html in deltas]
    # Partial saves grow towards the committed text (the commit itself saves the whole of it).
    partials = [text for _, text in saves]
    assert len(partials) >= 2 and len(partials[0]) < len(analysis.raw_text)
    assert all(len(a) <= len(b) for a, b in zip(partials, partials[1:], strict=False))
    # An early frame already shows the summary as text, not as raw JSON.
    first_with_summary = next(html for html in frames if 'class="summary"' in html)
    assert '{"summary"' not in first_with_summary
    assert (
        f'id="{analysis.dom_id}-live"' in first_with_summary
        and 'hx-swap-oob="outerHTML"' in first_with_summary
    )


@pytest.mark.django_db(transaction=True)
def test_a_turns_first_text_goes_out_at_once_not_a_flush_interval_later(make_run, layer, settings):
    # A long interval: a first text waiting for it would show a second after the first token.
    settings.DISPUTA = {**settings.DISPUTA, "FLUSH_SECONDS": 1.0}
    run = make_run(backend_options={"cps": 1500, "ttft": 0.3})
    run_to_stop(run)
    assert run.status == "completed"
    lags = []
    for turn in Turn.objects.filter(run=run):
        shown = [
            at
            for at, message in layer.messages
            for part in message["parts"]
            if part["first_seq"] == turn.first_seq and 'class="summary"' in part["html"]
        ]
        if turn.key.startswith("r1/analysis/"):
            lags.append(min(shown) - turn.first_token_at.timestamp())
    assert len(lags) == 3
    assert max(lags) <= 0.1, lags
