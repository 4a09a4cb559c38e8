"""Tables of the feedback loop: the log agents write, the counters derived from it, and what
people decided about reported items.

- ``Feedback`` is append-only: one row per (scope, item, outcome, reporter, UTC day); the
  service inserts rows and never updates or deletes one (the admin shows them view-only).
- ``FeedbackCounter`` is a projection of the log, one row per reported or used item: uses, last
  use, distinct reporters of ``wrong`` and ``outdated`` since the item's last standing
  dismissal. Written only by ``services.counters_refresh_within`` (in the feedback write's
  transaction, or a rebuild); never by prepare, which only reads it.
- ``CounterGeneration`` says whether a scope's counters changed: one value per scope, drawn anew
  by every transaction that writes them, so that prepare's cache of counters is checked by one
  indexed row.
- ``ReportDecision`` is insert-only: a reviewer dismissed, retired or revised a reported item,
  or took such a decision back (``undone``: a row naming the decision it undoes).

An *item* is one immutable thing prepare cites: a Memory entry version or an Experience
revision. Its ``target`` key is ``m:<entry_version_id>`` or ``e:<artifact_id>@<revision>``
(unique within a scope), so a revised entry or a new Experience revision is a new item whose
counters start clean: the reports were about the old text.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from powercontext.core.models import (
    SCOPE_MAX_LENGTH,
    ApiToken,
    ArtifactRevision,
    MemoryEntryVersion,
    PkNamedModel,
)

TARGET_MAX_LENGTH = 160
REPORTER_MAX_LENGTH = 32
NOTE_MAX_CHARS = 500

MEMORY = "memory"
EXPERIENCE = "experience"
FAMILIES = ((MEMORY, "Memory entry version"), (EXPERIENCE, "Experience revision"))

# Exactly one of the two item columns is set, by family.
_ONE_ITEM = Q(family=MEMORY, entry_version__isnull=False, artifact_revision__isnull=True) | Q(
    family=EXPERIENCE, entry_version__isnull=True, artifact_revision__isnull=False
)


class Outcome(models.TextChoices):
    USED = "used"  # the agent relied on the item
    WRONG = "wrong"  # the item is false
    OUTDATED = "outdated"  # the item was true and no longer is


REPORTS = (Outcome.WRONG, Outcome.OUTDATED)
# What a ``FeedbackCounter`` derives from the log, in the order every reader lists them.
COUNTER_FIELDS = (
    "uses",
    "last_used_at",
    "reporters",
    "wrong_reporters",
    "outdated_reporters",
    "last_reported_at",
    "reports_after",
)


class Feedback(PkNamedModel):
    """One report about one cited item. Append-only; idempotent per reporter, item, outcome and
    UTC day (``feedback_once_a_day``). ``reporter`` is ``token:<pk>`` for a bearer token, or
    ``local`` for the tokenless caller of the embedded default; ``note`` is stored redacted."""

    id = models.BigAutoField(primary_key=True)
    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    target = models.CharField(max_length=TARGET_MAX_LENGTH)
    family = models.CharField(max_length=16, choices=FAMILIES)
    entry_version = models.ForeignKey(
        MemoryEntryVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    artifact_revision = models.ForeignKey(
        ArtifactRevision, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The revision the citation named: the Memory revision the reporter's pack was built from,
    # or the Experience revision itself.
    cited_revision = models.PositiveIntegerField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    note = models.TextField(blank=True, default="")
    reporter = models.CharField(max_length=REPORTER_MAX_LENGTH)
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    day = models.DateField()
    created_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "feedback"
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "target", "outcome", "reporter", "day"], name="feedback_once_a_day"
            ),
            models.CheckConstraint(condition=_ONE_ITEM, name="feedback_one_item"),
        ]
        indexes = [
            # The counters of one item are recomputed from its rows.
            models.Index(fields=["scope_id", "target", "id"], name="feedback_target"),
            # The per-token rate limit counts a reporter's recent rows.
            models.Index(fields=["reporter", "created_at"], name="feedback_reporter_recent"),
        ]


class FeedbackCounter(PkNamedModel):
    """What the log says about one item, derived (``services.counters_refresh_within``).

    ``uses``: rows with outcome ``used`` (at most one per reporter and day); ``reporters``:
    distinct reporters of ``wrong`` or ``outdated`` among the rows after ``reports_after`` (the
    newest row the item's last standing dismissal covered; 0: none), and the two per-outcome
    counts the same way. Rebuildable from ``Feedback`` and ``ReportDecision`` at any time.
    """

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    target = models.CharField(max_length=TARGET_MAX_LENGTH)
    family = models.CharField(max_length=16, choices=FAMILIES)
    entry_version = models.ForeignKey(
        MemoryEntryVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    artifact_revision = models.ForeignKey(
        ArtifactRevision, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    uses = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)
    reporters = models.PositiveIntegerField(default=0)
    wrong_reporters = models.PositiveIntegerField(default=0)
    outdated_reporters = models.PositiveIntegerField(default=0)
    last_reported_at = models.DateTimeField(null=True, blank=True)
    reports_after = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = "feedback counter"
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "target"], name="feedback_counter_unique"),
            models.CheckConstraint(condition=_ONE_ITEM, name="feedback_counter_one_item"),
        ]
        indexes = [
            # The Inbox lists the items with open reports, newest report first.
            models.Index(
                fields=["-last_reported_at"], condition=Q(reporters__gt=0), name="feedback_counter_reported"
            ),
        ]


class CounterGeneration(PkNamedModel):
    """Whether a scope's counters changed: one row per scope whose counters were ever written,
    holding a random value that every transaction writing them draws anew
    (``services.counters_refresh_within``, a rebuild). Prepare reads it first (one indexed row)
    and uses the counters its process cached at the same value (``selectors.usage_for``); no
    row: the scope has no counter. A random value rather than a count, so that a rolled-back
    write or a restored database cannot show a value some process cached other counters at."""

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH, unique=True)
    generation = models.BigIntegerField()

    class Meta:
        verbose_name = "feedback counter generation"


class ReportDecision(PkNamedModel):
    """A person's decision on a reported item, insert-only (the review audit's fourth table).

    - ``dismissed``: the reports up to ``through_feedback`` stay in the log and no longer count;
      the item is recalled again.
    - ``retired``: the Memory entry (or Experience) left recall (``memory_revision``: the Memory
      revision that retired it).
    - ``revised``: a new version replaced the reported one (``new_target``; Experience: the
      update proposed as candidate ``candidate_id``, which a reviewer approves as usual).
    - ``undone``: the decision ``undoes`` was taken back (what it wrote is reversed).
    """

    class Action(models.TextChoices):
        DISMISSED = "dismissed"
        RETIRED = "retired"
        REVISED = "revised"
        UNDONE = "undone"

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    target = models.CharField(max_length=TARGET_MAX_LENGTH)
    family = models.CharField(max_length=16, choices=FAMILIES)
    action = models.CharField(max_length=16, choices=Action.choices)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.TextField(blank=True, default="")
    through_feedback = models.BigIntegerField(default=0)
    memory_revision = models.PositiveIntegerField(null=True, blank=True)
    new_target = models.CharField(max_length=TARGET_MAX_LENGTH, blank=True, default="")
    candidate_id = models.CharField(max_length=128, blank=True, default="")
    undoes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="undone_by"
    )
    decided_at = models.DateTimeField()

    class Meta:
        verbose_name = "report decision"
        constraints = [
            models.CheckConstraint(
                condition=Q(action="undone", undoes__isnull=False)
                | (~Q(action="undone") & Q(undoes__isnull=True)),
                name="report_decision_undo_names_one",
            ),
        ]
        indexes = [
            models.Index(fields=["scope_id", "target", "id"], name="report_decision_target"),
            models.Index(fields=["decided_at"], name="report_decision_decided"),
        ]
