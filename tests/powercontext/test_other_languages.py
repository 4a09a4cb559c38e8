"""Queries in other languages than English (``powercontext.search.fulltext.languages``): the model
finds unrelated text in French, German, Spanish, Italian, Portuguese, Dutch or Swedish alike, so
such a query needs a higher similarity to be admitted on meaning alone; and each language's
function words stop counting as the query's topic. The shipped note, negative and related sets
(``powercontext/evaluation/data``) are read."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command

from powercontext.evaluation import note_sets
from powercontext.memory.services import memory_remember
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.prepare.builder import CONTENT_PREFIX, CONTENT_SUFFIX
from powercontext.prepare.explain_selectors import prepare_explain
from powercontext.search.fulltext import analyzer, language_id, languages
from powercontext.search.ranking import relevance

EPSILON = 1e-6


@pytest.mark.parametrize(
    ("query", "language"),
    [
        ("Quel courtier de messages utilise Celery ?", "fr"),
        ("Comment s'étirer avant de courir ?", "fr"),  # "comment" alone would be English
        ("Merci beaucoup, bonne journée !", "fr"),
        ("Warum schlafen Katzen so gern in der Sonne?", "de"),  # "so" and "in" are German too
        ("Hola, ¿qué tal estás?", "es"),
        ("Dove vanno messi i segreti?", "it"),
        ("Qual é o tempo limite do gunicorn?", "pt"),
        ("Wat is de time-out van gunicorn?", "nl"),
        ("Vilken meddelandemäklare använder Celery?", "sv"),
        ("Jaki jest limit czasu gunicorna?", "pl"),
        ("Jaký je časový limit gunicornu?", "cs"),
        ("Perantara pesan apa yang dipakai Celery?", "id"),
        ("Celery hangi mesaj aracısını kullanıyor?", "tr"),
        ("Hvilken meddelelsesmægler bruger Celery?", "da"),
        ("Hva er tidsavbruddet til gunicorn?", "no"),
        ("Mikä on gunicornin aikakatkaisu?", "fi"),
        ("Milyen üzenetközvetítőt használ a Celery?", "hu"),
        ("lorem ipsum dolor sit amet", "en"),  # "sit" is an English word too
        ("Dan and Jim went to the pod with Tom", "en"),  # names and words that are also English
        ("Привет, как дела?", "ru"),
        ("which broker does celery use?", "en"),
        ("What is the raison d'être of the ledger?", "en"),  # a loanword is not French
        ("requests per second in the van", "en"),
        ("x y z", "en"),  # single letters tell nothing
        ("See ya Nate!", "en"),
        ("Bonjour", "fr"),
        ("psycopg3 pgbouncer", "en"),  # nothing tells: English
    ],
)
def test_a_query_language_is_told_by_its_function_words(query: str, language: str) -> None:
    assert relevance.query_language(query) == language


def test_no_english_evaluation_question_is_taken_for_another_language() -> None:
    for name in ("negatives_software.txt", "negatives_everyday.txt", "negatives_smalltalk.txt"):
        prompts = note_sets.read_lines(name)
        assert [p for p in prompts if relevance.query_language(p) != languages.ENGLISH] == [], name


def query_terms(query: str) -> list[str]:
    """The full-text terms of ``query`` as a search reads them (its language told first)."""
    return analyzer.query_terms(query, language_id.identify(query))


def test_function_words_of_the_query_language_are_not_its_terms() -> None:
    assert query_terms("Où est la sauvegarde ?") == ["fr:sauvegard", analyzer.index_term("sauvegarde")]
    # A word of a language Snowball has is searched by its stem there, then its English form.
    assert query_terms("Wo ist die Sicherung?") == ["de:sicher", "sicherung"]
    assert "как" not in query_terms("Привет, как дела?")
    # English queries keep exactly the English list; a query of stop words only searches by them.
    assert query_terms("what did Ann say about kayaking") == ["ann", "say", "kayak"]
    assert analyzer.query_terms("où est la", "fr") == ["fr:où", "où", "fr:est", "est", "fr:la", "la"]
    assert relevance.content_terms("où est la sauvegarde") == [
        ("fr:sauvegard", analyzer.index_term("sauvegarde"))
    ]


def test_the_floor_is_stricter_on_similarity_for_a_candidate_in_another_language(
    settings: Any,
) -> None:
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = 0.38
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = 0.3
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY = 0.2
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES = 0.6
    french_note = "Celery utilise Redis comme courtier de messages."
    english_note = "Celery uses Redis as its broker; task results are not stored."

    english = relevance.query_floor("which broker does celery use?")
    french = relevance.query_floor("Quel courtier de messages utilise Celery ?")
    assert (english.language, english.strict) == ("en", None)  # surely English
    assert english.for_text(french_note) == english.base == relevance.floor()
    # A prompt English only by default (the identifier's best guess was another language, as
    # for a short prompt in the notes' language) meets a French note on the stricter floor.
    unsure = relevance.query_floor("A domani, buona serata!")
    assert unsure.language == "en" and language_id.english_by_default("A domani, buona serata!")
    assert unsure.for_text(french_note) == unsure.strict
    assert unsure.strict is not None and unsure.strict.min_similarity == 0.6
    assert unsure.for_text(english_note) == unsure.base
    assert french.language == "fr" and french.for_text(french_note).min_similarity == 0.6
    assert french.for_text(english_note) == french.base  # across languages: the English floor
    strict = french.for_text(french_note)
    assert (strict.min_lexical_share, strict.min_lexical_similarity) == (0.3, 0.2)  # words: as in English

    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES = 0  # the same floor as English
    assert relevance.query_floor("Quel courtier de messages utilise Celery ?").strict is None
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = 0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = 0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY = 0
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES = 0.6
    off = relevance.query_floor("Quel courtier de messages utilise Celery ?")
    assert off.base.off and off.for_text(french_note).off  # off stays off


def test_a_candidate_s_language_is_read_only_where_the_floor_s_answer_depends_on_it(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = 0.38
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = 0.3
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY = 0.2
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES = 0.6
    floors = relevance.query_floor("A domani, buona serata!")  # too short to tell: English
    assert floors.language == "en"
    italian = ("La tabella del libro mastro accetta solo aggiunte: una correzione è una nuova riga.",)
    english = ("The ledger table is append-only: a correction is a new row.",)
    read: list[str] = []
    told = relevance.text_language
    monkeypatch.setattr(relevance, "text_language", lambda text: read.append(text) or told(text))

    assert not floors.admits(italian, 0.30, 0.0)  # below either floor: not read
    assert floors.admits(italian, 0.65, 0.0)  # above both: not read
    assert floors.admits(italian, 0.30, 0.5)  # by its words, as in English: not read
    assert read == []
    # Between the floors on meaning alone: the candidate's language decides.
    assert not floors.admits(italian, 0.45, 0.0)
    assert floors.admits(english, 0.45, 0.0)
    assert read == [italian[0], english[0]]


@pytest.mark.django_db
def test_a_french_note_by_meaning_alone_at_the_boundary(embeddings: Any, settings: Any) -> None:
    memory_remember(scope_id="fr-edge", kind="note", text="Celery utilise Redis comme courtier de messages.")
    query = "Quelle file de tâches faut-il surveiller la nuit ?"  # no shared content word
    explained = prepare_explain(scope_id="fr-edge", query=query, max_bytes=8000)
    (candidate,) = explained.explanation.candidates
    similarity = candidate.hit.similarity
    assert similarity is not None and not candidate.hit.lexical_share
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = min(0.38, similarity - 0.05)

    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES = similarity - EPSILON
    assert (
        ScopedContextApplication().prepare(PrepareRequest(scope_id="fr-edge", query=query)).status == "ready"
    )
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES = similarity + EPSILON
    assert (
        ScopedContextApplication().prepare(PrepareRequest(scope_id="fr-edge", query=query)).status == "empty"
    )
    explained = prepare_explain(scope_id="fr-edge", query=query, max_bytes=8000)
    (candidate,) = explained.explanation.candidates
    assert candidate.reason == "below_relevance_floor"
    # The same similarity admits an English note for this French query: across languages the
    # English floor holds, since unrelated pairs do not look alike there.
    english_note = "Celery uses Redis as its message broker."
    assert relevance.query_floor(query).for_text(english_note).admits(similarity, 0.0)


def cited(scope: str, query: str) -> list[str]:
    prepared = ScopedContextApplication().prepare(PrepareRequest(scope_id=scope, query=query, max_bytes=8000))
    if prepared.content is None:
        return []
    envelope = json.loads(prepared.content[len(CONTENT_PREFIX) : -len(CONTENT_SUFFIX)])
    return [item["citation"]["entry_id"] for item in envelope["items"] if "memory_ref" in item["citation"]]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("lang", "one_in", "found_in"),
    # Before the stricter floor 82-100 % of these leaked; now at most one in six. Swedish (the
    # same floor), Danish, Norwegian, Finnish, Hungarian, Polish, Czech, Indonesian, Turkish
    # (words alone: the model does not read them) and Vietnamese (words alone too) were added
    # later (languages told by py3langid since issue 31): 16-18 of 18 leaked before, at most one in four
    # now (small talk without function words, and "hlavní", main, as in the ledger's "hlavní
    # kniha"). Words alone find fewer related notes in Finnish (its inflections): a third.
    [
        *[(lang, 6, 2) for lang in ("fr", "de", "es", "it", "pt", "nl")],
        *[(lang, 4, 2) for lang in ("sv", "da", "no", "hu", "pl", "cs", "id", "tr", "vi")],
        ("fi", 4, 3),
    ],
)
def test_unrelated_prompts_stay_empty_and_related_ones_find_their_note(
    embeddings: Any, lang: str, one_in: int, found_in: int
) -> None:
    scope = f"eng-{lang}"
    entries = [
        memory_remember(scope_id=scope, kind="note", text=note).entry
        for note in note_sets.read_lines(f"engineering_notes_{lang}.txt")
    ]
    unrelated = note_sets.read_lines(f"negatives_everyday_{lang}.txt")
    related = note_sets.read_related(f"related_{lang}.txt")
    assert len(unrelated) >= 18 and len(related) >= 6

    leaked = [prompt for prompt in unrelated if cited(scope, prompt)]
    assert len(leaked) <= len(unrelated) // one_in, leaked
    found = [
        question
        for index, question in related
        if entries[index] and entries[index].entry_id in cited(scope, question)
    ]
    assert len(found) >= len(related) // found_in, found


@pytest.mark.django_db
def test_explain_shows_the_floor_and_the_language_that_chose_it(embeddings: Any, settings: Any) -> None:
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES = 0.6
    memory_remember(
        scope_id="fr-explain", kind="note", text="Celery utilise Redis comme courtier de messages."
    )

    out = io.StringIO()
    call_command(
        "explain_prepare",
        "--scope",
        "fr-explain",
        "--query",
        "Quel temps fera-t-il demain ?",
        "--json",
        stdout=out,
    )
    floor = json.loads(out.getvalue())["relevance_floor"]
    assert floor["language"] == "fr" and floor["min_similarity_other_languages"] == 0.6
    assert floor["min_similarity"] == settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY
    assert floor["min_lexical_share"] == settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE

    out = io.StringIO()
    call_command(
        "explain_prepare", "--scope", "fr-explain", "--query", "which broker does celery use?", stdout=out
    )
    (line,) = [line for line in out.getvalue().splitlines() if line.startswith("relevance floor")]
    expected = f"similarity {settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY:.2f}"
    assert expected in line and line.endswith("(query language en)") and "not in English" not in line


@pytest.mark.django_db
def test_a_french_prompt_against_english_notes_keeps_the_english_floor(
    embeddings: Any, settings: Any
) -> None:
    memory_remember(scope_id="fr-en", kind="note", text="Celery uses Redis as its message broker.")
    query = "Quel courtier de messages utilise Celery ?"
    (candidate,) = prepare_explain(scope_id="fr-en", query=query, max_bytes=8000).explanation.candidates
    similarity = candidate.hit.similarity
    assert similarity is not None
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = 1.0  # meaning alone decides here
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES = 0.99

    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = similarity - EPSILON
    assert ScopedContextApplication().prepare(PrepareRequest(scope_id="fr-en", query=query)).status == "ready"
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = similarity + EPSILON
    assert ScopedContextApplication().prepare(PrepareRequest(scope_id="fr-en", query=query)).status == "empty"


@pytest.mark.django_db
def test_across_languages_unrelated_prompts_stay_empty_and_related_ones_can_find_english_notes(
    embeddings: Any,
) -> None:
    entries = [
        memory_remember(scope_id="eng-en", kind="note", text=note).entry
        for note in note_sets.read_lines("engineering_notes.txt")
    ]
    unrelated = [
        prompt
        for lang in ("fr", "de", "es", "it", "pt", "nl")
        for prompt in note_sets.read_lines(f"negatives_everyday_{lang}.txt")
    ]
    assert [prompt for prompt in unrelated if cited("eng-en", prompt)] == []
    related = note_sets.read_related("related_other_languages.txt")
    found = [q for index, q in related if entries[index] and entries[index].entry_id in cited("eng-en", q)]
    # MiniLM matches across languages weakly (a third of these); the floor must not take that away.
    assert len(found) >= len(related) // 4, found


def test_a_candidate_text_is_told_like_a_query_and_every_note_set_in_its_language() -> None:
    for lang in note_sets.LANGUAGES:
        notes = note_sets.read_lines(f"engineering_notes_{lang}.txt")
        told = [relevance.text_language(note) for note in notes]
        assert told == [relevance.query_language(note) for note in notes]
        # one Norwegian note of twelve reads as Danish (py3langid, docs/decisions.md)
        assert sum(language == lang for language in told) >= len(notes) - 1, (lang, told)
    for note in note_sets.read_lines("engineering_notes.txt"):
        assert relevance.text_language(note) == languages.ENGLISH, note


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("lang", "prompt"),
    [("it", "A domani, buona serata!"), ("no", "Tusen takk, ha en fin dag!"), ("cs", "Řekni mi vtip.")],
)
def test_a_short_prompt_taken_for_english_meets_other_language_notes_on_the_strict_floor(
    embeddings: Any, lang: str, prompt: str
) -> None:
    """Too short for the identifier to be sure, these count as English; the notes are not, and
    the English model finds them alike only as it finds any two texts of their language alike."""
    scope = f"short-{lang}"
    for note in note_sets.read_lines(f"engineering_notes_{lang}.txt"):
        memory_remember(scope_id=scope, kind="note", text=note)
    assert relevance.query_language(prompt) == languages.ENGLISH

    assert cited(scope, prompt) == []
    explained = prepare_explain(scope_id=scope, query=prompt, max_bytes=8000)
    floors = explained.floors
    assert floors is not None and floors.strict is not None
    # Some note stood between the English floor and the stricter one on meaning alone: the
    # English floor would have admitted it.
    between = [
        c.hit
        for c in explained.explanation.candidates
        if c.hit.similarity is not None
        and floors.base.min_similarity <= c.hit.similarity < floors.strict.min_similarity
        and (c.hit.lexical_share or 0.0) < floors.base.min_lexical_share
    ]
    assert between, [(c.hit.similarity, c.hit.lexical_share) for c in explained.explanation.candidates]
