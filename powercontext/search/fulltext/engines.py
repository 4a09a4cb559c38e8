"""Search engines by database vendor: how index rows are stored and how matches are ranked.

SQLite keeps the terms in an FTS5 table and ranks with its ``bm25``; PostgreSQL keeps a
``tsvector`` with a GIN index (and, for Memory, each token's postings) and ranks with the same
BM25 formula and constants computed in SQL over the matched rows (per-scope statistics; both
from ``bm25``). Both index the same scope-keyed tokens, so they match the same rows and rank them
alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection

from powercontext.search.fulltext import analyzer, bm25, language_id
from powercontext.search.fulltext.indexes import MEMORY_INDEX, POSTINGS, TOTALS, Index

MAX_POSITIONS_PER_LEXEME = 255
MAX_POSITION = 16383


def document_tokens(scope_id: str, terms: Sequence[str]) -> list[str]:
    """Index tokens of a document's analyzer terms (``analyzer.analyze``), in order: stemmed in
    the document's language, told once from its terms (``analyzer.document_index_terms``)."""
    return analyzer.scope_tokens(scope_id, analyzer.document_index_terms(terms, language_id.of_terms(terms)))


class Engine:
    """How one database stores index rows and ranks matches."""

    vendor = ""

    def document(self, scope_id: str, terms: Sequence[str]) -> tuple[str, int]:
        """A document's index row: (stored terms, length). The length is its number of index
        tokens, the document length FTS5's BM25 counts, so both engines and ``bm25.score`` use it."""
        tokens = document_tokens(scope_id, terms)
        return self._stored(tokens), len(tokens)

    def document_terms(self, scope_id: str, terms: Sequence[str]) -> str:
        return self.document(scope_id, terms)[0]

    def _stored(self, tokens: list[str]) -> str:
        raise NotImplementedError

    def token_count(self, terms: str, token: str) -> int:
        """Occurrences of ``token`` in a document's stored ``terms`` (``document_terms``); the
        caller checks that ``token`` occurs in them at all (most do not: no need to split)."""
        raise NotImplementedError

    # Up to this many query tokens a document's stored terms are searched token by token (a miss
    # costs one substring scan, ~0.5 us); beyond it one pass over the stored terms, whose cost
    # does not grow with the prompt (SQLite ~2.7 us, PostgreSQL ~4.5-7 us a document: 1k bench
    # notes, docs/benchmarks.md "Counting a long prompt's terms").
    lookup_tokens = 4

    def counts(self, terms: str, tokens: Mapping[str, str]) -> dict[str, int]:
        """How often a document's stored ``terms`` hold each of ``tokens`` (index token -> the
        caller's name for it): {name: count} for those held."""
        if len(tokens) <= self.lookup_tokens:
            return {
                name: n
                for token, name in tokens.items()
                if token in terms and (n := self.token_count(terms, token))
            }
        return self._counted(terms, tokens)

    def _counted(self, terms: str, tokens: Mapping[str, str]) -> dict[str, int]:
        raise NotImplementedError

    def top_sql(self, index: Index) -> str:
        """SQL for the ``limit`` best matches of one scope for the query's tokens: rows
        (doc_key, relevance, frequencies), best first, ties by key. Ranking happens inside the engine before any join, so its cost
        per match stays that of the engine's own scoring. ``frequencies``: where the engine counts
        the query tokens' document frequencies to rank (PostgreSQL's Memory ranking), those
        counts on every row (``frequencies``), else NULL."""
        raise NotImplementedError

    def ranked_rows(
        self, top: str, docs: str, key: str, select: Mapping[str, str], joins: str, where: str
    ) -> tuple[dict[str, str], str]:
        """How a ranked read reaches its rows from the ranked keys (``top``, a ``top_sql``
        statement): each selected column's expression, and the FROM clause (with its WHERE) that
        joins ``top`` to the document table ``d`` on ``key`` and then ``joins``. Rows are found
        from the ranked keys, never by scope, so ``where``'s scope re-checks should be
        expressions no index serves."""
        return dict(select), f"({top}) top JOIN {docs} d ON d.{key} = top.doc_key {joins} WHERE {where}"

    def settle_scope(self, index: Index, scope_id: str) -> None:
        """After a scope's index rows were written again while its writers wait (``rebuild``):
        set what the engine keeps for the scope as a whole from those rows — the Memory totals,
        which triggers keep by differences and so would keep any earlier drift."""
        if index is MEMORY_INDEX:
            with connection.cursor() as cursor:
                cursor.execute(_SETTLE_TOTALS, [scope_id, scope_id])

    def _hold_writers(self, cursor: Any, *tables: str) -> None:
        """Before refilling ``tables`` (kept by triggers on the index rows) from the index rows:
        make the writers whose triggers would change them wait until the caller's transaction
        ends, so that the refill counts every row committed before it and none is counted twice.
        Nothing here: SQLite's write transaction already excludes every other writer."""

    def frequencies(self, value: Any, count: int) -> list[int] | None:
        """The document frequency of each of the statement's ``count`` query tokens, in order,
        from a row's ``frequencies`` value; None when the engine does not count them."""
        return None

    def top_params(
        self, index: Index, tokens: list[str], scope_id: str, limit: int, memory: bm25.Statistics | None
    ) -> list[Any]:
        """Parameters of ``top_sql``; ``memory`` is the Memory index's BM25 figures where the
        engine needs them from outside the statement (PostgreSQL)."""
        raise NotImplementedError

    def relevance(self, raw: float) -> float:
        """The engine's relevance figure as a float (both engines already rank higher-is-better)."""
        return float(raw)

    def memory_statistics(self, scope_id: str) -> bm25.Statistics | None:
        """The figures ``top_params`` needs for Memory, or None when the engine keeps its own."""
        return None

    def engine_problems(self, index: Index) -> list[str]:
        """What differs between the engine's structures and the document rows: here the Memory
        index's totals per scope (``TOTALS``, kept by triggers)."""
        if index is not MEMORY_INDEX:
            return []
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT (SELECT count(*) FROM ({_EXPECTED_TOTALS} EXCEPT {_STORED_TOTALS}) x)"
                f" + (SELECT count(*) FROM ({_STORED_TOTALS} EXCEPT {_EXPECTED_TOTALS}) y)"
            )
            (count,) = cursor.fetchone()
        return [f"{index.name}: {count} scope totals differ from the documents"] if count else []

    def repair_engine(self, index: Index) -> None:
        """Rebuild engine structures from the document rows (the caller's transaction): here the
        Memory index's totals per scope."""
        if index is MEMORY_INDEX:
            with connection.cursor() as cursor:
                self._hold_writers(cursor, TOTALS)
                cursor.execute(f"DELETE FROM {TOTALS}")
                cursor.execute(f"INSERT INTO {TOTALS} (scope_id, documents, total_length) {_EXPECTED_TOTALS}")


class SqliteEngine(Engine):
    vendor = "sqlite"

    def _stored(self, tokens: list[str]) -> str:
        return " ".join(tokens)

    def token_count(self, terms: str, token: str) -> int:
        return terms.split().count(token)  # space-separated tokens

    def _counted(self, terms: str, tokens: Mapping[str, str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for token in terms.split():
            name = tokens.get(token)
            if name is not None:
                found[name] = found.get(name, 0) + 1
        return found

    def top_sql(self, index: Index) -> str:
        # Tokens carry the scope key, so the MATCH itself reads only this scope's postings.
        fts = index.fts_table
        return (
            f"SELECT {fts}.rowid AS doc_key, {bm25.fts5_relevance(fts)} AS relevance,"
            f" NULL AS frequencies FROM {fts}"
            f" WHERE {fts} MATCH %s ORDER BY relevance DESC, {fts}.rowid LIMIT %s"
        )

    def top_params(
        self, index: Index, tokens: list[str], scope_id: str, limit: int, memory: bm25.Statistics | None
    ) -> list[Any]:
        return [" OR ".join(f'"{token}"' for token in tokens), limit]

    def engine_problems(self, index: Index) -> list[str]:
        fts = index.fts_table
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")
        except Exception as exc:  # FTS5 reports a damaged index as a database error
            return [f"{index.name}: fts5 integrity-check failed ({type(exc).__name__})"]
        return super().engine_problems(index)

    def repair_engine(self, index: Index) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {index.fts_table}({index.fts_table}) VALUES ('rebuild')")
        super().repair_engine(index)


class PostgresEngine(Engine):
    vendor = "postgresql"

    def _stored(self, tokens: list[str]) -> str:
        positions: dict[str, list[int]] = {}
        for index, token in enumerate(tokens, start=1):
            slots = positions.setdefault(token, [])
            if len(slots) < MAX_POSITIONS_PER_LEXEME:
                slots.append(min(index, MAX_POSITION))
        # Tokens are ASCII alphanumeric: no quoting needed in a tsvector literal.
        return " ".join(f"{token}:{','.join(map(str, sorted(set(p))))}" for token, p in positions.items())

    def token_count(self, terms: str, token: str) -> int:
        at = f" {terms}".find(f" {token}:")  # "token:1,5,9 other:2"
        if at < 0:
            return 0
        positions = terms[at + len(token) + 1 :].split(" ", 1)[0]
        return positions.count(",") + 1

    lookup_tokens = 8  # a pass splits each "token:positions" item: dearer than SQLite's

    def _counted(self, terms: str, tokens: Mapping[str, str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for item in terms.split(" "):
            token, _, positions = item.partition(":")
            name = tokens.get(token)
            if name is not None:
                found[name] = positions.count(",") + 1
        return found

    def ranked_rows(
        self, top: str, docs: str, key: str, select: Mapping[str, str], joins: str, where: str
    ) -> tuple[dict[str, str], str]:
        # Each ranked key's row is looked up by a subquery the planner cannot fold into a join of
        # its own choosing (``OFFSET 0``). Planned freely, a scope the statistics do not know yet
        # (created since the last ANALYZE) was estimated at one row and its index rows were
        # walked once per membership (53 ms for a 1,000-entry scope beside a 100,000-entry one,
        # 0.7 ms now), and in a small database the whole membership table was read to join a
        # handful of hits (docs/benchmarks.md, "A scope the planner does not know yet").
        inner = ", ".join(f"{expression} AS {name}" for name, expression in select.items())
        return {name: f"x.{name}" for name in select}, (
            f"({top}) top CROSS JOIN LATERAL (SELECT {inner} FROM {docs} d"
            f" {joins} WHERE d.{key} = top.doc_key AND {where} OFFSET 0) x"
        )

    def top_sql(self, index: Index) -> str:
        # BM25 as FTS5 computes it, over the documents holding a query token: for Memory, each
        # token's postings (``POSTINGS``: one row per token and document with the token's
        # position count and the document's length, kept by triggers; migration 0024) read by
        # an index-only scan; for Experience (few rows a scope) the GIN index finds the rows
        # and each row's lexemes joined to the tokens give the counts (one pass over a row's
        # lexemes whatever the prompt's length: docs/retrieval.md, "Long prompts"). Both read
        # the tokens as a JSON array (see ``top_params``). Document frequencies are
        # counted over the same rows (tokens are scope-keyed, so they are the scope's) and, for
        # Memory, returned on every row as a JSON object (token ordinal -> count; a token no row
        # holds is absent), so that prepare does not count them again; N and the average length
        # are the scope's (Memory: cached figures from ``bm25``; Experience: counted here).
        docs, key = index.model._meta.db_table, index.key
        score = bm25.postgres_term_score(
            n="stats.n", df="df.n", tf="tf.tf", length="tf.length", average="stats.avgdl"
        )
        if index is MEMORY_INDEX:  # only prepare's Memory reranking reads the counts
            counted = (
                f"WITH stats AS ({self._statistics_sql(index)}),"
                f" tf AS (SELECT p.doc_key, p.length, q.i, p.tf::float8 AS tf FROM {_QUERY_TOKENS}"
                f" CROSS JOIN LATERAL (SELECT doc_key, length, tf FROM {POSTINGS}"
                " WHERE token = q.term OFFSET 0) p),"
            )
            frequencies = "(SELECT json_object_agg(i, n::bigint) FROM df)"
        else:
            counted = (
                f"WITH matched AS (SELECT t.{key} AS doc_key, t.length, t.document FROM {docs} t"
                f" WHERE t.document @@ %s::tsquery AND t.scope_id = %s),"
                f" stats AS ({self._statistics_sql(index)}),"
                " tf AS (SELECT m.doc_key, m.length, q.i, cardinality(u.positions)::float8 AS tf"
                " FROM matched m CROSS JOIN LATERAL unnest(m.document) AS u(lexeme, positions, weights)"
                f" JOIN {_QUERY_TOKENS} ON q.term = u.lexeme WHERE cardinality(u.positions) > 0),"
            )
            frequencies = "CAST(NULL AS json)"
        return (
            f"{counted} df AS (SELECT i, count(*)::float8 AS n FROM tf GROUP BY i)"
            f" SELECT tf.doc_key, sum({score}) AS relevance,"
            f" {frequencies} AS frequencies"
            f" FROM tf JOIN df ON df.i = tf.i CROSS JOIN stats"
            f" GROUP BY tf.doc_key ORDER BY relevance DESC, tf.doc_key LIMIT %s"
        )

    @staticmethod
    def _statistics_sql(index: Index) -> str:
        if index is MEMORY_INDEX:  # cached figures (``bm25``), passed in
            return "SELECT %s::float8 AS n, %s::float8 AS avgdl"
        return (
            "SELECT count(*)::float8 AS n, greatest(coalesce(avg(s.length), 0)::float8, 1e-9) AS avgdl"
            f" FROM {index.model._meta.db_table} s WHERE s.scope_id = %s"
        )

    def top_params(
        self, index: Index, tokens: list[str], scope_id: str, limit: int, memory: bm25.Statistics | None
    ) -> list[Any]:
        # The tokens as a JSON array: the planner estimates it alike whatever its length and
        # values, so the statement's generic plan costs what a custom one does and is kept (an
        # array literal's length and values made every plan custom: planned again on every
        # prepare).
        listed = json.dumps(tokens)
        if index is MEMORY_INDEX:
            figures = memory or bm25.memory_statistics(scope_id)
            return [figures.count, max(figures.average_length, 1e-9), listed, limit]
        return [" | ".join(tokens), scope_id, scope_id, listed, limit]

    def memory_statistics(self, scope_id: str) -> bm25.Statistics | None:
        return bm25.memory_statistics(scope_id)

    def frequencies(self, value: Any, count: int) -> list[int] | None:
        counted = json.loads(value) if isinstance(value, str) else value
        if not isinstance(counted, dict):
            return None
        return [int(counted.get(str(i), 0)) for i in range(1, count + 1)]

    def engine_problems(self, index: Index) -> list[str]:
        docs = index.model._meta.db_table
        problems = super().engine_problems(index)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {docs} WHERE document IS DISTINCT FROM terms::tsvector")
            (count,) = cursor.fetchone()
            if count:
                problems.append(f"{index.name}: {count} tsvector values differ from their terms")
            if index is MEMORY_INDEX:
                cursor.execute(
                    f"SELECT count(*) FROM (({_EXPECTED_POSTINGS} EXCEPT ALL {_STORED_POSTINGS})"
                    f" UNION ALL ({_STORED_POSTINGS} EXCEPT ALL {_EXPECTED_POSTINGS})) x"
                )
                (count,) = cursor.fetchone()
                if count:
                    problems.append(f"{index.name}: {count} postings differ from the documents")
        return problems

    def _hold_writers(self, cursor: Any, *tables: str) -> None:
        # A writer's trigger changing a table now waits for this transaction; a writer whose
        # trigger already changed one is waited for (and its rows are then seen). Without the
        # lock a refill raced writers: a write committed between the delete and the insert was
        # counted twice (postings), or its totals row collided with the insert's. The tables are
        # locked in the order writers' triggers change them (trigger names: totals, then
        # postings), so a writer and a refill never wait for each other in a circle.
        cursor.execute(f"LOCK TABLE {', '.join(tables)} IN EXCLUSIVE MODE")

    def repair_engine(self, index: Index) -> None:
        """Refill the Memory postings (and totals) from the documents (the caller's transaction).
        Writers wait from the refill to the end of the caller's transaction."""
        if index is MEMORY_INDEX:
            with connection.cursor() as cursor:
                self._hold_writers(cursor, TOTALS, POSTINGS)
                cursor.execute(f"DELETE FROM {POSTINGS}")
                cursor.execute(f"INSERT INTO {POSTINGS} (token, doc_key, tf, length) {_EXPECTED_POSTINGS}")
        super().repair_engine(index)


# The query's tokens, numbered from 1 in order: (term, i).
_QUERY_TOKENS = "jsonb_array_elements_text(%s::jsonb) WITH ORDINALITY AS q(term, i)"
# What the postings of every Memory index row are (``POSTINGS``' columns), and what they hold.
_EXPECTED_POSTINGS = (
    "SELECT u.lexeme, d.membership_id, cardinality(u.positions), d.length"
    f" FROM {MEMORY_INDEX.model._meta.db_table} d"
    " CROSS JOIN LATERAL unnest(d.document) AS u(lexeme, positions, weights)"
    " WHERE cardinality(u.positions) > 0"
)
_STORED_POSTINGS = f"SELECT token, doc_key, tf, length FROM {POSTINGS}"
# What the Memory index's totals per scope are, and what they hold (a scope whose documents all
# went keeps a row of zeros).
_EXPECTED_TOTALS = (
    f"SELECT scope_id, count(*), sum(length) FROM {MEMORY_INDEX.model._meta.db_table} GROUP BY scope_id"
)
# One scope's totals set from its index rows (a row of zeros when it has none).
_SETTLE_TOTALS = (
    f"INSERT INTO {TOTALS} (scope_id, documents, total_length)"
    f" SELECT %s, count(*), COALESCE(sum(length), 0) FROM {MEMORY_INDEX.model._meta.db_table}"
    " WHERE scope_id = %s ON CONFLICT (scope_id) DO UPDATE"
    " SET documents = excluded.documents, total_length = excluded.total_length"
)
_STORED_TOTALS = (
    f"SELECT scope_id, documents, total_length FROM {TOTALS} WHERE documents <> 0 OR total_length <> 0"
)


def engine() -> Engine:
    if connection.vendor == "postgresql":
        return PostgresEngine()
    if connection.vendor == "sqlite":
        return SqliteEngine()
    raise RuntimeError("unsupported database vendor")
