"""BM25, once: every BM25 figure of search comes from this module.

One formula, FTS5's: per query term held, ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length
/ avgdl))`` with ``idf = ln((N - df + 0.5) / (df + 0.5))`` floored at a tiny positive, k1 1.2,
b 0.75 (FTS5 fixes them: its ``bm25()`` takes column weights only). It is computed in three
places, each written here:

- SQLite: FTS5's own ``bm25()`` (``fts5_relevance``), over the whole table's statistics;
- PostgreSQL: the same formula in SQL over the matched rows (``postgres_term_score``), with the
  scope's N and average length;
- Python: ``score``, with the scope's figures, for prepare's Memory ranking (``ranking.rerank``),
  whose neighbour smoothing adds scores across entries, so their scale matters, not only order.

The lexical share (``ranking.relevance``) weighs a query's words by BM25's other common IDF,
``ln(1 + (N - d + 0.5) / (d + 0.5))``, which never goes negative (``idf_weights``); a word
searched by two forms (its stem in the query's language and its English form,
``analyzer.query_groups``) weighs once, by its most frequent form.

Collection statistics (N, average length, document frequencies) are counted from the index rows
of one scope: ``scope_figures`` (both databases, the totals cached per Memory head revision) and,
for PostgreSQL's ranking statement, ``memory_statistics``:

Memory: the index's totals per scope (documents, sum of lengths) are kept by triggers in one
row (``indexes.TOTALS``), so reading them is one row by key whatever the scope's size; they are
cached per process and scope together with the head (row id, revision) they were read at, read
by the same statement. The ranking statement reads the head anyway (every hit cites its
revision): when it differs from the cached one, a write came in between, the figures are dropped
and the search runs again with fresh ones (``queries``; at most three times, then the last
scores stand). Every Memory write moves the head and the index holds exactly the head's active
entries, so scores always use the figures of the rows they rank, and a steady-state search costs
no extra query.

Experience: no single revision covers the index, so its figures are counted inside the ranking
statement (``engines.PostgresEngine``); a scope's Experience rows are few next to its Memory.

Document frequencies are counted inside the ranking statement.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection

from powercontext.core.models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY, Artifact
from powercontext.search.fulltext import analyzer, language_id
from powercontext.search.fulltext.indexes import MEMORY_INDEX, POSTINGS, TOTALS, Index

# FTS5's bm25() constants (fixed there: its arguments are column weights only), reproduced on
# PostgreSQL and in Python so all rank alike; an IDF at or below zero counts as this tiny positive.
K1 = 1.2
B = 0.75
MIN_IDF = 1e-6

CACHE_SCOPES = 4096
TOTALS_CACHE = 1024


# -- the formula ------------------------------------------------------------------------------------


def fts5_relevance(fts_table: str) -> str:
    """SQL for FTS5's BM25 of a matched row, higher is better (FTS5 returns it negated)."""
    return f"-bm25({fts_table})"


def postgres_term_score(*, n: str, df: str, tf: str, length: str, average: str) -> str:
    """SQL for one query term's BM25 share in one row, as FTS5 computes it, over the SQL
    expressions of the scope's row count ``n`` and average length ``average``, the term's
    document frequency ``df``, its frequency ``tf`` in the row and the row's ``length``."""
    return (
        f"greatest(ln((greatest({n}, {df}) - {df} + 0.5) / ({df} + 0.5)), {MIN_IDF})"
        f" * {tf} * {K1 + 1.0} / ({tf} + {K1} * ({1.0 - B} + {B} * {length} / {average}))"
    )


@dataclass(frozen=True)
class ScopeFigures:
    """One scope's index statistics for some terms: document count, average length (in terms)
    and each term's document frequency."""

    count: int
    average_length: float
    frequencies: dict[str, int]


def score(
    figures: ScopeFigures, terms: Sequence[str], text: str, counted: tuple[dict[str, int], int] | None = None
) -> float:
    """BM25 of ``text`` for ``terms`` with the scope's own statistics, as FTS5 computes it
    (k1 1.2, b 0.75, IDF floored at a tiny positive) but with the scope's document count and
    average length instead of the whole table's. ``counted``: the text's (term counts, length)
    when already known (from its index row), else they are read from the text."""
    counts, length = (
        counted if counted is not None else analyzer.query_counts(text, terms, language_id.of_terms)
    )
    n, average = float(figures.count), max(figures.average_length, 1e-9)
    total = 0.0
    for term, tf in counts.items():
        df = figures.frequencies.get(term, 0)
        if df:
            idf = max(math.log((n - df + 0.5) / (df + 0.5)), MIN_IDF)
            total += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average))
    return total


def idf_weights(figures: ScopeFigures, groups: Sequence[analyzer.Group]) -> dict[analyzer.Group, float]:
    """The lexical share's weight of each query word (``ranking.relevance``), a group of forms
    (``analyzer.query_groups``): ``ln(1 + (N - d + 0.5) / (d + 0.5))``, ``d = max(df, 1)``, ``df``
    the most frequent form's (a document holds the form of its own language: the word's documents
    are at least those); every form is in ``figures``."""
    n = float(figures.count)
    weights: dict[analyzer.Group, float] = {}
    for group in groups:
        d = max(float(max(figures.frequencies[form] for form in group)), 1.0)
        weights[group] = math.log(1.0 + (max(n - d, 0.0) + 0.5) / (d + 0.5))
    return weights


# -- a scope's figures, both databases ------------------------------------------------------------


def _figures_sql(index: Index, terms: int, totals: bool) -> str:
    docs = index.model._meta.db_table
    figures = []
    if totals and index is MEMORY_INDEX:  # kept by triggers: one row, not a pass over the scope
        figures = [
            f"(SELECT documents FROM {TOTALS} WHERE scope_id = %s)",
            f"(SELECT total_length FROM {TOTALS} WHERE scope_id = %s)",
        ]
    elif totals:
        figures = [
            f"(SELECT count(*) FROM {docs} WHERE scope_id = %s)",
            f"(SELECT sum(length) FROM {docs} WHERE scope_id = %s)",
        ]
    if connection.vendor == "postgresql" and index is MEMORY_INDEX:
        # The token's postings (scope-keyed: this scope's rows), by an index-only scan. Not the
        # rows by scope: a scope the planner's statistics do not know yet (created since the
        # last ANALYZE) is estimated at one row, and its every index row was then tested.
        counts = [f"(SELECT count(*) FROM {POSTINGS} WHERE token = %s)" for _ in range(terms)]
    elif connection.vendor == "postgresql":
        counts = [
            f"(SELECT count(*) FROM {docs} WHERE scope_id = %s AND document @@ %s::tsquery)"
            for _ in range(terms)
        ]
    else:  # scope-keyed tokens: the MATCH reads this scope's postings only
        fts = index.fts_table
        counts = [f"(SELECT count(*) FROM {fts} WHERE {fts} MATCH %s)" for _ in range(terms)]
    return "SELECT " + ", ".join([*figures, *counts])


# (scope, Memory head revision) -> (document count, average length): reading them scans the
# scope's index rows, and every Memory write moves the head.
_totals: OrderedDict[tuple[str, int], tuple[int, float]] = OrderedDict()
_totals_lock = threading.Lock()


def _keep_totals(key: tuple[str, int], totals: tuple[int, float]) -> None:
    with _totals_lock:
        _totals[key] = totals
        while len(_totals) > TOTALS_CACHE:
            _totals.popitem(last=False)


def scope_figures(
    index: Index,
    scope_id: str,
    terms: Sequence[str],
    revision: int | None = None,
    counted: Mapping[str, int] | None = None,
) -> ScopeFigures:
    """The scope's figures in ``index`` for ``terms`` (index terms), read by one statement; with
    the Memory head ``revision`` the rows were read at, the document count and average length
    are cached for it (only the term counts are read). ``counted``: document frequencies
    already counted at that revision (by PostgreSQL's ranking statement), not read again: with
    every term counted and the totals known, no statement at all."""
    given = {term: counted[term] for term in terms if term in counted} if counted else {}
    if given:
        wanted = [term for term in terms if term not in given]
        read = scope_figures(index, scope_id, wanted, revision)
        return ScopeFigures(read.count, read.average_length, {**given, **read.frequencies})
    key = (scope_id, revision) if revision is not None and index is MEMORY_INDEX else None
    with _totals_lock:
        cached = _totals.get(key) if key is not None else None
    if cached is None and key is not None:
        # PostgreSQL's ranking statement counted the same totals at this head (same rows).
        with _lock:
            statistics = _cache.get(scope_id)
        if statistics is not None and statistics.head is not None and statistics.head[1] == revision:
            cached = (int(statistics.count), statistics.average_length)
            _keep_totals(key, cached)
    if cached is not None and not terms:
        return ScopeFigures(cached[0], cached[1], {})
    tokens = analyzer.scope_tokens(scope_id, terms)
    params: list[Any] = [] if cached is not None else [scope_id, scope_id]
    for token in tokens:
        if connection.vendor != "postgresql":
            params.append(f'"{token}"')
        else:
            params.extend([token] if index is MEMORY_INDEX else [scope_id, token])
    with connection.cursor() as cursor:
        cursor.execute(_figures_sql(index, len(tokens), totals=cached is None), params)
        values = list(cursor.fetchone())
    if cached is None:
        documents, length, *counts = values
        cached = _totals_of(documents, length)
        if key is not None:
            _keep_totals(key, cached)
    else:
        counts = values
    return ScopeFigures(cached[0], cached[1], {term: int(df) for term, df in zip(terms, counts, strict=True)})


# -- the Memory figures of PostgreSQL's ranking statement ----------------------------------------


@dataclass(frozen=True)
class Statistics:
    # The Memory head (row id, revision) the figures were counted at; the row id tells a head
    # that was deleted and created again (a restored or flushed database) from the old one.
    head: tuple[int, int] | None
    count: float
    average_length: float


_cache: OrderedDict[str, Statistics] = OrderedDict()
_lock = threading.Lock()

# The head revision and the index's totals (kept by triggers: one row), read by one statement
# (one snapshot). The aggregate gives a row for a scope without totals too.
_COUNT_SQL = (
    f"SELECT h.id, h.current_revision, d.documents, d.total_length FROM"
    f" (SELECT sum(documents) AS documents, sum(total_length) AS total_length FROM {TOTALS}"
    f" WHERE scope_id = %s) d LEFT JOIN {Artifact._meta.db_table} h ON h.scope_id = %s"
    f" AND h.family = '{MEMORY_FAMILY}' AND h.artifact_id = '{MEMORY_ARTIFACT_ID}'"
)


def _totals_of(documents: Any, length: Any) -> tuple[int, float]:
    """(document count, average length) from a count and a sum of lengths (NULL: none)."""
    count = int(documents or 0)
    return count, (int(length or 0) / count if count else 0.0)


def clear_cache() -> None:
    """Forget every scope's ``memory_statistics`` and the totals ``scope_figures`` keeps per head
    (a rebuild may change index rows without a head move)."""
    with _lock:
        _cache.clear()
    with _totals_lock:
        _totals.clear()


def forget(scope_id: str) -> None:
    with _lock:
        _cache.pop(scope_id, None)


def _count(scope_id: str) -> Statistics:
    with connection.cursor() as cursor:
        cursor.execute(_COUNT_SQL, [scope_id, scope_id])
        pk, revision, documents, length = cursor.fetchone()
    head = None if pk is None else (int(pk), int(revision))
    count, average = _totals_of(documents, length)
    return Statistics(head, float(count), average)


def memory_statistics(scope_id: str) -> Statistics:
    """The scope's Memory index figures: cached, or counted now (one statement)."""
    with _lock:
        cached = _cache.get(scope_id)
        if cached is not None:
            _cache.move_to_end(scope_id)
            return cached
    counted = _count(scope_id)
    with _lock:
        _cache[scope_id] = counted
        while len(_cache) > CACHE_SCOPES:
            _cache.popitem(last=False)
    return counted
