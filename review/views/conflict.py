"""The conflict editor: resolve a rebase's merge conflict field by field (issue 22, "Safe updates").

When rebasing a pending update onto its Artifact's current revision stops at a conflict
(``services.MergeConflict``: the update and the current revision changed a field differently),
the reviewer lands here. Per conflicting field the page shows the base (the revision the update
targeted), the current approved revision and the update side by side, with a choice: take the
current text, take the update's, or edit a result. Fields that merge cleanly show their merged
value. Saving sends only the conflicting fields' results to ``services.candidate_resolve``, which
runs the same three-way merge as Rebase in its own transaction (the candidate's version
compare-and-swap, the head checked to be at the revision merged onto) and takes every other
field from it, so no approved text changes hands outside the merge (issue 32); the next version
targets the current revision, and the candidate page diffs it against that revision, so any
approved text the result leaves out shows as removed before anyone approves. A page whose
candidate or head moved on meanwhile gets the 409 conflict page and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from powercontext.core import families
from powercontext.core.exceptions import (
    ArtifactConflict,
    CandidateConflict,
    CandidateTerminal,
    InvalidRequest,
)
from powercontext.core.models import Artifact, ArtifactRevision
from powercontext.memory.artifacts import head_ref
from review import services
from review.merge import merge_fields
from review.models import Candidate
from review.selectors import candidate as candidate_selectors
from review.views.candidate import _conflict
from review.views.common import (
    CONFLICTS,
    acting_on,
    candidate_url,
    filterset_for,
    not_found_page,
    reviewer_form_view,
    small_int,
    with_qs,
)

CHOICES = (("current", "Take the current revision's"), ("update", "Take the update's"), ("edit", "Edit"))


@dataclass(frozen=True)
class FieldRow:
    """One field of the editor: for a conflict, the three sides, the posted choice and result."""

    name: str
    label: str
    conflict: bool
    merged: str = ""  # clean fields: the merged value
    from_current: bool = False  # clean fields: the value came from the current revision
    base: str = ""
    current: str = ""
    update: str = ""
    choice: str = ""
    result: str = ""
    error: str = ""


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(item) for item in value)
    return "" if value is None else str(value)


def _content(candidate: Candidate, revision: int) -> dict[str, Any] | None:
    target = candidate.latest.target if candidate.latest is not None else None
    if not isinstance(target, dict):
        return None
    row = (
        ArtifactRevision.objects.filter(
            scope_id=candidate.scope_id,
            family=candidate.family,
            artifact_id=target.get("artifact_id"),
            revision=revision,
        )
        .values_list("content", flat=True)
        .first()
    )
    return dict(row) if isinstance(row, dict) else None


def _head(candidate: Candidate) -> Artifact | None:
    target = candidate.latest.target if candidate.latest is not None else None
    if not isinstance(target, dict):
        return None
    return Artifact.objects.filter(
        scope_id=candidate.scope_id, family=candidate.family, artifact_id=target.get("artifact_id")
    ).first()


def _stash_key(pk: int) -> str:
    return f"review:merge:{pk}"


def _resolve(spec: families.FamilySpec, row: FieldRow, data: Any) -> tuple[FieldRow, Any]:
    """The posted choice of one conflicting field and the value it gives (or an error)."""
    choice = str(data.get(f"choice_{row.name}", ""))
    result = str(data.get(row.name, "")).replace("\r\n", "\n")
    field = next(f for f in spec.fields if f.name == row.name)
    posted = replace(row, choice=choice, result=result)
    if choice not in dict(CHOICES):
        return replace(posted, error="Choose which text to keep."), None
    source = {"current": row.current, "update": row.update, "edit": result}[choice]
    value: Any = source
    if field.kind == "lines":
        value = [line.strip() for line in source.split("\n") if line.strip()]
    elif field.kind == "line":
        value = source.strip()
    problem = families.field_problem(field, value)
    if problem is not None:
        return replace(posted, error=problem), None
    return posted, value


@reviewer_form_view
def candidate_merge(request: HttpRequest, pk: int, candidate: Candidate) -> HttpResponse:
    qs = filterset_for(request).querystring()
    posted_version = small_int(request.POST.get("expected_version")) if request.method == "POST" else None
    latest = candidate.latest
    if candidate.status != Candidate.Status.PENDING or latest is None:
        terminal = CandidateTerminal(details={"status": candidate.status})
        return _conflict(request, pk, terminal, action="rebase", expected_version=posted_version)
    if posted_version is not None and posted_version != candidate.version:
        changed = CandidateConflict(
            details={"expected_version": posted_version, "current_version": candidate.version}
        )
        return _conflict(request, pk, changed, action="rebase", expected_version=posted_version)
    head = _head(candidate)
    target = latest.target if isinstance(latest.target, dict) else None
    if head is None or target is None or head.current_revision == target.get("revision"):
        messages.info(request, "This candidate has no conflict to resolve: it is not a stale update.")
        return HttpResponseRedirect(candidate_url(pk, qs))
    if request.method == "POST":
        onto = small_int(request.POST.get("onto_revision"))
        if posted_version is None or onto is None:
            messages.error(request, "The conflict editor's form was malformed; reload the page.")
            return HttpResponseRedirect(candidate_url(pk, qs))
        if onto != head.current_revision:
            moved = ArtifactConflict(details={"current": head_ref(head)})
            return _conflict(request, pk, moved, action="rebase", expected_version=posted_version)
    else:
        onto = head.current_revision
    base, theirs = _content(candidate, int(target["revision"])), _content(candidate, onto)
    if base is None or theirs is None or not isinstance(latest.proposal, dict):
        return not_found_page(request)
    spec = families.spec(candidate.family)
    merged = merge_fields(base, theirs, latest.proposal)
    rows = []
    for field in spec.fields:
        if field.name in merged.conflicts:
            rows.append(
                FieldRow(
                    name=field.name,
                    label=field.label,
                    conflict=True,
                    base=_text(base.get(field.name)),
                    current=_text(theirs.get(field.name)),
                    update=_text(latest.proposal.get(field.name)),
                    result=_text(latest.proposal.get(field.name)),
                )
            )
        else:
            rows.append(
                FieldRow(
                    name=field.name,
                    label=field.label,
                    conflict=False,
                    merged=_text(merged.merged.get(field.name)),
                    from_current=field.name in merged.from_theirs,
                )
            )
    if not merged.conflicts:
        messages.info(
            request, f"Nothing conflicts with revision {onto} any more: rebase the candidate instead."
        )
        return HttpResponseRedirect(candidate_url(pk, qs))
    if request.method == "POST":
        resolutions: dict[str, Any] = {}
        resolved = []
        for row in rows:
            if row.conflict:
                row, value = _resolve(spec, row, request.POST)
                if value is not None:
                    resolutions[row.name] = value
            resolved.append(row)
        if not any(row.error for row in resolved):
            saved = _save(request, candidate, resolutions, posted_version or 0, onto)
            if saved is not None:
                return saved
        # Refused: back to the editor by GET (a reload never resubmits), with what was posted.
        request.session[_stash_key(pk)] = {
            "version": candidate.version,
            "onto": onto,
            "rows": {row.name: [row.choice, row.result, row.error] for row in resolved if row.conflict},
        }
        response = HttpResponseRedirect(with_qs(reverse("review:merge", args=[pk]), qs))
        response.status_code = 303
        return response
    stash = request.session.pop(_stash_key(pk), None)
    if isinstance(stash, dict) and stash.get("version") == candidate.version and stash.get("onto") == onto:
        posted = stash.get("rows") or {}
        rows = [
            replace(row, choice=posted[row.name][0], result=posted[row.name][1], error=posted[row.name][2])
            if row.conflict and row.name in posted
            else row
            for row in rows
        ]
    return render(
        request,
        "review/merge_editor.html",
        {
            "candidate": candidate_selectors.candidate_summary(candidate),
            "rows": rows,
            "conflicts": [row for row in rows if row.conflict],
            "choices": CHOICES,
            "base_revision": target["revision"],
            "onto": onto,
            "expected_version": candidate.version,
            "filter_qs": qs,
            "can_review": True,
        },
    )


def _save(
    request: HttpRequest, candidate: Candidate, resolutions: dict[str, Any], expected: int, onto: int
) -> HttpResponse | None:
    """Write the next version targeting revision ``onto``: the service merges again and takes
    ``resolutions`` for the conflicting fields (one transaction, version compare-and-swap, the
    head checked to be at ``onto``)."""
    try:
        revised = services.candidate_resolve(
            **acting_on(request, candidate),
            expected_version=expected,
            onto_revision=onto,
            resolutions=resolutions,
        )
    except CONFLICTS as exc:
        return _conflict(request, candidate.pk, exc, action="rebase", expected_version=expected)
    except InvalidRequest as exc:
        errors = (exc.details or {}).get("errors") or [{"msg": exc.message}]
        messages.error(request, f"Not saved: {errors[0]['msg']}")
        return None
    messages.success(
        request,
        f"Resolved the conflicts with revision {onto}: saved version {revised.version} of candidate "
        f"#{candidate.pk}, now targeting revision {onto}. The diff below is against revision {onto}: "
        "anything the approval would remove shows as removed.",
        extra_tags=f"revise:{candidate.pk}",
    )
    return HttpResponseRedirect(candidate_url(candidate.pk, filterset_for(request).querystring()))
