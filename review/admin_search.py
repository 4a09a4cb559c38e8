"""Admin search for the review audit (issue 22): candidates, decisions and artifact revisions
found by partial id, reviewer, words of the text and scope prefix, in SQL.

A search is whitespace-separated terms (quotes keep words together), all of which must match.
A bare term matches any of: the row's number (``12``), an id prefix (``3fa9``), a reviewer's
exact username, a scope prefix (case-insensitive, as in the Inbox), or words of the proposal,
content or reason (case-insensitive). A bare ``#12`` or ``cand_3fa9`` / ``exp_…`` / ``skill_…``
is an id only. A qualified term matches one kind only: ``id:3fa9``, ``by:ali`` (a username
prefix), ``scope:payments``, ``text:"retry budget"``.

Usernames are resolved to user ids first (a small table), so the audit rows are filtered by
their indexed foreign keys; ids and scopes are prefix (``LIKE 'x%'``) matches; words are
``icontains`` on the JSON fields' values (key transforms, so non-ASCII text matches). Everything
is one SQL query per page: nothing is filtered in Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.utils.text import smart_split, unescape_string_literal

from powercontext.core import families
from review.filters import TEXT_KEYS

HELP_TEXT = (
    "Terms must all match. A bare term matches a number (#12), an id prefix (cand_3fa9 or 3fa9), "
    "a reviewer's username, a scope prefix or words of the text; or say which: id:3fa9, by:ali, "
    'scope:payments, text:"retry budget".'
)
QUALIFIERS = ("id", "by", "scope", "text")
ARTIFACT_PREFIXES = tuple(spec.artifact_prefix for spec in families.PROPOSAL_FAMILIES.values())
ID_PREFIXES = ("cand", *ARTIFACT_PREFIXES)


@dataclass(frozen=True)
class SearchSpec:
    """Where each kind of term looks, as ORM paths from the searched model."""

    ids: tuple[tuple[str, tuple[str, ...]], ...]  # (field, id prefixes it may lack)
    scope: str
    users: tuple[str, ...]  # foreign keys to the user
    json: tuple[str, ...]  # JSON fields whose TEXT_KEYS hold the words
    text: tuple[str, ...] = ()  # plain text fields holding words too


def _terms(search_term: str) -> list[tuple[str | None, str]]:
    terms: list[tuple[str | None, str]] = []
    for raw in smart_split(search_term):
        kind, sep, value = raw.partition(":")
        if not sep or kind.lower() not in QUALIFIERS:
            kind, value = "", raw
        if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
            value = unescape_string_literal(value)
        if value.strip():
            terms.append((kind.lower() or None, value.strip()))
    return terms


def _number(value: str) -> int | None:
    digits = value.removeprefix("#")
    return int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 18 else None


def _looks_like_id(value: str) -> bool:
    """``#12`` or ``cand_…`` / ``exp_…`` / ``skill_…``: a pasted id, looked up as an id only
    (an index-sized question instead of a scan of every text)."""
    lowered = value.lower()
    return (value.startswith("#") and _number(value) is not None) or any(
        lowered.startswith(f"{prefix}_") for prefix in ID_PREFIXES
    )


def _id_q(spec: SearchSpec, value: str) -> Q:
    value = value.lower()
    match = Q(pk=number) if (number := _number(value)) is not None else Q(pk__in=[])
    for field, prefixes in spec.ids:
        match |= Q(**{f"{field}__startswith": value})
        if "_" not in value:
            for prefix in prefixes:
                match |= Q(**{f"{field}__startswith": f"{prefix}_{value}"})
    return match


def _user_q(spec: SearchSpec, value: str, *, prefix: bool) -> Q:
    lookup = "username__istartswith" if prefix else "username__iexact"
    users = User.objects.filter(**{lookup: value}).values_list("pk", flat=True)[:50]
    ids = list(users)
    if not ids:
        return Q(pk__in=[])
    match = Q(pk__in=[])
    for path in spec.users:
        match |= Q(**{f"{path}_id__in": ids})
    return match


def _words_q(spec: SearchSpec, value: str) -> Q:
    match = Q(pk__in=[])
    for path in spec.json:
        for key in TEXT_KEYS:
            match |= Q(**{f"{path}__{key}__icontains": value})
    for path in spec.text:
        match |= Q(**{f"{path}__icontains": value})
    return match


def term_q(spec: SearchSpec, kind: str | None, value: str) -> Q:
    """The condition one term adds (see the module docstring)."""
    if kind == "id" or _looks_like_id(value):
        return _id_q(spec, value)
    if kind == "by":
        return _user_q(spec, value, prefix=True)
    if kind == "scope":
        return Q(**{f"{spec.scope}__istartswith": value})
    if kind == "text":
        return _words_q(spec, value)
    return (
        _id_q(spec, value)
        | _user_q(spec, value, prefix=False)
        | Q(**{f"{spec.scope}__istartswith": value})
        | _words_q(spec, value)
    )


def search(queryset: QuerySet[Any], spec: SearchSpec, search_term: str) -> tuple[QuerySet[Any], bool]:
    """``ModelAdmin.get_search_results`` for ``spec``: every term must match. Each path follows
    a foreign key or a one-to-one relation, so no row can appear twice."""
    for kind, value in _terms(search_term):
        queryset = queryset.filter(term_q(spec, kind, value))
    return queryset, False


class AuditSearchMixin:
    """Admin search by ``audit_search`` (a ``SearchSpec``) instead of ``search_fields``."""

    audit_search: SearchSpec
    search_fields: tuple[str, ...] = ("pk__exact",)  # shows the search box; search() does the lookups
    search_help_text = HELP_TEXT

    def get_search_results(
        self, request: Any, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        return search(queryset, self.audit_search, search_term)


def _of_candidates(path: str, *, result: str, users: tuple[str, ...], text: tuple[str, ...]) -> SearchSpec:
    """A spec for rows reached from a candidate at ``path`` (empty: the candidate itself): its
    id, its approval's result artifact id at ``result``, its scope and its latest version's
    text (a decision's version is its candidate's latest: a decision adds no version)."""
    at = f"{path}__" if path else ""
    return SearchSpec(
        ids=((f"{at}candidate_id", ("cand",)), (result, ARTIFACT_PREFIXES)),
        scope=f"{at}scope_id",
        users=users,
        json=(f"{at}latest__proposal",),
        text=text,
    )


CANDIDATES = _of_candidates(
    "",
    result="result_head__artifact_id",
    users=("decision__reviewer", "latest__created_by"),
    text=("decision_reason",),
)
DECISIONS = _of_candidates(
    "candidate",
    result="result_head__artifact_id",
    users=("reviewer", "candidate__latest__created_by"),
    text=("reason",),
)
ACTIONS = _of_candidates("candidate", result="artifact__artifact_id", users=("reviewer",), text=("reason",))

ARTIFACT_REVISIONS = SearchSpec(
    ids=(("artifact_id", ARTIFACT_PREFIXES),),
    scope="scope_id",
    users=("created_by",),
    json=("content",),
    text=("searchable_text",),
)
