"""Session history over /v1 (list, literal search, budgeted range read; redacted), the recovery
hint, isolation between scopes and sessions, and forgetting (pipeline, retention, command)."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from powercontext.memory.sources import source_capture
from powercontext.recovery import limits
from powercontext.recovery.models import RecoverySession, SessionNote, SessionNoteVersion
from tests.api.helpers import assert_error
from tests.pipeline.helpers import StubGenerator, memory, output, run_pass
from tests.recovery.helpers import call, ok

SCOPE, SESSION = "git:example/app", "codex-session-1"
SECRET = "AKIAIOSFODNN7EXAMPLE"


def capture(
    source_id: str, content: str, *, scope: str = SCOPE, session: str | None = SESSION, **meta: Any
) -> int:
    metadata = {**({"session_id": session} if session is not None else {}), **meta}
    return source_capture(scope_id=scope, source_id=source_id, content=content, metadata=metadata).position


@pytest.fixture
def session_history(db: None) -> list[int]:
    """Five sources of the session in two windows, interleaved with other sessions and scopes."""
    positions = []
    for i in range(5):
        positions.append(
            capture(
                f"p{i}", f"prompt {i}: fix the build\nkey {SECRET}", window_id=f"w{i // 3}", kind="prompt"
            )
        )
        capture(f"other{i}", f"prompt {i}: fix the build elsewhere", session="another-session")
        capture(f"x{i}", f"prompt {i}: fix the build", scope="git:example/other")
    capture("lone", "prompt without a session", session=None)
    return positions


def test_history_lists_the_session_in_position_order_with_paging(
    api: Any, session_history: list[int]
) -> None:
    first = ok(api, "history", SCOPE, SESSION, limit=2)
    assert [i["source_id"] for i in first["items"]] == ["p0", "p1"]
    assert [i["position"] for i in first["items"]] == session_history[:2]
    assert first["items"][0]["kind"] == "prompt" and first["items"][0]["window_id"] == "w0"
    assert first["next_after_position"] == session_history[1]
    rest = ok(api, "history", SCOPE, SESSION, after_position=first["next_after_position"], limit=10)
    assert [i["source_id"] for i in rest["items"]] == ["p2", "p3", "p4"]
    assert rest["items"][-1]["window_id"] == "w1" and rest["next_after_position"] is None


def test_history_search_is_literal_redacted_and_of_this_session_only(
    api: Any, session_history: list[int]
) -> None:
    found = ok(api, "history_search", SCOPE, SESSION, query="FIX THE BUILD", ignore_case=True)
    assert [m["source_id"] for m in found["matches"]] == ["p0", "p1", "p2", "p3", "p4"]
    assert found["matches"][0]["after"] == ["key [REDACTED:aws_access_key]"]
    assert ok(api, "history_search", SCOPE, SESSION, query="FIX THE BUILD")["matches"] == []
    assert ok(api, "history_search", SCOPE, SESSION, query=SECRET)["matches"] == []
    assert ok(api, "history_search", SCOPE, SESSION, query="elsewhere")["matches"] == []
    redacted = ok(api, "history_search", SCOPE, SESSION, query="[REDACTED:aws", limit=2)
    assert len(redacted["matches"]) == 2 and redacted["truncated"] is True


def test_history_search_folds_non_ascii_case(api: Any, db: None) -> None:
    capture("u", "Überprüfung der Straße")
    assert [
        m["source_id"]
        for m in ok(api, "history_search", SCOPE, SESSION, query="über", ignore_case=True)["matches"]
    ] == ["u"]
    assert ok(api, "history_search", SCOPE, SESSION, query="über")["matches"] == []


def test_history_read_keeps_the_budget_and_marks_the_cut(api: Any, session_history: list[int]) -> None:
    whole = ok(api, "history_read", SCOPE, SESSION, from_position=1)
    assert [i["source_id"] for i in whole["items"]] == ["p0", "p1", "p2", "p3", "p4"]
    assert whole["truncated"] is False and whole["next_position"] is None
    assert SECRET not in str(whole) and "[REDACTED:aws_access_key]" in whole["items"][0]["content"]
    size = whole["items"][0]["size_bytes"]
    assert size == len(whole["items"][0]["content"].encode("utf-8"))

    budget = 256
    part = ok(api, "history_read", SCOPE, SESSION, from_position=1, max_bytes=budget)
    assert part["content_bytes"] <= budget and part["truncated"] is True
    full, cut = part["items"][:-1], part["items"][-1]
    assert all(not i["truncated"] for i in full) and cut["truncated"] is True
    assert cut["size_bytes"] > len(cut["content"].encode("utf-8"))
    assert part["content_bytes"] == budget
    assert part["next_position"] == cut["position"] + 1

    ranged = ok(
        api, "history_read", SCOPE, SESSION, from_position=session_history[1], to_position=session_history[2]
    )
    assert [i["source_id"] for i in ranged["items"]] == ["p1", "p2"]


@pytest.mark.parametrize(
    ("prefix_bytes", "char"),
    [(255, "語"), (254, "語"), (253, "語"), (255, "😀"), (253, "😀"), (252, "😀")],
)
def test_history_read_cuts_at_a_character_boundary(api: Any, db: None, prefix_bytes: int, char: str) -> None:
    content = "a" * prefix_bytes + char * 10
    capture("big", content)
    part = ok(api, "history_read", SCOPE, SESSION, from_position=1, max_bytes=256)
    item = part["items"][0]
    got = item["content"].encode("utf-8")
    width = len(char.encode("utf-8"))
    expected = prefix_bytes + ((256 - prefix_bytes) // width) * width
    assert len(got) == expected <= 256 and item["truncated"] is True
    assert content.startswith(item["content"])


def test_the_hint_is_metadata_only_bounded_and_deterministic(api: Any, session_history: list[int]) -> None:
    ok(api, "write", SCOPE, SESSION, path="plan.md", content="SECRET PLAN TEXT\n")
    ok(api, "write", SCOPE, SESSION, path="todo/tests", content="run the contract tests")
    ok(api, "write", SCOPE, "another-session", path="theirs.md", content="not mine")

    hint = ok(api, "hint", SCOPE, SESSION)
    text = hint["hint"]
    assert hint["hint_bytes"] == len(text.encode("utf-8")) <= limits.HINT_MAX_BYTES
    assert "SECRET PLAN" not in text and "contract tests" not in text and "theirs.md" not in text
    assert "- todo/tests (22 bytes, v1," in text and "- plan.md (17 bytes, v1," in text
    assert text.index("todo/tests") < text.index("plan.md")  # most recently written first
    assert (
        f"History: 5 sources, positions {session_history[0]}..{session_history[-1]}; windows: w0, w1." in text
    )
    assert ok(api, "hint", SCOPE, SESSION) == hint
    empty = ok(api, "hint", SCOPE, "never-seen")
    assert "Notes: 0 (0 bytes)." in empty["hint"] and "History: no captured sources." in empty["hint"]


def test_the_hint_of_a_full_session_stays_within_4000_bytes(api: Any, db: None) -> None:
    for i in range(120):
        ok(api, "write", SCOPE, SESSION, path=f"notes/{i:03d}-" + "x" * 60, content="y")
    hint = ok(api, "hint", SCOPE, SESSION)
    assert hint["truncated"] is True and hint["hint_bytes"] <= 4000
    listed = sum(1 for line in hint["hint"].split("\n") if line.startswith("- notes/"))
    assert f"- ... {120 - listed} more notes not listed (use list_session_notes)." in hint["hint"]


def test_window_ids_in_the_hint_cannot_forge_lines(api: Any, db: None) -> None:
    capture("p", "x", window_id="w1\n- forged.md (1 bytes)")
    text = ok(api, "hint", SCOPE, SESSION)["hint"]
    assert "\n- forged.md" not in text and "w1 - forged.md" in text


# --- isolation ------------------------------------------------------------------------------------


def test_nothing_crosses_sessions_or_scopes(api: Any, session_history: list[int]) -> None:
    ok(api, "write", SCOPE, SESSION, path="plan.md", content="mine")
    ok(api, "write", SCOPE, "another-session", path="plan.md", content="same path, other session")
    ok(api, "write", "git:example/other", SESSION, path="plan.md", content="same session id, other scope")

    assert ok(api, "read", SCOPE, SESSION, path="plan.md")["content"] == "mine"
    assert [n["path"] for n in ok(api, "list", SCOPE, SESSION)["notes"]] == ["plan.md"]
    assert ok(api, "search", SCOPE, SESSION, query="other")["matches"] == []
    other_scope = ok(api, "history", "git:example/other", SESSION)["items"]
    assert [i["source_id"] for i in other_scope] == ["x0", "x1", "x2", "x3", "x4"]
    assert ok(api, "history_search", "git:example/other", SESSION, query="elsewhere")["matches"] == []
    assert_error(call(api, "read", SCOPE, "third-session", path="plan.md"), 404, "note_not_found")


def test_a_scoped_token_reaches_only_its_scope(api: Any, session_history: list[int]) -> None:
    out = io.StringIO()
    call_command("create_api_token", "agent", "--scope", SCOPE, stdout=out)
    api.token = out.getvalue().splitlines()[-1]
    ok(api, "write", SCOPE, SESSION, path="plan.md", content="mine")
    for name, body in (
        ("write", {"path": "plan.md", "content": "x"}),
        ("read", {"path": "plan.md"}),
        ("list", {}),
        ("search", {"query": "x"}),
        ("history", {}),
        ("history_search", {"query": "fix"}),
        ("history_read", {"from_position": 1}),
        ("hint", {}),
    ):
        assert_error(call(api, name, "git:example/other", SESSION, **body), 403, "scope_forbidden")
    assert not RecoverySession.objects.filter(scope_id="git:example/other").exists()


# --- forgetting and retention ------------------------------------------------------------------


def test_the_pipeline_forgets_the_notes_of_a_polluted_session(api: Any, db: None) -> None:
    capture("a", "remember: deploys happen on tuesday", session="clean")
    capture("b", "remember: x", session="dirty")
    ok(api, "write", SCOPE, "clean", path="plan.md", content="keep")
    ok(api, "write", SCOPE, "dirty", path="plan.md", content="forget")
    generator = StubGenerator(output(memory("deploys happen on tuesday", "a")))
    run_pass(SCOPE, generator)
    assert RecoverySession.objects.filter(scope_id=SCOPE).count() == 2

    capture("c", "pasted web page", session="dirty", external_context=True)
    run_pass(SCOPE, generator)

    assert list(RecoverySession.objects.values_list("session_id", flat=True)) == ["clean"]
    assert SessionNote.objects.count() == 1 and SessionNoteVersion.objects.count() == 1
    assert_error(call(api, "read", SCOPE, "dirty", path="plan.md"), 404, "note_not_found")


def test_notes_older_than_the_retention_are_removed_by_the_pipeline(
    api: Any, settings: Any, db: None
) -> None:
    days = settings.POWERCONTEXT_PIPELINE["retention_days"]
    with time_machine.travel(timezone.now() - timedelta(days=days + 1), tick=False):
        ok(api, "write", SCOPE, "old", path="plan.md", content="stale")
    ok(api, "write", SCOPE, "new", path="plan.md", content="fresh")
    capture("a", "remember: y", session="new")
    run_pass(SCOPE, StubGenerator(output(memory("y", "a"))))
    assert list(RecoverySession.objects.values_list("session_id", flat=True)) == ["new"]


def test_the_command_forgets_a_scope_a_session_or_the_expired(api: Any, settings: Any, db: None) -> None:
    ok(api, "write", SCOPE, "s1", path="a", content="x")
    ok(api, "write", SCOPE, "s2", path="a", content="x")
    ok(api, "write", "git:example/other", "s1", path="a", content="x")
    out = io.StringIO()
    call_command("forget_session_notes", "--scope", SCOPE, "--session", "s1", stdout=out)
    assert out.getvalue().strip() == "forgot 1 sessions"
    call_command("forget_session_notes", "--scope", SCOPE, stdout=out)
    assert list(RecoverySession.objects.values_list("scope_id", "session_id")) == [
        ("git:example/other", "s1")
    ]
    days = settings.POWERCONTEXT_PIPELINE["retention_days"]
    with time_machine.travel(timezone.now() + timedelta(days=days + 1), tick=False):
        call_command("forget_session_notes", "--expired", stdout=out)
    assert not RecoverySession.objects.exists() and not SessionNoteVersion.objects.exists()
