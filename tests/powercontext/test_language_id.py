"""A text's language is told by one maintained identifier (``search.fulltext.language_id``,
py3langid): the shipped sets of every language come out in their language, English prompts full
of names and jargon stay English, and every caller reads the same answer."""

from __future__ import annotations

import pytest

from powercontext.evaluation import note_sets
from powercontext.search.fulltext import analyzer, language_id, languages
from powercontext.search.ranking import relevance
from powercontext.search.vectors import embedding

# Short English engineering prompts whose words are also words elsewhere ("die", "men", "till",
# "dan", "per", "con", "sit"...), names, versions and jargon: none may read as another language.
ENGLISH_JARGON = [
    "pin tokio to 1.38",
    "die hard config for postgres",
    "men till dan jim tom sit ham mine",
    "per tenant rate limit",
    "fix the flaky pytest in ci",
    "why does gunicorn time out",
    "Caroline's pod in k8s keeps restarting",
    "bump numpy pin",
    "rename the Django app",
    "what port does Redis use",
    "vite dev server hmr broken",
    "con pool size for pgbouncer",
    "is the van der Waals model in sim/ still used",
    "kubectl rollout undo deploy/api",
    "Jim said the cron job at 03:00 fails",
    "git bisect the regression in ledger.py",
    "set PGPASSWORD via .pgpass not env",
    "nginx 502 after deploy",
    "mypy strict on the pure modules",
    "Why did Dan move the ham radio to the garage?",
]


def test_every_language_set_is_told_in_its_language() -> None:
    for lang in note_sets.LANGUAGES:
        prompts = [q for _, q in note_sets.read_related(f"related_{lang}.txt")]
        prompts += note_sets.read_lines(f"negatives_everyday_{lang}.txt")
        told = [language_id.identify(prompt) for prompt in prompts]
        # Short greetings may stay English (too little to tell: "Hei, hvordan har du det?"), as
        # may a Scandinavian one be told as its neighbour; never more than three in a set.
        assert sum(language == lang for language in told) >= len(prompts) - 3, (lang, told)
        assert sum(language != languages.ENGLISH for language in told) >= len(prompts) - 3, lang
        notes = note_sets.read_lines(f"engineering_notes_{lang}.txt")
        assert [language_id.identify(note) for note in notes] == [lang] * len(notes)


def test_english_sets_names_and_jargon_stay_english() -> None:
    for name in ("engineering_notes.txt", "negatives_everyday.txt", "negatives_smalltalk.txt"):
        for line in note_sets.read_lines(name):
            assert language_id.identify(line) == languages.ENGLISH, line
    for prompt in [*ENGLISH_JARGON, *note_sets.read_lines("negatives_software.txt")]:
        assert language_id.identify(prompt) == languages.ENGLISH, prompt


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12345 -- !!", "en"),  # no letter: nothing to tell
        ("", "en"),
        ("Hvor ofte skal man vanne en kaktus?", "no"),  # Scandinavian confidence pooled
        ("Hej, hur mår du?", "da"),  # Swedish, told as its neighbour: still not English
        ("Où est la sauvegarde ?", "fr"),
        ("数据库的端口是多少？", "zh"),
        ("Xin chào, bạn khỏe không?", "vi"),
    ],
)
def test_short_texts(text: str, expected: str) -> None:
    assert language_id.identify(text) == expected


def test_a_long_text_is_told_by_its_head_and_every_caller_reads_one_answer() -> None:
    french = "Les sauvegardes de la base sont restaurées chaque lundi sur l'hôte de test. "
    assert language_id.identify(french * 40 + "The rest is English. " * 200) == "fr"
    for text in (french, "Which port does the staging database listen on?", "Hvor er sikkerhetskopien?"):
        told = language_id.identify(text)
        assert relevance.query_language(text) == relevance.text_language(text) == told
        assert relevance.query_floor(text).language == told
    # Languages the model cannot tell texts apart in are ranked by their words alone.
    assert not embedding.reads("Yedekler her pazartesi test sunucusuna geri yükleniyor.")
    assert embedding.reads("Les sauvegardes sont restaurées chaque lundi.")


def test_stop_words_follow_the_told_language() -> None:
    assert "la" in analyzer.stop_words("fr") and "la" not in analyzer.stop_words(languages.ENGLISH)
    assert languages.ENGLISH_STOP_WORDS <= analyzer.stop_words("de")
    assert analyzer.stop_words("xx") == languages.ENGLISH_STOP_WORDS


@pytest.mark.parametrize(
    ("text", "by_default"),
    [
        ("A domani, buona serata!", True),  # Italian first, not surely
        ("Řekni mi vtip.", True),
        ("pin tokio to 1.38", True),  # English jargon: English, but not by the identifier's ranking
        ("2006", True),  # no letters
        ("Which port does the staging database listen on?", False),  # surely English
        ("Quel courtier de messages utilise Celery ?", False),  # surely French
    ],
)
def test_english_by_default_is_english_the_identifier_was_not_sure_of(text: str, by_default: bool) -> None:
    assert language_id.english_by_default(text) is by_default
    if by_default:
        assert language_id.identify(text) == "en"
