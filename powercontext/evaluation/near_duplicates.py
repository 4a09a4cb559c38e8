"""Calibration of the near-duplicate threshold on labelled pairs (``data/near_duplicates.jsonl``).

Each line holds two proposals of one family, the scope they belong to, and whether a reviewer
would call them the same lesson (``duplicate``). Each pair is scored the way the Inbox scores
it (``review.selectors.nearness``): the term weights come from the scope's window, here every
distinct proposal of the file's pairs in that scope (a "postmortems" scope written into one
incident template, a "skills" scope written into one checklist template, an ordinary "ops"
scope). ``evaluate`` reports precision and recall at a threshold, with the plain Jaccard score
of the plain word sets alongside (the rule before issue 22) to show what the weighting and the
distinguishing fields change.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from review.selectors import nearness

DATA = Path(__file__).resolve().parent / "data" / "near_duplicates.jsonl"


@dataclass(frozen=True)
class Scored:
    id: str
    kind: str
    duplicate: bool
    weighted: float
    plain: float  # plain Jaccard of the word sets (no weights, no emphasis)


@dataclass(frozen=True)
class Report:
    threshold: float
    pairs: int
    duplicates: int
    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def precision(self) -> float:
        flagged = self.true_positives + self.false_positives
        return self.true_positives / flagged if flagged else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.duplicates if self.duplicates else 1.0


def load(path: Path = DATA) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _key(proposal: dict[str, Any]) -> str:
    return json.dumps(proposal, sort_keys=True)


def score_pairs(rows: list[dict[str, Any]]) -> list[Scored]:
    """Every pair's weighted (the product's) and plain Jaccard score."""
    corpus: defaultdict[str, dict[str, list[int]]] = defaultdict(dict)
    for row in rows:
        for side in ("a", "b"):
            corpus[row["scope"]][_key(row[side])] = nearness.sketch(nearness.terms(row[side], row["family"]))
    weights = {scope: nearness.Weights(sketches.values()) for scope, sketches in corpus.items()}
    uniform = nearness.Weights.uniform()
    out = []
    for row in rows:
        found = [nearness.terms(row[side], row["family"]) for side in ("a", "b")]
        words = [nearness.terms(row[side], row["family"], emphasis=0) for side in ("a", "b")]
        scope_weights = weights[row["scope"]]
        a, b = (nearness.sketched(nearness.sketch(t), len(t), scope_weights) for t in found)
        plain_a, plain_b = (nearness.sketched(nearness.sketch(t), len(t), uniform) for t in words)
        out.append(
            Scored(
                id=row["id"],
                kind=row["kind"],
                duplicate=bool(row["duplicate"]),
                weighted=nearness.score(a, b, scope_weights),
                plain=nearness.score(plain_a, plain_b, uniform),
            )
        )
    return out


def evaluate(scored: list[Scored], threshold: float, *, plain: bool = False) -> Report:
    """Precision and recall of "score >= threshold" against the labels."""
    hits = [(s.plain if plain else s.weighted) >= threshold for s in scored]
    return Report(
        threshold=threshold,
        pairs=len(scored),
        duplicates=sum(s.duplicate for s in scored),
        true_positives=sum(h and s.duplicate for h, s in zip(hits, scored, strict=True)),
        false_positives=sum(h and not s.duplicate for h, s in zip(hits, scored, strict=True)),
        false_negatives=sum(not h and s.duplicate for h, s in zip(hits, scored, strict=True)),
    )
