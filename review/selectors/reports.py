"""Reported items in the Review Inbox (issue 30): Memory entry versions and Experience revisions
that agents reported ``wrong`` or ``outdated``, read for the list and for one item's page.

An item is *listed* while it has open reports (``FeedbackCounter.reporters > 0``: distinct
reporters since its last standing dismissal) and is still what prepare would cite: a Memory entry
version that is its entry's active version in the scope's head, or an Experience revision that is
its head's current revision, the head active. A retired or revised item leaves the list, but its
page stays, so a decision on it can still be undone there.

Plain frozen dataclasses out, fully loaded, so templates never touch the ORM. The list is one
keyset page (``feedback_counter_reported`` orders it, newest report first) and the queue's count
is one capped ``COUNT``; an item's page is a fixed number of queries however many reports,
decisions or reported items exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Substr

from powercontext.core import families
from powercontext.core.models import Artifact, MemoryMembership
from powercontext.feedback.models import (
    EXPERIENCE,
    MEMORY,
    FeedbackCounter,
)
from powercontext.feedback.prior import Usage
from powercontext.feedback.selectors import policy
from review.selectors.counts import CappedCount, capped_count

PAGE_SIZE = 50
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
REPORTS_SHOWN = 100
DECISIONS_SHOWN = 50
TITLE_CHARS = 160


# --- which items are listed -----------------------------------------------------------------------


def _current() -> Q:
    """Counter rows whose item prepare would still cite (see the module docstring)."""
    active_version = MemoryMembership.objects.filter(
        entry_version=OuterRef("entry_version"),
        to_revision__isnull=True,
        state=MemoryMembership.State.ACTIVE,
    )
    return Q(Exists(active_version), family=MEMORY) | Q(
        family=EXPERIENCE,
        artifact_revision__head__state=Artifact.State.ACTIVE,
        artifact_revision__head__current_revision=F("artifact_revision__revision"),
    )


def reported_rows() -> QuerySet[FeedbackCounter]:
    """Counter rows of the current items with open reports."""
    return FeedbackCounter.objects.filter(_current(), reporters__gt=0)


def reported_count() -> CappedCount:
    """How many items the list holds (one bounded count: the queue's "Reported" link)."""
    return capped_count(reported_rows())


def reported_by(outdated: int, wrong: int) -> str:
    """``Reported outdated by 2 agents, wrong by 1``: fixed words and numbers only."""
    parts: list[str] = []
    for word, number in (("outdated", outdated), ("wrong", wrong)):
        if number:
            noun = "" if parts else (" agent" if number == 1 else " agents")
            parts.append(f"{word} by {number}{noun}")
    return "Reported " + ", ".join(parts) if parts else "No open reports"


@dataclass(frozen=True)
class Hold:
    """Whether prepare holds the item out now, and the rule that decides it."""

    held: bool
    family: str
    reporters: int
    threshold: int  # distinct reporters that hold a Memory entry version (0: holding is off)

    @property
    def label(self) -> str:
        if self.family != MEMORY:
            return "never held: a reviewer approved it"
        if self.held:
            return "held out of prepare"
        if self.reporters == 0:
            return "recalled: no open reports"
        if self.threshold <= 0:
            return "recalled, ranked lower (holding is off)"
        return f"recalled, ranked lower (held at {self.threshold} reporters)"


def hold_for(family: str, reporters: int) -> Hold:
    rule = policy()
    return Hold(
        held=rule.held(Usage(reporters=reporters), family),
        family=family,
        reporters=reporters,
        threshold=rule.hold_reporters,
    )


# --- the list ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cursor:
    """A keyset position in the list: the last row's newest report time and pk."""

    at: datetime
    pk: int

    def __str__(self) -> str:
        return f"{(self.at - EPOCH) // MICROSECOND}-{self.pk}"


def parse_cursor(value: str | None) -> Cursor | None:
    """The ``after`` parameter as a cursor; anything malformed is the first page."""
    if not value or len(value) > 40 or not value.isascii():
        return None
    micros, _, pk = value.partition("-")
    if not (micros.isdigit() and pk.isdigit()):
        return None
    try:
        at = EPOCH + int(micros) * MICROSECOND
    except OverflowError:
        return None
    return Cursor(at=at, pk=int(pk))


@dataclass(frozen=True)
class ReportedRow:
    pk: int
    scope_id: str
    family: str
    title: str
    subtitle: str
    reported_by: str
    reporters: int
    hold: Hold
    uses: int
    last_used_at: datetime | None
    last_reported_at: datetime | None


@dataclass(frozen=True)
class ReportedPage:
    rows: list[ReportedRow]
    next_after: str | None
    is_first: bool


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())[:TITLE_CHARS]


def _row(values: Mapping[str, Any]) -> ReportedRow:
    family = str(values["family"])
    if family == MEMORY:
        title, subtitle = _one_line(values["memory_text"]), str(values["memory_kind"] or "")
    else:
        title, subtitle = _one_line(values["experience_title"]), _one_line(values["experience_subtitle"])
    return ReportedRow(
        pk=int(values["pk"]),
        scope_id=str(values["scope_id"]),
        family=family,
        title=title,
        subtitle=subtitle,
        reported_by=reported_by(int(values["outdated_reporters"]), int(values["wrong_reporters"])),
        reporters=int(values["reporters"]),
        hold=hold_for(family, int(values["reporters"])),
        uses=int(values["uses"]),
        last_used_at=values["last_used_at"],
        last_reported_at=values["last_reported_at"],
    )


def reported_page(*, after: Cursor | None = None, size: int = PAGE_SIZE) -> ReportedPage:
    """One page of the list, newest report first: one query (``size + 1`` rows, only the first
    characters of each item's text)."""
    rows = reported_rows().order_by("-last_reported_at", "-pk")
    if after is not None:
        rows = rows.filter(Q(last_reported_at__lt=after.at) | Q(last_reported_at=after.at, pk__lt=after.pk))
    spec = families.EXPERIENCE
    content = "artifact_revision__content"
    found = list(
        rows.annotate(
            memory_text=Substr("entry_version__text", 1, TITLE_CHARS * 2),
            memory_kind=F("entry_version__kind"),
            experience_title=Substr(KeyTextTransform(spec.title_field, content), 1, TITLE_CHARS * 2),
            experience_subtitle=Substr(KeyTextTransform(spec.subtitle_field, content), 1, TITLE_CHARS * 2),
        ).values(
            "pk",
            "scope_id",
            "family",
            "reporters",
            "wrong_reporters",
            "outdated_reporters",
            "uses",
            "last_used_at",
            "last_reported_at",
            "memory_text",
            "memory_kind",
            "experience_title",
            "experience_subtitle",
        )[: size + 1]
    )
    page = [_row(values) for values in found[:size]]
    next_after = None
    if len(found) > size and page[-1].last_reported_at is not None:
        next_after = str(Cursor(page[-1].last_reported_at, page[-1].pk))
    return ReportedPage(rows=page, next_after=next_after, is_first=after is None)


# --- one item ---------------------------------------------------------------------------------------
