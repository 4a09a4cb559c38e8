"""Session notes over /v1: immutable versions, replace and append, read, list, literal search,
and the limits (exact UTF-8 byte caps, path rules, note count), each refusal a 422 that writes
nothing."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.recovery import limits
from powercontext.recovery.models import RecoverySession, SessionNote, SessionNoteVersion
from tests.api.helpers import assert_error, row_counts
from tests.recovery.helpers import call, ok

SCOPE, SESSION = "git:example/app", "codex-session-1"


def write(api: Any, path: str, content: str, **extra: Any) -> dict[str, Any]:
    return ok(api, "write", SCOPE, SESSION, path=path, content=content, **extra)


def test_each_write_is_a_new_immutable_version(api: Any) -> None:
    first = write(api, "plan.md", "step 1\n")
    second = write(api, "plan.md", "step 2\n", mode="append")
    third = write(api, "plan.md", "fresh start\n")

    assert [first["note"]["version"], second["note"]["version"], third["note"]["version"]] == [1, 2, 3]
    latest = ok(api, "read", SCOPE, SESSION, path="plan.md")
    assert (latest["version"], latest["latest_version"], latest["content"]) == (3, 3, "fresh start\n")
    v2 = ok(api, "read", SCOPE, SESSION, path="plan.md", version=2)
    assert (v2["content"], v2["mode"], v2["latest_version"]) == ("step 1\nstep 2\n", "append", 3)
    assert ok(api, "read", SCOPE, SESSION, path="plan.md", version=1)["content"] == "step 1\n"
    assert SessionNoteVersion.objects.count() == 3
    assert third["note_count"] == 1 and third["total_bytes"] == len(b"fresh start\n")


def test_list_gives_paths_sizes_versions_and_times(api: Any) -> None:
    write(api, "todo/tests", "a")
    write(api, "plan.md", "日本")
    write(api, "todo/tests", "b", mode="append")

    listed = ok(api, "list", SCOPE, SESSION)
    assert [(n["path"], n["version"], n["size_bytes"]) for n in listed["notes"]] == [
        ("plan.md", 1, 6),
        ("todo/tests", 2, 2),
    ]
    assert all(n["updated_at"].endswith("Z") for n in listed["notes"])
    assert (listed["note_count"], listed["total_bytes"]) == (2, 8)
    assert [n["path"] for n in ok(api, "list", SCOPE, SESSION, prefix="todo/")["notes"]] == ["todo/tests"]


def test_search_is_literal_line_by_line_with_context(api: Any) -> None:
    write(api, "plan.md", "intro\nTODO: run the tests\nmiddle\n.* not a pattern\nend")
    write(api, "log.md", "todo later")

    exact = ok(api, "search", SCOPE, SESSION, query="TODO")
    assert [(m["path"], m["line"], m["text"], m["before"], m["after"]) for m in exact["matches"]] == [
        ("plan.md", 2, "TODO: run the tests", ["intro"], ["middle"])
    ]
    folded = ok(api, "search", SCOPE, SESSION, query="todo", ignore_case=True, context_lines=0)
    assert [(m["path"], m["line"]) for m in folded["matches"]] == [("log.md", 1), ("plan.md", 2)]
    assert folded["matches"][0]["before"] == [] and folded["truncated"] is False
    literal = ok(api, "search", SCOPE, SESSION, query=".*")
    assert [m["line"] for m in literal["matches"]] == [4]
    limited = ok(api, "search", SCOPE, SESSION, query="t", limit=1)
    assert len(limited["matches"]) == 1 and limited["truncated"] is True
    assert_error(call(api, "search", SCOPE, SESSION, query="a\nb"), 422, "invalid_request")


def test_search_reads_only_the_current_version(api: Any) -> None:
    write(api, "plan.md", "old words")
    write(api, "plan.md", "new words")
    assert ok(api, "search", SCOPE, SESSION, query="old")["matches"] == []


def test_expected_version_is_a_compare_and_swap(api: Any) -> None:
    write(api, "plan.md", "a", expected_version=0)
    assert_error(
        call(api, "write", SCOPE, SESSION, path="plan.md", content="b", expected_version=0),
        409,
        "note_conflict",
    )
    write(api, "plan.md", "b", expected_version=1)
    assert ok(api, "read", SCOPE, SESSION, path="plan.md")["content"] == "b"


def test_missing_notes_and_versions_are_404(api: Any) -> None:
    assert_error(call(api, "read", SCOPE, SESSION, path="nope.md"), 404, "note_not_found")
    write(api, "plan.md", "a")
    assert_error(call(api, "read", SCOPE, SESSION, path="plan.md", version=2), 404, "note_not_found")


@pytest.mark.parametrize(
    "path",
    ["", "/abs", "a//b", "../up", "a/../b", ".", "a/.", ".hidden", "a b", "a\\b", "é.md", "a/", "x" * 257],
)
def test_paths_are_virtual_and_refused_otherwise(api: Any, path: str) -> None:
    before = row_counts()
    assert_error(call(api, "write", SCOPE, SESSION, path=path, content="x"), 422, "invalid_request")
    assert row_counts() == before


def test_a_path_of_exactly_the_maximum_length_is_accepted(api: Any) -> None:
    path = "a/" * 127 + "bc"
    assert len(path) == limits.PATH_MAX_CHARS
    assert write(api, path, "x")["note"]["path"] == path


# --- byte caps, exact at UTF-8 boundaries -------------------------------------------------------

CAP = limits.NOTE_MAX_BYTES


@pytest.mark.parametrize(
    ("content", "fits"),
    [
        ("a" * CAP, True),
        ("a" * (CAP - 1) + "é", False),  # 65,536 characters, 65,537 bytes
        ("語" * (CAP // 3) + "a", True),  # 65,535 + 1 bytes
        ("語" * (CAP // 3) + "ab", False),  # one byte over
        ("😀" * (CAP // 4), True),  # exactly 65,536 bytes of emoji
        ("a" * (CAP - 4) + "😀", True),  # the emoji ends exactly at the cap
        ("a" * (CAP - 3) + "😀", False),  # the emoji would straddle the cap
        ("a" * (CAP - 2) + "語", False),  # a CJK character straddling the cap
    ],
)
def test_the_per_note_cap_is_exact_in_utf8_bytes(api: Any, content: str, fits: bool) -> None:
    before = row_counts()
    response = call(api, "write", SCOPE, SESSION, path="big.md", content=content)
    if fits:
        assert response.status_code == 200, response.content
        assert response.json()["note"]["size_bytes"] == len(content.encode("utf-8")) <= CAP
        assert ok(api, "read", SCOPE, SESSION, path="big.md")["content"] == content
    else:
        details = assert_error(response, 422, "note_too_large")
        assert details["limit_bytes"] == CAP and details["size_bytes"] == len(content.encode("utf-8"))
        assert row_counts() == before
        assert not RecoverySession.objects.exists()


def test_content_longer_than_the_cap_in_characters_is_refused_by_the_schema(api: Any) -> None:
    before = row_counts()
    response = call(api, "write", SCOPE, SESSION, path="big.md", content="a" * (CAP + 1))
    assert_error(response, 422, "invalid_request")
    assert row_counts() == before


def test_an_append_over_the_note_cap_leaves_the_note_as_it_was(api: Any) -> None:
    write(api, "log.md", "a" * (CAP - 4))
    ok_append = write(api, "log.md", "😀", mode="append")
    assert ok_append["note"]["size_bytes"] == CAP
    before = row_counts()
    assert_error(
        call(api, "write", SCOPE, SESSION, path="log.md", content="語", mode="append"), 422, "note_too_large"
    )
    assert row_counts() == before
    note = ok(api, "read", SCOPE, SESSION, path="log.md")
    assert note["version"] == 2 and note["content"].endswith("😀")


def test_the_per_session_cap_counts_current_sizes_and_refuses_whole(api: Any) -> None:
    per_note = limits.SESSION_MAX_BYTES // 16
    for i in range(16):
        write(api, f"n{i:02d}", "b" * per_note)
    session = RecoverySession.objects.get()
    assert session.total_bytes == limits.SESSION_MAX_BYTES
    before = row_counts()
    details = assert_error(
        call(api, "write", SCOPE, SESSION, path="one-more", content="x"), 422, "session_notes_too_large"
    )
    assert details == {"limit_bytes": limits.SESSION_MAX_BYTES, "total_bytes": limits.SESSION_MAX_BYTES + 1}
    assert row_counts() == before
    # Shrinking a note frees room; a replace counts the new size, not the old one plus the new.
    write(api, "n00", "small")
    write(api, "one-more", "x")
    assert RecoverySession.objects.get().total_bytes == limits.SESSION_MAX_BYTES - per_note + 5 + 1
    # Another session of the same scope has its own budget.
    assert ok(api, "write", SCOPE, "other-session", path="n00", content="c")["total_bytes"] == 1


def test_the_note_count_cap(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "NOTES_MAX", 3)
    for i in range(3):
        write(api, f"n{i}", "x")
    before = row_counts()
    assert_error(call(api, "write", SCOPE, SESSION, path="n3", content="x"), 422, "too_many_notes")
    assert row_counts() == before
    write(api, "n0", "rewriting an existing note is fine", mode="append")
    assert SessionNote.objects.count() == 3


def test_invalid_input_is_refused_and_writes_nothing(api: Any) -> None:
    before = row_counts()
    for body in (
        {"path": "a", "content": "x", "mode": "prepend"},
        {"path": "a", "content": "x", "unknown": 1},
        {"path": "a", "content": 5},
        {"path": "a"},
        {"path": "a", "content": "x", "expected_version": -1},
    ):
        assert_error(call(api, "write", SCOPE, SESSION, **body), 422, "invalid_request")
    assert_error(
        api.post("/v1/sessions/notes/write", {"scope_id": SCOPE, "path": "a", "content": "x"}),
        422,
        "invalid_request",
    )
    assert_error(call(api, "write", SCOPE, " ", path="a", content="x"), 422, "invalid_request")
    assert row_counts() == before
