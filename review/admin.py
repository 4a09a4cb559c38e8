"""Django admin for auditing review: candidates, their immutable versions, and decisions.

All view-only for everyone, superusers included: candidates change only through the review
services (propose / revise / approve / reject), versions and decisions are insert-only.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from powercontext.core.admin import ReadOnlyAdmin, json_display, path_display, preformatted
from review import admin_audit as audit
from review import admin_search
from review.models import (
    Candidate,
    CandidateClaim,
    CandidateVersion,
    CannedReason,
    ReviewAction,
    ReviewDecision,
)


@admin.display(description="result")
def _result(self: ReadOnlyAdmin, obj: Candidate | ReviewDecision) -> str:
    """The artifact revision an approval wrote, as ``artifact_id@revision`` ("-" for none)."""
    head = obj.result_head
    if head is None or obj.result_revision is None:
        return "-"
    return f"{head.artifact_id}@{obj.result_revision}"


class CandidatePartAdmin(ReadOnlyAdmin):
    """A row that belongs to one candidate (its claim, a version, the decision): found by the
    candidate's scope id or id, and showing them as columns."""

    search_fields: tuple[str, ...] = ("candidate__scope_id__exact", "candidate__candidate_id__exact")
    search_help_text = "Exact scope id or candidate id."

    candidate_id_display = path_display("candidate.candidate_id", "candidate id")
    scope_id_display = path_display("candidate.scope_id", "scope id")


@admin.register(Candidate)
class CandidateAdmin(admin_search.AuditSearchMixin, ReadOnlyAdmin):
    audit_search = admin_search.CANDIDATES
    list_display = (
        "candidate_id",
        "scope_id",
        "family",
        "status",
        "version",
        "result",
        "claimed_by",
        "created_at",
        "updated_at",
    )
    list_select_related = ("result_head", "claim__claimed_by")
    list_filter = ("family", "status")
    fields = (
        "scope_id",
        "candidate_id",
        "family",
        "status",
        "version",
        "latest",
        "result_head",
        "result_revision",
        "decision_reason",
        "claimed_by",
        "created_at",
        "updated_at",
        "proposal_pretty",
        "source_refs_pretty",
        "artifact_refs_pretty",
        "target_pretty",
        "reason",
    )

    result = _result

    @admin.display(description="assigned to")
    def claimed_by(self, obj: Candidate) -> str:
        try:
            claim = obj.claim
        except CandidateClaim.DoesNotExist:
            return "-"
        return f"{claim.claimed_by.get_username()} since {claim.claimed_at:%Y-%m-%d %H:%M} UTC"

    proposal_pretty = json_display("latest.proposal", "proposal (current version)")
    source_refs_pretty = json_display("latest.source_refs", "source refs (current version)")
    artifact_refs_pretty = json_display("latest.artifact_refs", "artifact refs (current version)")
    target_pretty = json_display("latest.target", "target (current version)")

    @admin.display(description="reason (current version)")
    def reason(self, obj: Candidate) -> str:
        return (obj.latest.reason if obj.latest is not None else None) or "-"


@admin.register(CandidateClaim)
class CandidateClaimAdmin(CandidatePartAdmin):
    """Who is working on which pending candidate ("Assign to me" in the Inbox). View-only: claims
    change through the Inbox (``candidate_claim`` / ``candidate_unclaim``) and decisions."""

    list_display = ("candidate_id_display", "scope_id_display", "claimed_by", "claimed_at")
    list_select_related = ("candidate", "claimed_by")
    list_filter = (("claimed_by", admin.RelatedFieldListFilter),)
    ordering = ("-claimed_at",)
    fields = ("candidate", "claimed_by", "claimed_at")


@admin.register(CandidateVersion)
class CandidateVersionAdmin(CandidatePartAdmin):
    list_display = (
        "id",
        "candidate_id_display",
        "scope_id_display",
        "family_display",
        "version",
        "created_by",
        "created_at",
    )
    list_select_related = ("candidate", "created_by")
    list_filter = ("candidate__family",)
    fields = (
        "candidate",
        "version",
        "created_by",
        "created_at",
        "proposal_pretty",
        "source_refs_pretty",
        "artifact_refs_pretty",
        "target_pretty",
        "reason",
    )

    family_display = path_display("candidate.family", "family")

    proposal_pretty = json_display("proposal", "proposal")
    source_refs_pretty = json_display("source_refs", "source refs")
    artifact_refs_pretty = json_display("artifact_refs", "artifact refs")
    target_pretty = json_display("target", "target")


@admin.register(ReviewDecision)
class ReviewDecisionAdmin(admin_search.AuditSearchMixin, CandidatePartAdmin):
    """The audit trail: who decided which version when, who wrote that version, what the
    approval wrote, and from what."""

    audit_search = admin_search.DECISIONS

    list_display = (
        "id",
        "candidate_id_display",
        "scope_id_display",
        "decision",
        "version",
        "written_by",
        "reviewer",
        "result",
        "decided_at",
    )
    list_select_related = ("candidate", "reviewer", "result_head")
    list_filter = ("decision", ("reviewer", admin.RelatedFieldListFilter))
    date_hierarchy = "decided_at"
    fields = (
        "candidate",
        "version",
        "written_by",
        "decision",
        "reviewer",
        "reason",
        "result_head",
        "result_revision",
        "decided_at",
        "links",
        "decided_text",
        "evidence",
        "searchable_text_written",
    )

    result = _result
    written_by = audit.written_by_display

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReviewDecision]:
        return audit.with_written_by(super().get_queryset(request))

    @admin.display(description="links")
    def links(self, obj: ReviewDecision) -> SafeString:
        parts = [
            format_html(
                '<a href="{}">candidate {}</a>',
                reverse("admin:review_candidate_change", args=[obj.candidate_id]),
                obj.candidate.candidate_id,
            ),
            format_html('<a href="{}">Inbox page</a>', reverse("review:candidate", args=[obj.candidate_id])),
        ]
        revision = audit.result_revision(obj)
        if revision is not None:
            parts.insert(
                1,
                format_html(
                    '<a href="{}">revision {}</a>',
                    reverse("admin:powercontext_artifactrevision_change", args=[revision.pk]),
                    revision,
                ),
            )
        return format_html_join(" · ", "{}", ((part,) for part in parts))

    @admin.display(description="text of the decided version")
    def decided_text(self, obj: ReviewDecision) -> SafeString | str:
        version = audit.decided_version(obj)
        return audit.proposal_html(version.proposal) if version is not None else "-"

    @admin.display(description="evidence")
    def evidence(self, obj: ReviewDecision) -> SafeString | str:
        version = audit.decided_version(obj)
        if version is None:
            return "-"
        return audit.evidence_html(obj.candidate.scope_id, version.source_refs, version.artifact_refs)

    @admin.display(description="searchable text written by this approval")
    def searchable_text_written(self, obj: ReviewDecision) -> SafeString | str:
        revision = audit.result_revision(obj)
        if revision is None or not revision.searchable_text:
            return "-"
        return preformatted(revision.searchable_text)


@admin.register(CannedReason)
class CannedReasonAdmin(admin.ModelAdmin):
    """Editable: canned reasons are Inbox configuration. A decision copies the text, so edits
    never reach past decisions."""

    list_display = ("text", "position")
    list_editable = ("position",)
    ordering = ("position", "id")


# The ArtifactRevision admin links into the review audit trail, so it lives with review.
from review import admin_artifacts  # noqa: E402, F401


@admin.register(ReviewAction)
class ReviewActionAdmin(admin_search.AuditSearchMixin, ReadOnlyAdmin):
    """The audit of decisions taken back (reopen) and approved artifacts changed afterwards
    (retire, revert): who, when, why, on what."""

    list_display = (
        "id",
        "action",
        "candidate",
        "artifact",
        "revision",
        "reverted_to",
        "reviewer",
        "acted_at",
    )
    list_select_related = ("candidate", "artifact", "reviewer")
    list_filter = ("action", ("reviewer", admin.RelatedFieldListFilter))
    date_hierarchy = "acted_at"
    audit_search = admin_search.ACTIONS
    fields = (
        "action",
        "candidate",
        "candidate_version",
        "artifact",
        "revision",
        "reverted_to",
        "reviewer",
        "reason",
        "reopened_as",
        "acted_at",
    )
