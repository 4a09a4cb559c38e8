"""Forget session recovery notes: a whole scope's, some sessions' of it, or (``--expired``) every
session whose notes were last written before the pipeline's retention
(``POWERCONTEXT_PIPELINE_RETENTION_DAYS``). The pipeline's Phase 2 already forgets polluted and
expired sessions of the scopes it runs; this is the operator's control for the rest."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from powercontext.recovery.models import RecoverySession
from powercontext.recovery.services import notes_forget, notes_prune_within


class Command(BaseCommand):
    help = "Delete the session recovery notes of a scope (or of some of its sessions), or the expired ones."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scope", help="The scope whose notes to forget.")
        parser.add_argument(
            "--session", action="append", default=None, help="Only this session (repeatable)."
        )
        parser.add_argument(
            "--expired", action="store_true", help="Forget every session last written before the retention."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["expired"]:
            if options["scope"] or options["session"]:
                raise CommandError("--expired takes no --scope or --session")
            pipeline: dict[str, Any] = settings.POWERCONTEXT_PIPELINE
            before = timezone.now() - timedelta(days=pipeline["retention_days"])
            scopes = sorted(
                set(RecoverySession.objects.filter(updated_at__lt=before).values_list("scope_id", flat=True))
            )
            removed = 0
            for scope_id in scopes:
                with transaction.atomic(durable=True):
                    removed += notes_prune_within(scope_id=scope_id, before=before)
            self.stdout.write(f"forgot {removed} expired sessions")
            return
        if not options["scope"]:
            raise CommandError("give --scope (and optionally --session), or --expired")
        removed = notes_forget(scope_id=options["scope"], session_ids=options["session"])
        self.stdout.write(f"forgot {removed} sessions")
