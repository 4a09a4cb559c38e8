"""Django admin for auditing the core domain.

Everything here is view-only for everyone, superusers included: revisions, entry versions,
memberships, sources and index rows are immutable or derived, and heads move only through the
services. The single write is revoking API tokens, which goes through
``powercontext.core.tokens``. Changelists stay cheap on big tables: exact (index-friendly)
search lookups, fixed-choice filters that run no DISTINCT query, ``list_select_related`` for
every related column, no sorting by unindexed columns and no full result count.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from powercontext.core.models import (
    ApiToken,
    Artifact,
    ExperienceSearchDocument,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
    ScopeState,
    Source,
)
from powercontext.core.tokens import api_token_revoke

ARTIFACT_FAMILIES = ("memory", "experience", "skill")
EXCERPT_CHARS = 80


def preformatted(text: str) -> SafeString:
    """Plain text, HTML-escaped inside a <pre> block that wraps long lines."""
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


def pretty_json(value: Any) -> SafeString:
    """A JSON value, indented, HTML-escaped inside a <pre> block."""
    return preformatted(json.dumps(value, indent=2, ensure_ascii=False))


def path_display(path: str, description: str, show: Callable[[Any], Any] = lambda value: value) -> Any:
    """An admin column or field showing ``show`` of the value at ``path``: dotted, so
    ``entry.entry_id`` reads ``obj.entry.entry_id``; a missing step gives None."""

    @admin.display(description=description)
    def display(self: admin.ModelAdmin[Any], obj: Model) -> Any:
        value: Any = obj
        for step in path.split("."):
            value = getattr(value, step, None) if value is not None else None
        return show(value)

    return display


def json_display(path: str, description: str) -> Any:
    """A column or field showing the JSON value at ``path`` (a missing step shows ``null``) as
    indented, escaped JSON."""
    return path_display(path, description, pretty_json)


def excerpt(text: str | None) -> str:
    """A short plain-text excerpt; the changelist escapes it like any other value."""
    return Truncator(text or "").chars(EXCERPT_CHARS)


def explain_prepare_link(scope_id: str) -> SafeString:
    """A link to the prepare explain page (``powercontext.prepare.admin``) for ``scope_id``."""
    url = reverse("admin:powercontext_prepare_explain")
    return format_html(
        '<a href="{}?{}">Explain a prepare in this scope</a>', url, urlencode({"scope": scope_id})
    )


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only admin: no add, change or delete for anyone, superusers included.

    Subclasses declare ``fields``; all of them are read-only, so the change page is a view page
    and a POST to it is refused (403) by Django before any form is bound.
    """

    fields: tuple[str, ...] = ()
    # Searched by the exact scope id unless a subclass names other lookups (and their help text).
    search_fields: tuple[str, ...] = ("scope_id__exact",)
    search_help_text = "Exact scope id."
    # Join only the relations a subclass names (Django's default, False, follows every foreign key
    # as soon as one column shows a relation).
    list_select_related: tuple[str, ...] = ()
    list_per_page = 50
    list_max_show_all = 200
    show_full_result_count = False
    # Sorting by an unindexed column would scan a big table; the pk order is the audit order.
    sortable_by: tuple[str, ...] = ()
    ordering = ("-pk",)

    def __init__(self, model: type[Model], admin_site: admin.AdminSite) -> None:
        super().__init__(model, admin_site)
        # Every relation is shown by id (a select over a big table would load all of its rows).
        self.raw_id_fields = tuple(f.name for f in model._meta.concrete_fields if f.is_relation)

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> tuple[str, ...]:
        return self.fields

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class FixedChoiceFilter(admin.SimpleListFilter):
    """A filter on ``field`` offering a fixed list of ``values`` (a field filter would run
    SELECT DISTINCT on the table)."""

    field = ""
    values: tuple[str, ...] = ()

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(value, value) for value in self.values]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(**{self.field: value}) if value else queryset


class FamilyFilter(FixedChoiceFilter):
    title = "family"
    parameter_name = "family"
    field = "family"
    values = ARTIFACT_FAMILIES


@admin.register(ScopeState)
class ScopeStateAdmin(ReadOnlyAdmin):
    list_display = ("id", "scope_id", "last_source_position")
    fields = ("scope_id", "last_source_position", "explain_link")

    @admin.display(description="prepare")
    def explain_link(self, obj: ScopeState) -> SafeString:
        return explain_prepare_link(obj.scope_id)


@admin.register(Source)
class SourceAdmin(ReadOnlyAdmin):
    list_display = ("id", "scope_id", "source_type", "source_id", "position", "created_at")
    search_fields = ("scope_id__exact", "source_id__exact")
    search_help_text = "Exact scope id or source id."
    fields = (
        "scope_id",
        "source_type",
        "source_id",
        "position",
        "content_sha256",
        "created_at",
        "metadata_pretty",
        "content",
    )

    metadata_pretty = json_display("metadata", "metadata")


@admin.register(Artifact)
class ArtifactHeadAdmin(ReadOnlyAdmin):
    """Artifact heads (Memory, Experience, Skill): the current revision, the lifecycle state and,
    for Experience, the search text retrieval reads; each links to all its revisions."""

    list_display = (
        "artifact_id",
        "family",
        "scope_id",
        "current_revision",
        "state",
        "analyzer_version",
        "updated_at",
    )
    list_filter = (FamilyFilter, "state")
    search_fields = ("scope_id__exact", "artifact_id__exact")
    search_help_text = "Exact scope id or artifact id."
    fields = (
        "scope_id",
        "family",
        "artifact_id",
        "current_revision",
        "revisions_link",
        "state",
        "analyzer_version",
        "searchable_text",
        "created_at",
        "updated_at",
    )

    @admin.display(description="revisions")
    def revisions_link(self, obj: Artifact) -> SafeString:
        url = reverse("admin:powercontext_artifactrevision_changelist")
        return format_html('<a href="{}?head__id__exact={}">all revisions of this head</a>', url, obj.pk)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().changelist_view(
            request, {"title": "Select artifact head to view", **(extra_context or {})}
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        return super().change_view(
            request, object_id, form_url, {"title": "View artifact head", **(extra_context or {})}
        )


@admin.register(MemoryEntry)
class MemoryEntryAdmin(ReadOnlyAdmin):
    list_display = ("entry_id", "scope_id", "created_revision", "created_at")
    search_fields = ("scope_id__exact", "entry_id__exact")
    search_help_text = "Exact scope id or entry id."
    fields = ("scope_id", "entry_id", "created_revision", "created_at")


@admin.register(MemoryEntryVersion)
class MemoryEntryVersionAdmin(ReadOnlyAdmin):
    """Every version of every Memory entry with its full text; versions are immutable, and the
    membership pages say which revisions hold them."""

    list_display = (
        "entry_version_id",
        "entry_id_display",
        "scope_id",
        "version",
        "kind",
        "text_excerpt",
        "created_revision",
    )
    list_select_related = ("entry",)
    search_fields = ("scope_id__exact", "entry_version_id__exact", "entry__entry_id__exact")
    search_help_text = "Exact scope id, entry version id or entry id."
    fields = (
        "entry",
        "scope_id",
        "entry_version_id",
        "version",
        "kind",
        "text",
        "content_sha256",
        "reason",
        "created_revision",
        "created_at",
        "source_refs_pretty",
        "artifact_refs_pretty",
    )

    entry_id_display = path_display("entry.entry_id", "entry id")
    text_excerpt = path_display("text", "text", excerpt)
    source_refs_pretty = json_display("source_refs", "source refs")
    artifact_refs_pretty = json_display("artifact_refs", "artifact refs")


@admin.register(MemoryMembership)
class MemoryMembershipAdmin(ReadOnlyAdmin):
    """The half-open intervals of Memory revisions each entry version belongs to: a row with no
    ``to_revision`` is in the current head."""

    list_display = (
        "id",
        "scope_id",
        "entry_id_display",
        "entry_version_id_display",
        "state",
        "from_revision",
        "to_revision",
    )
    list_select_related = ("entry", "entry_version")
    list_filter = ("state",)
    search_fields = ("scope_id__exact", "entry__entry_id__exact", "entry_version__entry_version_id__exact")
    search_help_text = "Exact scope id, entry id or entry version id."
    fields = ("scope_id", "entry", "entry_version", "state", "from_revision", "to_revision")

    entry_id_display = path_display("entry.entry_id", "entry id")
    entry_version_id_display = path_display("entry_version.entry_version_id", "entry version id")


@admin.register(MemorySearchDocument)
class MemorySearchDocumentAdmin(ReadOnlyAdmin):
    list_display = ("membership_id", "scope_id", "terms_excerpt")
    fields = ("membership", "scope_id", "terms")

    terms_excerpt = path_display("terms", "terms", excerpt)


@admin.register(ExperienceSearchDocument)
class ExperienceSearchDocumentAdmin(ReadOnlyAdmin):
    list_display = ("head", "scope_id", "terms_excerpt")
    list_select_related = ("head",)
    search_fields = ("scope_id__exact", "head__artifact_id__exact")
    search_help_text = "Exact scope id or artifact id."
    fields = ("head", "scope_id", "terms")

    terms_excerpt = path_display("terms", "terms", excerpt)


class RevokedFilter(admin.SimpleListFilter):
    title = "revoked"
    parameter_name = "revoked"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "revoked"), ("no", "active")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(revoked_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(revoked_at__isnull=True)
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Tokens are created by ``manage.py create_api_token`` (the secret is shown once, there).

    The digest is never displayed. The only write is the "revoke" action.
    """

    list_display = ("prefix", "name", "user", "scope_list", "created_at", "last_used_at", "revoked_at")
    list_select_related = ("user",)
    list_filter = (RevokedFilter,)
    search_fields = ("prefix__exact", "user__username__exact")
    search_help_text = "Exact token prefix (e.g. pct_AbCd) or username."
    fields = ("prefix", "name", "user", "scope_list", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke_tokens",)

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiToken) -> str:
        return ", ".join(obj.scopes) if obj.scopes else "every scope"

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("powercontext.change_apitoken"))

    @admin.action(description="Revoke selected tokens", permissions=["revoke"])
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        revoked = api_token_revoke(token_ids=queryset.values_list("pk", flat=True))
        self.message_user(request, f"Revoked {revoked} token(s).", messages.SUCCESS)
