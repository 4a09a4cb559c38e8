"""Which Phase 1 sessions already have a message on its way (``PipelineEnqueued``).

The database is the queue of record; the broker only wakes workers. The beat scan finds every
eligible session each time it runs, so without a mark a session whose message is still queued
would be sent again at every scan (hundreds of duplicates in front of a recovering worker).
A mark lasts ``lease_seconds`` (the same bound as a crashed worker's lease): a message the
broker lost only delays its session until then.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction

from powercontext.pipeline.models import PipelineEnqueued


def mark_enqueued(
    sessions: Iterable[tuple[str, str]], *, now: datetime, lease_seconds: int
) -> list[tuple[str, str]]:
    """Mark the (scope, session) pairs not already marked; return those, in order: the ones to
    send. One transaction."""
    wanted = list(dict.fromkeys(sessions))
    if not wanted:
        return []
    with transaction.atomic(durable=True):
        scopes = {scope for scope, _ in wanted}
        live = set(
            PipelineEnqueued.objects.filter(scope_id__in=scopes, until__gt=now).values_list(
                "scope_id", "session_id"
            )
        )
        fresh = [pair for pair in wanted if pair not in live]
        until = now + timedelta(seconds=lease_seconds)
        PipelineEnqueued.objects.bulk_create(
            [PipelineEnqueued(scope_id=s, session_id=t, until=until) for s, t in fresh],
            update_conflicts=True,
            unique_fields=["scope_id", "session_id"],
            update_fields=["until"],
        )
    return fresh


def clear_enqueued(*, scope_id: str, session_id: str) -> None:
    """A worker took the session's message: the next scan may send another when it is eligible."""
    with transaction.atomic(durable=True):
        PipelineEnqueued.objects.filter(scope_id=scope_id, session_id=session_id).delete()
