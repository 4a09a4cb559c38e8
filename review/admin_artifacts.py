"""Admin for artifact revisions: view-only, with the search text each revision wrote and links
back to the review decision and candidate that produced it (approved Experience and Skill).

Imported from ``powercontext.core.admin`` so it registers with the rest of the core domain.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from powercontext.core.admin import FamilyFilter, ReadOnlyAdmin, json_display, preformatted
from powercontext.core.models import ArtifactRevision
from review import admin_search
from review.models import ReviewDecision


@admin.register(ArtifactRevision)
class ArtifactRevisionAdmin(admin_search.AuditSearchMixin, ReadOnlyAdmin):
    audit_search = admin_search.ARTIFACT_REVISIONS

    list_display = (
        "artifact_id",
        "family",
        "scope_id",
        "revision",
        "parent_revision",
        "created_by",
        "created_at",
    )
    list_select_related = ("created_by",)
    list_filter = (FamilyFilter,)
    fields = (
        "head",
        "scope_id",
        "family",
        "artifact_id",
        "revision",
        "parent_revision",
        "created_by",
        "created_at",
        "produced_by",
        "content_pretty",
        "source_refs_pretty",
        "artifact_refs_pretty",
        "searchable_text_written",
    )

    @admin.display(description="produced by")
    def produced_by(self, obj: ArtifactRevision) -> SafeString | str:
        """The approval that wrote this revision (Memory revisions have none)."""
        decision = (
            ReviewDecision.objects.select_related("candidate")
            .filter(result_head_id=obj.head_id, result_revision=obj.revision)
            .first()
        )
        if decision is None:
            return "-"
        return format_html(
            '<a href="{}">decision #{}</a> on <a href="{}">candidate {}</a>',
            reverse("admin:review_reviewdecision_change", args=[decision.pk]),
            decision.pk,
            reverse("admin:review_candidate_change", args=[decision.candidate_id]),
            decision.candidate.candidate_id,
        )

    content_pretty = json_display("content", "content")
    source_refs_pretty = json_display("source_refs", "source refs")
    artifact_refs_pretty = json_display("artifact_refs", "artifact refs")

    @admin.display(description="searchable text written")
    def searchable_text_written(self, obj: ArtifactRevision) -> SafeString | str:
        if not obj.searchable_text:
            return "-"
        return preformatted(obj.searchable_text)
