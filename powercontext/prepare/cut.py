"""The pack's cut: where a prepare stops admitting Memory hits because the evidence has run out.

Pure module: standard library only. The relevance floor (``powercontext.search.relevance``)
decides whether a hit is about the query at all; past it, a related prompt used to get every
slot filled (eight items, of which about one in nine was evidence on the dev conversations).
The cut estimates, for each Memory hit the floor admitted, the chance that it is evidence for
the prompt, and leaves out every hit but the first whose estimate is below the threshold
(``POWERCONTEXT_PACK_CUT``; 0 turns the cut off).

The estimate is a logistic model of seven figures of the hit, all read from the ranking
(nothing is searched again): its position among the admitted hits (``log(1 + position)``), its
fused score and that score relative to the best hit's, its raw similarity and how far below
the best hit's it is, its lexical share, and its length (characters, capped at
``LENGTH_CAP``: a two-word turn rarely carries a fact). The coefficients were fitted on the
LoCoMo dev conversations, leave-one-conversation-out for the figures in docs/retrieval.md ("The
pack's cut"), then on all five for the values below. The model was fitted on hybrid rankings
(fused scores in (0, 1], similarities measured) of English prompts, so selection applies the cut
only there: full-text-only rankings (BM25 scores, no similarity) and prompts in other languages
(whose similarities sit on another scale) keep the relevance floor as their only stop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

LENGTH_CAP = 400  # characters: longer hits count as this long


@dataclass(frozen=True)
class EvidenceModel:
    """Logistic coefficients: estimate = 1 / (1 + exp(-(intercept + sum of coefficient x figure)))."""

    intercept: float
    position: float  # log(1 + position among the admitted hits, 0 = best)
    relative_score: float  # score / the best hit's score
    score: float  # fused score
    similarity: float  # raw cosine to the query (0 when not measured)
    similarity_gap: float  # similarity - the best similarity among the admitted hits (<= 0)
    lexical_share: float  # share of the query's word weight the hit covers (0 when not measured)
    length: float  # min(characters, LENGTH_CAP) / 100


EVIDENCE_MODEL = EvidenceModel(
    intercept=-6.2305,
    position=-0.4544,
    relative_score=1.5379,
    score=3.1482,
    similarity=-0.6631,
    similarity_gap=0.2492,
    lexical_share=1.3773,
    length=0.7872,
)


@dataclass(frozen=True)
class CutFigures:
    """What the cut reads of one admitted hit."""

    score: float
    similarity: float | None
    lexical_share: float | None
    chars: int


def estimates(hits: Sequence[CutFigures], model: EvidenceModel = EVIDENCE_MODEL) -> list[float]:
    """The estimated chance that each hit (in ranking order) is evidence for the prompt."""
    if not hits:
        return []
    best_score = hits[0].score
    best_similarity = max((hit.similarity or 0.0) for hit in hits)
    values = []
    for position, hit in enumerate(hits):
        similarity = hit.similarity or 0.0
        logit = (
            model.intercept
            + model.position * math.log1p(position)
            + model.relative_score * (hit.score / best_score if best_score > 0 else 0.0)
            + model.score * hit.score
            + model.similarity * similarity
            + model.similarity_gap * (similarity - best_similarity)
            + model.lexical_share * (hit.lexical_share or 0.0)
            + model.length * min(hit.chars, LENGTH_CAP) / 100
        )
        values.append(1.0 / (1.0 + math.exp(-logit)) if logit > -700 else 0.0)
    return values


def keeps(values: Sequence[float], threshold: float) -> list[bool]:
    """Which hits stay in the pack: the first always, every other one whose estimate reaches
    ``threshold`` (all of them when the threshold is 0: the cut off)."""
    return [index == 0 or threshold <= 0 or value >= threshold for index, value in enumerate(values)]
