"""Explain one prepare for operators: the head read, every candidate in search order and what
the builder did with it (admitted, duplicate or skipped, and why), with the byte budget.

A thin renderer of ``powercontext.prepare.explain_selectors`` — the same function the admin page
"Explain a prepare" renders — which reads exactly what ``POST /v1/context/prepare`` reads and
runs the same builder. Nothing is written and no text is shown unless ``--show-text`` is given
(then only each hit's first 40 characters).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from powercontext.prepare.builder import (
    DEFAULT_MAX_BYTES,
    MAX_MAX_BYTES,
    MIN_MAX_BYTES,
    BuilderInvariantError,
)
from powercontext.prepare.explain_selectors import PREVIEW_CHARS, ExplainReport, prepare_explain


def preview(text: str) -> str:
    """A hit's text quoted for the terminal: letters of every script as they are ("använder",
    "数据库"); quotes, backslashes, control and format characters (newlines, terminal escapes,
    bidirectional overrides), line and paragraph separators, surrogates and unassigned code
    points escaped, so nothing in a hit acts on the terminal or reorders the line."""
    shown = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in '"\\':
            shown.append("\\" + ch)
        elif category[0] == "C" or category in ("Zl", "Zp"):
            shown.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            shown.append(ch)
    return '"' + "".join(shown) + '"'


class Command(BaseCommand):
    help = "Explain one prepare: each Memory/Experience candidate and the builder's decision on it."
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scope", required=True)
        parser.add_argument("--query", required=True)
        parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES)
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument(
            "--show-text", action="store_true", help=f"Also show each hit's first {PREVIEW_CHARS} characters."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        scope, query, max_bytes = options["scope"], options["query"], options["max_bytes"]
        if not scope.strip() or not query.strip():
            raise CommandError("--scope and --query must not be blank")
        if not MIN_MAX_BYTES <= max_bytes <= MAX_MAX_BYTES:
            raise CommandError(f"--max-bytes must be within {MIN_MAX_BYTES}..{MAX_MAX_BYTES}")
        try:
            report = prepare_explain(
                scope_id=scope, query=query, max_bytes=max_bytes, show_text=options["show_text"]
            )
        except BuilderInvariantError as exc:
            raise CommandError(f"builder invariant failure: {exc}") from exc
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), ensure_ascii=False))
            return
        self.write_table(report)

    def write_table(self, report: ExplainReport) -> None:
        prepared = report.explanation.prepared
        vectors = f" ({report.vector_cache_label})" if report.vector_cache_label else ""
        self.stdout.write(
            f"scope {report.scope_id}  search {report.search_mode}{vectors}  memory head {report.head}"
        )
        self.stdout.write(
            f"status {prepared.status}  content_bytes {prepared.content_bytes} / max_bytes "
            f"{report.explanation.max_bytes}  admitted {len(report.explanation.admitted)}"
        )
        self.stdout.write(f"relevance floor {report.floor_label}")
        self.stdout.write(f"feedback {report.feedback_label}")
        self.stdout.write(f"pack cut {report.cut_label}")
        columns = (
            "source", "#", "try", "citation", "score", "by", "sim", "lex", "chars", "uses", "reports", "prior",
            "evid", "decision",
        )  # fmt: skip
        rows = [
            (
                row.source,
                row.rank,
                row.attempt,
                row.citation,
                row.score,
                row.matched_by,
                row.similarity,
                row.lexical_share,
                row.chars,
                row.uses,
                row.reports,
                row.prior,
                row.estimate,
                row.outcome + (f"  {preview(row.preview)}" if row.preview is not None else ""),
            )
            for row in report.rows()
        ]
        widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
        for cells in (columns, *rows):
            self.stdout.write(
                "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()
            )
