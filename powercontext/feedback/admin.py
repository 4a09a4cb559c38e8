"""Django admin of the feedback loop, view-only for everyone, superusers included: the feedback
log (append-only), the counters derived from it (written only by the feedback services) and
reviewers' decisions on reported items (insert-only; they are taken in the Review Inbox, at
``/review/reported/``, and undone there too).

Changelists stay cheap on big tables: exact search lookups, filters over fixed choices and date
ranges (no DISTINCT query), every related column joined (``list_select_related``), relations by
id (``raw_id_fields``), no full result count. Notes and reasons are untrusted text: the admin
escapes them like any value, and ``format_html`` builds the only HTML here.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from powercontext.core.admin import ReadOnlyAdmin, excerpt, path_display, preformatted
from powercontext.feedback.models import COUNTER_FIELDS, Feedback, FeedbackCounter, ReportDecision

# ``ReadOnlyAdmin`` annotates ``fields``, ``search_fields`` and ``list_select_related`` as instance
# variables where django-stubs declares class variables, so mypy refuses any override of them
# (either way): the ``type: ignore[misc]`` below are that, nothing else.
TARGET_HELP = "Exact scope id or item key (m:<entry version id>, e:<artifact id>@<revision>)."


def _inbox_link(counter_pk: int | None) -> SafeString | str:
    """The item's page in the Review Inbox (its reports, decisions and Undo)."""
    if counter_pk is None:
        return "-"
    return format_html(
        '<a href="{}">the reported item in the Review Inbox</a>',
        reverse("review:reported-item", args=[counter_pk]),
    )


def _counter_pk(scope_id: str, target: str) -> int | None:
    return (
        FeedbackCounter.objects.filter(scope_id=scope_id, target=target).values_list("pk", flat=True).first()
    )


class OpenReportsFilter(admin.SimpleListFilter):
    title = "open reports"
    parameter_name = "open"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [("yes", "reported (open reports)"), ("no", "no open reports")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(reporters__gt=0)
        if self.value() == "no":
            return queryset.filter(reporters=0)
        return queryset


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    """What agents reported about cited items, one row per reporter, item, outcome and day."""

    list_display = (
        "id",
        "scope_id",
        "family",
        "target",
        "outcome",
        "reporter_display",
        "cited_revision",
        "note_excerpt",
        "created_at",
    )
    list_select_related = ("token__user",)  # type: ignore[misc]
    list_filter = ("outcome", "family", ("created_at", admin.DateFieldListFilter))
    search_fields = ("scope_id__exact", "target__exact")  # type: ignore[misc]
    search_help_text = TARGET_HELP
    fields = (  # type: ignore[misc]
        "scope_id",
        "family",
        "target",
        "entry_version",
        "artifact_revision",
        "cited_revision",
        "outcome",
        "reporter",
        "token",
        "token_user",
        "day",
        "created_at",
        "note_display",
        "inbox",
    )

    note_excerpt = path_display("note", "note", excerpt)
    token_user = path_display("token.user", "token's user")

    @admin.display(description="reporter")
    def reporter_display(self, obj: Feedback) -> str:
        """The token's name (else its user's), never any part of its secret."""
        token = obj.token
        if token is None:
            return obj.reporter
        return f"{token.name or token.user.get_username()} (token #{token.pk})"

    @admin.display(description="note (redacted)")
    def note_display(self, obj: Feedback) -> SafeString | str:
        return preformatted(obj.note) if obj.note else "-"

    @admin.display(description="Review Inbox")
    def inbox(self, obj: Feedback) -> SafeString | str:
        return _inbox_link(_counter_pk(obj.scope_id, obj.target))


@admin.register(FeedbackCounter)
class FeedbackCounterAdmin(ReadOnlyAdmin):
    """Per item, what the log says: uses, distinct reporters since the last standing dismissal.
    Derived: ``manage.py rebuild_search_index`` rebuilds them from the log; nobody edits them."""

    list_display = (
        "id",
        "scope_id",
        "family",
        "target",
        "reporters",
        "wrong_reporters",
        "outdated_reporters",
        "uses",
        "last_used_at",
        "last_reported_at",
    )
    list_filter = ("family", OpenReportsFilter, ("last_reported_at", admin.DateFieldListFilter))
    search_fields = ("scope_id__exact", "target__exact")  # type: ignore[misc]
    search_help_text = TARGET_HELP
    fields = (  # type: ignore[misc]
        "scope_id",
        "family",
        "target",
        "entry_version",
        "artifact_revision",
        *COUNTER_FIELDS,
        "inbox",
    )

    @admin.display(description="Review Inbox")
    def inbox(self, obj: FeedbackCounter) -> SafeString | str:
        return _inbox_link(obj.pk)


@admin.register(ReportDecision)
class ReportDecisionAdmin(ReadOnlyAdmin):
    """Who dismissed, retired, revised or undid what on a reported item, when and why."""

    list_display = (
        "id",
        "scope_id",
        "family",
        "target",
        "action",
        "reviewer",
        "undoes",
        "reason_excerpt",
        "decided_at",
    )
    list_select_related = ("reviewer", "undoes")  # type: ignore[misc]
    list_filter = ("action", "family", ("decided_at", admin.DateFieldListFilter))
    search_fields = ("scope_id__exact", "target__exact")  # type: ignore[misc]
    search_help_text = TARGET_HELP
    fields = (  # type: ignore[misc]
        "scope_id",
        "family",
        "target",
        "action",
        "reviewer",
        "reason_display",
        "through_feedback",
        "memory_revision",
        "new_target",
        "candidate_id",
        "undoes",
        "decided_at",
        "inbox",
    )

    reason_excerpt = path_display("reason", "reason", excerpt)

    @admin.display(description="reason")
    def reason_display(self, obj: ReportDecision) -> SafeString | str:
        return preformatted(obj.reason) if obj.reason else "-"

    @admin.display(description="Review Inbox")
    def inbox(self, obj: ReportDecision) -> SafeString | str:
        return _inbox_link(_counter_pk(obj.scope_id, obj.target))
