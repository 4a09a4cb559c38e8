"""Evaluate what prepare gives agents on LoCoMo-shaped conversations (evidence recall in packs).

The protocol is in ``powercontext.evaluation.retrieval_eval``. Run it against a throwaway
database (e.g. ``POWERCONTEXT_DATA_DIR=/tmp/eval``): the scopes it writes are fresh per run and
are left in place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from powercontext.evaluation import retrieval_eval


class Command(BaseCommand):
    help = "Score prepare's evidence recall on a LoCoMo-format file (fresh scopes, in process)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--locomo", required=True, help="path of a LoCoMo-format JSON file")
        parser.add_argument("--json", dest="json_path", help="also write the results to this file")
        parser.add_argument(
            "--run-id",
            help="scope id infix (default: random); a run id used before reuses its scopes (same file)",
        )
        parser.add_argument(
            "--negatives",
            action="store_true",
            help="also ask the negative prompt sets (powercontext/evaluation/data) and report empty rates",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["locomo"])
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            conversations = retrieval_eval.parse_conversations(data)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc
        report = retrieval_eval.evaluate(
            conversations,
            run_id=options["run_id"],
            progress=lambda line: self.stderr.write(line),
            negatives=options["negatives"],
        )
        summary = report.as_dict()
        self.stdout.write(retrieval_eval.render_table(summary))
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
