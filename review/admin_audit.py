"""Helpers of the decision audit page: the decided version, the revision its approval wrote,
and their untrusted text rendered escaped, with evidence resolved into admin links.

Each lookup runs once per page (cached on the decision object), never per changelist row.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import OuterRef, QuerySet, Subquery
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from powercontext.core.models import ArtifactRevision
from review.models import CandidateVersion, ReviewDecision
from review.selectors.evidence import ref_key, revision_rows, source_rows
from review.selectors.governance import author_kind, reviewer_exists

_PRE = '<pre style="white-space: pre-wrap; margin: 0">{}</pre>'


def decided_version(decision: ReviewDecision) -> CandidateVersion | None:
    """The candidate version the reviewer decided on."""
    if not hasattr(decision, "_audit_version"):
        decision._audit_version = CandidateVersion.objects.filter(  # type: ignore[attr-defined]
            candidate_id=decision.candidate_id, version=decision.version
        ).first()
    return decision._audit_version  # type: ignore[attr-defined,no-any-return]


def result_revision(decision: ReviewDecision) -> ArtifactRevision | None:
    """The artifact revision an approval wrote (None for a rejection)."""
    if not hasattr(decision, "_audit_revision"):
        found = None
        if decision.result_head_id is not None and decision.result_revision is not None:
            found = ArtifactRevision.objects.filter(
                head_id=decision.result_head_id, revision=decision.result_revision
            ).first()
        decision._audit_revision = found  # type: ignore[attr-defined]
    return decision._audit_revision  # type: ignore[attr-defined,no-any-return]


def _value_html(value: Any) -> SafeString:
    if isinstance(value, list):
        return format_html(
            "<ul style='margin: 0'>{}</ul>", format_html_join("", "<li>{}</li>", ((str(i),) for i in value))
        )
    return format_html(_PRE, value if isinstance(value, str) else str(value))


def proposal_html(proposal: Any) -> SafeString:
    """The proposal's fields as a definition list, every value escaped."""
    if not isinstance(proposal, dict):
        return format_html(_PRE, str(proposal))
    return format_html(
        "<dl>{}</dl>",
        format_html_join(
            "",
            "<dt><strong>{}</strong></dt><dd>{}</dd>",
            ((name, _value_html(v)) for name, v in proposal.items()),
        ),
    )


def _source_items(scope_id: str, refs: list[dict[str, Any]]) -> list[SafeString]:
    found = source_rows(scope_id, refs)
    wanted = [(str(r.get("name")), str(r.get("source_id"))) for r in refs]
    return _links(
        [(f"source {name}:{sid}", getattr(found.get((name, sid)), "pk", None)) for name, sid in wanted],
        "source",
    )


def _links(labelled: list[tuple[str, int | None]], model: str) -> list[SafeString]:
    """Each label as a link to its admin page, or marked as not found in the scope."""
    return [
        format_html('<a href="{}">{}</a>', reverse(f"admin:powercontext_{model}_change", args=[pk]), label)
        if pk is not None
        else format_html("{} (not in this scope)", label)
        for label, pk in labelled
    ]


def _artifact_items(scope_id: str, refs: list[dict[str, Any]]) -> list[SafeString]:
    wanted = [ref_key(r) for r in refs]
    found = revision_rows(scope_id, wanted)
    return _links(
        [(f"{f}/{a}@{r}", getattr(found.get((f, a, r)), "pk", None)) for f, a, r in wanted],
        "artifactrevision",
    )


def evidence_html(scope_id: str, source_refs: Any, artifact_refs: Any) -> SafeString | str:
    """Evidence references as links to their Source / ArtifactRevision admin pages."""
    sources = [r for r in source_refs or [] if isinstance(r, dict)]
    artifacts = [r for r in artifact_refs or [] if isinstance(r, dict)]
    items = _source_items(scope_id, sources) + _artifact_items(scope_id, artifacts)
    if not items:
        return "-"
    return format_html(
        "<ul style='margin: 0'>{}</ul>", format_html_join("", "<li>{}</li>", ((i,) for i in items))
    )


def with_written_by(decisions: QuerySet[ReviewDecision]) -> QuerySet[ReviewDecision]:
    """Each decision with who wrote the decided version (``written_by_id``/``_name``) and whether
    that user holds the review permission (``written_by_reviewer``): subqueries of the page's one
    query, never a query per row."""
    version = CandidateVersion.objects.filter(
        candidate_id=OuterRef("candidate_id"), version=OuterRef("version")
    )
    return decisions.annotate(
        written_by_id=Subquery(version.values("created_by_id")[:1]),
        written_by_name=Subquery(version.values("created_by__username")[:1]),
    ).annotate(written_by_reviewer=reviewer_exists(OuterRef("written_by_id")))


@admin.display(description="version written by")
def written_by_display(self: Any, obj: ReviewDecision) -> str:
    """``alice (reviewer)``, ``ci-bot (agent)``, ``no account (pipeline or local agent)``."""
    user_id = getattr(obj, "written_by_id", None)
    kind = author_kind(user_id, obj.version, bool(getattr(obj, "written_by_reviewer", False)))
    name = getattr(obj, "written_by_name", None) if user_id is not None else "no account"
    return f"{name} ({kind})"
