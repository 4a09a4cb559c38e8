"""The redactor's precision and recall on the fake-secret corpus (figures in docs/redaction.md).

A case counts as caught when its secret is gone from the redacted text; a benign line counts as a
false positive when the redactor changes it at all. Recall = caught / secret cases; precision =
caught / (caught + benign lines changed).
"""

from __future__ import annotations

from powercontext.core.redaction_detectors import redact
from tests.pipeline.secret_corpus import BENIGN, CORPUS, KNOWN_FALSE_POSITIVES

RECALL_FLOOR = 0.99
PRECISION_FLOOR = 0.98


def figures() -> tuple[int, int, int, int]:
    caught = sum(1 for case in CORPUS if case.secret not in redact(case.text).text)
    benign = (*BENIGN, *KNOWN_FALSE_POSITIVES)
    changed = sum(1 for line in benign if redact(line).text != line)
    return caught, len(CORPUS), changed, len(benign)


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 100
    assert len(BENIGN) + len(KNOWN_FALSE_POSITIVES) >= 100
    assert len({case.name for case in CORPUS}) == len(CORPUS)


def test_recall_and_precision_stay_above_their_floors() -> None:
    caught, cases, changed, _benign = figures()

    recall = caught / cases
    precision = caught / (caught + changed)

    assert recall >= RECALL_FLOOR, (caught, cases)
    assert precision >= PRECISION_FLOOR, (caught, changed)


def test_the_known_false_positives_are_still_false_positives() -> None:
    # When one stops being changed, move it to BENIGN so the strict test guards it.
    assert all(redact(line).text != line for line in KNOWN_FALSE_POSITIVES)
