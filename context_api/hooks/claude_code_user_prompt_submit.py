#!/usr/bin/env python3
"""The Claude Code UserPromptSubmit hook's old path, kept so hook configurations that name it keep working. The hook
is ``powercontext_hooks.claude_code_user_prompt_submit`` of the client distribution in ``clients/python``;
new configurations run its console script ``powercontext-claude-code-prompt-hook`` (docs/agents/claude-code.md).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python" / "src"))

from powercontext_hooks.claude_code_user_prompt_submit import main  # noqa: E402 - after the path it is found on

if __name__ == "__main__":
    sys.exit(main())
