"""The embedded default's embedder thread yields to a burst of writes: before each model run it
waits for the writers of its process to pause, at most ``BURST_WAIT_SECONDS``, then embeds for
``BURST_SLICE_SECONDS`` before it waits again. Driven on a fake clock (no thread, no sleep)."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.search.vectors import pending


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch) -> Any:
    clock = Clock()
    monkeypatch.setattr(pending.time, "monotonic", clock.monotonic)
    worker = pending.EmbedWorker()  # not started: the test calls the pre-run hook itself
    worker.clock = clock
    worker.waits = []
    worker.signalling = False  # True: a writer signals again during every wait (a burst)

    def pause(seconds: float) -> None:
        worker.waits.append(round(seconds, 6))
        clock.now += seconds
        if worker.signalling:
            worker._last_signal = clock.now

    monkeypatch.setattr(worker, "pause", pause)
    return worker


def signal(worker: Any) -> None:
    worker._last_signal = worker.clock.now


def test_without_a_recent_signal_the_embedder_runs_at_once(embedder: Any) -> None:
    embedder._yield_to_writers()
    signal(embedder)
    embedder.clock.now += pending.QUIET_SECONDS
    embedder._yield_to_writers()
    assert embedder.waits == []


def test_after_a_last_signal_it_waits_only_until_the_writers_pause(embedder: Any) -> None:
    signal(embedder)
    embedder.clock.now += 0.01
    embedder._yield_to_writers()
    assert embedder.waits == [pytest.approx(pending.QUIET_SECONDS - 0.01)]


def test_during_a_burst_it_waits_at_most_the_burst_wait_then_embeds_for_one_slice(embedder: Any) -> None:
    embedder.signalling = True
    signal(embedder)
    start = embedder.clock.now
    embedder._yield_to_writers()
    assert embedder.clock.now - start == pytest.approx(pending.BURST_WAIT_SECONDS)

    # Within the slice every model run goes ahead although writers still signal.
    embedder.waits.clear()
    signal(embedder)
    embedder.clock.now += pending.BURST_SLICE_SECONDS / 2
    signal(embedder)
    embedder._yield_to_writers()
    assert embedder.waits == []

    # After the slice it waits again: the embedder's share of a burst stays ~10 %.
    embedder.clock.now += pending.BURST_SLICE_SECONDS
    signal(embedder)
    before = embedder.clock.now
    embedder._yield_to_writers()
    assert embedder.clock.now - before == pytest.approx(pending.BURST_WAIT_SECONDS)
    share = pending.BURST_SLICE_SECONDS / (pending.BURST_SLICE_SECONDS + pending.BURST_WAIT_SECONDS)
    assert share <= 0.1 + 1e-9


def test_a_stopping_embedder_does_not_wait_out_a_burst(embedder: Any) -> None:
    embedder.signalling = True
    signal(embedder)
    embedder.stop(timeout=0)
    embedder._yield_to_writers()
    assert embedder.waits == []
