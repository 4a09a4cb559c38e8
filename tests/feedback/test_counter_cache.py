"""Prepare's cache of feedback counters (``feedback.selectors.usage_for``): each process keeps
what it read of a scope's counters under the scope's counter generation, which every counter
write draws anew in its transaction. So a report committed on another connection (another
thread here: it shares no code path with the reader, only the database, as another process
would) reaches the next prepare, a rebuild does too, and prepare stays a pure read."""

from __future__ import annotations

from importlib import import_module
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from powercontext.core.models import ApiToken
from powercontext.feedback import selectors, services
from powercontext.feedback.models import CounterGeneration, FeedbackCounter
from powercontext.feedback.prior import memory_target
from powercontext.memory.services import memory_remember
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from tests.feedback.helpers import items_of
from tests.powercontext.test_concurrency import run_together
from tests.review.factories import make_user

SCOPE = "cache-feedback"
QUERY = "which port does the staging database listen on?"
STALE = "The staging database listens on port 6543."
OTHER = "The port the staging database listens on is set in deploy/staging.env."


def token(name: str) -> ApiToken:
    number = ApiToken.objects.count()
    return ApiToken.objects.create(user=make_user(name), digest=f"{number:064d}", prefix=f"p{number}")


def texts() -> list[str]:
    prepared = ScopedContextApplication().prepare(PrepareRequest(scope_id=SCOPE, query=QUERY))
    return [item["content"] for item in items_of({"content": prepared.content})]


def report(cited: dict[str, Any], outcome: str, reporter: ApiToken) -> Any:
    return services.feedback_record(
        scope_id=SCOPE, items=[services.FeedbackItem(cited, outcome)], token=reporter
    )


@pytest.fixture
def stale() -> dict[str, Any]:
    written = memory_remember(scope_id=SCOPE, kind="note", text=STALE)
    memory_remember(scope_id=SCOPE, kind="note", text=OTHER)
    return {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": written.revision},
        "entry_id": written.entry.entry_id,
        "entry_version_id": written.entry.entry_version_id,
    }


@pytest.mark.django_db(transaction=True)
def test_a_report_committed_on_another_connection_reaches_the_next_prepare(stale: dict[str, Any]) -> None:
    report(stale, "outdated", token("agent-a"))
    assert STALE in texts()  # one reporter: cached with one report, not held
    target = memory_target(stale["entry_version_id"])
    assert selectors.usage_for(SCOPE, [target])[target].reporters == 1

    second = token("agent-b")
    (result,) = run_together([lambda: report(stale, "outdated", second)])

    assert isinstance(result, list) and result[0].recorded, result
    assert STALE not in texts() and OTHER in texts()
    assert selectors.usage_for(SCOPE, [target])[target].reporters == 2


@pytest.mark.django_db(transaction=True)
def test_a_rebuild_reaches_the_next_prepare(stale: dict[str, Any]) -> None:
    for name in ("agent-a", "agent-b"):
        report(stale, "outdated", token(name))
    target = memory_target(stale["entry_version_id"])
    # Counters that drifted from the log (written around the services, as a restored table
    # would be), read and cached by a prepare
    FeedbackCounter.objects.filter(target=target).update(reporters=0)
    assert STALE in texts()

    (rebuilt,) = run_together([lambda: services.counters_rebuild(scope_id=SCOPE)])

    assert rebuilt == 1
    assert STALE not in texts()


@pytest.mark.django_db
def test_a_prepare_with_counters_executes_no_write(stale: dict[str, Any]) -> None:
    for name in ("agent-a", "agent-b"):
        report(stale, "outdated", token(name))
    assert STALE not in texts()  # the counters are cached now

    with CaptureQueriesContext(connection) as cold:
        selectors.clear_cache()
        assert STALE not in texts()
    with CaptureQueriesContext(connection) as warm:
        assert STALE not in texts()

    for queries in (cold, warm):
        statements = [q["sql"].lstrip().split(None, 1)[0].upper() for q in queries.captured_queries]
        assert statements and set(statements) == {"SELECT"}, statements
    # warm: the generation alone is read, not the counters
    assert len(warm.captured_queries) == len(cold.captured_queries) - 1


@pytest.mark.django_db
def test_a_scope_without_counters_reads_no_counter(stale: dict[str, Any]) -> None:
    with CaptureQueriesContext(connection) as queries:
        assert selectors.usage_for(SCOPE, [memory_target(stale["entry_version_id"])]) == {}

    assert len(queries.captured_queries) == 1
    assert not CounterGeneration.objects.exists()


@pytest.mark.django_db
def test_every_counter_write_draws_a_new_generation(stale: dict[str, Any]) -> None:
    seen = set()
    for name in ("agent-a", "agent-b", "agent-c"):
        report(stale, "used", token(name))
        seen.add(CounterGeneration.objects.get(scope_id=SCOPE).generation)
    services.counters_rebuild(scope_id=SCOPE)
    seen.add(CounterGeneration.objects.get(scope_id=SCOPE).generation)

    assert len(seen) == 4
    assert CounterGeneration.objects.count() == 1


@pytest.mark.django_db
def test_the_migration_gives_every_scope_with_counters_a_generation(stale: dict[str, Any]) -> None:
    backfill = import_module("powercontext.feedback.migrations.0002_counter_generation").backfill
    report(stale, "used", token("agent-a"))
    CounterGeneration.objects.all().delete()

    backfill(apps, SimpleNamespace(connection=connection))

    assert list(CounterGeneration.objects.values_list("scope_id", flat=True)) == [SCOPE]
    target = memory_target(stale["entry_version_id"])
    assert selectors.usage_for(SCOPE, [target])[target].uses == 1
