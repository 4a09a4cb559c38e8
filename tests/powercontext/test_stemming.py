"""Per-language Snowball stemming of the full-text index (index token format 4).

A note in a language Snowball has is indexed by each word's English form and by its stem in the
note's language; a query searches each word by its stem in the query's language and its English
form. An inflected form of a note's word then finds the note on both engines (the PostgreSQL
pass runs these against its full text), which the English forms alone never did.
"""

from __future__ import annotations

import io
import math

import pytest
from django.core.management import call_command
from django.db import connection

from powercontext import search
from powercontext.core.models import MemorySearchDocument
from powercontext.memory.selectors import memory_search
from powercontext.search.fulltext import analyzer, bm25, language_id, languages
from powercontext.search.ranking import relevance
from tests.powercontext.factories import make_memory

DISTRACTOR = "PostgreSQL 15 runs on the database host; psycopg 3 connects to it."

# (language, note, a question whose content words are other inflected forms of the note's words)
CASES = [
    ("tr", "Veritabanı yedekleri her gece sunucuya kopyalanır.", "Yedeklerimiz hangi sunucuda?"),
    ("de", "Die Sicherungen werden jede Nacht auf den Server kopiert.", "Wo liegt die Sicherung?"),
    (
        "fi",
        "Varmuuskopiot kopioidaan palvelimelle joka yö.",
        "Millä palvelimella varmuuskopioita säilytetään?",
    ),
    (
        "hu",
        "A biztonsági mentéseket minden éjjel a szerverre másoljuk.",
        "Melyik szerveren vannak a mentések?",
    ),
    ("ru", "Резервные копии каждую ночь копируются на сервер.", "На каком сервере резервная копия?"),
]


def content_words(query: str) -> set[str]:
    return set(analyzer.analyze(query)) - analyzer.stop_words(language_id.identify(query))


@pytest.mark.parametrize(("language", "note", "query"), CASES, ids=[case[0] for case in CASES])
def test_an_inflected_form_finds_the_note_only_through_the_stem_of_its_language(
    language: str, note: str, query: str
) -> None:
    terms = analyzer.analyze(note)
    assert language_id.of_terms(terms) == language and language_id.identify(query) == language
    # The question shares no word with the note as written, nor any English form (format 3's
    # tokens): only the stems of the language meet.
    assert content_words(query).isdisjoint(terms)
    english = set(analyzer.index_terms(terms))
    assert english.isdisjoint(analyzer.index_term(word) for word in content_words(query))
    assert set(analyzer.query_terms(query, language)) & set(analyzer.document_index_terms(terms, language))


@pytest.mark.django_db
@pytest.mark.parametrize(("language", "note", "query"), CASES, ids=[case[0] for case in CASES])
def test_full_text_finds_a_note_by_another_inflected_form_of_its_words(
    language: str, note: str, query: str
) -> None:
    scope = f"stem-{language}"
    make_memory(scope, DISTRACTOR)
    make_memory(scope, note)

    hits = memory_search(scope_id=scope, query=query, limit=5, mode="fts").hits

    assert [hit.text for hit in hits] == [note]


def test_a_stem_is_marked_with_its_language_and_meets_only_that_languages_stems() -> None:
    # Hungarian "jobban" (better) stems to "job": marked, it cannot meet the English "jobs".
    assert analyzer.language_term("jobban", "hu") == "hu:job"
    assert "hu:job" not in analyzer.document_index_terms(analyzer.analyze("Background jobs run twice"), "en")
    assert analyzer.document_index_terms(["kitaplarımızdan", "3"], "tr") == [
        "kitaplarımızdan",
        "tr:kitap",
        "3",
    ]


def test_a_word_sharing_a_stem_with_a_stop_word_of_its_language_is_no_content_word() -> None:
    # Hungarian "együnk" (let us eat) stems to "egy", the stem of the article "egy".
    assert "egy" in analyzer.stop_words("hu")
    assert analyzer.content_words(analyzer.analyze("Éhes vagyok, mit együnk?"), "hu") == ["éhes"]
    # English keeps exactly its list: no stem rule there.
    assert analyzer.content_words(["doing", "dos"]) == ["dos"]


def test_english_documents_and_languages_without_a_stemmer_keep_the_english_forms() -> None:
    english = analyzer.analyze("Ann painted the sunrises")
    assert analyzer.document_index_terms(english, languages.ENGLISH) == analyzer.index_terms(english)
    vietnamese = analyzer.analyze("Các bản sao lưu được chép lên máy chủ mỗi đêm")
    assert "vi" not in analyzer.STEMMERS
    assert analyzer.document_index_terms(vietnamese, "vi") == analyzer.index_terms(vietnamese)
    # An English query searches by the English forms alone, as before.
    assert analyzer.query_groups(analyzer.analyze("painted sunrises")) == [("paint",), ("sunris",)]


def test_a_query_word_is_one_group_of_its_forms_and_a_form_is_searched_once() -> None:
    words = analyzer.analyze("Yedeklerimiz ve yedekler hangi sunucuda?")
    groups = analyzer.query_groups(words, "tr")
    # "yedekler" has the stem of "yedeklerimiz": its English form ("yedekl") joins that group.
    assert groups == [("tr:yedek", "yedeklerimiz", "yedekl"), ("tr:sunucu", "sunucuda")]
    assert analyzer.forms(groups) == ["tr:yedek", "yedeklerimiz", "yedekl", "tr:sunucu", "sunucuda"]


@pytest.mark.django_db
def test_the_lexical_share_counts_a_word_once_whichever_form_a_note_holds() -> None:
    note = CASES[0][1]
    make_memory("share-tr", note)
    make_memory("share-tr", DISTRACTOR)
    query = CASES[0][2]
    groups = relevance.content_terms(query)
    weights = relevance.term_weights(search.MEMORY_INDEX, "share-tr", groups)

    # Each word weighs by its most frequent form (the stem the note holds, in 1 of 2 notes), not
    # by the inflected form no note holds (which would weigh as the rarest word).
    figures = bm25.scope_figures(search.MEMORY_INDEX, "share-tr", analyzer.forms(groups))
    assert figures.frequencies == {"tr:yedek": 1, "yedeklerimiz": 0, "tr:sunucu": 1, "sunucuda": 0}
    in_one_of_two = math.log(1.0 + (2 - 1 + 0.5) / (1 + 0.5))
    assert weights == {("tr:yedek", "yedeklerimiz"): in_one_of_two, ("tr:sunucu", "sunucuda"): in_one_of_two}
    assert relevance.lexical_share(weights, [note]) == pytest.approx(1.0)
    assert relevance.lexical_share(weights, [DISTRACTOR]) == 0.0


@pytest.mark.django_db
def test_rows_of_token_format_3_are_reported_and_a_rebuild_indexes_the_stems() -> None:
    language, note, query = CASES[0]
    make_memory("upgrade", note)
    # Token format 3 indexed every word by its English form only.
    old_tokens = analyzer.scope_tokens("upgrade", analyzer.index_terms(analyzer.analyze(note)))
    if connection.vendor == "postgresql":
        old_terms = " ".join(f"{token}:{n}" for n, token in enumerate(old_tokens, start=1))
    else:
        old_terms = " ".join(old_tokens)
    MemorySearchDocument.objects.filter(scope_id="upgrade").update(terms=old_terms, length=len(old_tokens))
    if connection.vendor == "sqlite":
        search.engine().repair_engine(search.MEMORY_INDEX)
    assert memory_search(scope_id="upgrade", query=query, limit=5, mode="fts").hits == []

    report = search.verify_index(scope_id="upgrade")
    assert report.mismatched == 1 and not report.ok

    call_command("rebuild_search_index", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())

    assert search.verify_index().ok
    assert [h.text for h in memory_search(scope_id="upgrade", query=query, limit=5, mode="fts").hits] == [
        note
    ]
    row = MemorySearchDocument.objects.get(scope_id="upgrade")
    # The length is the row's number of index tokens: what FTS5's BM25 counts, on both engines.
    assert row.length == len(analyzer.document_index_terms(analyzer.analyze(note), language))
