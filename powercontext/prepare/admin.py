"""Admin for prepares: the page "Explain a prepare" and the view-only prepare aggregates.

The explain page is a thin renderer of ``powercontext.prepare.explain_selectors`` (the function
``manage.py explain_prepare`` prints): it reads, never writes, and never logs the query. It is
a POST form, so the query stays out of URLs and access logs. It needs the permission
``prepare.explain_prepare`` and ``view_memoryentryversion`` (the permission that shows Memory in
the admin already: the report lists citations and scores), which also allows "show text".

Imported from ``powercontext.core.admin`` so it registers with the rest of the core domain.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.safestring import SafeString

from powercontext.core.admin import FixedChoiceFilter, ReadOnlyAdmin, explain_prepare_link
from powercontext.prepare.builder import (
    DEFAULT_MAX_BYTES,
    MAX_MAX_BYTES,
    MIN_MAX_BYTES,
    BuilderInvariantError,
)
from powercontext.prepare.models import (
    PREPARE_AGGREGATE_COUNTERS,
    PREPARE_LATENCY_BOUNDS_MS,
    PrepareAggregate,
)

EXPLAIN_PERMISSION = "prepare.explain_prepare"
TEXT_PERMISSION = "powercontext.view_memoryentryversion"
SEARCH_MODES = ("fts", "hybrid", "vector")


def _non_blank(value: str) -> None:
    if not value.strip():
        raise forms.ValidationError("Must contain a non-whitespace character.")


class ExplainForm(forms.Form):
    scope = forms.CharField(max_length=256, strip=False, validators=[_non_blank])
    query = forms.CharField(
        max_length=8192, strip=False, validators=[_non_blank], widget=forms.Textarea(attrs={"rows": 3})
    )
    max_bytes = forms.IntegerField(
        min_value=MIN_MAX_BYTES, max_value=MAX_MAX_BYTES, initial=DEFAULT_MAX_BYTES
    )
    show_text = forms.BooleanField(required=False, initial=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from powercontext.prepare.explain_selectors import PREVIEW_CHARS

        self.fields["show_text"].help_text = f"Show each hit's first {PREVIEW_CHARS} characters."


class SearchModeFilter(FixedChoiceFilter):
    title = "search mode"
    parameter_name = "mode"
    field = "search_mode"
    values = SEARCH_MODES


class RecentHourFilter(admin.SimpleListFilter):
    title = "hour"
    parameter_name = "since"
    periods = (("1", "this hour"), ("24", "last 24 hours"), ("168", "last 7 days"))

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return list(self.periods)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        hours = {key: int(key) for key, _ in self.periods}.get(self.value() or "")
        if hours is None:
            return queryset
        now = timezone.now().replace(minute=0, second=0, microsecond=0)
        return queryset.filter(hour__gt=now - timedelta(hours=hours))


def _bucket_bound(obj: PrepareAggregate, fraction: float) -> str:
    """The histogram bucket holding the ``fraction`` quantile, as "≤ N ms" (or "> 1000 ms")."""
    names = [f"latency_le_{b}ms" for b in PREPARE_LATENCY_BOUNDS_MS]
    target = fraction * obj.prepares
    seen = 0
    for bound, name in zip(PREPARE_LATENCY_BOUNDS_MS, names, strict=True):
        seen += getattr(obj, name)
        if obj.prepares and seen >= target:
            return f"\u2264 {bound} ms"
    return f"> {PREPARE_LATENCY_BOUNDS_MS[-1]} ms" if obj.prepares else "-"


@admin.register(PrepareAggregate)
class PrepareAggregateAdmin(ReadOnlyAdmin):
    """Per scope, UTC hour and search mode: what prepares did (counts, sizes, latency)."""

    list_display = (
        "hour",
        "scope_id",
        "search_mode",
        "prepares",
        "empty",
        "mean_content_bytes",
        "budget_used",
        "mean_latency",
        "latency_p50",
        "latency_p95",
        "admitted",
        "truncations",
        "skips",
        "duplicates",
    )
    list_filter = (RecentHourFilter, SearchModeFilter)
    date_hierarchy = "hour"
    ordering = ("-hour", "-pk")
    # The summary first, then every counter in the flusher's order.
    fields = (
        "scope_id",
        "hour",
        "search_mode",
        "mean_content_bytes",
        "budget_used",
        "mean_latency",
        "latency_p50",
        "latency_p95",
        *PREPARE_AGGREGATE_COUNTERS,
        "updated_at",
        "explain_link",
    )

    @admin.display(description="mean content bytes")
    def mean_content_bytes(self, obj: PrepareAggregate) -> str:
        return f"{obj.content_bytes / obj.prepares:.0f}" if obj.prepares else "-"

    @admin.display(description="budget used")
    def budget_used(self, obj: PrepareAggregate) -> str:
        return f"{obj.content_bytes * 100 / obj.max_bytes:.1f}%" if obj.max_bytes else "-"

    @admin.display(description="mean latency")
    def mean_latency(self, obj: PrepareAggregate) -> str:
        return f"{obj.latency_us / obj.prepares / 1000:.2f} ms" if obj.prepares else "-"

    @admin.display(description="p50")
    def latency_p50(self, obj: PrepareAggregate) -> str:
        return _bucket_bound(obj, 0.5)

    @admin.display(description="p95")
    def latency_p95(self, obj: PrepareAggregate) -> str:
        return _bucket_bound(obj, 0.95)

    @admin.display(description="admitted (memory + experience)")
    def admitted(self, obj: PrepareAggregate) -> str:
        return f"{obj.memory_admitted} + {obj.experience_admitted}"

    @admin.display(description="truncated (cap / budget)")
    def truncations(self, obj: PrepareAggregate) -> str:
        return f"{obj.truncated_source_cap} / {obj.truncated_budget}"

    @admin.display(description="skipped")
    def skips(self, obj: PrepareAggregate) -> int:
        return (
            obj.skipped_blank
            + obj.skipped_unencodable
            + obj.skipped_item_limit
            + obj.skipped_total_item_limit
            + obj.skipped_over_budget
            + obj.skipped_window
            + obj.skipped_below_floor
            + obj.skipped_held
            + obj.skipped_below_cut
        )

    @admin.display(description="explain")
    def explain_link(self, obj: PrepareAggregate) -> SafeString:
        return explain_prepare_link(obj.scope_id)

    def get_urls(self) -> list[URLPattern]:
        explain = path(
            "explain/", self.admin_site.admin_view(self.explain_view), name="powercontext_prepare_explain"
        )
        return [explain, *super().get_urls()]

    def explain_view(self, request: HttpRequest) -> HttpResponse:
        """Render ``prepare_explain`` for the submitted form. Reads only; the query is not logged."""
        # The report lists citations, entry ids and scores of Memory: the explain permission alone
        # is not enough, the Memory view permission is needed too (issue 20).
        if not request.user.has_perm(EXPLAIN_PERMISSION) or not request.user.has_perm(TEXT_PERMISSION):
            raise PermissionDenied
        # Imported here, not with the admin: the report reads through search (NumPy, the embedding
        # model's module), which every management command would otherwise load at start-up.
        from powercontext.prepare.explain_selectors import prepare_explain

        report = None
        if request.method == "POST":
            form = ExplainForm(request.POST)
            if form.is_valid():
                data = form.cleaned_data
                if data["show_text"] and not request.user.has_perm(TEXT_PERMISSION):
                    form.add_error("show_text", "Showing text needs the permission to view Memory entries.")
                else:
                    try:
                        report = prepare_explain(
                            scope_id=data["scope"],
                            query=data["query"],
                            max_bytes=data["max_bytes"],
                            show_text=data["show_text"],
                        )
                    except BuilderInvariantError:
                        form.add_error(None, "The builder's invariants failed for this prepare.")
        else:
            form = ExplainForm(initial={"scope": request.GET.get("scope", "")[:256]})
        context = {
            **self.admin_site.each_context(request),
            "title": "Explain a prepare",
            "opts": self.model._meta,
            "form": form,
            "report": report,
            "rows": report.rows() if report is not None else [],
        }
        return TemplateResponse(request, "admin/prepare/prepare_explain.html", context)
