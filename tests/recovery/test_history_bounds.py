"""History reads serve the stored text and cost what they return (issue 33, item 2): no detector
runs on a read, a search reads at most its byte budget and says where to go on, and Sources of an
older detector version are redacted again in the background (task and command), batch by batch."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.management import call_command

from powercontext.core import redaction, redaction_detectors
from powercontext.core.models import LOCAL_OWNER, ScopeState, Source
from powercontext.core.redaction import Hit
from powercontext.core.redaction_detectors import REDACTION_VERSION
from powercontext.memory import tasks
from powercontext.memory.sources import _digest, source_capture, sources_redact_stored
from powercontext.recovery import history
from powercontext.recovery.text import LineSearch
from tests.recovery.helpers import ok

SCOPE, SESSION = "git:example/app", "codex-session-1"
SECRET = "AKIAIOSFODNN7EXAMPLE"
SOURCE_BYTES = 200_000
LINE = "the agent ran the build and read the long log output again\n"  # 60 bytes


@dataclass
class Recorder:
    """A detector that counts what it is handed and finds what the real one finds."""

    detector: redaction.Detector
    calls: list[int] = field(default_factory=list)

    @property
    def whole_text(self) -> bool:
        return bool(getattr(self.detector, "whole_text", False))

    def find(self, text: str) -> Iterator[Hit]:
        self.calls.append(len(text))
        return iter(list(self.detector.find(text)))


@pytest.fixture
def detectors(monkeypatch: pytest.MonkeyPatch) -> list[Recorder]:
    """Every detector recorded, and every way into redaction counted."""
    recorders = [Recorder(d) for d in redaction_detectors.DETECTORS]
    monkeypatch.setattr(redaction_detectors, "DETECTORS", tuple(recorders))
    return recorders


def detector_calls(recorders: list[Recorder]) -> int:
    return sum(len(r.calls) for r in recorders)


def store(
    position: int, source_id: str, content: str, *, version: int = REDACTION_VERSION, **meta: Any
) -> None:
    """A stored Source row as capture leaves it, without running capture's redaction (fast)."""
    metadata = {"session_id": SESSION, **meta}
    Source.objects.create(
        scope_id=SCOPE,
        source_type="content",
        source_id=source_id,
        content=content,
        content_sha256=_digest(content, metadata),
        metadata=metadata,
        position=position,
        redaction_version=version,
    )
    ScopeState.objects.update_or_create(scope_id=SCOPE, defaults={"last_source_position": position})


def big_source(index: int) -> str:
    """200,000 ASCII bytes of log lines; ``needle-<index>`` on line 2,000 of sources 3, 9 and 13."""
    lines = [LINE] * (SOURCE_BYTES // len(LINE))
    if index in (3, 9, 13):
        lines[1999] = f"needle-{index} found here".ljust(len(LINE) - 1) + "\n"
    text = "".join(lines)
    return text + "x" * (SOURCE_BYTES - len(text))


@pytest.fixture
def big_session(db: None) -> list[int]:
    positions = list(range(1, 15))
    for index, position in enumerate(positions):
        store(position, f"s{index}", big_source(index), window_id="w1", kind="log")
    return positions


# --- reads never run a detector -------------------------------------------------------------------


def test_history_reads_serve_the_stored_text_and_never_run_a_detector(
    api: Any, db: None, detectors: list[Recorder]
) -> None:
    source_capture(
        scope_id=SCOPE,
        source_id="p",
        content=f"fix the build\nkey {SECRET}",
        metadata={"session_id": SESSION},
    )
    assert detector_calls(detectors) > 0  # the recorders see capture's redaction
    detectors_used_by_capture = detector_calls(detectors)

    listed = ok(api, "history", SCOPE, SESSION)
    found = ok(api, "history_search", SCOPE, SESSION, query="REDACTED", ignore_case=True)
    read = ok(api, "history_read", SCOPE, SESSION, from_position=1)
    ok(api, "hint", SCOPE, SESSION)

    assert detector_calls(detectors) == detectors_used_by_capture
    assert listed["items"][0]["size_bytes"] == len("fix the build\nkey [REDACTED:aws_access_key]")
    assert [m["text"] for m in found["matches"]] == ["key [REDACTED:aws_access_key]"]
    assert read["items"][0]["content"] == "fix the build\nkey [REDACTED:aws_access_key]"


def test_a_source_of_an_older_detector_version_is_served_as_stored_until_the_sweep(
    api: Any, db: None, detectors: list[Recorder]
) -> None:
    store(1, "old", f"deploy key {SECRET}", version=0)
    store(2, "new", "deploy notes", version=REDACTION_VERSION)

    assert SECRET in ok(api, "history_read", SCOPE, SESSION, from_position=1)["items"][0]["content"]
    assert detector_calls(detectors) == 0

    result = tasks.redact_stale_sources.delay().get()

    assert result == {"checked": 1, "changed": 1, "done": True}
    read = ok(api, "history_read", SCOPE, SESSION, from_position=1)
    assert [i["content"] for i in read["items"]] == ["deploy key [REDACTED:aws_access_key]", "deploy notes"]
    assert set(Source.objects.values_list("redaction_version", flat=True)) == {REDACTION_VERSION}
    # only the stale row was handed to the detectors (before and after its first pass)
    handed = {length for r in detectors for length in r.calls}
    assert handed == {len(f"deploy key {SECRET}"), len("deploy key [REDACTED:aws_access_key]")}


# --- the sweep and the command ----------------------------------------------------------------


def test_the_sweep_redacts_stale_rows_in_bounded_batches_and_leaves_current_rows_alone(
    db: None, detectors: list[Recorder]
) -> None:
    for position in range(1, 6):
        store(position, f"old{position}", f"key {SECRET} #{position}", version=0)
    # A current row is trusted as stored: the sweep never reads it (this raw text proves it).
    store(6, "current", f"key {SECRET} current", version=REDACTION_VERSION)

    first = sources_redact_stored(batch=2, max_batches=2)

    assert (first.checked, first.changed, first.done) == (4, 4, False)
    assert Source.objects.filter(redaction_version=0).count() == 1
    rest = sources_redact_stored(batch=2, max_batches=2)
    assert (rest.checked, rest.changed, rest.done) == (1, 1, True)
    stored = dict(Source.objects.values_list("source_id", "content"))
    assert stored["old3"] == "key [REDACTED:aws_access_key] #3"
    assert stored["current"] == f"key {SECRET} current"
    calls = detector_calls(detectors)
    assert sources_redact_stored(batch=2).checked == 0 and detector_calls(detectors) == calls


def test_a_row_whose_text_needs_no_change_gets_the_version_and_keeps_its_digest(db: None) -> None:
    store(1, "plain", "nothing secret here", version=0)
    digest = Source.objects.get().content_sha256

    result = sources_redact_stored()

    assert (result.checked, result.changed) == (1, 0)
    row = Source.objects.get()
    assert (row.redaction_version, row.content_sha256) == (REDACTION_VERSION, digest)


def test_the_sweep_skips_a_row_another_run_redacted_meanwhile(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store(1, "a", f"key {SECRET}", version=0)
    real = redaction_detectors.redact

    def racing(text: str) -> redaction.Redacted:
        # another run finishes this row between our read and our write
        Source.objects.filter(pk=Source.objects.get().pk).update(
            content="by the other run", redaction_version=REDACTION_VERSION
        )
        return real(text)

    monkeypatch.setattr("powercontext.memory.sources.redact", racing)

    result = sources_redact_stored()

    assert (result.checked, result.changed, result.done) == (0, 0, True)
    assert Source.objects.get().content == "by the other run"


def test_the_command_redacts_only_rows_of_an_older_version(db: None) -> None:
    store(1, "old", f"key {SECRET}", version=0)
    store(2, "current", f"key {SECRET}", version=REDACTION_VERSION)
    out = io.StringIO()

    call_command("redact_sources", "--batch", "1", stdout=out)

    assert out.getvalue().strip() == "redacted 1 stored source(s)"
    assert dict(Source.objects.values_list("source_id", "redaction_version")) == {
        "old": REDACTION_VERSION,
        "current": REDACTION_VERSION,
    }


def test_capture_records_the_current_detector_version(db: None) -> None:
    source_capture(scope_id=SCOPE, source_id="p", content="x", metadata={"session_id": SESSION})
    assert Source.objects.get().redaction_version == REDACTION_VERSION


def test_beat_schedules_the_sweep(settings: Any) -> None:
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "powercontext.redact_stale_sources" in scheduled
    assert tasks.redact_stale_sources.name == "powercontext.redact_stale_sources"


# --- 14 sources of 200 KB ----------------------------------------------------------------------


def test_a_session_of_14_sources_of_200_kb_lists_and_searches_without_a_detector(
    api: Any, big_session: list[int], detectors: list[Recorder]
) -> None:
    listed = ok(api, "history", SCOPE, SESSION)
    assert [i["size_bytes"] for i in listed["items"]] == [SOURCE_BYTES] * 14
    assert [i["position"] for i in listed["items"]] == big_session

    found = ok(api, "history_search", SCOPE, SESSION, query="needle-", context_lines=0)

    assert [(m["source_id"], m["line"]) for m in found["matches"]] == [
        ("s3", 2000),
        ("s9", 2000),
        ("s13", 2000),
    ]
    assert found["matches"][0]["text"] == "needle-3 found here".ljust(len(LINE) - 1)
    assert (found["truncated"], found["partial"], found["next_after_position"]) == (False, False, None)
    assert detector_calls(detectors) == 0


@pytest.mark.parametrize(("budget", "per_call"), [(1_000_000, 5), (65_536, 1)])
@pytest.mark.parametrize("ignore_case", [False, True])
def test_a_search_stops_at_its_byte_budget_and_goes_on_from_its_cursor(
    api: Any, big_session: list[int], settings: Any, budget: int, per_call: int, ignore_case: bool
) -> None:
    settings.POWERCONTEXT_RECOVERY_HISTORY_SEARCH_BYTES = budget
    query = "NEEDLE-" if ignore_case else "needle-"
    matches: list[str] = []
    after, calls = 0, 0
    while True:
        page = ok(
            api, "history_search", SCOPE, SESSION, query=query, ignore_case=ignore_case, after_position=after
        )
        calls += 1
        matches += [m["source_id"] for m in page["matches"]]
        assert not page["truncated"]
        if not page["partial"]:
            assert page["next_after_position"] is None
            break
        assert page["next_after_position"] == min(after + per_call, 14)
        after = page["next_after_position"]
    assert matches == ["s3", "s9", "s13"]
    assert calls == -(-14 // per_call)


def test_the_selector_scans_no_more_than_its_budget(big_session: list[int], settings: Any) -> None:
    settings.POWERCONTEXT_RECOVERY_HISTORY_SEARCH_BYTES = 450_000
    found = history.history_search(
        scope_id=SCOPE,
        session_id=SESSION,
        owner=LOCAL_OWNER,
        search=LineSearch(query="needle-"),
        after_position=0,
    )
    assert (found.partial, found.next_after, found.scanned_bytes) == (True, 2, 2 * SOURCE_BYTES)
    assert found.matches == []


def test_a_search_that_fills_its_limit_is_truncated_not_partial(
    api: Any, big_session: list[int], settings: Any
) -> None:
    settings.POWERCONTEXT_RECOVERY_HISTORY_SEARCH_BYTES = 1_000_000
    found = ok(api, "history_search", SCOPE, SESSION, query="long log", limit=3)
    assert len(found["matches"]) == 3 and found["truncated"] is True
    assert (found["partial"], found["next_after_position"]) == (False, None)


def test_a_read_of_big_sources_returns_the_budget_and_cuts_the_next(api: Any, big_session: list[int]) -> None:
    read = ok(api, "history_read", SCOPE, SESSION, from_position=3, max_bytes=16_000)
    item = read["items"][0]
    assert (item["source_id"], item["size_bytes"], item["truncated"]) == ("s2", SOURCE_BYTES, True)
    assert item["content"] == big_source(2)[:16_000] and read["content_bytes"] == 16_000
    assert read["next_position"] == 4
