"""The beat scan does not send a Phase 1 message again for a session whose message is still queued."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.pipeline import tasks
from powercontext.pipeline.models import PipelineEnqueued
from tests.pipeline.helpers import capture


@pytest.mark.django_db
def test_repeated_scans_send_each_queued_session_once(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.POWERCONTEXT_PIPELINE = {**settings.POWERCONTEXT_PIPELINE, "idle_seconds": 0}
    capture("scan-scope", "a", "remember: the first session", session="one")
    capture("scan-scope", "b", "remember: the second session", session="two")
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(tasks.pipeline_phase1, "delay", lambda scope, session: sent.append((scope, session)))
    monkeypatch.setattr(tasks.pipeline_phase2, "delay", lambda scope: None)

    first = tasks.pipeline_scan.run()
    second = tasks.pipeline_scan.run()  # the worker has not taken them yet

    assert sorted(sent) == [("scan-scope", "one"), ("scan-scope", "two")]
    assert first["phase1"] == 2 and second == {**second, "phase1": 0, "phase1_already_queued": 2}

    # A worker takes session one's message (and, here, fails to finish it): the session is
    # eligible again and the next scan sends it once more; two is still queued.
    tasks.enqueued.clear_enqueued(scope_id="scan-scope", session_id="one")
    tasks.pipeline_scan.run()
    assert sorted(sent) == [("scan-scope", "one"), ("scan-scope", "one"), ("scan-scope", "two")]
    assert PipelineEnqueued.objects.count() == 2


@pytest.mark.django_db
def test_a_lost_message_is_sent_again_once_its_mark_lapses(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time_machine
    from django.utils import timezone

    settings.POWERCONTEXT_PIPELINE = {
        **settings.POWERCONTEXT_PIPELINE,
        "idle_seconds": 0,
        "lease_seconds": 60,
    }
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(tasks.pipeline_phase1, "delay", lambda scope, session: sent.append((scope, session)))
    monkeypatch.setattr(tasks.pipeline_phase2, "delay", lambda scope: None)
    with time_machine.travel(timezone.now(), tick=False) as clock:
        capture("scan-scope", "a", "remember: a session whose message the broker lost", session="one")
        tasks.pipeline_scan.run()
        clock.shift(59)
        tasks.pipeline_scan.run()
        assert len(sent) == 1
        clock.shift(2)
        tasks.pipeline_scan.run()
    assert len(sent) == 2
