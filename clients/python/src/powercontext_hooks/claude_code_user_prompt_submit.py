#!/usr/bin/env python3
"""Claude Code ``UserPromptSubmit`` hook: ``codex_user_prompt_submit.py`` with Claude Code's
component name in its diagnostic. Claude Code reads the same ``hookSpecificOutput`` answer
(docs/agents/claude-code.md).
"""

from __future__ import annotations

import sys

if __package__:
    from .codex_user_prompt_submit import CLAUDE_CODE, main
else:  # run as a script: its folder is on sys.path
    from codex_user_prompt_submit import CLAUDE_CODE, main  # type: ignore[import-not-found, no-redef]

if __name__ == "__main__":
    sys.exit(main(CLAUDE_CODE))
