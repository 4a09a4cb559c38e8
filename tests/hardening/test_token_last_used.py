"""An API token's last_used_at is recorded at most once a minute: no write per request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from powercontext.core.models import ApiToken
from powercontext.core.tokens import api_token_mark_used
from tests.review.factories import create_token

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _call(api: Any) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/v1/capabilities").status_code == 200
    return [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]


def test_last_used_at_is_written_at_most_once_a_minute(api: Any) -> None:
    api.token = create_token("bot")[0]
    token = ApiToken.objects.get()
    assert token.last_used_at is None

    with time_machine.travel(T0, tick=False):
        assert len(_call(api)) == 1
    token.refresh_from_db()
    assert token.last_used_at == T0

    for seconds in (1, 30, 60):
        with time_machine.travel(T0 + timedelta(seconds=seconds), tick=False):
            assert _call(api) == []
    token.refresh_from_db()
    assert token.last_used_at == T0

    with time_machine.travel(T0 + timedelta(seconds=61), tick=False):
        assert len(_call(api)) == 1
    token.refresh_from_db()
    assert token.last_used_at == T0 + timedelta(seconds=61)


def test_a_stale_copy_does_not_write_over_a_fresh_use(api: Any) -> None:
    create_token("bot")
    stale = ApiToken.objects.get()
    fresh = ApiToken.objects.get()
    assert api_token_mark_used(token=fresh, now=T0)
    # Another request loaded the row before that write: its conditional UPDATE matches nothing.
    assert not api_token_mark_used(token=stale, now=T0 + timedelta(seconds=5))
    assert ApiToken.objects.get().last_used_at == T0
