"""Run one pass of the background pipeline in this process (the embedded default's scheduler)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from powercontext.core.management.scoped import ScopedCommand
from powercontext.pipeline import generators, runner
from powercontext.pipeline.config import pipeline_config


class Command(ScopedCommand):
    help = (
        "Run one pipeline pass: Phase 1 over the eligible sessions (all scopes, or --scope), then "
        "Phase 2 for every scope with pipeline state. Prints outcome counts only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--ignore-idle", action="store_true", help="also take sessions that are not idle yet"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        scope_id = self.scope_id(options)
        if not generators.enabled():
            self.stdout.write("the pipeline is off (POWERCONTEXT_GENERATOR=off)")
            return
        with self.progress_bar(options, unit="sessions", desc="pipeline") as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            report = runner.run_pass(scope_id=scope_id, ignore_idle=options["ignore_idle"], progress=progress)
        phase2 = [m for m in report.phase2.values() if m is not None and not m.lost]
        summary = {
            "sessions": dict(sorted(report.outcomes.items())),
            "processed_sources": report.processed_sources,
            "scopes_materialized": len(phase2),
            "remembered": sum(m.remembered for m in phase2),
            "retired": sum(m.retired for m in phase2),
            "proposed": sum(m.proposed for m in phase2),
            "duplicates_skipped": sum(m.duplicates for m in phase2),
            "rejected": sum(m.rejected for m in phase2),
        }
        self.stdout.write(json.dumps(summary, sort_keys=True))
        if not report.outcomes and not options["ignore_idle"]:
            self.stderr.write(self._idle_hint(scope_id))

    def _idle_hint(self, scope_id: str | None) -> str:
        """Why a pass without --ignore-idle took no session: none is idle yet, or none is pending."""
        waiting = len(runner.scan(scope_id=scope_id, ignore_idle=True).phase1)
        if not waiting:
            return "no session has sources waiting to be extracted"
        idle = int(pipeline_config().idle.total_seconds())
        return (
            f"{waiting} session(s) have sources waiting but are not idle yet: a session is taken once "
            f"its newest source is {idle} s old (POWERCONTEXT_PIPELINE_IDLE_SECONDS); "
            "run again with --ignore-idle to take them now"
        )
