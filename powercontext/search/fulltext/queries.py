"""Ranked search over the two indexes, inside the one SQL statement that also filters.

Scope and head filtering happen inside the statement that ranks, and that statement also reads
the head revision, so every hit of one search cites the revision that statement saw. Memory and
Experience can be read by one statement (one snapshot, one round trip). Hits are the builder's
own input types (``powercontext.core.hits``): what search returns, prepare builds from unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection

from powercontext.core.families import MEMORY_ARTIFACT_ID, Family
from powercontext.core.hits import ArtifactRef, ExperienceContent, ExperienceHit, MemoryHit
from powercontext.core.models import (
    Artifact,
    ArtifactRevision,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
)
from powercontext.core.recall import EXPERIENCE_FAMILY
from powercontext.search.fulltext import analyzer, bm25, language_id
from powercontext.search.fulltext.engines import Engine, engine
from powercontext.search.fulltext.indexes import EXPERIENCE_INDEX, MEMORY_INDEX, Index


def _score(raw: float) -> float:
    """Map an engine relevance (>= 0, higher is better) into [0, 1)."""
    raw = max(0.0, float(raw))
    return raw / (1.0 + raw)


# The columns of every ranked query, in the UNION's order, each with the type of the NULL a query
# selects where its source has no value. Rows are read back by these names, never by position.
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("src", "text"),  # the query's tag
    ("pk", "bigint"),
    ("public_id", "text"),  # entry id / artifact id
    ("version_id", "text"),
    ("text", "text"),
    ("head_revision", "integer"),
    ("head_pk", "bigint"),  # Memory: the head's row id (BM25 figures are valid for one head)
    ("content", "jsonb"),
    ("relevance", "real"),
    # The engine's document frequency of each query token, where it counts them to rank
    # (``Engine.frequencies``; the same value on every row of one ranked query).
    ("frequencies", "text"),
)


@dataclass(frozen=True)
class _Ranked:
    """One ranked, scope- and head-filtered query over one index (a SELECT with ORDER/LIMIT).

    Every query selects ``_COLUMNS``, with typed NULLs where its source has no value, so that
    Memory and Experience can be read by one statement (one snapshot).
    """

    index: Index
    tag: str
    select: dict[str, str]  # column name -> expression, for the columns this source has
    joins: str
    where: str

    def __post_init__(self) -> None:
        unknown = set(self.select) - {name for name, _ in _COLUMNS}
        if unknown:
            raise ValueError(f"{self.tag}: unknown columns {sorted(unknown)}")

    def sql(self, db: Engine) -> str:
        docs, key = self.index.model._meta.db_table, self.index.key
        # The scope re-checks are expressions (``|| ''``, as in the hit reads of ``vectors`` and
        # ``rerank_state``) that no index serves: rows are found from the ranked keys, never by
        # scope (``Engine.ranked_rows``).
        where = f"d.scope_id || '' = %s AND {self.where}"
        rows, source = db.ranked_rows(db.top_sql(self.index), docs, key, self.select, self.joins, where)
        expressions = {
            "src": f"'{self.tag}'",
            **rows,
            "relevance": "top.relevance",
            "frequencies": "top.frequencies",
        }
        columns = ", ".join(
            f"{expressions.get(name, f'CAST(NULL AS {null_type})')} AS {name}" for name, null_type in _COLUMNS
        )
        return f"SELECT {columns} FROM {source}"

    def params(
        self, db: Engine, scope_id: str, tokens: list[str], limit: int, memory: bm25.Statistics | None
    ) -> list[Any]:
        # The joins re-check scope and head: index rows exist only for the scope's current,
        # active rows, so these conditions never drop a row unless the index has drifted (which
        # ``verify_index`` reports).
        return [*db.top_params(self.index, tokens, scope_id, limit, memory), scope_id, scope_id]


_MEMORY_QUERY = _Ranked(
    MEMORY_INDEX,
    "m",
    {
        "pk": "m.id",
        "public_id": "e.entry_id",
        "version_id": "v.entry_version_id",
        "text": "v.text",
        "head_revision": "a.current_revision",
        "head_pk": "a.id",
    },
    f" JOIN {MemoryMembership._meta.db_table} m ON m.id = d.membership_id"
    f" JOIN {MemoryEntry._meta.db_table} e ON e.id = m.entry_id"
    f" JOIN {MemoryEntryVersion._meta.db_table} v ON v.id = m.entry_version_id"
    f" JOIN {Artifact._meta.db_table} a ON a.scope_id = m.scope_id"
    f" AND a.family = '{Family.MEMORY.value}' AND a.artifact_id = '{MEMORY_ARTIFACT_ID}'",
    "m.scope_id || '' = %s AND m.to_revision IS NULL AND m.state = 'active'",
)
_EXPERIENCE_QUERY = _Ranked(
    EXPERIENCE_INDEX,
    "e",
    {
        "pk": "a.id",
        "public_id": "a.artifact_id",
        "head_revision": "a.current_revision",
        "content": "r.content",
    },
    f" JOIN {Artifact._meta.db_table} a ON a.id = d.head_id"
    f" JOIN {ArtifactRevision._meta.db_table} r ON r.head_id = a.id AND r.revision = a.current_revision",
    "a.scope_id = %s AND a.recallable",
)


def memory_hit(
    pk: int, entry_id: str, entry_version_id: str, text: str, head_revision: int, **ranking: Any
) -> MemoryHit:
    """A Memory hit from its membership's columns, citing the head revision its statement read;
    every Memory ranking builds its hits with this (``ranking``: score, channels)."""
    return MemoryHit(
        memory_ref=ArtifactRef(
            family=Family.MEMORY.value, artifact_id=MEMORY_ARTIFACT_ID, revision=int(head_revision)
        ),
        entry_id=entry_id,
        entry_version_id=entry_version_id,
        text=text,
        key=int(pk),
        **ranking,
    )


def _memory_row(record: Mapping[str, Any], score: float) -> MemoryHit:
    return memory_hit(
        record["pk"],
        record["public_id"],
        record["version_id"],
        record["text"],
        record["head_revision"],
        score=score,
    )


def experience_row(pk: int, artifact_id: str, revision: int, content: Any, score: float) -> ExperienceHit:
    """An Experience hit from a head's columns (``content`` as the driver returns JSON: text on
    SQLite, decoded on PostgreSQL); every Experience ranking builds its hits with this."""
    values = json.loads(content) if isinstance(content, str) else content
    return ExperienceHit(
        artifact_ref=ArtifactRef(
            family=EXPERIENCE_FAMILY, artifact_id=str(artifact_id), revision=int(revision)
        ),
        content=ExperienceContent.from_mapping(values),
        score=score,
        key=int(pk),
    )


def _experience_row(record: Mapping[str, Any], score: float) -> ExperienceHit:
    return experience_row(
        record["pk"], record["public_id"], record["head_revision"], record["content"], score
    )


def _search(
    scope_id: str,
    query: str,
    limits: list[tuple[_Ranked, int]],
    language: str | None = None,
    head_revision: int | None = None,
) -> tuple[list[MemoryHit], list[ExperienceHit], dict[str, int] | None]:
    """Run the ranked queries with a positive limit as ONE statement (one snapshot); the query's
    stop words are those of ``language`` (None: as ``language_id`` tells it). ``head_revision``:
    the Memory head's revision as the caller just read it (0: none), if it did: cached Memory
    figures of another head are counted again before the statement runs, not after. The third value:
    each query term's document frequency in the Memory index at the revision the Memory hits
    cite, where the engine counted them to rank (None: it did not, or no Memory hit)."""
    told = language_id.identify(query) if language is None else language
    terms = analyzer.query_terms(query, told)
    wanted = [(ranked, limit) for ranked, limit in limits if limit >= 1]
    if not terms or not wanted:
        return [], [], None
    db = engine()
    tokens = analyzer.scope_tokens(scope_id, terms)
    sql = " UNION ALL ".join(
        f"SELECT * FROM ({ranked.sql(db)}) AS q{n}" for n, (ranked, _) in enumerate(wanted)
    )
    sql += " ORDER BY src, relevance DESC, pk"
    ranks_memory = any(ranked is _MEMORY_QUERY for ranked, _ in wanted)
    for attempt in range(3):
        figures = db.memory_statistics(scope_id) if ranks_memory else None
        if attempt == 0 and figures is not None and head_revision is not None:
            if (figures.head[1] if figures.head is not None else 0) != head_revision:
                bm25.forget(scope_id)  # a write since they were counted: count them now
                figures = db.memory_statistics(scope_id)
        params: list[Any] = []
        for ranked, limit in wanted:
            params.extend(ranked.params(db, scope_id, tokens, limit, figures))
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            names = [column[0] for column in cursor.description]
            records = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        seen = {(r["head_pk"], r["head_revision"]) for r in records if r["src"] == _MEMORY_QUERY.tag}
        if figures is None or seen <= {figures.head} or attempt == 2:
            break
        # The Memory head moved since the figures were counted: count again, rank again.
        bm25.forget(scope_id)
    memory: list[MemoryHit] = []
    experience: list[ExperienceHit] = []
    counted: dict[str, int] | None = None
    for record in records:
        score = _score(db.relevance(record["relevance"]))
        if record["src"] == _MEMORY_QUERY.tag:
            if counted is None and (found := db.frequencies(record["frequencies"], len(tokens))) is not None:
                counted = dict(zip(terms, found, strict=True))
            memory.append(_memory_row(record, score))
        else:
            experience.append(_experience_row(record, score))
    return memory, experience, counted


def search_memory(scope_id: str, query: str, limit: int) -> list[MemoryHit]:
    """Ranked active entries of the scope's current Memory head, with the head's revision."""
    return _search(scope_id, query, [(_MEMORY_QUERY, limit)])[0]


def search_experience(
    scope_id: str, query: str, limit: int, *, language: str | None = None
) -> list[ExperienceHit]:
    """Ranked approved, current Experience heads of the scope, with their current content
    (``language``: as ``_search``)."""
    return _search(scope_id, query, [(_EXPERIENCE_QUERY, limit)], language)[1]


def search_context(
    scope_id: str, query: str, *, memory_limit: int, experience_limit: int
) -> tuple[list[MemoryHit], list[ExperienceHit]]:
    """Memory and Experience candidates for one prepare, read by one statement: one snapshot,
    one round trip. Each source keeps its own ranking and limit."""
    memory, experience, _ = search_context_counted(
        scope_id, query, memory_limit=memory_limit, experience_limit=experience_limit
    )
    return memory, experience


def search_context_counted(
    scope_id: str,
    query: str,
    *,
    memory_limit: int,
    experience_limit: int,
    head_revision: int | None = None,
) -> tuple[list[MemoryHit], list[ExperienceHit], dict[str, int] | None]:
    """``search_context`` and the query terms' Memory document frequencies its statement counted
    (``_search``): prepare's reranking needs them and need not count them again.
    ``head_revision``: as ``_search``."""
    return _search(
        scope_id,
        query,
        [(_MEMORY_QUERY, memory_limit), (_EXPERIENCE_QUERY, experience_limit)],
        head_revision=head_revision,
    )
