"""The side-by-side diff of the Review Inbox.

Pure module: no Django, no I/O. Cells are plain strings that templates auto-escape.

The work is bounded whatever the input. ``difflib.SequenceMatcher`` runs ``find_longest_match``
(a walk over every pair of equal elements in a region) once per matching block it finds, so runs
of repeated lines or tokens make it cubic in the input: an 800- against a 4,000-character field
took 16 s. Here each field's diff gets a budget of ``WORK_LIMIT`` steps, charged before each
``find_longest_match`` with an upper bound of the pairs it can walk, and only the changed middle
of a field (after its common first and last lines), at most ``MAX_DIFF_LINES`` lines a side, and
changed lines of at most ``MAX_LINE_TOKENS`` tokens a side are handed to SequenceMatcher at all.
Beyond those limits a field is shown as "changed, too large to diff" (both sides whole), and a
line pair is highlighted coarsely (its common head and tail unchanged, the middle changed).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CONTEXT_LINES = 3
# Lines of one side of a field's changed middle that get a row (and a line-level diff) each.
MAX_DIFF_LINES = 1000
# Tokens of one side of a changed line pair that get word-level highlights.
MAX_LINE_TOKENS = 2000
# SequenceMatcher steps for one field (line level and every line pair together); see _Budget.
WORK_LIMIT = 100_000
# Word-level highlights only for line pairs at least this similar; others are changed whole.
SIMILAR_RATIO = 0.4
TOO_LARGE = "too_large"


@dataclass(frozen=True)
class Segment:
    text: str
    changed: bool


@dataclass(frozen=True)
class DiffRow:
    """One row of a side-by-side table. ``kind``: equal, replace, delete, insert, skip (a run of
    unchanged lines folded away; ``skipped`` says how many) or too_large (the only row of a field
    too large to diff: both sides whole, without line numbers)."""

    kind: str
    left_no: int | None = None
    left: tuple[Segment, ...] = ()
    right_no: int | None = None
    right: tuple[Segment, ...] = ()
    skipped: int = 0


@dataclass(frozen=True)
class FieldDiff:
    name: str
    label: str
    changed: bool
    rows: list[DiffRow]

    @property
    def too_large(self) -> bool:
        """The field changed but was too large to diff (its one row holds both sides whole)."""
        return len(self.rows) == 1 and self.rows[0].kind == TOO_LARGE


class _OverBudget(Exception):
    """The diff would exceed its size or work limits."""


class _Budget:
    """The SequenceMatcher steps one field's diff may still take. Work is charged before it is
    done and a charge that does not fit is refused, so the limit is never exceeded."""

    def __init__(self, steps: int) -> None:
        self.remaining = steps

    def charge(self, steps: int) -> None:
        if steps > self.remaining:
            raise _OverBudget
        self.remaining -= steps


class _Matcher(difflib.SequenceMatcher[str]):
    """``SequenceMatcher(autojunk=False)`` that charges ``budget`` for its work.

    Building it costs ``len(a) + len(b)``. Each ``find_longest_match(alo, ahi, blo, bhi)`` walks,
    for every ``a[i]`` in ``a[alo:ahi]``, the positions of ``a[i]`` in ``b``: before it runs, it is
    charged that number of positions (the occurrences of ``a[i]`` in all of ``b``, an upper bound)
    plus two per ``i`` (the loop itself, and computing this bound). Everything else
    SequenceMatcher does is linear in its input.
    """

    def __init__(self, a: Sequence[str], b: Sequence[str], budget: _Budget) -> None:
        budget.charge(len(a) + len(b))
        self._budget = budget
        self._a = a
        self._occurrences = Counter(b)
        super().__init__(None, a, b, autojunk=False)

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        stop = len(self._a) if ahi is None else ahi
        self._budget.charge(stop - alo)  # computing the bound below
        occurrences = self._occurrences
        self._budget.charge(stop - alo + sum(occurrences[item] for item in self._a[alo:stop]))
        return super().find_longest_match(alo, ahi, blo, bhi)


Opcode = tuple[str, int, int, int, int]


def _common_ends(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """Lengths of the common head and of the common tail of ``a`` and ``b`` (not overlapping)."""
    limit = min(len(a), len(b))
    head = 0
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def _opcodes(a: Sequence[str], b: Sequence[str], budget: _Budget, cap: int) -> list[Opcode]:
    """SequenceMatcher's opcodes for ``a`` against ``b``, with the common head and tail matched
    first, so only the middle (at most ``cap`` elements a side, else ``_OverBudget``) costs work."""
    head, tail = _common_ends(a, b)
    a_end, b_end = len(a) - tail, len(b) - tail
    if a_end - head > cap or b_end - head > cap:
        raise _OverBudget
    codes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    if a_end > head and b_end > head:
        matcher = _Matcher(a[head:a_end], b[head:b_end], budget)
        # The middle starts and ends with a difference, so it never adds an "equal" next to ours.
        codes.extend(
            (tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        )
    elif a_end > head:
        codes.append(("delete", head, a_end, head, head))
    elif b_end > head:
        codes.append(("insert", head, head, head, b_end))
    if tail:
        codes.append(("equal", a_end, len(a), b_end, len(b)))
    return codes


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def _segments(tokens: Sequence[str], start: int, stop: int, changed: bool) -> list[Segment]:
    return [Segment("".join(tokens[start:stop]), changed)] if stop > start else []


def _coarse(a: Sequence[str], b: Sequence[str]) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """Highlights without a token diff: the common head and tail unchanged, the middle changed."""
    head, tail = _common_ends(a, b)
    left = [*_segments(a, 0, head, False), *_segments(a, head, len(a) - tail, True)]
    right = [*_segments(b, 0, head, False), *_segments(b, head, len(b) - tail, True)]
    left += _segments(a, len(a) - tail, len(a), False)
    right += _segments(b, len(b) - tail, len(b), False)
    return tuple(left), tuple(right)


def _intraline(old: str, new: str, budget: _Budget) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """Word-level highlights inside a changed line pair (whole lines when they share little)."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    try:
        if len(a) > MAX_LINE_TOKENS or len(b) > MAX_LINE_TOKENS:
            raise _OverBudget
        words = _Matcher([t for t in a if not t.isspace()], [t for t in b if not t.isspace()], budget)
        # The cheap upper bounds first: ratio() <= quick_ratio() <= real_quick_ratio().
        if (
            words.real_quick_ratio() < SIMILAR_RATIO
            or words.quick_ratio() < SIMILAR_RATIO
            or words.ratio() < SIMILAR_RATIO
        ):
            return (Segment(old, True),), (Segment(new, True),)
        opcodes = _opcodes(a, b, budget, MAX_LINE_TOKENS)
    except _OverBudget:
        return _coarse(a, b)
    left: list[Segment] = []
    right: list[Segment] = []
    for tag, i1, i2, j1, j2 in opcodes:
        left.extend(_segments(a, i1, i2, tag != "equal"))
        right.extend(_segments(b, j1, j2, tag != "equal"))
    return tuple(left), tuple(right)


def side_by_side(
    old: str, new: str, *, context: int = CONTEXT_LINES, work_limit: int = WORK_LIMIT
) -> list[DiffRow]:
    """Rows of a side-by-side line diff; unchanged runs longer than ``2 * context`` are folded.

    A field whose changed middle is too long, or whose line-level diff would take more than
    ``work_limit`` steps, is one ``too_large`` row instead.
    """
    a, b = old.splitlines(), new.splitlines()
    budget = _Budget(work_limit)
    try:
        opcodes = _opcodes(a, b, budget, MAX_DIFF_LINES)
    except _OverBudget:
        return [DiffRow(TOO_LARGE, left=(Segment(old, True),), right=(Segment(new, True),))]
    rows: list[DiffRow] = []
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            span = i2 - i1
            head = 0 if index == 0 else context
            tail = 0 if index == len(opcodes) - 1 else context
            if len(opcodes) > 1 and span > head + tail + 1:
                keep = [*range(head), *range(span - tail, span)]
                for offset in keep[:head]:
                    rows.append(_equal(a, i1 + offset, j1 + offset))
                rows.append(DiffRow(kind="skip", skipped=span - head - tail))
                for offset in keep[head:]:
                    rows.append(_equal(a, i1 + offset, j1 + offset))
            else:
                rows.extend(_equal(a, i1 + offset, j1 + offset) for offset in range(span))
        elif tag == "replace":
            pairs = min(i2 - i1, j2 - j1)
            for offset in range(pairs):
                left, right = _intraline(a[i1 + offset], b[j1 + offset], budget)
                rows.append(DiffRow("replace", i1 + offset + 1, left, j1 + offset + 1, right))
            for i in range(i1 + pairs, i2):
                rows.append(DiffRow("delete", i + 1, (Segment(a[i], True),)))
            for j in range(j1 + pairs, j2):
                rows.append(DiffRow("insert", right_no=j + 1, right=(Segment(b[j], True),)))
        elif tag == "delete":
            rows.extend(DiffRow("delete", i + 1, (Segment(a[i], True),)) for i in range(i1, i2))
        else:
            rows.extend(
                DiffRow("insert", right_no=j + 1, right=(Segment(b[j], True),)) for j in range(j1, j2)
            )
    return rows


def _equal(lines: list[str], i: int, j: int) -> DiffRow:
    segment = (Segment(lines[i], False),)
    return DiffRow("equal", i + 1, segment, j + 1, segment)


def fields_diff(
    fields: Iterable[tuple[str, str]],
    old: dict[str, str],
    new: dict[str, str],
    extra: Iterable[tuple[str, str]] = (),
) -> list[FieldDiff]:
    """Field-by-field diffs in the family's order, then any other keys either side holds."""
    known = [*fields, *extra]
    names = {name for name, _ in known}
    others = sorted((set(old) | set(new)) - names)
    out: list[FieldDiff] = []
    for name, label in [*known, *((key, key) for key in others)]:
        before, after = old.get(name, ""), new.get(name, "")
        out.append(
            FieldDiff(name=name, label=label, changed=before != after, rows=side_by_side(before, after))
        )
    return out
