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

Terms are what ``searchable_text`` stores. Index tokens add one step on top (``index_term``,
index token format 3): a plain ASCII word (``[a-z]+``) is reduced to its Snowball English stem
(``snowballstemmer``, a maintained pure-Python port of the Snowball algorithms), identically when
documents are indexed and when queries are analyzed, so "painted", "painting" and "paints" meet.
Other terms (digits, non-ASCII words, CJK, emoji) are indexed as they are.

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
from collections.abc import Iterable
from functools import lru_cache

from snowballstemmer import EnglishStemmer

from powercontext.search.fulltext.languages import ENGLISH, ENGLISH_STOP_WORDS, stop_words

ANALYZER_VERSION = 1
# The encoding of index tokens (``index_token`` of ``index_term``). Index rows written with
# another format are reported by ``verify`` and rewritten by ``rebuild_search_index``; terms
# themselves are unchanged, so ``searchable_text`` (stamped with ``ANALYZER_VERSION``) stays
# valid. 2: scope-keyed tokens; 3: plain ASCII words stemmed (Snowball English).
INDEX_TOKEN_FORMAT = 3
MAX_TERM_CHARS = 64
MAX_QUERY_TERMS = 64
TERM_COUNTS_CACHE = 8192

# Dropped from queries only (``languages``): English function words, and those of the query's
# own language when it is another (``query_terms``). Content words never belong here.
STOP_WORDS = ENGLISH_STOP_WORDS
_STEMMED_TERM = re.compile(r"[a-z]+")

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
    """Return the terms of ``text`` in order of appearance (duplicates kept)."""
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


_ASCII_WORD = re.compile(r"[a-z0-9_]+")


@lru_cache(maxsize=TERM_COUNTS_CACHE)
def term_counts(text: str) -> dict[str, int]:
    """How often each index term occurs in ``text`` (``index_terms(analyze(text))`` counted).
    Plain ASCII text takes a fast path with the same result: its words are the runs of ASCII
    letters, digits and ``_`` after lower-casing. Cached (entry texts repeat across prepares);
    callers must not change the result."""
    if text.isascii():
        words = (word[:MAX_TERM_CHARS] for word in _ASCII_WORD.findall(text.lower()))
        return dict(Counter(index_term(word) for word in words))
    return dict(Counter(index_terms(analyze(text))))


def _key(word: str) -> str:
    """A word's first two letters with a second "y" read as "i": the same for a plain ASCII word
    and its Snowball English stem (the stemmer changes word endings only, apart from "dying",
    "lying", "tying"; checked on 23k words of the dev and benchmark corpora)."""
    return word[:1] + word[1:2].replace("y", "i")


def query_counts(text: str, terms: Iterable[str]) -> tuple[dict[str, int], int]:
    """(occurrences in ``text`` of each of ``terms`` it holds, the text's length in terms), as
    ``term_counts`` gives them. Plain ASCII text is read without stemming every word: only the
    words whose ``_key`` is one of the terms' can stem to one of them."""
    wanted = set(terms)
    if not text.isascii():
        counts = term_counts(text)
        return {term: counts[term] for term in wanted if term in counts}, sum(counts.values())
    keys = {_key(term) for term in wanted}
    words = _ASCII_WORD.findall(text.lower())
    found: dict[str, int] = {}
    for word in words:
        word = word[:MAX_TERM_CHARS]
        if _key(word) in keys and (term := index_term(word)) in wanted:
            found[term] = found.get(term, 0) + 1
    return found, len(words)


def query_terms(text: str, language: str = ENGLISH) -> list[str]:
    """Unique index terms of a query in order of first appearance, at most ``MAX_QUERY_TERMS``.

    Stop words (English, and those of the query's ``language``, told by ``language_id``:
    ``languages.stop_words``) are dropped unless the query has nothing else (then it searches by
    them).
    """
    terms = analyze(text)
    stop = stop_words(language)
    content = [term for term in terms if term not in stop]
    seen: dict[str, None] = {}
    for term in content or terms:
        seen.setdefault(index_term(term), None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(seen)


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
