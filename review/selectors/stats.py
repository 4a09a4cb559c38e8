"""Scope statistics for ``GET /v1/stats``: aggregate counts only.

The result never holds scope content (texts, ids, queries): only counts grouped by family,
status or Memory kind. The server records no model usage and no prepare history, so usage and
recall figures are zero for every period.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from django.db.models import Count, Q

from powercontext.core.models import MEMORY_FAMILY, Artifact, MemoryMembership, Source
from review.models import Candidate

PERIOD_DAYS = {"today": 1, "7d": 7, "30d": 30}


@dataclass(frozen=True)
class KindCount:
    kind: str
    active: int
    inactive: int


@dataclass(frozen=True)
class FamilyCandidates:
    family: str
    pending: int
    approved: int
    rejected: int


@dataclass(frozen=True)
class ScopeStats:
    sources: int
    artifacts_by_family: dict[str, int] = field(default_factory=dict)
    candidates_by_family: list[FamilyCandidates] = field(default_factory=list)
    memory_by_kind: list[KindCount] = field(default_factory=list)


def period_bounds(*, preset: str, today: date) -> tuple[date, date]:
    """The inclusive UTC date range a period preset names, ending today."""
    return today - timedelta(days=PERIOD_DAYS[preset] - 1), today


def scope_stats(*, scope_id: str) -> ScopeStats:
    """Counts for one scope; a scope nobody wrote to has all-zero counts."""
    artifacts = {
        row["family"]: row["n"]
        for row in Artifact.objects.filter(scope_id=scope_id, current_revision__gt=0)
        .values("family")
        .annotate(n=Count("id"))
        .order_by("family")
    }
    candidates = [
        FamilyCandidates(family=row["family"], pending=row["p"], approved=row["a"], rejected=row["r"])
        for row in Candidate.objects.filter(scope_id=scope_id)
        .values("family")
        .annotate(
            p=Count("id", filter=Q(status=Candidate.Status.PENDING)),
            a=Count("id", filter=Q(status=Candidate.Status.APPROVED)),
            r=Count("id", filter=Q(status=Candidate.Status.REJECTED)),
        )
        .order_by("family")
    ]
    head = (
        Artifact.objects.filter(scope_id=scope_id, family=MEMORY_FAMILY)
        .values_list("current_revision", flat=True)
        .first()
    )
    kinds: list[KindCount] = []
    if head:
        # The head's open intervals: one membership per entry, carrying its current state.
        kinds = [
            KindCount(kind=row["entry_version__kind"], active=row["a"], inactive=row["i"])
            for row in MemoryMembership.objects.filter(scope_id=scope_id, to_revision__isnull=True)
            .values("entry_version__kind")
            .annotate(
                a=Count("id", filter=Q(state=MemoryMembership.State.ACTIVE)),
                i=Count("id", filter=Q(state=MemoryMembership.State.INACTIVE)),
            )
            .order_by("entry_version__kind")
        ]
    return ScopeStats(
        sources=Source.objects.filter(scope_id=scope_id).count(),
        artifacts_by_family=artifacts,
        candidates_by_family=candidates,
        memory_by_kind=kinds,
    )
