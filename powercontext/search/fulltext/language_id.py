"""A text's language, told by a maintained identifier: py3langid (its model inside the package).

The one place the project tells languages apart (docs/decisions.md, "Telling a prompt's
language"). The identifier is restricted to English and the languages the evaluation sets hold
(``LANGUAGES``), and the rule is asymmetric on purpose: a text is English unless the identifier's
best other language has normalised confidence ``MIN_CONFIDENCE`` or more (Swedish, Danish and
Norwegian together: ``MIN_SCANDINAVIAN_CONFIDENCE``). Short English prompts
full of names and jargon ("pin tokio to 1.38", "die hard config for postgres") reach 0.52 for
some other language at most; a prompt too short to tell ("Bonjour") stays English.

The model loads once per process, on first use or from ``search.preload`` (about 0.7 s and
80 MB), behind a lock; classification is read-only and safe from several threads. A text is
judged by its first ``HEAD_CHARS`` characters, and answers are cached per text: a prepare asks
about its query several times (``relevance``, ``rerank``, the full-text read, ``embedding.reads``)
and about the same candidates prepare after prepare.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from powercontext.search.fulltext.languages import ENGLISH

# English and the languages the evaluation sets hold (powercontext/evaluation/data).
LANGUAGES = (ENGLISH, *"fr de es it pt nl sv da no fi hu pl cs id tr vi zh ru".split())
MIN_CONFIDENCE = 0.6
# Swedish, Danish and Norwegian are close enough that on a short prompt the identifier splits its
# confidence between them ("Hej, hur mår du?": da 0.47): when the best language is one of them,
# their confidence counts together against this bound. (Pooled at 0.6, English jargon such as
# "die hard config for postgres" turned Scandinavian; at 0.8 no English prompt of the sets did.)
SCANDINAVIAN = frozenset({"sv", "da", "no"})
MIN_SCANDINAVIAN_CONFIDENCE = 0.8
HEAD_CHARS = 1000

_lock = threading.Lock()
_identifier: Any = None


def identifier() -> Any:
    """The process's identifier, loaded on first use."""
    global _identifier
    if _identifier is None:
        with _lock:
            if _identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                loaded = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                loaded.set_languages(list(LANGUAGES))
                _identifier = loaded
    return _identifier


@lru_cache(maxsize=8192)
def _judge(head: str) -> tuple[str, bool]:
    if not any(ch.isalpha() for ch in head):
        return ENGLISH, False  # digits and punctuation tell nothing
    ranked = identifier().rank(head)
    language, confidence = ranked[0]
    if language == ENGLISH or confidence >= MIN_CONFIDENCE:
        return str(language), True
    if language in SCANDINAVIAN:
        pooled = sum(score for code, score in ranked if code in SCANDINAVIAN)
        if pooled >= MIN_SCANDINAVIAN_CONFIDENCE:
            return str(language), True
    return ENGLISH, False


def identify(text: str) -> str:
    """The language ``text`` is written in: a code of ``LANGUAGES`` (``ENGLISH`` also when the
    identifier is not sure of another)."""
    return _judge(text[:HEAD_CHARS])[0]


def english_by_default(text: str) -> bool:
    """Whether ``identify`` calls ``text`` English only because the identifier is sure of no
    language: its best guess was another one ("A domani, buona serata!": Italian, 0.54), or the
    text has no letters. A short prompt in another language lands here, and so does English
    jargon ("pin tokio to 1.38")."""
    language, sure = _judge(text[:HEAD_CHARS])
    return language == ENGLISH and not sure


def of_terms(terms: Sequence[str]) -> str:
    """The language of a document whose analyzer terms are ``terms`` (``identify`` of their first
    ``HEAD_CHARS`` characters, joined by spaces): what its index row is stemmed by
    (``analyzer.document_index_terms``)."""
    head: list[str] = []
    size = 0
    for term in terms:
        if size >= HEAD_CHARS:
            break
        head.append(term)
        size += len(term) + 1
    return identify(" ".join(head))
