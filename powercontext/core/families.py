"""Artifact families and the one spec of each proposal family (pure: no Django).

Every layer that knows a proposal's shape derives it from here: the /v1 request serializers,
the Review Inbox forms, labels, summaries and text filter, the review services (which fields
form ``searchable_text``), the recall selector and the prepared-context builder's rendering.
Adding a field to a family is a change to this file, not to nine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal


class Family(StrEnum):
    """Artifact family strings, as stored and as on the wire."""

    MEMORY = "memory"
    EXPERIENCE = "experience"
    SKILL = "skill"


MEMORY_ARTIFACT_ID = "memory"

# text: multi-line, must hold a non-whitespace character; line: one trimmed line;
# lines: a list of trimmed lines.
FieldKind = Literal["text", "line", "lines"]


@dataclass(frozen=True)
class ProposalField:
    """One field of a family's proposal: its name and label, its size limit and kind, and how
    the Inbox edits it (textarea rows; item bounds for ``lines``; help text)."""

    name: str
    label: str
    max_length: int
    kind: FieldKind = "text"
    rows: int = 4  # textarea height in the Inbox
    min_items: int = 1  # "lines" only
    max_items: int = 32  # "lines" only
    help_text: str = ""


@dataclass(frozen=True)
class FamilySpec:
    """One proposal family: its fields, how it is summarized, searched and rendered."""

    family: Family
    artifact_prefix: str
    fields: tuple[ProposalField, ...]
    title_field: str
    subtitle_field: str
    # Fields whose text forms the head's ``searchable_text`` (in this order). Empty: the family
    # is never recalled by prepare.
    searchable: tuple[str, ...] = ()

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def labels(self) -> tuple[tuple[str, str], ...]:
        return tuple((f.name, f.label) for f in self.fields)

    @property
    def recallable(self) -> bool:
        return bool(self.searchable)

    def text_fields(self) -> tuple[str, ...]:
        """Fields holding free text (searched by the Inbox's text filter)."""
        return tuple(f.name for f in self.fields if f.kind != "lines")

    def searchable_values(self, proposal: Mapping[str, Any]) -> list[str]:
        return [str(proposal[name]) for name in self.searchable]

    def render(self, values: Mapping[str, str]) -> str:
        """``Label: value`` lines in field order: the prepared-context item content."""
        return "\n".join(f"{f.label}: {values[f.name]}" for f in self.fields)


EXPERIENCE = FamilySpec(
    family=Family.EXPERIENCE,
    artifact_prefix="exp",
    fields=(
        ProposalField("situation", "Situation", 8000),
        ProposalField("action", "Action", 8000),
        ProposalField("outcome", "Outcome", 8000),
        ProposalField("lesson", "Lesson", 8000, rows=3),
    ),
    title_field="lesson",
    subtitle_field="situation",
    searchable=("situation", "action", "outcome", "lesson"),
)

SKILL = FamilySpec(
    family=Family.SKILL,
    artifact_prefix="skill",
    fields=(
        ProposalField("name", "Name", 128, kind="line", rows=1),
        ProposalField("description", "Description", 2000, kind="line", rows=2),
        ProposalField("instructions", "Instructions", 32000, rows=10),
        ProposalField(
            "validation",
            "Validation",
            2000,
            kind="lines",
            help_text="One check per line (1 to 32 lines).",
        ),
    ),
    title_field="name",
    subtitle_field="description",
)

PROPOSAL_FAMILIES: dict[str, FamilySpec] = {EXPERIENCE.family: EXPERIENCE, SKILL.family: SKILL}
PROPOSAL_FAMILY_NAMES: tuple[str, ...] = tuple(PROPOSAL_FAMILIES)


NON_BLANK = re.compile(r"\S")
# One line, no leading or trailing whitespace (ECMA "." excludes these line terminators).
ONE_TRIMMED_LINE = re.compile("\\S(?:[^\\n\\r\\u2028\\u2029]*\\S)?")


def field_problem(field: ProposalField, value: object) -> str | None:
    """Why ``value`` breaks the field's rule (None when it keeps it). The /v1 serializers
    enforce the same rules with the contract's error codes."""
    if field.kind == "lines":
        if not isinstance(value, list) or not field.min_items <= len(value) <= field.max_items:
            return f"Give {field.min_items} to {field.max_items} lines."
        problems = (
            field_problem(ProposalField(field.name, field.label, field.max_length, "line"), v) for v in value
        )
        return next((p for p in problems if p is not None), None)
    if not isinstance(value, str) or not value:
        return "This field is required."
    if len(value) > field.max_length:
        return f"Use at most {field.max_length} characters."
    if field.kind == "line" and ONE_TRIMMED_LINE.fullmatch(value) is None:
        return "Use one line without leading or trailing spaces."
    if NON_BLANK.search(value) is None:
        return "Must contain a non-whitespace character."
    return None


def spec(family: str) -> FamilySpec:
    """The spec of a proposal family (``KeyError`` for memory or an unknown family)."""
    return PROPOSAL_FAMILIES[family]
