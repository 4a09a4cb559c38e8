"""The analyzer's index terms: Snowball stemming of plain ASCII words, query stop words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_the_ascii_fast_path_gives_what_the_character_walk_gives(text: str) -> None:
    assert analyzer.analyze(text) == analyzer.analyze_characters(text)


@pytest.mark.parametrize(
    "text",
    [
        "Deploy_the API v2.3 (a+b) $5 ~tilde^ `tick` | pipe: done!",
        "x" * 100 + " short",  # a word over the term limit is cut as the walk cuts it
        "CamelCase WORDS and snake_case_words",
        "",
    ],
)
def test_the_fast_path_on_punctuation_case_and_long_words(text: str) -> None:
    assert analyzer.analyze(text) == analyzer.analyze_characters(text)
    assert analyzer.analyze(text + " café") == analyzer.analyze_characters(
        text + " café"
    )  # not ASCII: the walk
