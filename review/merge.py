"""Three-way merge of a proposal, field by field (pure: no Django).

Rebasing a pending update onto the Artifact's current revision merges three versions of the
content: ``base`` (the revision the update targeted), ``theirs`` (the current approved revision)
and ``ours`` (the update's proposal). For each field present in any of them:

- unchanged on both sides, or changed on one side only: that side's value;
- changed on both sides to the same value: that value;
- changed on both sides differently: a conflict (the field keeps ``ours`` in ``merged`` and is
  named in ``conflicts``; the caller must not use ``merged`` when there are conflicts).

A field absent from a mapping counts as the value ``MISSING``: a field removed on one side and
untouched on the other is removed from the result. Values are compared with ``==`` (JSON values).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class _Missing:
    """The value of a field absent from a mapping."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class MergeResult:
    """``merged``: the merged mapping (meaningful only when ``clean``); ``conflicts``: the fields
    changed differently on both sides, in sorted order; ``from_theirs``: the fields whose value
    came from the current revision (changed there, not in the update)."""

    merged: dict[str, Any]
    conflicts: tuple[str, ...]
    from_theirs: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not self.conflicts


def merge_fields(base: Mapping[str, Any], theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> MergeResult:
    """Merge ``ours`` onto ``theirs`` with common ancestor ``base`` (see the module docstring)."""
    merged: dict[str, Any] = {}
    conflicts: list[str] = []
    from_theirs: list[str] = []
    for name in sorted(set(base) | set(theirs) | set(ours)):
        b, t, o = base.get(name, MISSING), theirs.get(name, MISSING), ours.get(name, MISSING)
        if o == t:
            value = o
        elif o == b:
            value = t
            from_theirs.append(name)
        elif t == b:
            value = o
        else:
            value = o
            conflicts.append(name)
        if value is not MISSING:
            merged[name] = value
    return MergeResult(merged=merged, conflicts=tuple(conflicts), from_theirs=tuple(from_theirs))
