"""Concurrent index rebuilds serialize: both complete, one after the other, and the index verifies."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from powercontext import search
from powercontext.core import heartbeat
from powercontext.core.models import MemorySearchDocument
from powercontext.search import rebuild, tasks
from tests.powercontext.factories import make_memory
from tests.powercontext.test_concurrency import run_together


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_rebuilds_both_complete_one_after_the_other(monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(40):
        make_memory(f"lock-scope-{i % 4}", f"a note to index again, number {i}")
    MemorySearchDocument.objects.all().delete()
    spans: list[tuple[float, float]] = []
    inside = threading.Event()
    real = search.rebuild_index

    def recorded(**kwargs: Any) -> int:
        started = time.perf_counter()
        inside.set()
        seen_rebuild = heartbeat.seen(heartbeat.REBUILD)
        written = real(**kwargs)
        spans.append((started, time.perf_counter()))
        assert heartbeat.REBUILD in seen_rebuild  # marked in progress while it runs
        return written

    monkeypatch.setattr(rebuild, "rebuild_index", recorded)

    results = run_together([tasks.rebuild_search_index.run, tasks.rebuild_search_index.run])

    assert results == [{"rebuilt_rows": 40}, {"rebuilt_rows": 40}], results
    (first_start, first_end), (second_start, second_end) = sorted(spans)
    assert second_start >= first_end  # the second waited for the lock
    assert search.verify_index().ok
    assert MemorySearchDocument.objects.count() == 40
    assert heartbeat.seen(heartbeat.REBUILD) == {}  # no longer in progress
