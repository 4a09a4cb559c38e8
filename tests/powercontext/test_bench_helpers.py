"""The benchmark's interleaving and comparison helpers (pure: a fake clock, no timing)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from powercontext.evaluation.bench.common import compare, interleaved, run_clients


class FakeClock:
    """Advances only when a call says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_interleaved_rotates_which_variant_goes_first_and_passes_the_run_index() -> None:
    clock = FakeClock()
    order: list[tuple[str, int]] = []

    def call(name: str, cost: float) -> Callable[[int], None]:
        def run(i: int) -> None:
            order.append((name, i))
            clock.now += cost

        return run

    timings = interleaved({"a": call("a", 0.002), "b": call("b", 0.001), "c": call("c", 0.003)}, 4, clock)

    assert order == [
        ("a", 0), ("b", 0), ("c", 0),
        ("b", 1), ("c", 1), ("a", 1),
        ("c", 2), ("a", 2), ("b", 2),
        ("a", 3), ("b", 3), ("c", 3),
    ]  # fmt: skip
    assert [round(ms, 6) for ms in timings["a"]] == [2.0] * 4
    assert [round(ms, 6) for ms in timings["b"]] == [1.0] * 4
    assert [round(ms, 6) for ms in timings["c"]] == [3.0] * 4


def test_compare_reports_both_variants_and_the_p50_ratio() -> None:
    timings = {
        "hybrid": [13.0, 11.0, 12.0, 40.0, 12.5],
        "fts": [10.0, 9.0, 10.0, 11.0, 30.0],
    }

    result = compare(timings, "hybrid", "fts")

    assert result == {
        "hybrid_p50_ms": 12.5,
        "hybrid_p95_ms": 40.0,
        "fts_p50_ms": 10.0,
        "fts_p95_ms": 30.0,
        "hybrid_vs_fts_p50": 1.25,
        "samples": 5,
    }


def test_compare_has_no_ratio_when_the_denominator_takes_no_time() -> None:
    result = compare({"x": [1.0, 2.0], "y": [0.0, 0.0]}, "x", "y")

    assert result["x_vs_y_p50"] is None
    assert result["x_p50_ms"] == 1.5


def test_run_clients_runs_every_client_index_at_the_same_time() -> None:
    # The barrier opens only when all three runs wait at it together: run one after another,
    # the first would time out.
    together = threading.Barrier(3, timeout=30)
    seen: list[int] = []

    def run(index: int) -> None:
        together.wait()
        seen.append(index)

    elapsed = run_clients(3, run)
    assert sorted(seen) == [0, 1, 2]
    assert elapsed >= 0
