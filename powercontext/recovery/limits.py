"""The limits of session recovery state, in one place (the contract documents the same numbers)."""

from __future__ import annotations

NOTE_MAX_BYTES = 65_536  # one note's content, UTF-8
SESSION_MAX_BYTES = 1_048_576  # the sum of a session's current note sizes, UTF-8
NOTES_MAX = 1_024  # notes per session
PATH_MAX_CHARS = 256  # a note path (ASCII by its pattern, so also bytes)
HINT_MAX_BYTES = 4_000  # the recovery hint, UTF-8
LINE_MAX_BYTES = 400  # one line of a search result, UTF-8, markers included
READ_MAX_BYTES = 65_536  # the largest byte budget of one history range read
READ_MAX_ITEMS = 200  # items of one history range read
SEARCH_MAX_SOURCES = 5_000  # sources one history search reads (the byte budget is a setting)
