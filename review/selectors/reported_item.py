"""One reported item's page in the Review Inbox (issue 30): what the reporters were shown, every
report, whether prepare holds the item, and the decisions taken on it (with what can be undone).

A fixed number of queries whatever the number of reports, decisions or reported items; plain
frozen dataclasses out, so templates never touch the ORM. The list of reported items is
``review.selectors.reports``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any

from powercontext.core import families
from powercontext.core.models import Artifact, MemoryMembership
from powercontext.feedback.models import (
    MEMORY,
    REPORTS,
    Feedback,
    FeedbackCounter,
    ReportDecision,
)
from powercontext.feedback.services import LOCAL_REPORTER
from review.models import Candidate
from review.selectors.candidate import ProposalField, proposal_fields
from review.selectors.reports import (
    DECISIONS_SHOWN,
    REPORTS_SHOWN,
    Hold,
    hold_for,
    reported_by,
)


@dataclass(frozen=True)
class ItemKey:
    """What a decision names: the item's scope, its key and its family."""

    pk: int
    scope_id: str
    target: str
    family: str


def reported_key(pk: int) -> ItemKey | None:
    """The item a decision on ``pk`` acts on (one query), or None."""
    found = FeedbackCounter.objects.filter(pk=pk).values_list("scope_id", "target", "family").first()
    if found is None:
        return None
    scope_id, target, family = found
    return ItemKey(pk=pk, scope_id=scope_id, target=target, family=family)


@dataclass(frozen=True)
class ReportView:
    pk: int
    outcome: str
    reporter: str
    day: date
    created_at: datetime
    note: str
    cited_revision: int
    dismissed: bool  # covered by the item's standing dismissal: no longer counted


@dataclass(frozen=True)
class DecisionView:
    pk: int
    action: str
    reviewer: str
    reason: str
    decided_at: datetime
    through_feedback: int
    memory_revision: int | None
    new_target: str
    candidate_id: str
    candidate_pk: int | None
    candidate_status: str | None
    undoes_pk: int | None
    undone_by_pk: int | None
    undoable: bool


@dataclass(frozen=True)
class ReportedItem:
    """One reported item as its page shows it. Memory: ``entry_id`` … ``text``; Experience:
    ``artifact_id``, ``revision`` and its ``fields`` (``proposal`` prefills the update form)."""

    key: ItemKey
    current: bool
    now: str  # what became of the item when it is no longer current ("" while current)
    reported_by: str
    reporters: int
    wrong_reporters: int
    outdated_reporters: int
    hold: Hold
    uses: int
    last_used_at: datetime | None
    last_reported_at: datetime | None
    reports: tuple[ReportView, ...]
    more_reports: bool
    seen_through: int  # the newest report id the page shows (0: none)
    decisions: tuple[DecisionView, ...]
    entry_id: str = ""
    entry_version_id: str = ""
    version: int | None = None
    kind: str = ""
    text: str = ""
    artifact_id: str = ""
    revision: int | None = None
    fields: tuple[ProposalField, ...] = ()
    proposal: dict[str, str] | None = None

    @property
    def is_memory(self) -> bool:
        return self.key.family == MEMORY

    @property
    def open_reports(self) -> bool:
        return self.reporters > 0

    @property
    def reports_overlap(self) -> bool:
        """Some reporter said both ``wrong`` and ``outdated``: the distinct count says more."""
        return self.reporters < self.wrong_reporters + self.outdated_reporters


def reporter_label(reporter: str, token_name: str | None, username: str | None, token_pk: int | None) -> str:
    """Who reported, for people: the token's name (else its user's name) and number; never any
    part of the token's secret."""
    if token_pk is not None:
        return f"{token_name or username or 'token'} · token #{token_pk}"
    if reporter == LOCAL_REPORTER:
        return "local caller (no token)"
    number = reporter.removeprefix("token:")
    return f"deleted token #{number}" if number.isdigit() else "unknown reporter"


def _reports(key: ItemKey, reports_after: int) -> list[ReportView]:
    rows = (
        Feedback.objects.filter(scope_id=key.scope_id, target=key.target, outcome__in=REPORTS)
        .order_by("-pk")
        .values(
            "pk",
            "outcome",
            "reporter",
            "day",
            "created_at",
            "note",
            "cited_revision",
            "token_id",
            "token__name",
            "token__user__username",
        )[: REPORTS_SHOWN + 1]
    )
    return [
        ReportView(
            pk=row["pk"],
            outcome=row["outcome"],
            reporter=reporter_label(
                row["reporter"], row["token__name"], row["token__user__username"], row["token_id"]
            ),
            day=row["day"],
            created_at=row["created_at"],
            note=row["note"],
            cited_revision=row["cited_revision"],
            dismissed=row["pk"] <= reports_after,
        )
        for row in rows
    ]


def _decision_rows(key: ItemKey) -> list[ReportDecision]:
    return list(
        ReportDecision.objects.filter(scope_id=key.scope_id, target=key.target)
        .select_related("reviewer")
        .order_by("-pk")[:DECISIONS_SHOWN]
    )


def _candidates(key: ItemKey, rows: list[ReportDecision]) -> dict[str, Candidate]:
    """The update candidates the item's decisions proposed (one query, none without any)."""
    wanted = {row.candidate_id for row in rows if row.candidate_id}
    if not wanted:
        return {}
    return {
        candidate.candidate_id: candidate
        for candidate in Candidate.objects.filter(scope_id=key.scope_id, candidate_id__in=wanted)
    }


def _decisions(
    rows: list[ReportDecision], can_undo: dict[str, Any], candidates: dict[str, Candidate]
) -> list[DecisionView]:
    undone_by = {row.undoes_id: row.pk for row in rows if row.undoes_id is not None}
    views: list[DecisionView] = []
    for row in rows:
        candidate = candidates.get(row.candidate_id) if row.candidate_id else None
        undoable = (
            row.action != ReportDecision.Action.UNDONE
            and row.pk not in undone_by
            and _undoable(row, can_undo, candidate)
        )
        views.append(
            DecisionView(
                pk=row.pk,
                action=row.action,
                reviewer=row.reviewer.get_username(),
                reason=row.reason,
                decided_at=row.decided_at,
                through_feedback=row.through_feedback,
                memory_revision=row.memory_revision,
                new_target=row.new_target,
                candidate_id=row.candidate_id,
                candidate_pk=candidate.pk if candidate is not None else None,
                candidate_status=candidate.status if candidate is not None else None,
                undoes_pk=row.undoes_id,
                undone_by_pk=undone_by.get(row.pk),
                undoable=undoable,
            )
        )
    return views


def _undoable(row: ReportDecision, can_undo: dict[str, Any], candidate: Candidate | None) -> bool:
    """Whether ``report_decision_undo`` would take ``row`` back now (the same checks, read
    without locks: the service decides, the page only offers)."""
    if row.action == ReportDecision.Action.DISMISSED:
        return True
    if row.family == MEMORY:
        return row.memory_revision is not None and row.memory_revision == can_undo.get("entry_from_revision")
    if row.action == ReportDecision.Action.RETIRED:
        return bool(can_undo.get("experience_retired_here"))
    return candidate is not None and candidate.status == Candidate.Status.PENDING


def _memory_state(counter: FeedbackCounter) -> tuple[bool, str, dict[str, Any]]:
    """Whether the reported entry version is its entry's active one, what the entry is now
    otherwise, and what undo checks (the entry's open interval's start). One query."""
    version = counter.entry_version
    assert version is not None
    open_interval = (
        MemoryMembership.objects.filter(entry_id=version.entry_id, to_revision__isnull=True)
        .select_related("entry_version")
        .first()
    )
    if open_interval is None:
        return False, "The entry is no longer in Memory.", {}
    facts = {"entry_from_revision": open_interval.from_revision}
    if open_interval.state != MemoryMembership.State.ACTIVE:
        return False, f"The entry was retired (Memory revision {open_interval.from_revision}).", facts
    if open_interval.entry_version_id != version.pk:
        now = open_interval.entry_version.version
        return (
            False,
            f"The entry was revised: version {now} is its active version now "
            f"(Memory revision {open_interval.from_revision}).",
            facts,
        )
    return True, "", facts


def _experience_state(counter: FeedbackCounter) -> tuple[bool, str, dict[str, Any]]:
    revision = counter.artifact_revision
    assert revision is not None
    head = revision.head
    retired = head.state == Artifact.State.RETIRED
    facts = {"experience_retired_here": retired and head.current_revision == revision.revision}
    if head.current_revision != revision.revision:
        state = " (retired)" if retired else ""
        return False, f"The Experience is at revision {head.current_revision} now{state}.", facts
    if retired:
        return False, "The Experience was retired: prepare no longer recalls it.", facts
    return True, "", facts


def reported_item(pk: int) -> ReportedItem | None:
    """Item ``pk`` (a ``FeedbackCounter``) with its reports (the newest ``REPORTS_SHOWN``), its
    decisions (the newest ``DECISIONS_SHOWN``) and whether each can be undone; None if unknown.
    At most four queries, whatever the item's history."""
    counter = (
        FeedbackCounter.objects.select_related("entry_version__entry", "artifact_revision__head")
        .filter(pk=pk)
        .first()
    )
    if counter is None:
        return None
    key = ItemKey(pk=counter.pk, scope_id=counter.scope_id, target=counter.target, family=counter.family)
    if counter.family == MEMORY:
        current, now, can_undo = _memory_state(counter)
    else:
        current, now, can_undo = _experience_state(counter)
    reports = _reports(key, counter.reports_after)
    shown = reports[:REPORTS_SHOWN]
    rows = _decision_rows(key)
    item = ReportedItem(
        key=key,
        current=current,
        now=now,
        reported_by=reported_by(counter.outdated_reporters, counter.wrong_reporters),
        reporters=counter.reporters,
        wrong_reporters=counter.wrong_reporters,
        outdated_reporters=counter.outdated_reporters,
        hold=hold_for(counter.family, counter.reporters),
        uses=counter.uses,
        last_used_at=counter.last_used_at,
        last_reported_at=counter.last_reported_at,
        reports=tuple(shown),
        more_reports=len(reports) > REPORTS_SHOWN,
        seen_through=shown[0].pk if shown else 0,
        decisions=tuple(_decisions(rows, can_undo, _candidates(key, rows))),
    )
    if counter.entry_version is not None:
        version = counter.entry_version
        return replace(
            item,
            entry_id=version.entry.entry_id,
            entry_version_id=version.entry_version_id,
            version=version.version,
            kind=version.kind,
            text=version.text,
        )
    revision = counter.artifact_revision
    assert revision is not None
    content = revision.content if isinstance(revision.content, dict) else {}
    return replace(
        item,
        artifact_id=revision.artifact_id,
        revision=revision.revision,
        fields=tuple(proposal_fields(revision.family, content)),
        proposal={name: str(content.get(name, "")) for name in families.EXPERIENCE.field_names},
    )


def decision_action(key: ItemKey, decision_id: int) -> str | None:
    """The action of decision ``decision_id`` if it is a decision on this item, else None."""
    return (
        ReportDecision.objects.filter(pk=decision_id, scope_id=key.scope_id, target=key.target)
        .values_list("action", flat=True)
        .first()
    )


def proposed_candidate(scope_id: str, candidate_id: str) -> int | None:
    """The pk of the update candidate a decision proposed (for its link), or None."""
    if not candidate_id:
        return None
    return (
        Candidate.objects.filter(scope_id=scope_id, candidate_id=candidate_id)
        .values_list("pk", flat=True)
        .first()
    )
