"""The relevance floor: a candidate reaches the builder only when it is relevant on its own merits.

A fused rank says which candidates are *best*, not whether any is relevant at all: every query
finds nearest neighbours. So each Memory and Experience candidate gets two figures of its own:

- ``similarity``: the raw cosine between the query's and the candidate's embeddings (None when
  the model is unavailable or the candidate has no vector yet);
- ``lexical_share``: the share of the query's IDF mass that the candidate covers. The query's
  content words (``analyzer.query_groups`` without stop words, each searched by its forms: its
  stem in the query's language and its English form; a query made only of stop words has no
  lexical evidence) each weigh ``ln(1 + (N - d + 0.5) / (d + 0.5))``, ``d = max(df, 1)``
  (``bm25.idf_weights``), with ``N`` and ``df`` counted in the scope's index (Memory or
  Experience; ``bm25.scope_figures``): rare terms weigh
  more, and a term found nowhere in the scope weighs as much as its rarest word (not more: in
  a small scope every known word is "common", and unknown words would drown them). The share is
  the weight of the words the candidate holds (any of their forms) over the total.

A candidate is admitted when ``similarity >= MIN_SIMILARITY``, or when ``lexical_share >=
MIN_LEXICAL_SHARE`` and its similarity, if known, is at least ``MIN_LEXICAL_SIMILARITY``
(lexical evidence needs a little agreement from meaning: one shared everyday word is not a
topic). Without a similarity the lexical share decides alone. When the candidate is in another
language than English (``languages``) and the query is not surely English, meaning alone needs
a higher similarity, ``MIN_SIMILARITY_OTHER_LANGUAGES`` (``query_floor``): the model learned
from English and finds unrelated texts in other languages alike, including a short prompt in
that language that the identifier cannot tell from English ("A domani, buona serata!").
Thresholds are settings (``POWERCONTEXT_RELEVANCE_*``), calibrated in ``docs/retrieval.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from django.conf import settings

from powercontext.core.hits import ExperienceHit, MemoryHit
from powercontext.core.models import ExperienceVector, MemoryEntryVector
from powercontext.search.fulltext import analyzer, bm25, language_id, languages, word_frequency
from powercontext.search.fulltext.indexes import EXPERIENCE_INDEX, MEMORY_INDEX, Index
from powercontext.search.vectors import embedding

if TYPE_CHECKING:
    import numpy as np
else:
    from powercontext.search.lazy_numpy import np


@dataclass(frozen=True)
class Floor:
    min_similarity: float
    min_lexical_share: float
    min_lexical_similarity: float

    @property
    def off(self) -> bool:
        return self.min_similarity <= 0 and self.min_lexical_share <= 0 and self.min_lexical_similarity <= 0

    def admits(self, similarity: float | None, lexical_share: float | None) -> bool:
        if self.off:
            return True
        if similarity is not None and similarity >= self.min_similarity:
            return True
        if lexical_share is None or lexical_share < self.min_lexical_share:
            return False
        return similarity is None or similarity >= self.min_lexical_similarity


def query_language(query: str) -> str:
    """The language ``query`` is written in (``language_id.identify``, cached per text)."""
    return language_id.identify(query)


def floor() -> Floor:
    """The floor the settings define (read per call: tests override settings)."""
    return Floor(
        min_similarity=float(settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY),
        min_lexical_share=float(settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE),
        min_lexical_similarity=float(settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY),
    )


def text_language(text: str) -> str:
    """The language a candidate's ``text`` is written in (``language_id.identify``: its first
    characters, cached per text; a note is one language, mostly)."""
    return language_id.identify(text)


@dataclass(frozen=True)
class QueryFloor:
    """The floors one query's candidates are judged by: ``base`` (the settings' floor), and
    ``strict`` for a candidate in another language than English: the model finds unrelated
    texts in those languages alike, while an English note is read on the English floor whatever
    the prompt's language (a French prompt, English notes: unrelated pairs do not look alike;
    docs/retrieval.md, "Other languages"). ``strict`` is None for a query the identifier reads
    as English (``query_floor``), and when the rule is off."""

    language: str
    base: Floor
    strict: Floor | None = None

    def for_text(self, text: str) -> Floor:
        return self.for_texts((text,))

    def for_texts(self, texts: Sequence[str]) -> Floor:
        """The floor for a candidate with these text fields: ``strict`` when it is in another
        language than English, else ``base``."""
        if self.strict is None or text_language(" ".join(texts)) == languages.ENGLISH:
            return self.base
        return self.strict

    def admits(self, texts: Sequence[str], similarity: float | None, lexical_share: float | None) -> bool:
        """Whether the floor for a candidate with these text fields admits it. The candidate's
        language is read only where the answer depends on it (``base`` admits it, ``strict``
        would not): most candidates of an English prompt are decided without it."""
        if self.strict is None:
            return self.base.admits(similarity, lexical_share)
        if not self.base.admits(similarity, lexical_share):
            return False
        if self.strict.admits(similarity, lexical_share):
            return True
        return text_language(" ".join(texts)) == languages.ENGLISH


def query_floor(query: str) -> QueryFloor:
    """The floors for ``query``'s candidates (settings read per call): ``strict`` for its
    candidates in another language than English unless the identifier reads the query as
    English itself (``language_id.english_by_default``: a prompt English only by default may be a
    short one in the notes' language)."""
    base, language = floor(), query_language(query)
    other = float(settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES)
    if base.off or other <= base.min_similarity:
        return QueryFloor(language, base)
    if language == languages.ENGLISH and not language_id.english_by_default(query):
        return QueryFloor(language, base)
    return QueryFloor(language, base, replace(base, min_similarity=other))


def content_terms(query: str) -> list[analyzer.Group]:
    """The query's words without stop words, each as its forms (``analyzer.query_groups``),
    unique, in order (none: only stop words, no lexical evidence)."""
    return _content_terms(analyzer.analyze(query), language_id.identify(query))


def _content_terms(words: Sequence[str], language: str) -> list[analyzer.Group]:
    return analyzer.query_groups(words, language) if analyzer.content_words(words, language) else []


def term_weights(
    index: Index,
    scope_id: str,
    groups: Sequence[analyzer.Group],
    revision: int | None = None,
    counted: Mapping[str, int] | None = None,
) -> dict[analyzer.Group, float]:
    """Each query word's IDF weight in the scope's ``index`` (one statement at most;
    ``bm25.idf_weights``). ``revision``, ``counted``: the Memory head the candidates cite and
    the document frequencies already counted at it (``bm25.scope_figures``: the totals are
    cached per head, and counted terms are not read again)."""
    if not groups:
        return {}
    figures = bm25.scope_figures(index, scope_id, analyzer.forms(groups), revision, counted)
    return bm25.idf_weights(figures, groups)


def rarity_weighted(
    weights: dict[analyzer.Group, float], words: Sequence[str], language: str
) -> dict[analyzer.Group, float]:
    """``weights`` (a query's IDF weights in the scope) scaled by how rare each word is in
    general use of the query's ``language`` (``word_frequency.rarity``): in a small scope every
    word is rare, so without it one shared everyday word ("natten", "libro") made a topic. A
    group takes the rarest of the query's words that share its stem, and no more than its stem's
    rarity when the stem is itself a word: Danish "bager" (bakes) meets notes by the stem "bag",
    as common as the word "bag" (behind). English queries keep their weights."""
    if language == languages.ENGLISH or not weights:
        return weights
    rarest: dict[str, float] = {}
    for word in words:
        key = analyzer.language_term(word, language)
        rarest[key] = max(rarest.get(key, 0.0), word_frequency.rarity(word, language))
    scaled: dict[analyzer.Group, float] = {}
    for group, weight in weights.items():
        rarity = rarest.get(group[0], 1.0)
        _, marked, stem = group[0].partition(":")  # "da:bag": a stem in the query's language
        if marked:
            rarity = min(rarity, word_frequency.rarity(stem, language))
        scaled[group] = weight * rarity
    return scaled


def query_weights(
    index: Index,
    scope_id: str,
    query: str,
    revision: int | None = None,
    counted: Mapping[str, int] | None = None,
) -> dict[analyzer.Group, float]:
    """The lexical share's weight of each of ``query``'s content words in the scope's ``index``:
    ``term_weights`` of its ``content_terms``, ``rarity_weighted``."""
    words, language = analyzer.analyze(query), language_id.identify(query)
    weights = term_weights(index, scope_id, _content_terms(words, language), revision, counted)
    return rarity_weighted(weights, words, language)


def lexical_share(
    weights: dict[analyzer.Group, float], texts: Sequence[str], *, held: Iterable[str] | None = None
) -> float:
    """The share of the query's weight held by ``texts`` (0 without weights): a word counts when
    they hold any of its forms. ``held``: the index terms they hold when already known (from the
    index row), else read from the texts (together: one document, as the index reads it)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    if held is not None:
        found = set(held)
    else:
        wanted = analyzer.forms(weights)
        found = set(analyzer.query_counts("\n".join(texts), wanted, language_id.of_terms)[0])
    return sum(weight for group, weight in weights.items() if not found.isdisjoint(group)) / total


def _cosines(rows: Iterable[tuple[Any, bytes | memoryview]], query_vector: Any) -> dict[Any, float]:
    return {key: float(np.dot(embedding.from_bytes(data), query_vector)) for key, data in rows}


def memory_similarities(scope_id: str, query: str, rows: Sequence[MemoryHit]) -> dict[str, float]:
    """Raw cosine between the query and each row's stored vector, by entry version id (one
    statement; rows without a vector of the current model are absent; empty without a model or
    for a query it does not read)."""
    model = embedding.embedder_for(query)
    if model is None or not rows:
        return {}
    stored = MemoryEntryVector.objects.filter(
        entry_version__scope_id=scope_id,
        entry_version__entry_version_id__in=[row.entry_version_id for row in rows],
        model=model.model_id,
    ).values_list("entry_version__entry_version_id", "vector")
    return _cosines(stored, model.embed_query(query))


def annotate_memory(
    scope_id: str, query: str, rows: Sequence[MemoryHit], counted: Mapping[str, int] | None = None
) -> list[MemoryHit]:
    """``rows`` with ``similarity`` and ``lexical_share`` filled in (two statements at most);
    rows that already carry a lexical share (``rerank``) are kept as they are. The word weights
    use the scope's totals cached for the head the rows cite (counting them reads every index
    row of the scope: ~50 ms at 100,000 entries on PostgreSQL) and the document frequencies
    ``counted`` at that head by the full-text statement that found the rows
    (``search_context_counted``)."""
    todo = [row for row in rows if row.lexical_share is None]
    if not todo:
        return list(rows)
    revisions = {row.revision for row in todo}
    revision = next(iter(revisions)) if len(revisions) == 1 else None
    weights = query_weights(
        MEMORY_INDEX, scope_id, query, revision, counted if revision is not None else None
    )
    similarity = memory_similarities(scope_id, query, todo)
    return [
        row
        if row.lexical_share is not None
        else replace(
            row,
            similarity=similarity.get(row.entry_version_id),
            lexical_share=lexical_share(weights, [row.text]),
        )
        for row in rows
    ]


def annotate_experience(scope_id: str, query: str, rows: Sequence[ExperienceHit]) -> list[ExperienceHit]:
    """The same figures for Experience hits (a vector counts only at the hit's revision)."""
    if not rows:
        return []
    weights = query_weights(EXPERIENCE_INDEX, scope_id, query)
    model = embedding.embedder_for(query)
    similarity: dict[tuple[int, int], float] = {}
    if model is not None:
        vector = model.embed_query(query)
        stored = ExperienceVector.objects.filter(
            head_id__in=[row.key for row in rows], model=model.model_id
        ).values_list("head_id", "revision", "vector")
        similarity = _cosines((((pk, rev), data) for pk, rev, data in stored), vector)
    return [
        replace(
            row,
            similarity=similarity.get((row.key, row.artifact_ref.revision)),
            lexical_share=lexical_share(
                weights, [value for value in row.content.values() if isinstance(value, str)]
            ),
        )
        for row in rows
    ]
