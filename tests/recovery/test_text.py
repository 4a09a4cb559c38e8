"""The pure text helpers: UTF-8-safe clipping, line search with context, the hint under its cap."""

from __future__ import annotations

import pytest

from powercontext.recovery.text import (
    HintHistory,
    HintNote,
    clip_utf8,
    excerpt,
    find_lines,
    render_hint,
    safe_label,
    utf8_size,
)

NO_HISTORY = HintHistory(count=0, first_position=None, last_position=None, windows=(), window_count=0)


@pytest.mark.parametrize(
    ("text", "budget", "expected"),
    [
        ("abc", 3, "abc"),
        ("abc", 2, "ab"),
        ("日本語", 8, "日本"),  # 9 bytes; the third character does not fit whole
        ("日本語", 6, "日本"),
        ("a😀b", 4, "a"),  # the emoji takes bytes 2..5
        ("a😀b", 5, "a😀"),
        ("😀", 0, ""),
    ],
)
def test_clip_never_splits_a_character(text: str, budget: int, expected: str) -> None:
    assert clip_utf8(text, budget) == expected
    assert utf8_size(clip_utf8(text, budget)) <= budget


def test_excerpt_keeps_the_match_and_the_byte_cap() -> None:
    line = "x" * 1000 + "NEEDLE" + "語" * 500
    cut = excerpt(line, 1000, 400)
    assert "NEEDLE" in cut and cut.startswith("…") and cut.endswith("…")
    assert utf8_size(cut) <= 400
    assert excerpt("short", 0, 400) == "short"


def test_find_lines_gives_line_numbers_and_context() -> None:
    content = "alpha\nBeta gamma\ndelta\nbeta again"
    exact = list(find_lines(content, "beta", ignore_case=False, context_lines=1, line_max_bytes=400))
    assert [(m.line, m.text, m.before, m.after) for m in exact] == [(4, "beta again", ("delta",), ())]
    folded = list(find_lines(content, "BETA", ignore_case=True, context_lines=2, line_max_bytes=400))
    assert [m.line for m in folded] == [2, 4]
    assert folded[0].before == ("alpha",) and folded[0].after == ("delta", "beta again")


def test_safe_label_removes_control_characters_and_clips() -> None:
    assert safe_label("w1\nforged line") == "w1 forged line"
    assert safe_label("a" * 100, 10) == "a" * 10 + "…"


def _notes(count: int, path: str = "notes/entry") -> list[HintNote]:
    return [
        HintNote(path=f"{path}-{i:04d}.md", size_bytes=i, version=1, updated_at="2026-01-01T00:00:00Z")
        for i in range(count)
    ]


@pytest.mark.parametrize("count", [0, 1, 10, 40, 41, 42, 100, 1024])
def test_the_hint_never_exceeds_its_cap_and_says_what_it_left_out(count: int) -> None:
    notes = _notes(count)
    text, truncated = render_hint(
        notes=notes,
        note_count=count,
        total_bytes=sum(n.size_bytes for n in notes),
        history=NO_HISTORY,
        max_bytes=4000,
    )
    assert utf8_size(text) <= 4000
    listed = sum(1 for line in text.split("\n") if line.startswith("- notes/"))
    if truncated:
        assert f"- ... {count - listed} more notes not listed" in text
        assert utf8_size(text) > 4000 - 200  # it filled the hint before giving up
    else:
        assert listed == count


def test_the_hint_truncates_only_when_the_next_note_would_not_fit() -> None:
    previous = None
    for count in range(1, 200):
        text, truncated = render_hint(
            notes=_notes(count), note_count=count, total_bytes=0, history=NO_HISTORY, max_bytes=4000
        )
        assert utf8_size(text) <= 4000
        if truncated:
            break
        previous = text
    else:
        pytest.fail("never truncated")
    assert previous is not None
    # The untruncated hint of count - 1 notes plus this count's last line is over the cap.
    last = f"- notes/entry-{count - 1:04d}.md (0 bytes, v1, 2026-01-01T00:00:00Z)"
    full = previous.replace(f"Notes: {count - 1} ", f"Notes: {count} ") + "\n" + last
    assert utf8_size(full) > 4000


def test_the_hint_is_deterministic_and_lists_windows() -> None:
    history = HintHistory(count=12, first_position=3, last_position=40, windows=("w1", "w2"), window_count=5)
    once = render_hint(notes=_notes(3), note_count=3, total_bytes=3, history=history, max_bytes=4000)
    again = render_hint(notes=_notes(3), note_count=3, total_bytes=3, history=history, max_bytes=4000)
    assert once == again
    assert "History: 12 sources, positions 3..40; windows: w1, w2 (+3 more)." in once[0]


def test_a_tiny_cap_is_still_honoured() -> None:
    text, truncated = render_hint(
        notes=_notes(5), note_count=5, total_bytes=0, history=NO_HISTORY, max_bytes=50
    )
    assert truncated and utf8_size(text) <= 50
