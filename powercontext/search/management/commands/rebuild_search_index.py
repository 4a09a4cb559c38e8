"""Rebuild (and optionally verify) the derived search index from authoritative rows."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from powercontext import search
from powercontext.core.management.scoped import ScopedCommand
from powercontext.search import vector_cache
from powercontext.search.locking import maintenance_lock


class Command(ScopedCommand):
    help = (
        "Rebuild the full-text index from authoritative Memory rows (all scopes, or --scope). "
        "With --verify-only, report drift without writing; add --repair to rebuild drifted scopes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--verify-only", action="store_true", help="compare only; write nothing")
        parser.add_argument("--repair", action="store_true", help="with --verify-only: rebuild what drifted")

    def handle(self, *args: Any, **options: Any) -> None:
        scope_id = self.scope_id(options)
        if options["verify_only"]:
            with maintenance_lock():  # waits for a rebuild or verify in progress
                report = search.verify_index(scope_id=scope_id, repair=options["repair"])
            self.stdout.write(json.dumps(report.as_dict(), sort_keys=True))
            if not report.ok and not report.repaired:
                raise CommandError("the search index has drifted; run again with --repair")
            return
        if options["repair"]:
            raise CommandError("--repair goes with --verify-only (a rebuild always repairs)")
        total = search.count_expected(scope_id)
        with self.progress_bar(options, total=total, unit="rows", desc="rebuild") as bar:
            with maintenance_lock():
                written = search.rebuild_index(scope_id=scope_id, progress=bar.update)
        self.stdout.write(f"rebuilt {written} index rows")
        bound = vector_cache.cache_bound_bytes() / vector_cache.MIB
        self.stdout.write(f"vector search: in-process exact; cache bound per process {bound:g} MiB")
