"""PostgreSQL plans a prepare's statements once per connection: parameters are bound on the
server, so a statement asked again is the same text, and psycopg prepares it (settings: the
database's ``server_side_binding`` and ``prepare_threshold``)."""

from __future__ import annotations

import pytest
from django.db import connection

from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from tests.powercontext.factories import make_memory


def _prepared() -> dict[str, tuple[int, int]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        return {statement: (generic, custom) for statement, generic, custom in cursor.fetchall()}


@pytest.mark.postgres_only
@pytest.mark.django_db
def test_a_prepare_asked_again_reuses_its_statements_plans() -> None:
    for topic in ("deploy", "backup", "migration", "cache", "broker", "index"):
        make_memory("prepared", f"The {topic} runbook lives in the ops wiki, section {topic}.")
    application = ScopedContextApplication()
    questions = [f"Where is the {topic} runbook?" for topic in ("deploy", "backup", "cache", "broker")] * 3
    answers = [application.prepare(PrepareRequest(scope_id="prepared", query=q)) for q in questions]

    assert all(answer.status == "ready" for answer in answers)
    candidates = {
        statement: plans
        for statement, plans in _prepared().items()
        if "powercontext_memorysearchdocument" in statement and "tsquery" in statement
    }
    # The candidate query is one prepared statement with placeholders (no scope id or query
    # words in its text), and its later runs were not planned again.
    assert candidates, "the candidate query was not prepared"
    for statement in candidates:
        assert "prepared" not in statement and "runbook" not in statement
        assert "$1" in statement
    assert max(generic for generic, _ in candidates.values()) > 0


@pytest.mark.postgres_only
@pytest.mark.django_db
def test_answers_are_the_same_before_and_after_the_statements_are_prepared() -> None:
    for i in range(12):
        make_memory("prepared-same", f"Note {i}: the worker {i % 3} restarts after deploy {i}.")
    application = ScopedContextApplication()
    first = application.prepare(
        PrepareRequest(scope_id="prepared-same", query="worker restarts after deploy")
    )
    for _ in range(8):
        again = application.prepare(
            PrepareRequest(scope_id="prepared-same", query="worker restarts after deploy")
        )
        assert again.content == first.content
    assert _prepared(), "nothing was prepared"
