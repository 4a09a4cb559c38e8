"""Replay recorded prepare inputs through the very builder the endpoint runs.

Reads JSON Lines on stdin (one case per line: request, memory_ref, memory_hits,
experience_hits) and writes one JSON line per case, in order, to stdout:
``{"case_id", "response"}`` or ``{"case_id", "error": "invariant", "message"}``. No database.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand

from powercontext.prepare.replay import replay_lines


class Command(BaseCommand):
    help = "Replay JSON Lines prepare cases (stdin) through the prepared-context builder (stdout)."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def handle(self, *args: Any, **options: Any) -> None:
        stdin = options.get("stdin") or sys.stdin
        for line in replay_lines(stdin):
            self.stdout.write(line)
