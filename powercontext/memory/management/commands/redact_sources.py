"""Redact again the captured Sources stored under an older detector version (docs/redaction.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from powercontext.memory.sources import sources_redact_stored


class Command(BaseCommand):
    help = (
        "Redact again, with the current detectors, every stored Source whose redaction_version is "
        "older than theirs (Sources captured before an upgrade of the detectors, or before "
        "capture redacted). Idempotent; prints how many rows changed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, default=200, help="rows per transaction")

    def handle(self, *args: Any, **options: Any) -> None:
        result = sources_redact_stored(batch=max(options["batch"], 1))
        self.stdout.write(f"redacted {result.changed} stored source(s)")
