"""Report the redactor's recall and false positives on the secret corpus.

``manage.py eval_redaction`` runs the product's ``redact`` over
``powercontext/evaluation/data/secrets.jsonl`` and prints, per shape, the samples caught and the
near misses changed, then the totals; ``--json`` prints the same as JSON; ``--check`` exits
non-zero when recall is under 0.99 or any near miss was changed; ``--time`` also redacts 1 MB of
the corpus mixed with adversarial repetitions and prints the seconds. Prints shape names and
counts only, never a sample. Reads no database.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from powercontext.core.redaction_detectors import redact
from powercontext.evaluation import secret_corpus

MEGABYTE = 1_000_000


class Command(BaseCommand):
    help = "Recall and false positives of redaction on the secret corpus."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--check", action="store_true", help="exit non-zero if recall < 0.99 or a near miss changed"
        )
        parser.add_argument("--time", action="store_true", help="also time redact on 1 MB of mixed text")

    def handle(self, *args: Any, **options: Any) -> None:
        samples = secret_corpus.load()
        report = secret_corpus.evaluate(samples, lambda text: redact(text).text)
        out = report.as_dict()
        if options["time"]:
            text = secret_corpus.mixed_text(samples, MEGABYTE)
            started = time.perf_counter()
            redact(text)
            out["seconds_per_megabyte"] = round(time.perf_counter() - started, 3)
        if options["json"]:
            self.stdout.write(json.dumps(out, indent=2))
        else:
            self._table(report, out)
        if options["check"] and not report.passes:
            raise CommandError(
                f"redaction below the bar: recall {report.recall:.3f} (floor {secret_corpus.RECALL_FLOOR}), "
                f"{report.false_positives} near misses changed"
            )

    def _table(self, report: secret_corpus.Report, out: dict[str, Any]) -> None:
        self.stdout.write(f"{'shape':32} {'caught':>8} {'changed':>8}")
        for figures in sorted(report.shapes.values(), key=lambda f: f.shape):
            caught = f"{figures.caught}/{figures.samples}" if figures.samples else "-"
            changed = f"{figures.changed}/{figures.negatives}" if figures.negatives else "-"
            self.stdout.write(f"{figures.shape:32} {caught:>8} {changed:>8}")
        shapes = sum(1 for f in report.shapes.values() if f.samples)
        self.stdout.write(
            f"total: {report.caught}/{report.samples} secrets caught over {shapes} shapes "
            f"(recall {report.recall:.3f}); {report.false_positives}/{report.negatives} near misses changed"
        )
        if "seconds_per_megabyte" in out:
            self.stdout.write(f"redact on 1 MB of mixed text: {out['seconds_per_megabyte']} s")
