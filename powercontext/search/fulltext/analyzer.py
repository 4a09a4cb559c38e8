"""The deterministic, versioned text analyzer shared by every search backend.

Pure module: no Django, no settings, no clock. The same function turns Memory text, Experience
fields and queries into terms, so SQLite FTS5 and PostgreSQL full text agree on what matches.

Version 1:
- Unicode NFC, then case folding, then NFC again (folding can denormalize);
- a *word* is a run of letters, digits, combining marks and ``_``; words longer than
  ``MAX_TERM_CHARS`` are cut to that length;
- CJK text (Han, Hiragana, Katakana, Hangul, Bopomofo) is indexed as single characters plus
  adjacent pairs inside each CJK run, so Chinese/Japanese queries match without a dictionary;
- each emoji / pictographic symbol (Unicode category So) is a term of its own;
- everything else (punctuation, spaces, controls, joiners, variation selectors) separates terms.

Terms are what ``searchable_text`` stores. Index tokens add one step on top (index token
format 4), with Snowball stemmers (``snowballstemmer``, a maintained pure-Python port of the
Snowball algorithms):

- every term has its *English form* (``index_term``): a plain ASCII word (``[a-z]+``) is reduced
  to its Snowball English stem, so "painted", "painting" and "paints" meet; other terms (digits,
  non-ASCII words, CJK, emoji) are kept as they are;
- a document in another language that Snowball has (``STEMMERS``; the caller tells the language,
  once per document: ``language_id``) also holds each word's stem in that language, marked with
  the language (``language_term``: "tr:kitap"), so a stem only ever meets a stem of the same
  language (``document_index_terms``): "kitaplarımızdan" is indexed as itself and as "tr:kitap";
- a query is looked up by each content word's forms (``query_groups``): its stem in the query's
  language and its English form, one *group* per word, so a Turkish question finds a Turkish note
  by the stem and an English note that names "Celery" by the English form; an English query by
  the English form alone, as before. The lexical share counts a word once, whichever form a
  document holds (``bm25.idf_weights``). A word whose stem is one of its language's stop words'
  ("együnk", "egy") is no content word either (``content_words``).

Queries also drop stop words (``query_terms``: English function words, and those of the query's
own language as ``language_id`` tells it, ``languages``), so a question such as "what did Ann say about kayaking" ranks by
"ann", "say" and "kayaking", not by its function words; "où est la sauvegarde" by "sauvegarde". Documents keep
their stop words: a query made only of stop words still matches them.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import snowballstemmer
from snowballstemmer import EnglishStemmer

from powercontext.search.fulltext.languages import ENGLISH, ENGLISH_STOP_WORDS

ANALYZER_VERSION = 1
# The encoding of index tokens (``index_token`` of ``index_term``). Index rows written with
# another format are reported by ``verify`` and rewritten by ``rebuild_search_index``; terms
# themselves are unchanged, so ``searchable_text`` (stamped with ``ANALYZER_VERSION``) stays
# valid. 2: scope-keyed tokens; 3: plain ASCII words stemmed (Snowball English); 4: documents in
# another language Snowball has also hold their words' stems in that language.
INDEX_TOKEN_FORMAT = 4
MAX_TERM_CHARS = 64
MAX_QUERY_TERMS = 64
TERM_COUNTS_CACHE = 8192

# Dropped from queries only (``languages``): English function words, and those of the query's
# own language when it is another (``query_terms``). Content words never belong here.
STOP_WORDS = ENGLISH_STOP_WORDS
_STEMMED_TERM = re.compile(r"[a-z]+")

# The Snowball algorithm of each language code ``language_id`` tells, where Snowball has one
# (English is ``index_term``'s; Vietnamese and Chinese have none).
STEMMERS: dict[str, str] = {
    "fr": "french",
    "de": "german",
    "es": "spanish",
    "it": "italian",
    "pt": "portuguese",
    "nl": "dutch",
    "sv": "swedish",
    "da": "danish",
    "no": "norwegian",
    "fi": "finnish",
    "hu": "hungarian",
    "pl": "polish",
    "cs": "czech",
    "id": "indonesian",
    "tr": "turkish",
    "ru": "russian",
}
# A query word's forms (its stem in the query's language first, then its English form).
Group = tuple[str, ...]
# Tells a document's language from its terms (``language_id.of_terms``); passed in by callers,
# so this module stays pure.
LanguageOf = Callable[[Sequence[str]], str]

_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31A0, 0x31FF),  # Bopomofo extended, Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables + Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x3134F),  # CJK extensions B..G
)


def is_cjk(ch: str) -> bool:
    """Whether ``ch`` is a Chinese, Japanese or Korean character (ideograph, kana, hangul, ...)."""
    cp = ord(ch)
    for low, high in _CJK_RANGES:
        if low <= cp <= high:
            return True
    return False


def _kind(ch: str) -> str:
    """Classify one character: 'c' CJK, 'w' word, 'm' combining mark, 's' symbol, '' separator."""
    if is_cjk(ch):
        # Iteration marks and prolonged-sound marks are Lm inside the ranges: still CJK.
        return "c" if unicodedata.category(ch)[0] in "LN" or ch in "\u3005\u30fc" else ""
    if ch == "_":
        return "w"
    category = unicodedata.category(ch)
    head = category[0]
    if head in "LN":
        return "w"
    if head == "M":
        return "m"
    if category == "So":
        return "s"
    return ""


def normalize(text: str) -> str:
    """NFC, case-folded, NFC again: the canonical form every term is taken from."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def analyze(text: str) -> list[str]:
    """Return the terms of ``text`` in order of appearance (duplicates kept). Plain ASCII text
    (every query and most notes) takes a fast path with the same result: its words are the runs
    of ASCII letters, digits and ``_`` after lower-casing (no ASCII character is CJK, a combining
    mark or a symbol the index keeps)."""
    if text.isascii():
        return [word[:MAX_TERM_CHARS] for word in _ASCII_WORD.findall(text.lower())]
    return analyze_characters(text)


def analyze_characters(text: str) -> list[str]:
    """``analyze`` character by character, whatever the text (what the ASCII fast path agrees
    with: tests/powercontext/test_analyzer.py)."""
    terms: list[str] = []
    word: list[str] = []
    cjk: list[str] = []

    def flush_word() -> None:
        if word:
            terms.append("".join(word)[:MAX_TERM_CHARS])
            word.clear()

    def flush_cjk() -> None:
        if cjk:
            for index, ch in enumerate(cjk):
                terms.append(ch)
                if index + 1 < len(cjk):
                    terms.append(ch + cjk[index + 1])
            cjk.clear()

    for ch in normalize(text):
        kind = _kind(ch)
        if kind == "w":
            flush_cjk()
            word.append(ch)
        elif kind == "m":
            # A combining mark belongs to the word it follows; alone it separates nothing.
            if word:
                word.append(ch)
        elif kind == "c":
            flush_word()
            cjk.append(ch)
        elif kind == "s":
            flush_word()
            flush_cjk()
            terms.append(ch)
        else:
            flush_word()
            flush_cjk()
    flush_word()
    flush_cjk()
    return terms


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # A stemmer object keeps state while it works: one per call (cheap) is thread-safe, and
    # the cache makes repeated words free.
    stemmed: str = EnglishStemmer().stemWord(word)
    return stemmed


def index_term(term: str) -> str:
    """The form a term takes in the index and in queries: plain ASCII words are stemmed."""
    return _stem(term) if _STEMMED_TERM.fullmatch(term) else term


def index_terms(terms: Iterable[str]) -> list[str]:
    """``index_term`` of every term, in order, duplicates kept (they are term frequency)."""
    return [index_term(term) for term in terms]


def _stemmable(term: str) -> bool:
    """A word of letters (and the combining marks folding leaves, "i̇"), not CJK."""
    return not is_cjk(term[0]) and all(ch.isalpha() or unicodedata.category(ch) == "Mn" for ch in term)


@lru_cache(maxsize=65536)
def language_term(term: str, language: str) -> str:
    """``term``'s stem in ``language`` marked with the language ("tr:kitap": no analyzer term
    holds ":", so it meets only the same language's stems) when Snowball has the language and the
    term is a word, else its English form (``index_term``)."""
    algorithm = STEMMERS.get(language)
    if algorithm is None or not _stemmable(term):
        return index_term(term)
    stemmed: str = snowballstemmer.stemmer(algorithm).stemWord(term)  # one per call: thread-safe
    return f"{language}:{stemmed}"


def document_index_terms(terms: Iterable[str], language: str) -> list[str]:
    """A document's index terms, in order (duplicates kept: they are term frequency): each term's
    English form, followed by its stem in the document's ``language`` where it has one."""
    if language not in STEMMERS:
        return index_terms(terms)
    found: list[str] = []
    for term in terms:
        english = index_term(term)
        found.append(english)
        stem = language_term(term, language)
        if stem != english:
            found.append(stem)
    return found


_ASCII_WORD = re.compile(r"[a-z0-9_]+")


# Where the common words (stop words) of a language other than English come from: a language code
# -> its words (``word_frequency.common_words``, which reads them from a package's files). Set by
# this package's ``__init__`` (``use_common_words``), so this module stays pure.
CommonWords = Callable[[str], frozenset[str]]
_common_words: list[CommonWords] = []


def use_common_words(source: CommonWords) -> None:
    """Take other languages' common words from ``source`` from now on."""
    _common_words[:] = [source]
    stop_words.cache_clear()
    _stop_stems.cache_clear()


@lru_cache(maxsize=64)
def stop_words(language: str) -> frozenset[str]:
    """The words a query in ``language`` (``language_id.identify``) searches without: English
    function words, and its own language's common words (by their general frequency:
    ``use_common_words``), those the analyzer reads as one term ("c'est" is two, each common)."""
    if language == ENGLISH:
        return ENGLISH_STOP_WORDS
    (source,) = _common_words  # set on import of this package: never missing
    return ENGLISH_STOP_WORDS | frozenset(word for word in source(language) if analyze(word) == [word])


@lru_cache(maxsize=64)
def _stop_stems(language: str) -> frozenset[str]:
    """The stems of ``language``'s own stop words (none where Snowball lacks the language)."""
    if language not in STEMMERS:
        return frozenset()
    return frozenset(language_term(word, language) for word in stop_words(language) - ENGLISH_STOP_WORDS)


def content_words(words: Sequence[str], language: str = ENGLISH) -> list[str]:
    """The words of a query (``analyze``) that are not stop words of ``language`` (English's and
    its own, ``stop_words``), nor share a stem in ``language`` with one of its own."""
    stop, stems = stop_words(language), _stop_stems(language)
    return [word for word in words if word not in stop and language_term(word, language) not in stems]


@lru_cache(maxsize=TERM_COUNTS_CACHE)
def term_counts(text: str, language_of: LanguageOf) -> dict[str, int]:
    """How often each index term of the document ``text`` occurs in it (``document_index_terms``
    of its terms, in the language ``language_of`` tells from them, counted). Cached (entry texts
    repeat across prepares); callers must not change the result."""
    terms = analyze(text)
    return dict(Counter(document_index_terms(terms, language_of(terms))))


def _key(word: str) -> str:
    """A word's first two letters with a second "y" read as "i": the same for a plain ASCII word
    and its Snowball English stem (the stemmer changes word endings only, apart from "dying",
    "lying", "tying"; checked on 23k words of the dev and benchmark corpora)."""
    return word[:1] + word[1:2].replace("y", "i")


def query_counts(text: str, terms: Iterable[str], language_of: LanguageOf) -> tuple[dict[str, int], int]:
    """(occurrences in ``text`` of each of ``terms`` it holds, the text's length in index
    terms), as ``term_counts`` gives them. Plain ASCII text in English is read without stemming
    every word: only the words whose ``_key`` is one of the terms' can stem to one of them."""
    wanted = set(terms)
    words = analyze(text) if text.isascii() else []
    if not text.isascii() or language_of(words) in STEMMERS:
        counts = term_counts(text, language_of)
        return {term: counts[term] for term in wanted if term in counts}, sum(counts.values())
    keys = {_key(term) for term in wanted}
    found: dict[str, int] = {}
    for word in words:
        word = word[:MAX_TERM_CHARS]
        if _key(word) in keys and (term := index_term(word)) in wanted:
            found[term] = found.get(term, 0) + 1
    return found, len(words)


def query_groups(words: Sequence[str], language: str = ENGLISH) -> list[Group]:
    """The forms of a query's words (``analyze`` of the query), one group per word in order of
    first appearance, at most ``MAX_QUERY_TERMS`` groups: the word's stem in the query's
    ``language`` (told by ``language_id``), then its English form when that differs. A form
    already in a group is not repeated. Words other than ``content_words`` are dropped unless the
    query has nothing else (then it searches by them)."""
    content = content_words(words, language)
    groups: dict[str, list[str]] = {}
    seen: set[str] = set()
    for word in content or words:
        first = language_term(word, language)
        if first not in groups:
            if first in seen or len(groups) >= MAX_QUERY_TERMS:
                continue
            groups[first] = [first]
            seen.add(first)
        english = index_term(word)
        if english not in seen:
            groups[first].append(english)
            seen.add(english)
    return [tuple(forms) for forms in groups.values()]


def forms(groups: Iterable[Group]) -> list[str]:
    """Every form of ``groups``, in order (each once: groups never share one)."""
    return [form for group in groups for form in group]


def query_terms(text: str, language: str = ENGLISH) -> list[str]:
    """The index terms a query searches by: the forms of its ``query_groups``, in order."""
    return forms(query_groups(analyze(text), language))


def searchable_text(parts: Iterable[str]) -> str:
    """The deterministic searchable text of several fields: their terms joined by spaces."""
    terms: list[str] = []
    for part in parts:
        terms.extend(analyze(part))
    return " ".join(terms)


_PLAIN_TERM = re.compile(r"[a-z0-9]+")


def scope_key(scope_id: str) -> str:
    """A short, stable, index-safe key for a scope (scope ids are case-sensitive).

    48 bits: a collision could only make two scopes share postings, and every search still
    filters rows by the exact scope id, so nothing can cross scopes even then.
    """
    return hashlib.sha256(scope_id.encode("utf-8")).hexdigest()[:12]


def index_token(scope: str, term: str) -> str:
    """An ASCII-alphanumeric index token for ``term`` in the scope with key ``scope``.

    Both backends index these tokens verbatim, so no backend tokenizer can split, stem or
    re-case a term, and every token lookup is already restricted to one scope. Plain
    lowercase ASCII terms are kept as they are (``a`` prefix); any other term is hex-encoded
    UTF-8 (``x`` prefix), so the two forms can never collide.
    """
    if _PLAIN_TERM.fullmatch(term):
        return f"k{scope}a{term}"
    return f"k{scope}x{term.encode('utf-8').hex()}"


def scope_tokens(scope_id: str, terms: Iterable[str]) -> list[str]:
    """Index tokens of index terms (``index_term``/``query_terms``) within one scope (the scope
    key makes them scope-private)."""
    key = scope_key(scope_id)
    return [index_token(key, term) for term in terms]
