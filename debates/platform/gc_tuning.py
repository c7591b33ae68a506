"""Garbage collection in a serving process (`manage.py serve`, `manage.py worker`).

CPython's cycle collector stops every thread while it runs. With Django, the templates and a thousand websockets
loaded, a full collection walked every object of the process and stopped Daphne's event loop for 250-380 ms, two
or three times in one `bench fanout` (kb-debate, 10 x 100 viewers): every viewer's frames waited that long, and
collections of the youngest generation (every 2,000 allocations) took another 0.2 s of the loop. So once a
process has loaded what it keeps for its life, those objects go to the permanent generation, which no collection
walks (`gc.freeze`), and the youngest generation is collected less often: in the next run, one full collection
(106 ms) and four young ones. Cyclic garbage is still collected, later."""

from __future__ import annotations

import gc

# Allocations (net of frees) between collections of the youngest generation; CPython's default is 2,000 (3.13).
YOUNG_COLLECTION_THRESHOLD = 50_000


def gc_settle() -> None:
    """Call once the process has loaded what it keeps (apps, URLconf, templates), before it serves."""
    gc.collect()  # what start-up left as garbage is not frozen with the rest
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)
