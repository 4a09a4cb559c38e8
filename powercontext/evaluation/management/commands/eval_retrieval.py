"""Evaluate what prepare gives agents on LoCoMo-shaped conversations (evidence recall in packs).

The protocol is in ``powercontext.evaluation.retrieval_eval``; with ``--pack-cut`` the command
calibrates the pack's cut instead (``pack_cut``: the evidence model fitted
leave-one-conversation-out, the frontier per threshold, the coefficients); with ``--feedback`` (or
``--feedback-caps``) the command runs the feedback replay instead (``feedback_eval``: agents
report ``used`` and ``wrong`` after each prepare; the later half of each conversation scored
with the use prior off and on). Run it against a throwaway database (e.g.
``POWERCONTEXT_DATA_DIR=/tmp/eval``): the scopes it writes are fresh per run and are left in
place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from powercontext.evaluation import feedback_eval, pack_cut, retrieval_eval


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
        parser.add_argument(
            "--pack-cut",
            action="store_true",
            help="calibrate the pack's cut: fit its evidence model leave-one-conversation-out and"
            " score the packs at each threshold (--pack-cut-thresholds)",
        )
        parser.add_argument(
            "--pack-cut-thresholds",
            help="with --pack-cut (implied): comma-separated thresholds, e.g. 0,0.03,0.035,0.05"
            f" (default {','.join(map(str, pack_cut.DEFAULT_THRESHOLDS))})",
        )
        parser.add_argument(
            "--feedback",
            action="store_true",
            help="replay the conversations with agents' feedback, prior off vs the configured cap"
            " (later half of each conversation scored)",
        )
        parser.add_argument(
            "--feedback-caps",
            help="with --feedback (implied): comma-separated prior caps to replay, e.g. 0,0.05,0.1,0.2"
            " (0, the prior off, is always replayed as the baseline)",
        )
        parser.add_argument(
            "--feedback-order",
            choices=feedback_eval.ORDERS,
            default=feedback_eval.ORDER_INTERLEAVED,
            help="with --feedback: ask each conversation's questions with the categories spread evenly"
            " (interleaved, the default) or as the file lists them (file: by category, in blocks)",
        )
        parser.add_argument(
            "--feedback-wrong-every",
            type=int,
            default=feedback_eval.WRONG_EVERY,
            help="with --feedback: report one cited non-evidence item wrong in every N-th pack (0: never)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["locomo"])
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            conversations = retrieval_eval.parse_conversations(data)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc
        if options["pack_cut"] or options["pack_cut_thresholds"]:
            self._pack_cut(conversations, options)
            return
        if options["feedback"] or options["feedback_caps"]:
            self._feedback(conversations, options)
            return
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

    def _pack_cut(self, conversations: list[retrieval_eval.Conversation], options: dict[str, Any]) -> None:
        if options["negatives"] or options["feedback"] or options["feedback_caps"]:
            raise CommandError("--pack-cut combines with neither --negatives nor --feedback")
        try:
            thresholds = (
                pack_cut.parse_thresholds(options["pack_cut_thresholds"])
                if options["pack_cut_thresholds"]
                else pack_cut.DEFAULT_THRESHOLDS
            )
        except ValueError as exc:
            raise CommandError(f"--pack-cut-thresholds: {exc}") from exc
        asked = pack_cut.ask(
            conversations, run_id=options["run_id"], progress=lambda line: self.stderr.write(line)
        )
        summary = pack_cut.frontier(asked, thresholds).as_dict()
        self.stdout.write(pack_cut.render_table(summary))
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")

    def _feedback(self, conversations: list[retrieval_eval.Conversation], options: dict[str, Any]) -> None:
        if options["negatives"]:
            raise CommandError("--negatives does not combine with --feedback")
        if options["feedback_wrong_every"] < 0:
            raise CommandError("--feedback-wrong-every: 0 (never) or a number of packs")
        try:
            caps = (
                feedback_eval.parse_caps(options["feedback_caps"])
                if options["feedback_caps"]
                else feedback_eval.default_caps()
            )
        except ValueError as exc:
            raise CommandError(f"--feedback-caps: {exc}") from exc
        report = feedback_eval.replay(
            conversations,
            caps=caps,
            order=options["feedback_order"],
            wrong_every=options["feedback_wrong_every"],
            run_id=options["run_id"],
            progress=lambda line: self.stderr.write(line),
        )
        summary = report.as_dict()
        self.stdout.write(feedback_eval.render_table(summary))
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
