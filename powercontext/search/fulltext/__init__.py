"""Full text: the text analyzer and the full-text index of Memory and Experience.

``analyzer`` (terms, index tokens, the stop words queries drop: pure), ``languages`` (English's
stop words, the bounds of a common word: pure), ``word_frequency`` (how common a word is in
another language, from ``wordfreq``'s lists; the analyzer takes its common words from it, wired
below), ``language_id`` (a text's language, told by py3langid),
``engines`` (per database: SQLite FTS5, PostgreSQL full text), ``indexes`` (the two indexes and
the rows each should hold), ``queries`` (ranked, scope- and head-filtered reads, and the hits
every ranking builds), and ``bm25``: the one module every BM25 figure comes from (FTS5's
``bm25()``, the same formula in PostgreSQL's SQL and in Python, the index statistics, the IDF
weights of the lexical share).

The bottom room: it imports neither ``vectors`` nor ``ranking``.
"""

from powercontext.search.fulltext import analyzer, word_frequency

analyzer.use_common_words(word_frequency.common_words)
