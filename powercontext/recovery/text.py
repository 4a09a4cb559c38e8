"""Text helpers of session recovery (pure: stdlib only): UTF-8-safe clipping, literal line search
with context, and the recovery hint's rendering under an exact byte cap."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

KeyT = TypeVar("KeyT")

ELLIPSIS = "…"
_ELLIPSIS_BYTES = len(ELLIPSIS.encode("utf-8"))


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


def clip_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits ``max_bytes`` (never a partial
    character)."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    return encoded[: max(max_bytes, 0)].decode("utf-8", "ignore")


def excerpt(line: str, start: int, max_bytes: int) -> str:
    """``line`` cut to ``max_bytes`` UTF-8 bytes around the character offset ``start`` (a match),
    with ``…`` where text was cut; markers count toward the budget."""
    if utf8_size(line) <= max_bytes:
        return line
    begin = max(0, start - 80)
    prefix = ELLIPSIS if begin > 0 else ""
    body_budget = max_bytes - utf8_size(prefix) - _ELLIPSIS_BYTES
    body = clip_utf8(line[begin:], body_budget)
    suffix = ELLIPSIS if begin + len(body) < len(line) else ""
    if not suffix:
        body = clip_utf8(line[begin:], max_bytes - utf8_size(prefix))
    return prefix + body + suffix


@dataclass(frozen=True)
class LineMatch:
    line: int  # 1-based
    text: str
    before: tuple[str, ...]
    after: tuple[str, ...]


def find_lines(
    content: str, query: str, *, ignore_case: bool, context_lines: int, line_max_bytes: int
) -> Iterator[LineMatch]:
    """Each line of ``content`` that contains ``query`` literally (case-folded when
    ``ignore_case``), with up to ``context_lines`` lines either side, each line clipped."""
    lines = content.split("\n")
    needle = query.casefold() if ignore_case else query
    for index, line in enumerate(lines):
        haystack = line.casefold() if ignore_case else line
        found = haystack.find(needle)
        if found < 0:
            continue
        # casefold may change lengths; the offset only places the excerpt, so clamp it.
        start = min(found, len(line))
        before = lines[max(0, index - context_lines) : index]
        after = lines[index + 1 : index + 1 + context_lines]
        yield LineMatch(
            line=index + 1,
            text=excerpt(line, start, line_max_bytes),
            before=tuple(clip_utf8(x, line_max_bytes) for x in before),
            after=tuple(clip_utf8(x, line_max_bytes) for x in after),
        )


@dataclass(frozen=True)
class LineSearch:
    """A literal, line-by-line search of notes or history: the query, whether case is folded,
    the context lines either side of a match and the most matches one answer holds."""

    query: str
    ignore_case: bool = False
    context_lines: int = 1
    limit: int = 50

    def first_matches(
        self, texts: Iterable[tuple[KeyT, str]], line_max_bytes: int
    ) -> tuple[list[tuple[KeyT, LineMatch]], bool]:
        """The first ``limit`` matching lines of ``texts`` (key, content) in their order, each with
        its text's key, and whether more lines matched (the answer is truncated)."""
        found: list[tuple[KeyT, LineMatch]] = []
        for key, content in texts:
            for match in find_lines(
                content,
                self.query,
                ignore_case=self.ignore_case,
                context_lines=self.context_lines,
                line_max_bytes=line_max_bytes,
            ):
                if len(found) == self.limit:
                    return found, True
                found.append((key, match))
        return found, False


def safe_label(value: str, max_chars: int = 64) -> str:
    """A metadata string fit for one hint line: control characters become spaces, clipped."""
    cleaned = "".join(" " if (ord(c) < 32 or ord(c) == 127) else c for c in value).strip()
    return cleaned[:max_chars] + (ELLIPSIS if len(cleaned) > max_chars else "")


@dataclass(frozen=True)
class HintNote:
    path: str
    size_bytes: int
    version: int
    updated_at: str  # ISO 8601, UTC


@dataclass(frozen=True)
class HintHistory:
    """The extent of a session's history as the hint states it (``history.history_extent``):
    how many sources, the first and last positions, and the window ids seen."""

    count: int
    first_position: int | None
    last_position: int | None
    windows: Sequence[str]  # window ids in order of first appearance
    window_count: int


def render_hint(
    *, notes: Sequence[HintNote], note_count: int, total_bytes: int, history: HintHistory, max_bytes: int
) -> tuple[str, bool]:
    """The recovery hint: a directory of the session's notes and history, metadata only.

    Deterministic for the same input; its UTF-8 size never exceeds ``max_bytes``. Notes are listed
    in the given order until the next line would not fit; then one line says how many of the
    ``note_count`` were left out (``notes`` may be a prefix of the session's notes, as long as it
    holds every note that could fit). Returns ``(text, truncated)``."""
    head = [
        "PowerContext session recovery hint (metadata only: read notes and history with the session tools).",
        f"Notes: {note_count} ({total_bytes} bytes).",
    ]
    if history.count:
        shown = ", ".join(safe_label(w) for w in history.windows)
        more = history.window_count - len(history.windows)
        windows = f"{shown}{f' (+{more} more)' if more > 0 else ''}" if history.window_count else "none"
        head.append(
            f"History: {history.count} sources, positions {history.first_position}..{history.last_position}; "
            f"windows: {windows}."
        )
    else:
        head.append("History: no captured sources.")
    tail_template = "- ... {} more notes not listed (use list_session_notes)."
    lines = list(head)
    used = utf8_size("\n".join(lines))
    truncated = False
    total = max(note_count, len(notes))
    for index, note in enumerate(notes):
        line = f"- {note.path} ({note.size_bytes} bytes, v{note.version}, {note.updated_at})"
        remaining = total - index - 1
        reserve = utf8_size("\n" + tail_template.format(remaining)) if remaining else 0
        if used + utf8_size("\n" + line) + reserve > max_bytes:
            lines.append(tail_template.format(total - index))
            truncated = True
            break
        lines.append(line)
        used += utf8_size("\n" + line)
    else:
        if total > len(notes):  # the prefix ran out before the cap: say what was not fetched
            lines.append(tail_template.format(total - len(notes)))
            truncated = True
    text = "\n".join(lines)
    if utf8_size(text) > max_bytes:  # only a tiny max_bytes gets here: cut, never exceed
        text, truncated = clip_utf8(text, max_bytes), True
    return text, truncated
