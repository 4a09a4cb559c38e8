#!/usr/bin/env python3
"""Claude Code ``Stop`` hook: ``codex_stop.py`` with Claude Code's component name in its
diagnostic. The Stop input (``session_id``, ``transcript_path``, ``last_assistant_message``) and
both transcript formats are read by the same code (docs/agents/claude-code.md).
"""

from __future__ import annotations

import sys

if __package__:
    from .codex_stop import CLAUDE_CODE, main
else:  # run as a script: its folder is on sys.path
    from codex_stop import CLAUDE_CODE, main  # type: ignore[import-not-found, no-redef]

if __name__ == "__main__":
    sys.exit(main(CLAUDE_CODE))
