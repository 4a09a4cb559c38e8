#!/usr/bin/env python3
"""Claude Code ``Stop`` hook: ``codex_stop.py`` with Claude Code's component name in its
diagnostic. The Stop input (``session_id``, ``transcript_path``, ``last_assistant_message``) and
both transcript formats are read by the same code (docs/agents/claude-code.md).
"""

from __future__ import annotations

import sys

if __package__:
    from . import codex_stop as hook
else:  # run as a script: its folder is on sys.path
    import codex_stop as hook  # type: ignore[import-not-found, no-redef]


def main() -> int:
    """The console script's entry point: the shared hook, named for Claude Code."""

    return hook.main(hook.CLAUDE_CODE)


if __name__ == "__main__":
    sys.exit(main())
