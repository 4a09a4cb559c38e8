#!/usr/bin/env python3
"""Claude Code ``UserPromptSubmit`` hook: ``codex_user_prompt_submit.py`` with Claude Code's
component name in its diagnostic. Claude Code reads the same ``hookSpecificOutput`` answer
(docs/agents/claude-code.md).
"""

from __future__ import annotations

import sys

if __package__:
    from . import codex_user_prompt_submit as hook
else:  # run as a script: its folder is on sys.path
    import codex_user_prompt_submit as hook  # type: ignore[import-not-found, no-redef]


def main() -> int:
    """The console script's entry point: the shared hook, named for Claude Code."""

    return hook.main(hook.CLAUDE_CODE)


if __name__ == "__main__":
    sys.exit(main())
