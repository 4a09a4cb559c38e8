"""Feedback under real concurrent writers (PostgreSQL: row locks, READ COMMITTED): every report
lands once, the counters count every reporter, and a rebuild beside writers loses nothing."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.core.models import ApiToken
from powercontext.feedback import services
from powercontext.feedback.models import Feedback, FeedbackCounter
from powercontext.memory.services import memory_remember
from tests.powercontext.test_concurrency import run_together
from tests.review.factories import make_user

SCOPE = "race-feedback"


def citation(mutation: Any) -> dict[str, Any]:
    return {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": mutation.revision},
        "entry_id": mutation.entry.entry_id,
        "entry_version_id": mutation.entry.entry_version_id,
    }


def tokens(count: int) -> list[ApiToken]:
    return [
        ApiToken.objects.create(user=make_user(f"agent-{n}"), digest=f"{n:064d}", prefix=f"p{n}")
        for n in range(count)
    ]


def record(cited: list[dict[str, Any]], outcome: str, token: ApiToken | None) -> Any:
    return lambda: services.feedback_record(
        scope_id=SCOPE, items=[services.FeedbackItem(c, outcome) for c in cited], token=token
    )


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_eight_reporters_at_once_are_eight_reporters() -> None:
    first = citation(memory_remember(scope_id=SCOPE, kind="note", text="The port is 6543."))
    second = citation(memory_remember(scope_id=SCOPE, kind="note", text="Deploys run on Fridays."))
    # Each writer reports both items, half of them in the opposite order: the locks are taken in
    # sorted order, so no two writers can deadlock.
    writers = [
        record([first, second] if n % 2 else [second, first], "outdated", token)
        for n, token in enumerate(tokens(8))
    ]

    results = run_together(writers)

    assert all(isinstance(result, list) for result in results), results
    assert Feedback.objects.count() == 16
    counters = {c.target: c for c in FeedbackCounter.objects.all()}
    assert {c.reporters for c in counters.values()} == {8}
    assert services.counters_verify(scope_id=SCOPE).ok


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_the_same_report_sent_twice_at_once_is_recorded_once() -> None:
    cited = citation(memory_remember(scope_id=SCOPE, kind="note", text="The port is 6543."))
    (token,) = tokens(1)

    results = run_together([record([cited], "used", token) for _ in range(4)])

    assert sorted(result[0].status for result in results) == [
        "already_recorded",
        "already_recorded",
        "already_recorded",
        "recorded",
    ], results
    assert FeedbackCounter.objects.get().uses == 1


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_rebuild_beside_writers_ends_with_the_logs_figures() -> None:
    cited = [
        citation(memory_remember(scope_id=SCOPE, kind="note", text=f"Fact number {n}.")) for n in range(4)
    ]
    writers: list[Any] = [record(cited, "used", token) for token in tokens(6)]
    writers.append(lambda: services.counters_rebuild(scope_id=SCOPE))

    results = run_together(writers)

    assert not [r for r in results if isinstance(r, BaseException)], results
    assert services.counters_verify(scope_id=SCOPE).ok
    assert {c.uses for c in FeedbackCounter.objects.all()} == {6}
