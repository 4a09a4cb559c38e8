"""How common a word is in general use of its language (``word_frequency``, from ``wordfreq``'s lists):
the stop words of every language other than English, and the weight a query word carries in the
lexical share (``relevance.rarity_weighted``)."""

from __future__ import annotations

from typing import Any

import pytest
import wordfreq

from powercontext.evaluation import note_sets
from powercontext.memory.services import memory_remember
from powercontext.search.fulltext import analyzer, language_id, languages, word_frequency
from powercontext.search.ranking import relevance
from tests.powercontext.test_unread_scripts import cited_texts

OTHER_LANGUAGES = [code for code in language_id.LANGUAGES if code != languages.ENGLISH]


@pytest.mark.parametrize("language", OTHER_LANGUAGES)
def test_every_other_language_told_takes_its_stop_words_from_the_frequency_list(language: str) -> None:
    own = analyzer.stop_words(language) - languages.ENGLISH_STOP_WORDS
    assert own, language
    # Each is common in the language and read by the analyzer as one term.
    assert all(word_frequency.zipf(word, language) >= languages.COMMON_ZIPF for word in own)
    assert all(analyzer.analyze(word) == [word] for word in own)
    # The language's most frequent words (its function words) are among them (Norwegian's list
    # is Bokmål's, "nb").
    code = "nb" if language == "no" else language
    top = [word for word in wordfreq.top_n_list(code, 20, wordlist="small") if word.isalpha()]
    stop = analyzer.stop_words(language)
    assert [word for word in top if analyzer.analyze(word) == [word] and word not in stop] == []


def test_the_pure_analyzer_takes_other_languages_common_words_from_the_source_it_is_given() -> None:
    # The package wires the frequency lists in; the analyzer itself reads no file.
    assert analyzer._common_words == [word_frequency.common_words]
    try:
        analyzer.use_common_words(lambda language: frozenset({"zorb", "two words"}))
        assert analyzer.stop_words("fr") == languages.ENGLISH_STOP_WORDS | {"zorb"}
        assert analyzer.content_words(["zorb", "la"], "fr") == ["la"]
    finally:
        analyzer.use_common_words(word_frequency.common_words)
    assert "la" in analyzer.stop_words("fr")


def test_english_keeps_its_own_list_and_its_weights() -> None:
    assert analyzer.stop_words(languages.ENGLISH) == languages.ENGLISH_STOP_WORDS
    assert word_frequency.common_words(languages.ENGLISH) == frozenset()
    assert word_frequency.rarity("night", languages.ENGLISH) == 1.0
    assert analyzer.stop_words("xx") == languages.ENGLISH_STOP_WORDS  # a language no list has
    assert word_frequency.rarity("noche", "xx") == 1.0


def test_numbers_and_identifiers_are_never_common() -> None:
    for term in ("2006", "1", "max_connections", "v2"):
        assert word_frequency.zipf(term, "es") == 0.0 and word_frequency.rarity(term, "es") == 1.0
        assert term not in analyzer.stop_words("es")
    # Small numbers are frequent words in the lists themselves.
    assert wordfreq.zipf_frequency("1", "es") > languages.COMMON_ZIPF
    assert word_frequency.zipf("1", "es") == 0.0 and "1" not in analyzer.stop_words("es")


def test_rarity_at_its_bounds() -> None:
    rare, common = languages.RARE_ZIPF, languages.COMMON_ZIPF
    assert languages.rarity_of(0.0) == languages.rarity_of(rare) == 1.0
    assert languages.rarity_of(common) == languages.rarity_of(common + 2) == 0.0
    assert languages.rarity_of((rare + common) / 2) == pytest.approx(0.5)
    assert 0.0 < languages.rarity_of(common - 0.01) < 0.01
    assert 0.99 < languages.rarity_of(rare + 0.01) < 1.0


@pytest.mark.parametrize(
    ("language", "everyday", "rare"),
    [
        ("es", "libro", "contraseñas"),
        ("da", "natten", "hemmelighederne"),
        ("no", "natten", "hemmelighetene"),  # Bokmål's list
        ("id", "buku", "pg_dump"),
        ("cs", "knihu", "migrace"),
    ],
)
def test_an_everyday_word_weighs_less_than_a_rare_one(language: str, everyday: str, rare: str) -> None:
    assert word_frequency.rarity(everyday, language) < 0.5
    assert word_frequency.rarity(rare, language) > 0.75


def test_weights_are_scaled_by_rarity_except_in_english() -> None:
    words = analyzer.analyze("¿Qué libro de contabilidad recomiendas?")
    groups = analyzer.query_groups(words, "es")
    weights = {group: 2.0 for group in groups}
    scaled = relevance.rarity_weighted(weights, words, "es")
    by_word = dict(zip(analyzer.content_words(words, "es"), scaled.values(), strict=True))
    assert by_word["libro"] == pytest.approx(2.0 * word_frequency.rarity("libro", "es"))
    assert by_word["recomiendas"] == 2.0
    assert by_word["libro"] < by_word["contabilidad"] < by_word["recomiendas"]
    english = analyzer.analyze("which book do you recommend")
    english_weights = {group: 2.0 for group in analyzer.query_groups(english)}
    assert relevance.rarity_weighted(english_weights, english, languages.ENGLISH) == english_weights


def test_a_group_takes_the_rarest_of_the_words_sharing_its_stem() -> None:
    # "fila" and "filas" share the Spanish stem; the group weighs as the rarer form.
    words = ["fila", "filas"]
    (group,) = analyzer.query_groups(words, "es")
    scaled = relevance.rarity_weighted({group: 1.0}, words, "es")
    assert scaled[group] == pytest.approx(max(word_frequency.rarity(word, "es") for word in words))


def test_a_stem_that_is_a_common_word_weighs_as_that_word() -> None:
    # Danish "bager" (bakes) is uncommon, but it meets notes by its stem "bag" (behind): common.
    (group,) = analyzer.query_groups(["bager"], "da")
    assert group[0] == "da:bag"
    assert word_frequency.rarity("bager", "da") > 0.5 > word_frequency.rarity("bag", "da")
    scaled = relevance.rarity_weighted({group: 1.0}, ["bager"], "da")
    assert scaled[group] == pytest.approx(word_frequency.rarity("bag", "da"))
    # A stem that is no word ("libr" of "libro") leaves the word's own rarity.
    (libro,) = analyzer.query_groups(["libro"], "es")
    assert relevance.rarity_weighted({libro: 1.0}, ["libro"], "es")[libro] == word_frequency.rarity(
        "libro", "es"
    )


@pytest.mark.django_db
def test_one_shared_everyday_word_is_no_topic_but_a_rare_one_is(embeddings: Any, monkeypatch: Any) -> None:
    notes = note_sets.read_lines("engineering_notes_es.txt")
    for note in notes:
        memory_remember(scope_id="freq-es", kind="note", text=note)
    (ledger,) = [note for note in notes if "libro mayor" in note]
    everyday = "¿Qué libro me recomiendas para las vacaciones?"  # shares "libro" with the ledger

    assert cited_texts("freq-es", everyday) == []
    # A question about the ledger in rarer words still finds it.
    assert cited_texts("freq-es", "¿Cómo se corrige una fila del libro mayor?") == [ledger]

    # Every word weighing fully, as before: the one shared everyday word made the ledger a topic.
    monkeypatch.setattr(word_frequency, "rarity", lambda word, language: 1.0)
    assert ledger in cited_texts("freq-es", everyday)
