"""Candidates proposed for review, their immutable versions, and reviewers' decisions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from powercontext.core import families
from powercontext.core.models import ID_MAX_LENGTH, SCOPE_MAX_LENGTH, Artifact


class Candidate(models.Model):
    """The head of one candidate: its family, status and current version.

    Lifecycle: pending -> (revise -> pending, version + 1)* -> approved | rejected. Terminal
    states are final. A reviewer may also request changes (pending -> changes_requested, out of
    the queue); the proposer's answer is the next version (-> pending, same candidate, same place
    in the queue), and an Undo of the request returns it to pending unchanged
    (``review.services.changes``). The version moves only by compare-and-swap.
    """

    class Family(models.TextChoices):
        EXPERIENCE = families.Family.EXPERIENCE.value
        SKILL = families.Family.SKILL.value

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"
        CHANGES_REQUESTED = "changes_requested"

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    candidate_id = models.CharField(max_length=ID_MAX_LENGTH)
    family = models.CharField(max_length=16, choices=Family.choices)
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.PENDING)
    version = models.PositiveIntegerField(default=1)
    latest = models.ForeignKey(
        "CandidateVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    result_head = models.ForeignKey(
        Artifact, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    result_revision = models.PositiveIntegerField(null=True, blank=True)
    decision_reason = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Who has the candidate open in the Inbox, until when (a soft marker that expires on its own,
    # written only by ``review.services.viewing``; never blocks a decision).
    viewing_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    viewing_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        permissions = [("review_candidate", "Can approve, reject and revise candidates")]
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "candidate_id"], name="candidate_identity_unique"),
            models.CheckConstraint(
                condition=Q(status="approved", result_head__isnull=False, result_revision__isnull=False)
                | (~Q(status="approved") & Q(result_head__isnull=True, result_revision__isnull=True)),
                name="candidate_result_iff_approved",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "family", "id"], name="candidate_queue"),
            models.Index(fields=["scope_id", "status", "id"], name="candidate_scope_queue"),
            # The queue sorted by scope. The case-insensitive prefix index that the scope filter
            # uses is vendor-specific SQL (migration 0004_queue_density).
            models.Index(fields=["status", "scope_id", "id"], name="candidate_status_scope"),
        ]

    def __str__(self) -> str:
        return f"candidate #{self.pk} ({self.family}, {self.status})"


class CandidateVersion(models.Model):
    """One immutable version of a candidate's proposal and evidence."""

    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, related_name="versions")
    version = models.PositiveIntegerField()
    proposal = models.JSONField()
    source_refs = models.JSONField(default=list)
    artifact_refs = models.JSONField(default=list)
    target = models.JSONField(null=True, blank=True)
    reason = models.TextField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # An Experience version's analyzer terms, summarized when it is written (``similar.sketch``):
    # the bottom-k hashes and the number of distinct terms. The Inbox queue's near-duplicate flag
    # compares these instead of re-reading and re-analyzing proposals (issue 20, N2).
    terms_sketch = models.JSONField(null=True, blank=True)
    terms_count = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["candidate", "version"], name="candidate_version_unique"),
            models.CheckConstraint(condition=Q(version__gte=1), name="candidate_version_positive"),
        ]

    def __str__(self) -> str:
        return f"candidate #{self.candidate_id} v{self.version}"


class ReviewDecision(models.Model):
    """The one terminal decision on a candidate: who decided which version, when, and why."""

    class Decision(models.TextChoices):
        APPROVED = "approved"
        REJECTED = "rejected"

    candidate = models.OneToOneField(Candidate, on_delete=models.PROTECT, related_name="decision")
    version = models.PositiveIntegerField()
    decision = models.CharField(max_length=16, choices=Decision.choices)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.TextField(null=True, blank=True)
    result_head = models.ForeignKey(
        Artifact, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    result_revision = models.PositiveIntegerField(null=True, blank=True)
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The Approved / Rejected lists read newest decision first.
        indexes = [models.Index(fields=["decided_at"], name="review_decision_decided")]

    def __str__(self) -> str:
        return f"decision on candidate #{self.candidate_id}: {self.decision}"


class CannedReason(models.Model):
    """A ready-made reject reason offered in the Inbox (keys 1-9 insert the first nine, in order).

    Configuration, not review data: editable in the admin; a decision stores the reason's text,
    so editing or deleting one never changes a past decision.
    """

    text = models.CharField(max_length=500)
    position = models.PositiveSmallIntegerField(default=0, help_text="Lower comes first (key 1).")

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.text


class CandidateClaim(models.Model):
    """Who is working on a pending candidate ("Assign to me"), so two reviewers do not start on
    the same item. Advisory only: a claim never blocks anyone's approve, reject or revise. At most
    one per candidate (the candidate is the primary key); another reviewer may take it over, and
    a decision deletes it in the decision's transaction, so only pending candidates have one.
    """

    candidate = models.OneToOneField(
        Candidate, primary_key=True, on_delete=models.CASCADE, related_name="claim"
    )
    claimed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    claimed_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["claimed_by", "candidate"], name="candidate_claim_by")]

    def __str__(self) -> str:
        return f"claim on candidate #{self.candidate_id}"


class ReviewAction(models.Model):
    """A decision taken back, or an approved artifact changed afterwards, in the Inbox: who did
    it, why, and on what. Insert-only, next to ``ReviewDecision`` in the review audit.

    - ``reopened``: a rejected candidate was proposed again as a new pending candidate with the
      same content (``reopened_as``); the rejected one and its ``ReviewDecision`` stay as they were.
    - ``retired``: an approved Experience/Skill left recall at ``revision`` (history kept).
    - ``reverted``: an approved artifact got ``revision``, a copy of ``reverted_to``'s content.

    The review thread of a candidate (``review.services.changes``), each on ``candidate_version``,
    its comment in ``reason`` and per-field comments in ``field_comments`` (both redacted):

    - ``changes_requested``: the candidate left the queue until its proposer answers with the next
      version; ``commented``: a comment without a decision; ``changes_withdrawn``: the reviewer
      undid a change request (back to pending, unchanged).
    """

    class Action(models.TextChoices):
        REOPENED = "reopened"
        RETIRED = "retired"
        REVERTED = "reverted"
        CHANGES_REQUESTED = "changes_requested"
        COMMENTED = "commented"
        CHANGES_WITHDRAWN = "changes_withdrawn"

    action = models.CharField(max_length=24, choices=Action.choices)
    candidate = models.ForeignKey(
        Candidate, null=True, blank=True, on_delete=models.PROTECT, related_name="actions"
    )
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.TextField()
    artifact = models.ForeignKey(Artifact, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    revision = models.PositiveIntegerField(null=True, blank=True)
    reverted_to = models.PositiveIntegerField(null=True, blank=True)
    candidate_version = models.PositiveIntegerField(null=True, blank=True)
    reopened_as = models.ForeignKey(
        Candidate, null=True, blank=True, on_delete=models.PROTECT, related_name="reopened_from"
    )
    # A change request's or a comment's per-field comments: {proposal field name: comment}.
    field_comments = models.JSONField(null=True, blank=True)
    acted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["acted_at"], name="review_action_acted"),
            # A candidate's thread, oldest first.
            models.Index(fields=["candidate", "acted_at"], name="review_action_thread"),
        ]

    def __str__(self) -> str:
        return f"{self.action} by #{self.reviewer_id}"
