"""The pack's cut: where a prepare stops admitting Memory hits because the evidence has run out.

Pure module: standard library only. The relevance floor (``powercontext.search.relevance``)
decides whether a hit is about the query at all; past it, a related prompt used to get every
slot filled (eight items, of which about one in nine was evidence on the dev conversations).
The cut estimates, for each Memory hit the floor admitted, the chance that it is evidence for
the prompt, and leaves out every hit but the first whose estimate is below the threshold
(``POWERCONTEXT_PACK_CUT``; 0 turns the cut off).

The estimate is a logistic model of eleven figures of the hit, all read from the ranking and
the hit itself (nothing is searched again): its position among the admitted hits
(``log(1 + position)``), its fused score and that score relative to the best hit's, its raw
similarity and how far below the best hit's it is, its lexical share, its length (characters,
capped at ``LENGTH_CAP``: a two-word turn rarely carries a fact); whether both channels (full
text and vectors) found it, whether it asks a question itself (a question rarely carries the
answer), whether its speaker label names someone the prompt names, and how many better-placed
hits were remembered within ``NEIGHBOUR_SPAN`` entries of it (a fact and its context sit
together). The coefficients were fitted on the
LoCoMo dev conversations by ``eval_retrieval --pack-cut`` (``evaluation.pack_cut``):
leave-one-conversation-out for the figures in docs/retrieval.md ("The pack's cut"), then on all
five for the values below. The model was fitted on hybrid rankings
(fused scores in (0, 1], similarities measured) of English prompts, so selection applies the cut
only there: full-text-only rankings (BM25 scores, no similarity) and prompts in other languages
(whose similarities sit on another scale) keep the relevance floor as their only stop.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

LENGTH_CAP = 400  # characters: longer hits count as this long
NEIGHBOUR_SPAN = 2  # entries either side in the head's order: a better hit there is a neighbour
# A question: a full-width question mark, or an ASCII one that ends a sentence (followed by
# the end, white space, a quote or a closing bracket; not "?" inside a URL's query string).
_QUESTION = re.compile(r"\uff1f|\?(?=$|[\s\"')\]\u00bb\u201d])")


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
    both_channels: float  # 1 when full text and vectors both found it
    asks: float  # 1 when a question mark ends one of its sentences (``asks``)
    speaker: float  # 1 when it opens with a speaker label whose words the prompt names
    near_better: float  # better-placed hits within NEIGHBOUR_SPAN entries of it in the head


# ``manage.py eval_retrieval --locomo locomo_dev5.json --pack-cut`` (``evaluation.pack_cut``).
EVIDENCE_MODEL = EvidenceModel(
    intercept=-6.1953,
    position=-0.7025,
    relative_score=1.1511,
    score=2.776,
    similarity=-0.4098,
    similarity_gap=1.2696,
    lexical_share=1.8297,
    length=0.6988,
    both_channels=-0.5466,
    asks=-0.5288,
    speaker=1.1319,
    near_better=0.5186,
)


@dataclass(frozen=True)
class CutFigures:
    """What the cut reads of one admitted hit."""

    score: float
    similarity: float | None
    lexical_share: float | None
    chars: int
    both_channels: bool = False
    asks: bool = False
    speaker: bool = False
    position: int | None = None  # in the head's order (None: unknown)


FIGURES = (
    "position",
    "relative_score",
    "score",
    "similarity",
    "similarity_gap",
    "lexical_share",
    "length",
    "both_channels",
    "asks",
    "speaker",
    "near_better",
)


def figures(hits: Sequence[CutFigures]) -> list[tuple[float, ...]]:
    """Each hit's figures in ``FIGURES`` order, as the model reads them (``hits`` in ranking
    order: the first is the best). The calibration (``evaluation.pack_cut``) fits on these."""
    if not hits:
        return []
    best_score = hits[0].score
    best_similarity = max((hit.similarity or 0.0) for hit in hits)
    places = [hit.position for hit in hits]
    rows: list[tuple[float, ...]] = []
    for position, hit in enumerate(hits):
        similarity = hit.similarity or 0.0
        rows.append(
            (
                math.log1p(position),
                hit.score / best_score if best_score > 0 else 0.0,
                hit.score,
                similarity,
                similarity - best_similarity,
                hit.lexical_share or 0.0,
                min(hit.chars, LENGTH_CAP) / 100,
                float(hit.both_channels),
                float(hit.asks),
                float(hit.speaker),
                float(_near_better(places, position)),
            )
        )
    return rows


def _near_better(places: Sequence[int | None], index: int) -> int:
    """How many hits ranked before the one at ``index`` were remembered within
    ``NEIGHBOUR_SPAN`` entries of it (``places``: the hits' positions in the head; 0 when its
    place is unknown)."""
    at = places[index]
    if at is None:
        return 0
    return sum(1 for place in places[:index] if place is not None and abs(place - at) <= NEIGHBOUR_SPAN)


def asks(text: str) -> bool:
    """Whether a hit's text asks a question (a question mark that ends a sentence)."""
    return ("?" in text or "\uff1f" in text) and _QUESTION.search(text) is not None


def estimate(row: Sequence[float], model: EvidenceModel = EVIDENCE_MODEL) -> float:
    """The logistic estimate of one hit's ``figures`` row."""
    return _logistic(model.intercept, _coefficients(model), row)


def estimates(hits: Sequence[CutFigures], model: EvidenceModel = EVIDENCE_MODEL) -> list[float]:
    """The estimated chance that each hit (in ranking order) is evidence for the prompt."""
    return estimates_of(figures(hits), model)


def estimates_of(rows: Sequence[Sequence[float]], model: EvidenceModel = EVIDENCE_MODEL) -> list[float]:
    """``estimate`` of each ``figures`` row."""
    coefficients = _coefficients(model)
    return [_logistic(model.intercept, coefficients, row) for row in rows]


def _coefficients(model: EvidenceModel) -> tuple[float, ...]:
    return tuple(getattr(model, name) for name in FIGURES)


def _logistic(intercept: float, coefficients: Sequence[float], row: Sequence[float]) -> float:
    logit = intercept + sum(c * x for c, x in zip(coefficients, row, strict=True))
    return 1.0 / (1.0 + math.exp(-logit)) if logit > -700 else 0.0


def keeps(values: Sequence[float], threshold: float) -> list[bool]:
    """Which hits stay in the pack: the first always, every other one whose estimate reaches
    ``threshold`` (all of them when the threshold is 0: the cut off)."""
    return [index == 0 or threshold <= 0 or value >= threshold for index, value in enumerate(values)]
