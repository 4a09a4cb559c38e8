"""Rebuild (and optionally verify) the projections prepare reads from authoritative rows: the
search index (full text, vectors) from Memory and Experience rows, and the feedback counters from
the feedback log (``powercontext.feedback``). It lives with prepare because prepare is what reads
both; each projection's own service does the work."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from powercontext import search
from powercontext.core.management.scoped import ScopedCommand
from powercontext.feedback import services as feedback_services
from powercontext.search.locking import maintenance_lock
from powercontext.search.vectors import vector_cache


class Command(ScopedCommand):
    help = (
        "Rebuild the full-text index from authoritative Memory rows and the feedback counters from "
        "the feedback log (all scopes, or --scope). With --verify-only, report drift without "
        "writing; add --repair to rebuild drifted scopes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--verify-only", action="store_true", help="compare only; write nothing")
        parser.add_argument("--repair", action="store_true", help="with --verify-only: rebuild what drifted")

    def _say_waiting(self) -> None:
        self.stderr.write("another index rebuild or verify is running: waiting for it to finish")

    def handle(self, *args: Any, **options: Any) -> None:
        scope_id = self.scope_id(options)
        if options["verify_only"]:
            with maintenance_lock(on_wait=self._say_waiting):  # waits for a rebuild or verify in progress
                report = search.verify_index(scope_id=scope_id, repair=options["repair"])
            counters = feedback_services.counters_verify_all(scope_id=scope_id, repair=options["repair"])
            body = {**report.as_dict(), "feedback_counters": counters.as_dict()}
            body["ok"] = report.ok and counters.ok
            self.stdout.write(json.dumps(body, sort_keys=True))
            if (not report.ok and not report.repaired) or (not counters.ok and not counters.repaired):
                raise CommandError(
                    "the search index or the feedback counters have drifted; run again with --repair"
                )
            return
        if options["repair"]:
            raise CommandError("--repair goes with --verify-only (a rebuild always repairs)")
        total = search.count_expected(scope_id)
        with self.progress_bar(options, total=total, unit="rows", desc="rebuild") as bar:
            with maintenance_lock(on_wait=self._say_waiting):
                written = search.rebuild_index(scope_id=scope_id, progress=bar.update)
        self.stdout.write(f"rebuilt {written} index rows")
        counted = feedback_services.counters_rebuild_all(scope_id=scope_id)
        self.stdout.write(f"rebuilt {counted} feedback counters from the feedback log")
        bound = vector_cache.cache_bound_bytes() / vector_cache.MIB
        self.stdout.write(f"vector search: in-process exact; cache bound per process {bound:g} MiB")
