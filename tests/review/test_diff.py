"""The pure side-by-side diff (review.diff): faithful rows, and bounded work on adversarial input.

Work is measured, not timed: a spy wrapped around ``SequenceMatcher.find_longest_match`` counts
the steps of its inner loop (every position of ``a[i]`` in ``b`` it walks, plus one per ``i``)
and fails the test as soon as one field's diff takes more than ``STEP_BOUND`` of them; another
records the size of every sequence handed to SequenceMatcher. Without a bound these inputs take
billions of steps (minutes to hours).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from review import diff

# What one field's diff may cost: about 50 ms of SequenceMatcher's inner loop in CPython.
STEP_BOUND = 100_000
# The longest sequence (lines of a field, tokens of a line) that may be handed to SequenceMatcher.
SEQUENCE_BOUND = 2000
# Rows one field's diff may produce (each is a rendered table row).
ROW_BOUND = 2 * 1000 + 16

EXPERIENCE_MAX = 8000  # context_api/review_apis.py: situation/action/outcome/lesson
INSTRUCTIONS_MAX = 32000  # Skill instructions
VALIDATION_ITEM_MAX, VALIDATION_ITEMS = 2000, 32


@dataclass
class Work:
    limit: int = STEP_BOUND  # the spy fails the test as soon as steps pass this
    steps: int = 0
    calls: int = 0
    longest_sequence: int = 0
    sizes: list[tuple[int, int]] = field(default_factory=list)


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Iterator[Work]:
    seen = Work()
    original_find = difflib.SequenceMatcher.find_longest_match
    original_set_seqs = difflib.SequenceMatcher.set_seqs

    def set_seqs(self: Any, a: Any, b: Any) -> None:
        seen.sizes.append((len(a), len(b)))
        seen.longest_sequence = max(seen.longest_sequence, len(a), len(b))
        original_set_seqs(self, a, b)

    def find_longest_match(self: Any, alo: int = 0, ahi: Any = None, blo: int = 0, bhi: Any = None) -> Any:
        ahi = len(self.a) if ahi is None else ahi
        bhi = len(self.b) if bhi is None else bhi
        seen.calls += 1
        for i in range(alo, ahi):
            seen.steps += 1
            for j in self.b2j.get(self.a[i], ()):
                seen.steps += 1
                if j >= bhi:
                    break
            if seen.steps > seen.limit:
                raise AssertionError(f"the diff took more than {seen.limit} SequenceMatcher steps")
        return original_find(self, alo, ahi, blo, bhi)

    monkeypatch.setattr(difflib.SequenceMatcher, "set_seqs", set_seqs)
    monkeypatch.setattr(difflib.SequenceMatcher, "find_longest_match", find_longest_match)
    yield seen


def repeat(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def lines_of(count: int, width: int = 7) -> str:
    return "\n".join(f"l{n:0{width - 1}d}" for n in range(count))


ADVERSARIAL = {
    # One line of repeated tokens that both sides share: SequenceMatcher's cubic case.
    "repeated tokens": (repeat("a ", EXPERIENCE_MAX), repeat("a b ", EXPERIENCE_MAX)),
    "repeated punctuation": (repeat("a,", EXPERIENCE_MAX), repeat("a,;", EXPERIENCE_MAX)),
    "one long word": ("a" * EXPERIENCE_MAX, "a" * (EXPERIENCE_MAX - 1) + "b"),
    "repeated lines": (repeat("x\n", EXPERIENCE_MAX), repeat("x\ny\n", EXPERIENCE_MAX)),
    "blank lines": ("\n" * EXPERIENCE_MAX, "\n" * (EXPERIENCE_MAX // 2) + "y" + "\n" * (EXPERIENCE_MAX // 2)),
    "short vs long": (repeat("a ", 800), repeat("a b ", 4000)),
    "distinct tokens reversed": (
        " ".join(f"w{n}" for n in range(1000)),
        " ".join(f"w{n}" for n in reversed(range(1000))),
    ),
    "distinct lines reversed": (lines_of(1000), "\n".join(reversed(lines_of(1000).split("\n")))),
    "one side empty": ("", repeat("a\n", INSTRUCTIONS_MAX)),
    "other side empty": (repeat("a b\n", INSTRUCTIONS_MAX), ""),
    "max instructions, repeated lines": (
        repeat("a\nb a\n", INSTRUCTIONS_MAX),
        repeat("a b\na\n", INSTRUCTIONS_MAX),
    ),
    "max instructions, one line": (repeat("a ", INSTRUCTIONS_MAX), repeat("b a ", INSTRUCTIONS_MAX)),
    "max instructions, distinct lines": (lines_of(4000), lines_of(4000, width=8)),
    "max validation": (
        "\n".join([repeat("a ", VALIDATION_ITEM_MAX).strip()] * VALIDATION_ITEMS),
        "\n".join([repeat("a b a ", VALIDATION_ITEM_MAX).strip()] * VALIDATION_ITEMS),
    ),
    "similar long lines": (
        "\n".join(repeat(f"word{n} other{n % 3} ", 2000) for n in range(4)),
        "\n".join(repeat(f"word{n} other{n % 2} ", 2000) for n in range(4)),
    ),
}


def reconstruct(rows: list[diff.DiffRow], side: str) -> list[str | None]:
    """The lines of one side, in order, from the rows (None for each folded unchanged line)."""
    out: list[str | None] = []
    for row in rows:
        if row.kind == "skip":
            out.extend([None] * row.skipped)
            continue
        number = row.left_no if side == "left" else row.right_no
        cells = row.left if side == "left" else row.right
        if number is None:
            assert not cells
            continue
        assert number == len(out) + 1, "line numbers run on without gaps"
        out.append("".join(segment.text for segment in cells))
    return out


def assert_faithful(old: str, new: str, rows: list[diff.DiffRow]) -> None:
    """Both sides can be read back from the rows, and unchanged cells really are unchanged."""
    if rows and rows[0].kind == "too_large":
        assert rows == [
            diff.DiffRow(diff.TOO_LARGE, left=(diff.Segment(old, True),), right=(diff.Segment(new, True),))
        ]
        return
    for side, text in (("left", old), ("right", new)):
        lines = reconstruct(rows, side)
        expected = text.splitlines()
        assert len(lines) == len(expected)
        assert all(line is None or line == want for line, want in zip(lines, expected, strict=True))
    for row in rows:
        if row.kind == "equal":
            assert row.left == row.right and not any(s.changed for s in row.left)
        if row.kind == "replace":
            unchanged_left = [s.text for s in row.left if not s.changed]
            unchanged_right = [s.text for s in row.right if not s.changed]
            assert unchanged_left == unchanged_right


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_pairs_take_bounded_work(work: Work, name: str) -> None:
    old, new = ADVERSARIAL[name]

    rows = diff.side_by_side(old, new)

    assert work.steps <= STEP_BOUND
    assert work.longest_sequence <= SEQUENCE_BOUND
    assert len(rows) <= ROW_BOUND
    assert_faithful(old, new, rows)


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_pairs_take_bounded_work_swapped(work: Work, name: str) -> None:
    new, old = ADVERSARIAL[name]

    rows = diff.side_by_side(old, new)

    assert work.steps <= STEP_BOUND
    assert work.longest_sequence <= SEQUENCE_BOUND
    assert_faithful(old, new, rows)


def test_a_page_of_maximum_length_fields_takes_bounded_work_per_field(work: Work) -> None:
    old = {
        "situation": repeat("a ", EXPERIENCE_MAX),
        "action": repeat("x\n", EXPERIENCE_MAX),
        "outcome": lines_of(1100),
        "lesson": "a" * EXPERIENCE_MAX,
    }
    new = {
        "situation": repeat("a b ", EXPERIENCE_MAX),
        "action": repeat("x\ny\n", EXPERIENCE_MAX),
        "outcome": lines_of(1100, width=8),
        "lesson": "b" * EXPERIENCE_MAX,
    }
    fields = [("situation", "Situation"), ("action", "Action"), ("outcome", "Outcome"), ("lesson", "Lesson")]
    work.limit = 4 * STEP_BOUND

    diffs = diff.fields_diff(fields, old, new)

    assert work.steps <= 4 * STEP_BOUND
    assert [d.changed for d in diffs] == [True, True, True, True]
    assert sum(len(d.rows) for d in diffs) <= 4 * ROW_BOUND


def test_identical_maximum_length_fields_cost_no_matching(work: Work) -> None:
    text = repeat("a\n", INSTRUCTIONS_MAX)

    (field_diff,) = diff.fields_diff(
        [("instructions", "Instructions")], {"instructions": text}, {"instructions": text}
    )

    assert work.calls == 0
    assert field_diff.changed is False and field_diff.too_large is False


def test_a_changed_middle_beyond_the_line_limit_is_too_large_to_diff() -> None:
    old, new = lines_of(diff.MAX_DIFF_LINES + 1), lines_of(diff.MAX_DIFF_LINES + 1, width=8)

    (field_diff,) = diff.fields_diff([("lesson", "Lesson")], {"lesson": old}, {"lesson": new})

    assert field_diff.changed and field_diff.too_large
    assert field_diff.rows == [
        diff.DiffRow(diff.TOO_LARGE, left=(diff.Segment(old, True),), right=(diff.Segment(new, True),))
    ]


def test_common_first_and_last_lines_do_not_count_against_the_line_limit(work: Work) -> None:
    body = lines_of(5000)
    old = body + "\nold middle\n" + body
    new = body + "\nnew middle\n" + body

    rows = diff.side_by_side(old, new)

    assert [row.kind for row in rows] == [
        "skip",
        "equal",
        "equal",
        "equal",
        "replace",
        "equal",
        "equal",
        "equal",
        "skip",
    ]
    (replaced,) = [row for row in rows if row.kind == "replace"]
    assert (replaced.left_no, replaced.right_no) == (5001, 5001)
    assert [s.text for s in replaced.right if s.changed] == ["new"]
    assert work.longest_sequence <= 3
    assert_faithful(old, new, rows)


def test_a_line_pair_over_budget_keeps_its_common_head_and_tail_unchanged(work: Work) -> None:
    old = "keep this head " + repeat("a ", 6000) + " and this tail"
    new = "keep this head " + repeat("a b ", 6000) + " and this tail"

    (row,) = diff.side_by_side(old, new)

    assert row.kind == "replace"
    assert row.left[0].text.startswith("keep this head ") and row.right[0].text.startswith("keep this head ")
    assert row.left[-1].text.endswith(" and this tail") and row.right[-1].text.endswith(" and this tail")
    assert [s.changed for s in row.left] == [False, True, False]
    assert [s.changed for s in row.right] == [False, True, False]
    assert_faithful(old, new, [row])


def test_a_tiny_work_limit_still_gives_a_faithful_diff() -> None:
    old = "line one\nline two\nline three"
    new = "line one\nline 2\nline three\nline four"

    for limit in (0, 1, 5, 20, 100):
        rows = diff.side_by_side(old, new, work_limit=limit)
        assert_faithful(old, new, rows)


def test_dissimilar_line_pairs_are_changed_whole() -> None:
    (row,) = diff.side_by_side("completely different words", "nothing alike at all here")

    assert row.left == (diff.Segment("completely different words", True),)
    assert row.right == (diff.Segment("nothing alike at all here", True),)


lines = st.lists(st.sampled_from(["", "a", "b", "a b", "b a", "a  b", "x y z", "a,b", "漢字"]), max_size=12)


@settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(lines, lines, st.sampled_from([0, 3, 40, 100_000]), st.integers(0, 3))
def test_any_diff_reads_back_both_sides(
    old_lines: list[str], new_lines: list[str], limit: int, context: int
) -> None:
    old, new = "\n".join(old_lines), "\n".join(new_lines)

    rows = diff.side_by_side(old, new, context=context, work_limit=limit)

    assert_faithful(old, new, rows)
    if old == new:
        assert all(row.kind in ("equal", "skip") for row in rows)
