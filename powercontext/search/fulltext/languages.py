"""Which words of a language are common, as plain data and rules (pure): English's stop words,
and the bounds by which other languages' words are common (``word_frequency`` reads their
frequencies; docs/decisions.md, "Common words by their general frequency").

Frequencies are on the Zipf scale (log10 of a word's occurrences per billion words; "de" in
Spanish 7.8, "noche" 5.6, "contraseña" 4.0):

- a word at ``COMMON_ZIPF`` or more is a stop word of its language (a query searches without
  it, ``analyzer.stop_words``);
- a query word weighs in the lexical share by how rare it is (``rarity_of``): fully below
  ``RARE_ZIPF``, not at all from ``COMMON_ZIPF`` up, linearly between. One shared everyday word
  ("night", "book", "weekend") is then no topic, while a rare one ("contraseñas") still is.

English keeps the classic function-word list below and no rarity: its figures were measured with
them, and the embedding model reads English, so meaning, not word frequency, tells an everyday
English prompt apart (an English rarity lowered the dev set's recall and precision).
"""

from __future__ import annotations

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


def rarity_of(frequency: float) -> float:
    """The share of its weight a word with this Zipf frequency keeps in the lexical share: 1 below
    ``RARE_ZIPF``, 0 from ``COMMON_ZIPF`` up, linear between (``word_frequency.rarity``)."""
    if frequency <= RARE_ZIPF:
        return 1.0
    if frequency >= COMMON_ZIPF:
        return 0.0
    return (COMMON_ZIPF - frequency) / (COMMON_ZIPF - RARE_ZIPF)
