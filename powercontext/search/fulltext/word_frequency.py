"""How common a word is in general use of a language other than English, from the word lists
the maintained ``wordfreq`` package ships inside its wheel (its "small" lists: the 30,000-odd most
frequent words of each of 42 languages). Not pure: it reads the package's files, once per
language and process; the bounds and rules are ``languages``'. Nothing here or there lists
another language's words by hand.

``common_words`` are a language's stop words (``analyzer.stop_words``, which takes them from here
through ``analyzer.use_common_words``: see this package's ``__init__``); ``rarity`` is the share
of its weight a query word keeps in the lexical share (``relevance.rarity_weighted``). A term with
a digit or "_" in it, a number or an identifier, counts as rare whatever the list says.
"""

from __future__ import annotations

import threading
from functools import lru_cache

from powercontext.search.fulltext.languages import COMMON_ZIPF, ENGLISH, RARE_ZIPF, rarity_of

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


@lru_cache(maxsize=64)
def common_words(language: str) -> frozenset[str]:
    """The words of ``language`` at ``COMMON_ZIPF`` or more (none for English: it keeps
    ``ENGLISH_STOP_WORDS``; never a number), as the package spells them (folded)."""
    return frozenset(word for word, value in _zipfs(language).items() if value >= COMMON_ZIPF)
