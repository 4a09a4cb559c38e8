"""The check every database vector path must pass against the in-process reference."""

from __future__ import annotations

from powercontext.search import embedding, vector_inprocess
from powercontext.search.vector_backend import Ranker


def assert_same_memory_ranking(
    ranker: Ranker, scope: str, query: str, limit: int
) -> tuple[int, list[tuple[int, float]]]:
    """``ranker`` ranks the same rows as the in-process path: same head revision, same ids in
    the same order, scores within 1e-5 and never negative. Returns ``ranker``'s ranking."""
    model = embedding.embedder()
    assert model is not None
    vector = model.embed_query(query)
    ours = ranker.rank_memory(scope, embedding.MODEL_ID, vector, limit)
    reference = vector_inprocess.rank_memory(scope, embedding.MODEL_ID, vector, limit)
    assert ours is not None and reference is not None
    assert ours[0] == reference[0]
    assert [pk for pk, _ in ours[1]] == [pk for pk, _ in reference[1]]
    for (_, score), (_, expected) in zip(ours[1], reference[1], strict=True):
        assert abs(score - expected) < 1e-5 and score >= 0.0
    return ours
