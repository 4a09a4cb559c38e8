"""Redact the captured Sources stored before capture redacted them (see docs/redaction.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from powercontext.memory.sources import sources_redact_stored


class Command(BaseCommand):
    help = (
        "Replace every secret in the stored Sources by its [REDACTED:<type>] marker (Sources "
        "captured before capture redacted them). Idempotent; prints how many rows changed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, default=200, help="rows per transaction")

    def handle(self, *args: Any, **options: Any) -> None:
        changed = sources_redact_stored(batch=max(options["batch"], 1))
        self.stdout.write(f"redacted {changed} stored source(s)")
