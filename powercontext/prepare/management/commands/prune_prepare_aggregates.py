"""Delete prepare aggregates older than the retention (``POWERCONTEXT_PREPARE_AUDIT_RETENTION_DAYS``,
default 30 days). Celery beat runs the same prune hourly in service mode."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from powercontext.prepare.stats import prune_expired


class Command(BaseCommand):
    help = "Delete prepare aggregates of hours older than the retention."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days", type=int, default=None, help="Keep this many days instead of the configured retention."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["days"]
        if days is not None and days < 1:
            raise CommandError("--days must be at least 1")
        deleted = prune_expired(days=days)
        self.stdout.write(f"deleted {deleted} prepare aggregate row(s)")
