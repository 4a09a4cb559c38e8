"""Replay prepared-context cases through the pure builder, JSON Lines in, JSON Lines out.

Pure module: standard library and ``powercontext.prepare.builder`` only; no Django, clock, environment or
I/O of its own (the management command owns stdin/stdout).

One case is one JSON object::

    {"case_id": ..., "request": {"scope_id": ..., "query": ..., "max_bytes": ...},
     "memory_ref": {"family", "artifact_id", "revision"} | null,
     "memory_hits": [{"memory_ref", "entry_id", "entry_version_id", "text", "score", "matched_by"}],
     "experience_hits": [{"artifact_ref": {...}, "content": {"situation", "action", "outcome", "lesson"}}]}

and yields exactly one output object, in input order:

- ``{"case_id": ..., "response": <PreparedContext.as_dict()>}`` when the builder succeeds;
- ``{"case_id": ..., "error": "invariant", "message": ...}`` when it raises BuilderInvariantError;
- ``{"case_id": ..., "error": "invalid_case", "message": ...}`` when the line is not JSON, not an
  object, or a field has the wrong shape (``case_id`` is null when it cannot be read);
- ``{"case_id": ..., "error": "internal", "message": <exception class name>}`` for anything else,
  so one bad case never ends the stream.

Parsing rules (the replay mirrors what the HTTP layer and the search service hand the builder):

- ``case_id`` is echoed back; it must be a string, an integer or null.
- ``request.max_bytes`` defaults to ``DEFAULT_MAX_BYTES``; a non-integer or a value outside
  ``MIN_MAX_BYTES..MAX_MAX_BYTES`` is ``invalid_case`` (the HTTP layer answers 422 for it, so the
  builder never sees it). ``scope_id`` and ``query`` are optional strings and are never used or
  echoed.
- ``memory_ref`` (top level and per hit) may be missing or null; a Memory hit without one is
  passed through as ``None`` and the builder reports an invariant failure.
- A missing or null ``entry_id``, ``entry_version_id``, ``text`` or Experience field is read as
  ``""``: an incomplete hit, which the builder skips. Any other non-string value is
  ``invalid_case``.
- ``memory_hits`` and ``experience_hits`` default to empty lists. Unknown keys are ignored, so
  golden files may carry ``expected`` or notes next to a case.
- Messages name fields and positions only; they never contain hit text, ids, scope or query.

Blank lines are skipped (they carry no case). Every output line ends with ``"\\n"``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from powercontext.core.families import EXPERIENCE
from powercontext.prepare.builder import (
    DEFAULT_MAX_BYTES,
    MAX_MAX_BYTES,
    MIN_MAX_BYTES,
    ArtifactRef,
    BuilderInvariantError,
    ExperienceContent,
    ExperienceHit,
    MemoryHit,
    PreparedContextBuilder,
)

ERROR_INVARIANT = "invariant"
ERROR_INVALID_CASE = "invalid_case"
ERROR_INTERNAL = "internal"


class ReplayCaseError(ValueError):
    """A case that cannot be turned into builder inputs. The message names fields, never values."""


@dataclass(frozen=True)
class ReplayCase:
    case_id: str | int | None
    memory_ref: ArtifactRef | None
    memory_hits: tuple[MemoryHit, ...]
    experience_hits: tuple[ExperienceHit, ...]
    max_bytes: int


def parse_case(case: object) -> ReplayCase:
    """Turn one decoded JSON case into builder inputs; raises ReplayCaseError."""
    if not isinstance(case, Mapping):
        raise ReplayCaseError("case is not a JSON object")
    case_id = _case_id(case)
    request = case.get("request")
    if not isinstance(request, Mapping):
        raise ReplayCaseError("request must be an object")
    for name in ("scope_id", "query"):
        if request.get(name) is not None and not isinstance(request[name], str):
            raise ReplayCaseError(f"request.{name} must be a string")
    max_bytes = request.get("max_bytes", DEFAULT_MAX_BYTES)
    if type(max_bytes) is not int:
        raise ReplayCaseError("request.max_bytes must be an integer")
    if not MIN_MAX_BYTES <= max_bytes <= MAX_MAX_BYTES:
        raise ReplayCaseError(f"request.max_bytes must be between {MIN_MAX_BYTES} and {MAX_MAX_BYTES}")

    memory_ref = _optional_ref(case.get("memory_ref"), "memory_ref")
    memory_hits = tuple(
        _memory_hit(hit, f"memory_hits[{index}]")
        for index, hit in enumerate(_list(case.get("memory_hits"), "memory_hits"))
    )
    experience_hits = tuple(
        _experience_hit(hit, f"experience_hits[{index}]")
        for index, hit in enumerate(_list(case.get("experience_hits"), "experience_hits"))
    )
    return ReplayCase(
        case_id=case_id,
        memory_ref=memory_ref,
        memory_hits=memory_hits,
        experience_hits=experience_hits,
        max_bytes=max_bytes,
    )


def run_case(case: object, *, builder: PreparedContextBuilder | None = None) -> dict[str, Any]:
    """Replay one decoded case; always returns an output object, never raises for bad input."""
    case_id = None
    try:
        if isinstance(case, Mapping):
            case_id = _case_id(case)
        parsed = parse_case(case)
        built = (builder or PreparedContextBuilder()).build(
            memory_ref=parsed.memory_ref,
            memory_hits=parsed.memory_hits,
            experience_hits=parsed.experience_hits,
            max_bytes=parsed.max_bytes,
        )
    except ReplayCaseError as exc:
        return _error(case_id, ERROR_INVALID_CASE, str(exc))
    except BuilderInvariantError as exc:
        return _error(case_id, ERROR_INVARIANT, str(exc))
    except Exception as exc:  # one broken case must not end the stream
        return _error(case_id, ERROR_INTERNAL, type(exc).__name__)
    return {"case_id": case_id, "response": built.context.as_dict()}


def replay_lines(lines: Iterable[str]) -> Iterator[str]:
    """Map JSON Lines of cases to JSON Lines of results, one per non-blank line, in order."""
    builder = PreparedContextBuilder()
    for line in lines:
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except (ValueError, RecursionError) as exc:
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            output = _error(None, ERROR_INVALID_CASE, f"line is not valid JSON: {detail}")
        else:
            output = run_case(case, builder=builder)
        yield json.dumps(output, ensure_ascii=False, separators=(",", ":")) + "\n"


def _error(case_id: str | int | None, error: str, message: str) -> dict[str, Any]:
    return {"case_id": case_id, "error": error, "message": message}


def _case_id(case: Mapping[str, Any]) -> str | int | None:
    case_id = case.get("case_id")
    if case_id is None or isinstance(case_id, str) or type(case_id) is int:
        return case_id
    raise ReplayCaseError("case_id must be a string, an integer or null")


def _list(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ReplayCaseError(f"{where} must be a list")
    return value


def _object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ReplayCaseError(f"{where} must be an object")
    return value


def _text(value: object, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReplayCaseError(f"{where} must be a string or null")
    return value


def _ref(value: object, where: str) -> ArtifactRef:
    ref = _object(value, where)
    family, artifact_id, revision = ref.get("family"), ref.get("artifact_id"), ref.get("revision")
    if not isinstance(family, str):
        raise ReplayCaseError(f"{where}.family must be a string")
    if not isinstance(artifact_id, str):
        raise ReplayCaseError(f"{where}.artifact_id must be a string")
    if type(revision) is not int:
        raise ReplayCaseError(f"{where}.revision must be an integer")
    return ArtifactRef(family=family, artifact_id=artifact_id, revision=revision)


def _optional_ref(value: object, where: str) -> ArtifactRef | None:
    return None if value is None else _ref(value, where)


def _memory_hit(value: object, where: str) -> MemoryHit:
    hit = _object(value, where)
    score = hit.get("score", 0.0)
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise ReplayCaseError(f"{where}.score must be a number")
    try:
        score = float(score)
    except OverflowError:
        raise ReplayCaseError(f"{where}.score is out of range") from None
    matched_by = hit.get("matched_by", ["fts"])
    if not isinstance(matched_by, list) or not all(isinstance(channel, str) for channel in matched_by):
        raise ReplayCaseError(f"{where}.matched_by must be a list of strings")
    return MemoryHit(
        memory_ref=_optional_ref(hit.get("memory_ref"), f"{where}.memory_ref"),
        entry_id=_text(hit.get("entry_id"), f"{where}.entry_id"),
        entry_version_id=_text(hit.get("entry_version_id"), f"{where}.entry_version_id"),
        text=_text(hit.get("text"), f"{where}.text"),
        score=score,
        matched_by=tuple(matched_by),
    )


def _experience_hit(value: object, where: str) -> ExperienceHit:
    hit = _object(value, where)
    content = _object(hit.get("content"), f"{where}.content")
    return ExperienceHit(
        artifact_ref=_ref(hit.get("artifact_ref"), f"{where}.artifact_ref"),
        content=ExperienceContent.from_mapping(
            {name: _text(content.get(name), f"{where}.content.{name}") for name in EXPERIENCE.field_names}
        ),
    )
