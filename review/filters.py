"""Review Inbox queue filters (django-filter): status, family, scope, text, age and assignment."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from django.utils import timezone

from powercontext.core import families
from review.models import Candidate
from review.selectors import near_window, similar
from review.selectors import queue as queue_selectors
from review.selectors.queue import Sort

# Proposal keys searched by the text filter (JSON key transforms, so non-ASCII text matches the
# stored string rather than its escaped JSON form).
TEXT_KEYS = tuple(
    dict.fromkeys(name for spec in families.PROPOSAL_FAMILIES.values() for name in spec.text_fields())
)

AGES: dict[str, tuple[str, str, timedelta]] = {
    "lt1h": ("Last hour", "gte", timedelta(hours=1)),
    "lt1d": ("Last 24 hours", "gte", timedelta(days=1)),
    "lt7d": ("Last 7 days", "gte", timedelta(days=7)),
    "gt1d": ("Older than 1 day", "lt", timedelta(days=1)),
    "gt7d": ("Older than 7 days", "lt", timedelta(days=7)),
    "gt30d": ("Older than 30 days", "lt", timedelta(days=30)),
}

ASSIGNED = {"me": "Assigned to me", "nobody": "Unassigned"}

NEAR = {"1": "Near-duplicates (later copies)"}

# The Approved / Rejected lists leave out decisions taken back (Undo, Reopen: the decided
# candidate has a pending copy, ``queue_selectors.taken_back``) unless asked for.
TAKEN_BACK = {"only": "Only decisions taken back", "include": "Include decisions taken back"}
DECIDED = (Candidate.Status.APPROVED, Candidate.Status.REJECTED)

# The querystring keys the filter owns (kept when moving between queue and candidate pages).
FILTER_KEYS = ("status", "family", "scope", "q", "age", "assigned", "others", "taken_back", "near", "sort")


class CandidateQueueFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=Candidate.Status.choices, label="Status", empty_label=None)
    family = django_filters.ChoiceFilter(
        choices=Candidate.Family.choices, label="Family", empty_label="All families"
    )
    # Prefix match, case-insensitive: served by the candidate_scope_prefix index (migration 0003).
    scope = django_filters.CharFilter(
        field_name="scope_id", lookup_expr="istartswith", label="Scope", max_length=256
    )
    q = django_filters.CharFilter(method="filter_text", label="Text", max_length=200)
    age = django_filters.ChoiceFilter(
        choices=[(key, label) for key, (label, _, _) in AGES.items()],
        method="filter_age",
        label="Age",
        empty_label="Any age",
    )
    assigned = django_filters.ChoiceFilter(
        choices=list(ASSIGNED.items()),
        method="filter_assigned",
        label="Assigned",
        empty_label="Anyone or nobody",
    )
    # Navigation only (Next, Previous, j/k, the page after a decision): see review.views.sharing.
    others = django_filters.BooleanFilter(
        method="filter_others", label="Show items others are on", widget=forms.CheckboxInput
    )
    # Applied in ``filter_queryset``: its default (no value) hides decisions taken back.
    taken_back = django_filters.ChoiceFilter(
        choices=list(TAKEN_BACK.items()),
        method="filter_taken_back",
        label="Taken back",
        empty_label="Hide decisions taken back",
    )
    # Last: it flags the rows the other filters left (``similar.near_duplicate_flags``).
    near = django_filters.ChoiceFilter(
        choices=list(NEAR.items()), method="filter_near", label="Flag", empty_label="Any flag"
    )

    class Meta:
        model = Candidate
        fields: list[str] = []

    def __init__(self, data: Any = None, *args: Any, **kwargs: Any) -> None:
        # The inbox is the pending queue unless another status is asked for.
        if data is not None and not data.get("status"):
            data = data.copy()
            data["status"] = Candidate.Status.PENDING
        super().__init__(data, *args, **kwargs)
        self.form.fields["scope"].widget = forms.TextInput(
            attrs={"placeholder": "scope id or its start", "list": "scope-suggestions", "autocomplete": "off"}
        )
        self.form.fields["q"].widget = forms.TextInput(
            attrs={"placeholder": "words in the proposal", "type": "search"}
        )

    def filter_text(self, queryset: QuerySet[Candidate], name: str, value: str) -> QuerySet[Candidate]:
        text = value.strip()
        if not text:
            return queryset
        match = Q(candidate_id=text) | Q(latest__reason__icontains=text)
        for key in TEXT_KEYS:
            match |= Q(**{f"latest__proposal__{key}__icontains": text})
        return queryset.filter(match)

    def filter_age(self, queryset: QuerySet[Candidate], name: str, value: str) -> QuerySet[Candidate]:
        _, lookup, delta = AGES[value]
        return queryset.filter(**{f"created_at__{lookup}": timezone.now() - delta})

    def filter_assigned(self, queryset: QuerySet[Candidate], name: str, value: str) -> QuerySet[Candidate]:
        if value == "nobody":
            return queryset.filter(claim__isnull=True)
        user = getattr(self.request, "user", None)
        if user is None or not user.is_authenticated:
            return queryset.none()
        return queryset.filter(claim__claimed_by=user)

    def filter_others(self, queryset: QuerySet[Candidate], name: str, value: bool) -> QuerySet[Candidate]:
        return queryset  # the queue lists every row and marks those others are on

    def filter_taken_back(self, queryset: QuerySet[Candidate], name: str, value: str) -> QuerySet[Candidate]:
        return queryset  # see filter_queryset: the empty default filters too

    def filter_queryset(self, queryset: QuerySet[Candidate]) -> QuerySet[Candidate]:
        """The declared filters, then the Approved / Rejected lists' treatment of decisions taken
        back, whose default (no value) filters too: left out; ``only`` lists just them,
        ``include`` all of them. (``near`` keeps pending rows only, so its order does not
        matter here.)"""
        rows: QuerySet[Candidate] = super().filter_queryset(queryset)
        if self.status_value not in DECIDED:
            return rows  # only decided candidates are ever taken back
        choice = self.form.cleaned_data.get("taken_back")
        if choice == "only":
            return rows.filter(queue_selectors.taken_back())
        if choice != "include":
            return rows.exclude(queue_selectors.taken_back())
        return rows

    def taken_back_rows(self) -> QuerySet[Candidate] | None:
        """The decisions taken back that the list leaves out by default (its "n taken back"
        note), or None when it shows them (or is not a decided list, or the filters are
        invalid)."""
        if self.data is None or not self.is_valid() or self.status_value not in DECIDED:
            return None
        if self.form.cleaned_data.get("taken_back"):
            return None
        data = self.data.copy()
        data["taken_back"] = "only"
        rows: QuerySet[Candidate] = CandidateQueueFilter(
            data, queryset=self.queryset, request=self.request
        ).qs
        return rows

    def filter_near(self, queryset: QuerySet[Candidate], name: str, value: str) -> QuerySet[Candidate]:
        """The later copies of near-duplicate pairs among the newest ``PENDING_SCAN`` pending
        rows the other filters select (bounded work, as the queue's flag)."""
        rows = list(
            queryset.filter(status=Candidate.Status.PENDING)
            .select_related("latest")
            .defer("latest__proposal")
            .order_by("-pk")[: near_window.PENDING_SCAN]
        )
        flags = similar.near_duplicate_flags(rows)
        return queryset.filter(pk__in=[pk for pk, flag in flags.items() if flag is not None])

    @property
    def sort(self) -> Sort:
        """The requested order, or the status's default (see ``sort_problem``)."""
        status = self.status_value
        key = self.data.get("sort") if self.data is not None else None
        if key in queue_selectors.sort_keys(status):
            return queue_selectors.SORTS[key]
        return queue_selectors.default_sort(status)

    @property
    def sort_problem(self) -> str | None:
        """Why the requested sort was replaced by the default (None when it was not)."""
        key = self.data.get("sort") if self.data is not None else None
        if not key or key in queue_selectors.sort_keys(self.status_value):
            return None
        default = queue_selectors.default_sort(self.status_value)
        return f"Unknown sort order for this list; showing “{default.label}” instead."

    def without_family(self) -> QuerySet[Candidate] | None:
        """The rows the other filters select, whatever the family (the family counts), or None
        when the filters are invalid."""
        if self.data is None or not self.is_valid():
            return None
        data = self.data.copy()
        data.pop("family", None)
        rows: QuerySet[Candidate] = CandidateQueueFilter(data, queryset=self.queryset).qs
        return rows

    @property
    def one_family(self) -> bool:
        """Whether the rows are already limited to one family (no per-family split needed)."""
        return bool(self.is_bound and self.is_valid() and self.form.cleaned_data.get("family"))

    @property
    def status_value(self) -> str:
        if self.is_bound and self.is_valid():
            return self.form.cleaned_data.get("status") or Candidate.Status.PENDING
        return Candidate.Status.PENDING

    def querystring(self) -> str:
        """The active filters as a querystring (without paging keys); "" when none."""
        if not self.is_bound or not self.is_valid():
            return ""
        params = {}
        for key in FILTER_KEYS:
            value = self.form.cleaned_data.get(key) if key != "sort" else self.sort.key
            if key == "sort" and value == queue_selectors.default_sort(self.status_value).key:
                continue
            if key == "taken_back" and self.status_value not in DECIDED:
                continue
            if value and not (key == "status" and value == Candidate.Status.PENDING):
                params[key] = value
        return urlencode(params)

    def querystring_without(self, *keys: str) -> str:
        """``querystring()`` less some keys (links that set them anew)."""
        params = [(k, v) for k, v in parse_qsl(self.querystring()) if k not in keys]
        return urlencode(params)
