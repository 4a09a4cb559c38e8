"""A benchmark fleet built fast: a scope's Memory copied into another scope by SQL.

The fleet benchmark (issue 35) asks 1,000 scopes of 1,000 notes; writing and embedding a
million notes through the services takes hours on two cores (~90 vectors/s). ``copy_scope``
gives the target scope its own rows of everything the source scope's Memory holds: the head and
its revisions, entries, versions, memberships, vectors (the same bytes: the same texts embed
alike) and full-text rows, whose scope-keyed tokens are rewritten for the target (the rows the
product's own rebuild would write; ``rebuild_search_index --verify-only --scope`` agrees; on
SQLite the full-text table follows the inserted rows through its triggers). Entry
and version ids are per scope, so they are kept. What the copies share with the source is their
content, not their rows: every cold read, index scan and cache entry is the target's own.

Benchmark scaffolding only: nothing in the product calls it, and it writes around the services
(no audit, no signals). One transaction per copy; the target must have no Memory yet.
"""

# Statements built from the models' table names; every value is a bound parameter.
# ruff: noqa: S608

from __future__ import annotations

from django.db import connection, transaction

from powercontext.core.models import (
    Artifact,
    ArtifactRevision,
    MemoryEntry,
    MemoryEntryVector,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
)
from powercontext.search.fulltext.analyzer import scope_key

_A = Artifact._meta.db_table
_R = ArtifactRevision._meta.db_table
_E = MemoryEntry._meta.db_table
_V = MemoryEntryVersion._meta.db_table
_M = MemoryMembership._meta.db_table
_D = MemorySearchDocument._meta.db_table
_X = MemoryEntryVector._meta.db_table
# The target's version of a source version: the same entry_version_id in the target scope.
_SAME_VERSION = f"JOIN {_V} nv ON nv.scope_id = %(target)s AND nv.entry_version_id = ov.entry_version_id"

_STATEMENTS = (
    f"INSERT INTO {_A} (scope_id, family, artifact_id, current_revision, state, searchable_text,"
    " analyzer_version, created_at, updated_at, recallable)"
    " SELECT %(target)s, family, artifact_id, current_revision, state, searchable_text,"
    f" analyzer_version, created_at, updated_at, recallable FROM {_A}"
    " WHERE scope_id = %(source)s AND family = 'memory'",
    f"INSERT INTO {_R} (scope_id, family, artifact_id, revision, parent_revision, content,"
    " source_refs, artifact_refs, created_at, created_by_id, head_id, searchable_text)"
    " SELECT %(target)s, r.family, r.artifact_id, r.revision, r.parent_revision, r.content,"
    " r.source_refs, r.artifact_refs, r.created_at, r.created_by_id, heads.id, r.searchable_text"
    f" FROM {_R} r JOIN {_A} heads ON heads.scope_id = %(target)s AND heads.family = r.family"
    " AND heads.artifact_id = r.artifact_id WHERE r.scope_id = %(source)s AND r.family = 'memory'",
    f"INSERT INTO {_E} (scope_id, entry_id, created_revision, created_at)"
    f" SELECT %(target)s, entry_id, created_revision, created_at FROM {_E}"
    " WHERE scope_id = %(source)s ORDER BY id",
    f"INSERT INTO {_V} (scope_id, entry_version_id, version, kind, text, content_sha256, reason,"
    " source_refs, artifact_refs, created_revision, created_at, entry_id)"
    " SELECT %(target)s, ov.entry_version_id, ov.version, ov.kind, ov.text, ov.content_sha256,"
    " ov.reason, ov.source_refs, ov.artifact_refs, ov.created_revision, ov.created_at, ne.id"
    f" FROM {_V} ov JOIN {_E} oe ON oe.id = ov.entry_id"
    f" JOIN {_E} ne ON ne.scope_id = %(target)s AND ne.entry_id = oe.entry_id"
    " WHERE ov.scope_id = %(source)s ORDER BY ov.id",
    f"INSERT INTO {_M} (scope_id, state, from_revision, to_revision, entry_id, entry_version_id)"
    " SELECT %(target)s, m.state, m.from_revision, m.to_revision, nv.entry_id, nv.id"
    f" FROM {_M} m JOIN {_V} ov ON ov.id = m.entry_version_id {_SAME_VERSION}"
    " WHERE m.scope_id = %(source)s ORDER BY m.id",
    f"INSERT INTO {_X} (scope_id, model, vector, entry_version_id)"
    " SELECT %(target)s, x.model, x.vector, nv.id"
    f" FROM {_X} x JOIN {_V} ov ON ov.id = x.entry_version_id {_SAME_VERSION}"
    " WHERE x.scope_id = %(source)s ORDER BY x.id",
    f"INSERT INTO {_D} (membership_id, scope_id, terms, length)"
    " SELECT nm.id, %(target)s, replace(d.terms, %(source_key)s, %(target_key)s), d.length"
    f" FROM {_D} d JOIN {_M} om ON om.id = d.membership_id"
    f" JOIN {_V} ov ON ov.id = om.entry_version_id {_SAME_VERSION}"
    f" JOIN {_M} nm ON nm.entry_version_id = nv.id AND nm.from_revision = om.from_revision"
    " WHERE d.scope_id = %(source)s ORDER BY d.membership_id",
)


class CopyRefused(Exception):
    """The target scope already has Memory."""


@transaction.atomic(durable=True)
def copy_scope(source: str, target: str) -> int:
    """Copy ``source``'s Memory into the empty scope ``target``; returns the memberships copied."""
    if MemoryMembership.objects.filter(scope_id=target).exists():
        raise CopyRefused("the target scope already has Memory")
    params = {
        "source": source,
        "target": target,
        # Every index token starts with "k" and the scope's key (``analyzer.index_token``).
        "source_key": "k" + scope_key(source),
        "target_key": "k" + scope_key(target),
    }
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # A new scope's rows are not in the planner's statistics yet (estimated at one
            # row): nested loops over them joined every pair (~1 s a statement at 1,000 rows).
            cursor.execute("SET LOCAL enable_nestloop = off")
        for statement in _STATEMENTS:
            cursor.execute(statement, params)
    return MemoryMembership.objects.filter(scope_id=target).count()
