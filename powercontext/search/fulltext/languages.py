"""Which words of a language are common: stop words and the weight a query word carries.

Which language a text is in is told elsewhere, once, by a maintained identifier
(``language_id.identify``); this module says how common a word is in general use of that
language, from the word frequencies the maintained ``wordfreq`` package ships inside its wheel
(its "small" lists: the 30,000-odd most frequent words of each of 42 languages; docs/decisions.md,
"Common words by their general frequency"). Nothing here lists another language's words by hand.

Frequencies are on the Zipf scale (``zipf``: log10 of a word's occurrences per billion words;
"de" in Spanish 7.8, "noche" 5.6, "contraseña" 4.0, a word the list lacks 0; a term with a
digit or "_" in it, a number or an identifier, counts as rare whatever the list says):

- a word at ``COMMON_ZIPF`` or more is a stop word of its language (``common_words``; a query
  searches without it, ``analyzer.stop_words``);
- a query word weighs in the lexical share by how rare it is (``rarity``): fully below
  ``RARE_ZIPF``, not at all from ``COMMON_ZIPF`` up, linearly between. One shared everyday word
  ("night", "book", "weekend") is then no topic, while a rare one ("contraseñas") still is.

English keeps the classic function-word list below and no rarity: its figures were measured with
them, and the embedding model reads English, so meaning, not word frequency, tells an everyday
English prompt apart (an English rarity lowered the dev set's recall and precision).
"""

from __future__ import annotations

import threading
from functools import lru_cache

ENGLISH = "en"
# Dropped from every query: the classic English function-word list plus the pieces contractions
# split into ("what's" -> "what", "s").
ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could d did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just ll m me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own re s same she should so some such t than that the their theirs them
    themselves then there these they this those through to too under until up ve very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """.split()
)

# Zipf frequency (log10 occurrences per billion words) from which a word is common in its
# language: a stop word, weighing nothing in the lexical share; below ``RARE_ZIPF`` a word weighs
# fully (docs/retrieval.md, "Common words by their general frequency").
COMMON_ZIPF = 5.5
RARE_ZIPF = 3.5
# The identifier's codes that ``wordfreq`` files under another code (py3langid tells Norwegian
# as "no"; wordfreq has Norwegian Bokmål as "nb").
_FREQUENCY_CODES = {"no": "nb"}
_import_lock = threading.Lock()


def load_frequencies() -> None:
    """Import ``wordfreq`` now (about 0.15 s) rather than on the first prepare of another
    language (``embedding.warm_up``)."""
    with _import_lock:
        import wordfreq  # noqa: F401


@lru_cache(maxsize=64)
def _zipfs(language: str) -> dict[str, float]:
    """The Zipf frequency of each word of ``language``'s list that is all letters and more common
    than ``RARE_ZIPF`` (every rarer word weighs alike); empty for English, whose words are not
    weighed, and for a language the package lacks. Read once per process from the package's file
    (its "cBpack": word lists by frequency in centibels, the list's index being minus the
    centibels, so a word at index ``i`` has Zipf ``9 - i / 100``): about 16,000 words, under 1 MB,
    ~30 ms. Read directly rather than through ``wordfreq.get_frequency_dict``, which would keep
    every language's whole list (~3.4 MB) for the process's life."""
    if language == ENGLISH:
        return {}
    load_frequencies()
    import wordfreq

    path = wordfreq.available_languages(wordlist="small").get(_FREQUENCY_CODES.get(language, language))
    if path is None:
        return {}
    kept: dict[str, float] = {}
    for index, words in enumerate(wordfreq.read_cBpack(path)):
        value = round(9.0 - index / 100.0, 2)
        if value <= RARE_ZIPF:
            break
        kept.update((word, value) for word in words if word.isalpha())
    return kept


def zipf(word: str, language: str) -> float:
    """How common ``word`` (an analyzer term: folded) is in general use of ``language``, on the
    Zipf scale; 0 for a word rarer than ``RARE_ZIPF`` or that the list lacks, for a term that is
    not all letters ("2006", "max_connections") and for English."""
    return _zipfs(language).get(word, 0.0)


def rarity(word: str, language: str) -> float:
    """The share of its weight ``word`` keeps in a query in ``language``: 1 below ``RARE_ZIPF``,
    0 from ``COMMON_ZIPF`` up, linear between; always 1 in English."""
    if language == ENGLISH:
        return 1.0
    return rarity_of(zipf(word, language))


def rarity_of(frequency: float) -> float:
    """``rarity`` of a word with this Zipf frequency."""
    if frequency <= RARE_ZIPF:
        return 1.0
    if frequency >= COMMON_ZIPF:
        return 0.0
    return (COMMON_ZIPF - frequency) / (COMMON_ZIPF - RARE_ZIPF)


@lru_cache(maxsize=64)
def common_words(language: str) -> frozenset[str]:
    """The words of ``language`` at ``COMMON_ZIPF`` or more (none for English: it keeps
    ``ENGLISH_STOP_WORDS``; never a number), as the package spells them (folded)."""
    return frozenset(word for word, value in _zipfs(language).items() if value >= COMMON_ZIPF)
