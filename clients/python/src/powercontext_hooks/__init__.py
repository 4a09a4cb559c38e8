"""The PowerContext hooks for Codex and Claude Code (``UserPromptSubmit`` and ``Stop``).

Standard library only: each module also runs as a plain script (``python3 .../codex_stop.py``)
with any ``python3`` 3.10 or newer, and importing this package never imports the HTTP client.
"""
