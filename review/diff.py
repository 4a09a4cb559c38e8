"""The side-by-side diff of the Review Inbox.

Pure module: no Django, no I/O. Cells are plain strings that templates auto-escape.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    text: str
    changed: bool


@dataclass(frozen=True)
class DiffRow:
    """One row of a side-by-side table. ``kind``: equal, replace, delete, insert or skip (a run of
    unchanged lines folded away; ``skipped`` says how many)."""

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


CONTEXT_LINES = 3


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def _intraline(old: str, new: str) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """Word-level highlights inside a changed line pair (whole lines when they share little)."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    words = difflib.SequenceMatcher(
        None, [t for t in a if not t.isspace()], [t for t in b if not t.isspace()], autojunk=False
    )
    if words.ratio() < 0.4:
        return (Segment(old, True),), (Segment(new, True),)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    left: list[Segment] = []
    right: list[Segment] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            left.append(Segment("".join(a[i1:i2]), tag != "equal"))
        if j2 > j1:
            right.append(Segment("".join(b[j1:j2]), tag != "equal"))
    return tuple(left), tuple(right)


def side_by_side(old: str, new: str, *, context: int = CONTEXT_LINES) -> list[DiffRow]:
    """Rows of a side-by-side line diff; unchanged runs longer than ``2 * context`` are folded."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    opcodes = matcher.get_opcodes()
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
                left, right = _intraline(a[i1 + offset], b[j1 + offset])
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
