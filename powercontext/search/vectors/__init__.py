"""Vectors: the local embedding model and the vector index of Memory and Experience.

``embedding`` (the model), ``model_build`` (its requantized file), ``vector_cache`` and
``vector_inprocess`` (per-scope matrices cached in process, exact search over them, or over
``shortlist``'s rows for a large scope),
``vector_index`` (the vectors expected, written, verified, rebuilt), ``queries`` (vector search
reads) and ``pending`` (the embedder that fills in missing vectors after the writers commit).

Above ``fulltext`` (its analyzer's language and script tests, its hit builders and index-row
helpers), below ``ranking``.
"""
