"""The feedback benchmark's data and load (``manage.py bench_feedback``; issue 30).

Two scopes with the same ``entries`` notes, remembered through the real services: one with no
feedback, one with ``rows`` feedback rows spread over its entry versions, inserted in bulk
(the write path is measured separately, over HTTP) and turned into counters by
``counters_rebuild_all``, as an operator's rebuild would. The rows (``feedback_plan``):

- items by popularity (weights ``1 / rank ** 0.8``, the order shuffled), as some notes are
  cited and used far more than others;
- ``reporters`` reporters and ``days`` days, each row on a random one (the once-a-day key, item
  x outcome x reporter x day, is kept unique);
- ``used`` everywhere, and on a ``disputed`` share of the items also ``wrong`` and ``outdated``
  (a tenth of those items' rows each): most of those items reach two reporters and are held out
  of prepare, as a real scope's few disputed notes would be.

The feedback bodies (``feedback_bodies``) are what an agent sends after a turn: 1-3 cited items
(60 / 30 / 10 %), ``used`` 90 %, ``wrong`` and ``outdated`` 5 % each.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

USED, WRONG, OUTDATED = "used", "wrong", "outdated"
DISPUTED_SHARE = 0.05
REPORT_SHARE = 0.2  # of a disputed item's rows: half wrong, half outdated
SECONDS_PER_DAY = 86400


@dataclass(frozen=True)
class PlannedRow:
    """One feedback row to insert: the item (index into the scope's items), its outcome, the
    reporter (index), the day (days before the newest) and the second within that day."""

    item: int
    outcome: str
    reporter: int
    day: int
    second: int


def feedback_plan(*, items: int, rows: int, reporters: int, days: int, seed: int = 29) -> list[PlannedRow]:
    """``rows`` distinct rows (no two share item, outcome, reporter and day) spread over
    ``items`` items by popularity; deterministic for a seed. Raises ValueError when the key
    space cannot hold ``rows``."""
    if rows > items * reporters * days:
        raise ValueError("more rows than distinct (item, reporter, day) keys")
    rng = random.Random(seed)
    order = list(range(items))
    rng.shuffle(order)
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(items)]
    disputed = set(rng.sample(range(items), max(1, round(items * DISPUTED_SHARE))))
    seen: set[tuple[int, str, int, int]] = set()
    planned: list[PlannedRow] = []
    while len(planned) < rows:
        for item in rng.choices(order, weights=weights, k=rows - len(planned)):
            outcome = USED
            if item in disputed and rng.random() < REPORT_SHARE:
                outcome = WRONG if rng.random() < 0.5 else OUTDATED
            reporter, day = rng.randrange(reporters), rng.randrange(days)
            key = (item, outcome, reporter, day)
            if key in seen:
                continue
            seen.add(key)
            planned.append(PlannedRow(item, outcome, reporter, day, rng.randrange(SECONDS_PER_DAY)))
    return planned


def feedback_bodies(
    scope_id: str, citations: Sequence[dict[str, Any]], count: int, seed: int
) -> list[dict[str, Any]]:
    """``count`` request bodies of ``POST /v1/context/feedback``: 1-3 distinct citations of
    ``citations`` each, mostly ``used``."""
    rng = random.Random(seed)
    bodies = []
    for _ in range(count):
        size = rng.choices((1, 2, 3), weights=(6, 3, 1))[0]
        items = [
            {"citation": citation, "outcome": rng.choices((USED, WRONG, OUTDATED), weights=(18, 1, 1))[0]}
            for citation in rng.sample(list(citations), min(size, len(citations)))
        ]
        bodies.append({"scope_id": scope_id, "items": items})
    return bodies
