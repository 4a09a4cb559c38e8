"""The analyzer's index terms: Snowball stemming of plain ASCII words, query stop words."""

from __future__ import annotations

import pytest

from powercontext.search.fulltext import analyzer


@pytest.mark.parametrize(
    ("word", "stem"),
    [("painted", "paint"), ("paintings", "paint"), ("adoption", "adopt"), ("kids", "kid"), ("news", "news")],
)
def test_plain_ascii_words_are_indexed_by_their_english_stem(word: str, stem: str) -> None:
    assert analyzer.index_term(word) == stem


@pytest.mark.parametrize("term", ["2023", "v2", "naïve", "straße", "снега", "漢字", "字", "🎉", "snake_case"])
def test_other_terms_are_indexed_as_they_are(term: str) -> None:
    assert analyzer.index_term(term) == term


def test_index_terms_keep_order_and_duplicates() -> None:
    assert analyzer.index_terms(analyzer.analyze("Runs, running: RUN 漢字")) == [
        "run",
        "run",
        "run",
        "漢",
        "漢字",
        "字",
    ]


def test_terms_stored_as_searchable_text_are_not_stemmed() -> None:
    assert analyzer.searchable_text(["Painted sunrises"]) == "painted sunrises"


def test_queries_drop_stop_words_and_repeat_no_index_term() -> None:
    assert analyzer.query_terms("What did Ann say about painting, and what's painted?") == [
        "ann",
        "say",
        "paint",
    ]


def test_a_query_of_only_stop_words_keeps_them() -> None:
    assert analyzer.query_terms("What was that?") == ["what", "was", "that"]


def test_stop_words_are_folded_plain_terms() -> None:
    assert all(analyzer.analyze(word) == [word] for word in analyzer.STOP_WORDS)


def test_the_query_term_cap_counts_distinct_index_terms() -> None:
    words = " ".join(f"w{n}" for n in range(100))
    assert len(analyzer.query_terms(words)) == analyzer.MAX_QUERY_TERMS
