"""Artifact head reads: which Experience heads retrieval may recall.

The rule is declared once, as ``RECALLABLE_EXPERIENCE``: (column, comparison, value) conditions
on the Artifact head. The ORM filter (rebuild, verify), the plain-python predicate (the writer
that maintains the index row) and the SQL fragment (the ranked query's re-check) are all rendered
from it, so the three cannot drift apart.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import Q

from powercontext.core.models import Artifact

EXPERIENCE_FAMILY = "experience"

# SQL comparison -> (ORM lookup, negate the lookup, python comparison).
_COMPARISONS: dict[str, tuple[str, bool, Callable[[Any, Any], bool]]] = {
    "=": ("exact", False, operator.eq),
    ">=": ("gte", False, operator.ge),
    "<>": ("exact", True, operator.ne),
}


@dataclass(frozen=True)
class Condition:
    """``field <comparison> value`` on one Artifact column."""

    field: str
    comparison: str
    value: str | int

    def q(self) -> Q:
        lookup, negated, _ = _COMPARISONS[self.comparison]
        condition = Q(**{f"{self.field}__{lookup}": self.value})
        return ~condition if negated else condition

    def holds(self, obj: Any) -> bool:
        return _COMPARISONS[self.comparison][2](getattr(obj, self.field), self.value)

    def sql(self, alias: str) -> str:
        field = Artifact._meta.get_field(self.field)
        assert isinstance(field, models.Field)
        column = field.column
        return f"{alias}.{column} {self.comparison} {_literal(self.value)}"


def _literal(value: str | int) -> str:
    # Values are the fixed constants below, never input; quoting still keeps the SQL well-formed.
    if isinstance(value, int):
        return str(int(value))
    return "'" + str(value).replace("'", "''") + "'"


RECALLABLE_EXPERIENCE: tuple[Condition, ...] = (
    Condition("family", "=", EXPERIENCE_FAMILY),
    Condition("state", "=", Artifact.State.ACTIVE),
    Condition("current_revision", ">=", 1),  # approved: a revision exists
    Condition("searchable_text", "<>", ""),
)


def recallable_experience_heads() -> models.QuerySet[Artifact]:
    """Experience heads that retrieval may read: approved (a revision exists) and active."""
    return Artifact.objects.filter(*(condition.q() for condition in RECALLABLE_EXPERIENCE))


def is_recallable_experience(head: Artifact) -> bool:
    """Whether ``head`` (as held in memory) belongs to ``recallable_experience_heads()``."""
    return all(condition.holds(head) for condition in RECALLABLE_EXPERIENCE)


def recallable_experience_sql(alias: str) -> str:
    """The rule as a SQL condition on the Artifact table aliased ``alias``."""
    return " AND ".join(condition.sql(alias) for condition in RECALLABLE_EXPERIENCE)
