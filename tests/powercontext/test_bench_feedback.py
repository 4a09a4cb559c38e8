"""The feedback benchmark's data (``bench.feedback``) and its command at a tiny size."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command

from powercontext.core.models import MemoryEntryVersion
from powercontext.evaluation.bench.feedback import USED, feedback_bodies, feedback_plan
from powercontext.feedback.models import Feedback, FeedbackCounter
from powercontext.feedback.services import counters_verify


def test_the_plan_holds_distinct_rows_mostly_used_on_popular_items() -> None:
    plan = feedback_plan(items=100, rows=5000, reporters=20, days=30)

    assert len(plan) == 5000
    assert len({(r.item, r.outcome, r.reporter, r.day) for r in plan}) == 5000
    outcomes = Counter(r.outcome for r in plan)
    assert outcomes[USED] > 0.95 * len(plan) and set(outcomes) == {"used", "wrong", "outdated"}
    per_item = Counter(r.item for r in plan).most_common()
    assert per_item[0][1] > 5 * per_item[-1][1]  # some items far more used than others
    assert {r.reporter for r in plan} == set(range(20)) and max(r.day for r in plan) == 29
    assert plan == feedback_plan(items=100, rows=5000, reporters=20, days=30)  # deterministic


def test_the_plan_refuses_more_rows_than_keys() -> None:
    with pytest.raises(ValueError, match="distinct"):
        feedback_plan(items=2, rows=100, reporters=3, days=4)


def test_a_body_cites_one_to_three_distinct_items_mostly_used() -> None:
    citations = [{"entry_id": f"e{n}", "entry_version_id": f"v{n}"} for n in range(10)]

    bodies = feedback_bodies("s", citations, 400, seed=1)

    sizes = Counter(len(body["items"]) for body in bodies)
    assert set(sizes) == {1, 2, 3} and sizes[1] > sizes[2] > sizes[3]
    for body in bodies:
        assert body["scope_id"] == "s"
        assert len({item["citation"]["entry_id"] for item in body["items"]}) == len(body["items"])
    outcomes = Counter(item["outcome"] for body in bodies for item in body["items"])
    assert outcomes["used"] > 0.8 * sum(outcomes.values())


@pytest.mark.django_db
def test_the_command_seeds_both_scopes_and_compares_them_in_process(tmp_path: Path) -> None:
    out = tmp_path / "out.json"

    call_command(
        "bench_feedback", "--entries", "30", "--rows", "600", "--reporters", "10", "--days", "20",
        "--samples", "4", "--json", str(out),
    )  # fmt: skip

    results = json.loads(out.read_text(encoding="utf-8"))
    setup = results["setup"]
    assert (setup["entries_per_scope"], setup["feedback_rows"]) == (30, 600)
    (scope_id,) = Feedback.objects.values_list("scope_id", flat=True).distinct()
    assert setup["counter_rows"] == FeedbackCounter.objects.filter(scope_id=scope_id).count() > 0
    assert counters_verify(scope_id=scope_id).ok
    assert results["in_process"]["samples"] == 4 and "feedback_vs_none_p50" in results["in_process"]
    assert results["in_process"]["control_vs_none_p50"] > 0  # the noise, measured in the same run
    # The control and the scope without feedback hold the same notes as the one with it.
    texts = {
        scope: sorted(MemoryEntryVersion.objects.filter(scope_id=scope).values_list("text", flat=True))
        for scope in MemoryEntryVersion.objects.values_list("scope_id", flat=True).distinct()
    }
    assert len(texts) == 3 and len({tuple(v) for v in texts.values()}) == 1
    assert "http" not in results  # no --url: the HTTP sections need a live server
