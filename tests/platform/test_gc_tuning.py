"""A serving process, once loaded, keeps what it loaded out of the cycle collector's walks."""

from __future__ import annotations

import gc

import pytest

from debates.platform.gc_tuning import YOUNG_COLLECTION_THRESHOLD, gc_settle


@pytest.fixture
def gc_restored():
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_what_is_loaded_is_frozen_and_young_collections_come_less_often(gc_restored):
    kept = [[n] for n in range(1000)]  # containers (tracked) the process keeps for its life
    assert gc.is_tracked(kept[0])
    before = gc.get_freeze_count()
    _, middle, old = gc.get_threshold()

    gc_settle()

    assert gc.get_freeze_count() >= before + len(kept)
    assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, middle, old)
    assert gc.get_count()[0] < 100  # the collection before freezing reset the young generation
