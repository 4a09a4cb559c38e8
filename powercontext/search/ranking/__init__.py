"""Ranking: what combines full-text and vector rankings into prepare's and search's candidates.

``fusion`` (reciprocal-rank fusion, the search modes), ``rerank`` and ``rerank_state`` (prepare's
Memory ranking: deep pools, neighbour smoothing, a speaker prior; what it keeps per head) and
``relevance`` (the relevance floor: similarity, lexical share, the query's language).

The top room: it may import ``vectors`` and ``fulltext``; neither imports it.
"""
