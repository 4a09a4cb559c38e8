"""Report precision and recall of the near-duplicate rule on the labelled pairs.

``manage.py eval_near_duplicates`` scores ``powercontext/evaluation/data/near_duplicates.jsonl``
at the configured threshold (``POWERCONTEXT_NEAR_DUPLICATE_THRESHOLD``); ``--sweep`` prints a
table over thresholds for the weighted score and the plain Jaccard score. Reads no database.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from powercontext.evaluation import near_duplicates
from review.selectors import near_window


class Command(BaseCommand):
    help = "Precision and recall of the near-duplicate threshold on the labelled pairs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--threshold", type=float, default=None, help="default: the setting")
        parser.add_argument("--sweep", action="store_true", help="a table over thresholds 0.30-0.95")

    def handle(self, *args: Any, **options: Any) -> None:
        scored = near_duplicates.score_pairs(near_duplicates.load())
        threshold = options["threshold"] if options["threshold"] is not None else near_window.threshold()
        if options["sweep"]:
            self.stdout.write("threshold  weighted P/R    plain P/R")
            for step in range(30, 100, 5):
                w = near_duplicates.evaluate(scored, step / 100)
                p = near_duplicates.evaluate(scored, step / 100, plain=True)
                self.stdout.write(
                    f"{step / 100:9.2f}  {w.precision:.2f}/{w.recall:.2f}      {p.precision:.2f}/{p.recall:.2f}"
                )
        report = near_duplicates.evaluate(scored, threshold)
        plain = near_duplicates.evaluate(scored, threshold, plain=True)
        self.stdout.write(
            f"{report.pairs} pairs ({report.duplicates} duplicates) at threshold {threshold:.2f}: "
            f"precision {report.precision:.3f}, recall {report.recall:.3f} "
            f"({report.false_positives} false positives, {report.false_negatives} missed); "
            f"plain Jaccard at the same threshold: precision {plain.precision:.3f}, recall {plain.recall:.3f}"
        )
        for s in sorted(scored, key=lambda s: -s.weighted):
            flagged = s.weighted >= threshold
            if flagged != s.duplicate:
                self.stdout.write(
                    f"  {'false positive' if flagged else 'missed'}: {s.id} ({s.kind}) {s.weighted:.2f}"
                )
