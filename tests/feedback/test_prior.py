"""The use prior and the hold rule (pure: no database)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.feedback.prior import NO_USAGE, PriorPolicy, Usage, order

NOW = datetime(2026, 12, 6, tzinfo=UTC).timestamp()
DAY = 86400.0
POLICY = PriorPolicy(cap=0.10, saturation_uses=8, half_life_days=30, hold_reporters=2)

usages = st.builds(
    Usage,
    uses=st.integers(0, 10_000),
    last_used_at=st.one_of(st.none(), st.integers(0, 3650).map(lambda d: NOW - d * DAY)),
    reporters=st.integers(0, 50),
)


def test_nobody_used_or_reported_gets_no_prior() -> None:
    assert POLICY.prior(NO_USAGE, "memory", NOW) == 0.0
    assert POLICY.prior(NO_USAGE, "experience", NOW) == 0.0


@given(usages, st.sampled_from(["memory", "experience"]), st.floats(0, 1))
def test_the_prior_stays_within_the_cap_and_never_lowers_a_hit(usage: Usage, family: str, cap: float) -> None:
    value = PriorPolicy(cap=cap).prior(usage, family, NOW)
    assert 0 <= value <= cap


def test_use_raises_it_to_the_cap_at_saturation_and_recency_halves_it() -> None:
    fresh = Usage(uses=8, last_used_at=NOW)
    assert POLICY.prior(fresh, "memory", NOW) == pytest.approx(0.10)
    assert POLICY.prior(Usage(uses=1, last_used_at=NOW), "memory", NOW) < 0.10
    month_old = Usage(uses=8, last_used_at=NOW - 30 * DAY)
    assert POLICY.prior(month_old, "memory", NOW) == pytest.approx(0.05)


def test_an_open_report_cancels_the_use_of_memory_but_not_of_an_experience() -> None:
    reported = Usage(uses=8, last_used_at=NOW, reporters=1)
    assert POLICY.prior(reported, "memory", NOW) == 0.0
    assert POLICY.prior(Usage(reporters=1), "memory", NOW) == 0.0
    assert POLICY.prior(reported, "experience", NOW) == pytest.approx(0.10)


def test_only_memory_reported_by_enough_reporters_is_held() -> None:
    assert not POLICY.held(Usage(reporters=1), "memory")
    assert POLICY.held(Usage(reporters=2), "memory")
    assert not POLICY.held(Usage(reporters=9), "experience")
    assert not PriorPolicy(hold_reporters=0).held(Usage(reporters=9), "memory")


def test_a_cap_of_zero_turns_the_prior_off() -> None:
    assert PriorPolicy(cap=0).prior(Usage(uses=100, last_used_at=NOW, reporters=1), "memory", NOW) == 0.0


def rank(hits: list[Any], score: Any, priors: dict[int, float]) -> list[Any]:
    """``hits`` in the order ``order`` gives their indexes (as selection applies it)."""
    return [hits[index] for index in order([score(hit) for hit in hits], priors)]


scores = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=20)


@given(scores, st.data())
def test_rank_moves_only_hits_with_a_prior_and_never_past_a_clearly_better_one(
    values: list[float], data: st.DataObject
) -> None:
    hits = list(enumerate(sorted(values, reverse=True)))  # (search rank, score)
    priors = data.draw(
        st.dictionaries(st.integers(0, len(hits) - 1), st.floats(0.0, 0.10, allow_nan=False), max_size=5)
    )
    ranked = rank(hits, lambda hit: hit[1], priors)
    assert sorted(ranked) == hits  # a permutation
    plain = [hit for hit in ranked if not priors.get(hit[0])]
    assert plain == sorted(plain)  # hits without a prior keep their search order
    position = {hit: i for i, hit in enumerate(ranked)}
    for better in hits:
        for worse in hits:
            if better[1] > worse[1] * 1.10 + 1e-12:
                assert position[better] < position[worse]


def test_no_prior_changes_nothing_even_when_scores_are_out_of_order() -> None:
    hits = [("a", 0.2), ("b", 0.9), ("c", 0.5)]
    assert rank(hits, lambda hit: hit[1], {}) == hits
    assert rank(hits, lambda hit: hit[1], {0: 0.0}) == hits
    # out-of-order scores count as the lowest score above them: the others keep their order
    assert [h[0] for h in rank(hits, lambda hit: hit[1], {2: 0.1})] == ["c", "a", "b"]
    moved = rank([("x", 0.50), ("y", 0.48), ("z", 0.47)], lambda hit: hit[1], {2: 0.10})
    assert [h[0] for h in moved] == ["z", "x", "y"]
