"""``POST /v1/context/feedback``: what it accepts, what it records, and what it refuses."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import time_machine
from django.core.management import call_command
from django.core.management.base import CommandError

from powercontext.feedback import tasks
from powercontext.feedback.models import Feedback, FeedbackCounter
from tests.api.helpers import assert_error, assert_invalid
from tests.feedback.helpers import citations_of, prepare, report
from tests.review.factories import create_token, make_approved

SCOPE = "repo"


@pytest.fixture
def cited(api: Any) -> list[dict[str, Any]]:
    api.remember(SCOPE, "Run the contract tests after changing persistence.")
    api.remember(SCOPE, "Migrations are reviewed by a second person before merging.")
    citations = citations_of(prepare(api, SCOPE, "what must I run after changing persistence?"))
    assert citations
    return citations


def test_a_used_report_is_recorded_once_a_day_per_reporter(api: Any, cited: list[dict[str, Any]]) -> None:
    first = report(api, SCOPE, (cited[0], "used"))
    assert first.status_code == 200, first.content
    assert first.json() == {
        "recorded": 1,
        "items": [{"outcome": "used", "recorded": True, "status": "recorded"}],
    }
    again = report(api, SCOPE, (cited[0], "used"), (cited[0], "wrong"))
    assert again.json()["items"] == [
        {"outcome": "used", "recorded": False, "status": "already_recorded"},
        {"outcome": "wrong", "recorded": True, "status": "recorded"},
    ]
    assert Feedback.objects.count() == 2
    counter = FeedbackCounter.objects.get()
    assert (counter.uses, counter.reporters, counter.wrong_reporters) == (1, 1, 1)


def test_the_same_item_twice_in_one_call_counts_once(api: Any, cited: list[dict[str, Any]]) -> None:
    body = report(api, SCOPE, (cited[0], "used"), (cited[0], "used")).json()
    assert [item["status"] for item in body["items"]] == ["recorded", "already_recorded"]
    assert body["recorded"] == 1


def test_a_new_day_records_a_new_use(api: Any, cited: list[dict[str, Any]]) -> None:
    with time_machine.travel("2026-12-01T10:00:00Z", tick=False):
        assert report(api, SCOPE, (cited[0], "used")).json()["recorded"] == 1
    with time_machine.travel("2026-12-02T10:00:00Z", tick=False):
        assert report(api, SCOPE, (cited[0], "used")).json()["recorded"] == 1
    counter = FeedbackCounter.objects.get()
    assert counter.uses == 2
    assert counter.last_used_at.isoformat().startswith("2026-12-02")


def test_an_unknown_citation_is_a_422_naming_the_item_and_records_nothing(
    api: Any, cited: list[dict[str, Any]]
) -> None:
    unknown = dict(cited[0], entry_version_id="mem_ver_nope")
    response = report(api, SCOPE, (cited[0], "used"), (unknown, "wrong"))
    errors = assert_invalid(response)
    assert [e["loc"] for e in errors] == [["body", "items", 1, "citation"]]
    assert errors[0]["type"] == "citation_unknown"
    assert Feedback.objects.count() == 0 and FeedbackCounter.objects.count() == 0


def test_a_citation_of_another_scope_is_unknown(api: Any, cited: list[dict[str, Any]]) -> None:
    api.remember("other", "Something else entirely.")
    errors = assert_invalid(report(api, "other", (cited[0], "used")))
    assert errors[0]["loc"] == ["body", "items", 0, "citation"]


def test_a_revision_the_version_was_not_part_of_is_unknown(api: Any) -> None:
    first = api.remember(SCOPE, "Run the contract tests after changing persistence.")
    second = api.remember(SCOPE, "Migrations are reviewed by a second person before merging.")
    assert (first["memory"]["revision"], second["memory"]["revision"]) == (1, 2)
    first_at_1 = dict(first["entry"]["citation"], memory_ref=first["memory"])
    second_at_1 = dict(second["entry"]["citation"], memory_ref=first["memory"])
    second_at_3 = dict(second["entry"]["citation"], memory_ref=dict(second["memory"], revision=3))
    assert report(api, SCOPE, (first_at_1, "used")).status_code == 200
    assert_invalid(report(api, SCOPE, (second_at_1, "used")))
    assert_invalid(report(api, SCOPE, (second_at_3, "used")))


def test_a_version_cited_under_another_entry_is_unknown(api: Any) -> None:
    first = api.remember(SCOPE, "Run the contract tests after changing persistence.")
    second = api.remember(SCOPE, "Migrations are reviewed by a second person before merging.")
    swapped = dict(first["entry"]["citation"], memory_ref=second["memory"])
    swapped["entry_id"] = second["entry"]["citation"]["entry_id"]
    assert_invalid(report(api, SCOPE, (swapped, "used")))
    assert Feedback.objects.count() == 0


def test_an_approved_experience_can_be_reported(api: Any) -> None:
    _, ref = make_approved(SCOPE)
    body = report(api, SCOPE, ({"artifact_ref": ref}, "outdated")).json()
    assert body["recorded"] == 1
    counter = FeedbackCounter.objects.get()
    assert counter.family == "experience" and counter.outdated_reporters == 1


@pytest.mark.parametrize(
    "items",
    [
        [],
        [{"citation": {}, "outcome": "used"}],
        [
            {
                "citation": {"artifact_ref": {"family": "experience", "artifact_id": "a", "revision": 0}},
                "outcome": "used",
            }
        ],
        [{"citation": {"memory_ref": {}, "artifact_ref": {}}, "outcome": "used"}],
        [{"citation": "mem_ver_1", "outcome": "used"}],
        [
            {
                "citation": {"artifact_ref": {"family": "experience", "artifact_id": "a", "revision": 1}},
                "outcome": "liked",
            }
        ],
        [
            {
                "citation": {"artifact_ref": {"family": "experience", "artifact_id": "a", "revision": 1}},
                "outcome": "used",
                "note": "x" * 501,
            }
        ],
        [
            {
                "citation": {"artifact_ref": {"family": "experience", "artifact_id": "a", "revision": 1}},
                "outcome": "used",
                "extra": 1,
            }
        ],
        [
            {
                "citation": {"artifact_ref": {"family": "experience", "artifact_id": "a", "revision": 1}},
                "outcome": "used",
            }
        ]
        * 33,
    ],
)
def test_malformed_items_are_422(api: Any, items: list[Any]) -> None:
    assert_invalid(api.post("/v1/context/feedback", {"scope_id": SCOPE, "items": items}))


def test_a_note_is_stored_redacted(api: Any, cited: list[dict[str, Any]]) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    response = api.post(
        "/v1/context/feedback",
        {
            "scope_id": SCOPE,
            "items": [{"citation": cited[0], "outcome": "wrong", "note": f"token {secret} leaked"}],
        },
    )
    assert response.status_code == 200
    note = Feedback.objects.get().note
    assert secret not in note and "[REDACTED" in note


def test_a_reporter_over_its_rate_is_429_with_retry_after(
    api: Any, settings: Any, cited: list[dict[str, Any]]
) -> None:
    settings.POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE = 2
    assert report(api, SCOPE, (cited[0], "used"), (cited[0], "wrong")).status_code == 200
    refused = report(api, SCOPE, (cited[0], "outdated"))
    assert_error(refused, 429, "rate_limited")
    assert refused["Retry-After"] == "60"
    # a duplicate adds nothing, so it is not refused
    assert report(api, SCOPE, (cited[0], "used")).status_code == 200
    assert Feedback.objects.count() == 2


def test_each_token_is_one_reporter_however_often_it_reports(api: Any, cited: list[dict[str, Any]]) -> None:
    tokens = {name: create_token(name)[0] for name in ("agent-a", "agent-b")}
    with time_machine.travel("2026-12-01T10:00:00Z", tick=False):
        for token in tokens.values():
            api.token = token
            assert report(api, SCOPE, (cited[0], "outdated")).json()["recorded"] == 1
        api.token = tokens["agent-a"]
        assert report(api, SCOPE, (cited[0], "outdated")).json()["recorded"] == 0
    with time_machine.travel("2026-12-02T10:00:00Z", tick=False):
        # a new day is a new row, and still the same reporter
        assert report(api, SCOPE, (cited[0], "outdated"), (cited[0], "wrong")).json()["recorded"] == 2
    counter = FeedbackCounter.objects.get()
    assert (counter.reporters, counter.outdated_reporters, counter.wrong_reporters) == (2, 2, 1)


def test_the_counters_are_rebuilt_and_verified_from_the_log(api: Any, cited: list[dict[str, Any]]) -> None:
    api.token, _ = create_token("agent-a")
    report(api, SCOPE, (cited[0], "used"), (cited[0], "outdated"))
    expected = list(FeedbackCounter.objects.values("target", "uses", "reporters", "outdated_reporters"))
    FeedbackCounter.objects.update(uses=7, reporters=0)
    FeedbackCounter.objects.create(scope_id=SCOPE, target="m:orphan", family="memory", entry_version_id=1)

    with pytest.raises(CommandError):
        call_command("rebuild_search_index", "--verify-only", stdout=io.StringIO())
    assert tasks.verify_feedback_counters.delay().get()["stale"] == 1
    out = io.StringIO()
    call_command("rebuild_search_index", "--verify-only", "--repair", stdout=out)
    assert json.loads(out.getvalue())["feedback_counters"]["repaired"] is True
    assert (
        list(FeedbackCounter.objects.values("target", "uses", "reporters", "outdated_reporters")) == expected
    )

    FeedbackCounter.objects.all().delete()
    out = io.StringIO()
    call_command("rebuild_search_index", "--no-progress", stdout=out, stderr=io.StringIO())
    assert "rebuilt 1 feedback counters from the feedback log" in out.getvalue()
    assert (
        list(FeedbackCounter.objects.values("target", "uses", "reporters", "outdated_reporters")) == expected
    )
    assert tasks.rebuild_feedback_counters.delay().get() == {"rebuilt_counters": 1}
    assert json.loads(_verify())["ok"] is True


def _verify() -> str:
    out = io.StringIO()
    call_command("rebuild_search_index", "--verify-only", stdout=out)
    return out.getvalue()
