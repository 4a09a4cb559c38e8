"""The base of the maintenance commands that run over every scope or one (``--scope``) and draw
a progress bar on stderr (``--no-progress`` turns it off)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm


class ScopedCommand(BaseCommand):
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scope", dest="scope_id", help="one scope only (case-sensitive)")
        parser.add_argument("--no-progress", action="store_true", help="do not draw a progress bar")

    def scope_id(self, options: dict[str, Any]) -> str | None:
        """The ``--scope`` given (refused when blank), or None for every scope."""
        scope_id: str | None = options["scope_id"]
        if scope_id is not None and not scope_id.strip():
            raise CommandError("--scope must not be blank")
        return scope_id

    def progress_bar(self, options: dict[str, Any], **bar: Any) -> tqdm[Any]:
        return tqdm(disable=options["no_progress"], file=self.stderr._out, **bar)
