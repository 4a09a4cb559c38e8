"""The ``rules`` generator: deterministic, offline, the embedded default (pure).

Memories, from every source that is not a task outcome, one per matching line (leading spaces
and a ``-``/``*``/``>`` list marker are ignored; the keyword is case-insensitive):

- ``remember: X``, ``note: X``, ``decision: X``, ``gotcha: X`` -> kind ``remember`` / ``note`` /
  ``decision`` / ``gotcha``, text ``X``;
- ``always X`` and ``never X`` -> kind ``rule``, text the whole line (``always X``), keyword
  lower-cased.

Text is stripped; a blank text or one over 2000 characters is skipped. The same (kind, text) in
several sources of the session is one memory citing all of them, in order of first appearance.

Experiences, from sources whose ``metadata.kind`` is ``task-outcome``: one per task outcome
whose status is ``succeeded`` or ``failed`` and that has at least one observation. The content
is either the ``powercontext.task-outcome.v1`` JSON object or plain text of ``key: value``
lines (``objective``, ``status``, ``summary``, ``observation`` (repeatable), ``check``
(repeatable, ``<name> = <status>``); plain-text observations and checks are ``declared``).

- situation = the objective; action = the summary (``Not reported.`` when absent);
- outcome = ``Reported status: <status>.`` then one line per check,
  ``Check <name>: <status> (<basis>)``; a check is never reported as anything but its own
  status, and a ``declared`` one says it was not verified;
- lesson = the observations, one per line, a declared one marked ``(declared)``;
- evidence = the task-outcome source.

Nothing matches: a valid, empty answer (``no_output``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from powercontext.pipeline.generation import (
    ExperienceItem,
    GeneratorResult,
    MemoryItem,
    Projection,
    SessionSource,
)

TASK_OUTCOME_KIND = "task-outcome"
TASK_OUTCOME_SCHEMA = "powercontext.task-outcome.v1"
EXPERIENCE_STATUSES = ("succeeded", "failed")
MAX_MEMORY_CHARS = 2000
MAX_FIELD_CHARS = 8000
MAX_ITEMS = 64

_MARKER = r"^\s*(?:[-*>]\s+)?"
_PREFIXED = re.compile(_MARKER + r"(remember|note|decision|gotcha)\s*:\s*(.*)$", re.IGNORECASE)
_RULE = re.compile(_MARKER + r"((always|never)\s+\S.*)$", re.IGNORECASE)
_KEY_VALUE = re.compile(r"^\s*([A-Za-z_]+)\s*:\s*(.*)$")


@dataclass(frozen=True)
class Check:
    """One check a task outcome reports: its name, its status (``unknown`` when not stated)
    and its basis (``declared`` when the agent only stated it)."""

    name: str
    status: str
    basis: str


@dataclass(frozen=True)
class TaskOutcome:
    objective: str
    status: str
    summary: str
    observations: tuple[tuple[str, str], ...]  # (text, basis)
    checks: tuple[Check, ...]


def memory_line(line: str) -> tuple[str, str] | None:
    """The (kind, text) a line states, or None."""
    prefixed = _PREFIXED.match(line)
    if prefixed:
        kind, text = prefixed.group(1).lower(), prefixed.group(2).strip()
    else:
        rule = _RULE.match(line)
        if rule is None:
            return None
        keyword = rule.group(2)
        kind, text = "rule", (keyword.lower() + rule.group(1)[len(keyword) :]).strip()
    if not text or len(text) > MAX_MEMORY_CHARS:
        return None
    return kind, text


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _basis(value: object) -> str:
    return "verified" if value == "verified" else "declared"


def _from_json(data: Mapping[str, Any]) -> TaskOutcome | None:
    if data.get("schema") != TASK_OUTCOME_SCHEMA:
        return None
    observations = data.get("observations")
    checks = data.get("checks")
    return TaskOutcome(
        objective=_text(data.get("objective")),
        status=_text(data.get("status")),
        summary=_text(data.get("summary")),
        observations=tuple(
            (_text(o.get("text")), _basis(o.get("basis")))
            for o in (observations if isinstance(observations, list) else [])[:64]
            if isinstance(o, Mapping) and _text(o.get("text"))
        ),
        checks=tuple(
            Check(_text(c.get("name")), _text(c.get("status")) or "unknown", _basis(c.get("basis")))
            for c in (checks if isinstance(checks, list) else [])[:64]
            if isinstance(c, Mapping) and _text(c.get("name"))
        ),
    )


def _from_text(content: str) -> TaskOutcome:
    fields: dict[str, str] = {}
    observations: list[tuple[str, str]] = []
    checks: list[Check] = []
    for line in content.splitlines():
        match = _KEY_VALUE.match(line)
        if match is None:
            continue
        key, value = match.group(1).lower(), match.group(2).strip()
        if key == "observation" and value:
            observations.append((value, "declared"))
        elif key == "check" and "=" in value:
            name, _, status = value.partition("=")
            if name.strip():
                checks.append(Check(name.strip(), status.strip() or "unknown", "declared"))
        elif key in ("objective", "status", "summary") and key not in fields:
            fields[key] = value
    return TaskOutcome(
        objective=fields.get("objective", ""),
        status=fields.get("status", "").lower(),
        summary=fields.get("summary", ""),
        observations=tuple(observations[:64]),
        checks=tuple(checks[:64]),
    )


def parse_task_outcome(content: str) -> TaskOutcome | None:
    """A task outcome from the v1 JSON object or from plain ``key: value`` text."""
    stripped = content.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError:
            return None
        return _from_json(data) if isinstance(data, dict) else None
    return _from_text(content)


def _cap(text: str) -> str:
    return text if len(text) <= MAX_FIELD_CHARS else text[: MAX_FIELD_CHARS - 1] + "…"


def experience_of(outcome: TaskOutcome, source_id: str) -> ExperienceItem | None:
    """The one Experience a task outcome yields (None when it is not one to learn from)."""
    if outcome.status not in EXPERIENCE_STATUSES or not outcome.observations or not outcome.objective:
        return None
    lines = [f"Reported status: {outcome.status}."]
    for check in outcome.checks:
        note = "declared, not verified" if check.basis == "declared" else "verified"
        lines.append(f"Check {check.name}: {check.status} ({note})")
    lesson = "\n".join(
        f"{text} (declared)" if basis == "declared" else text for text, basis in outcome.observations
    )
    return ExperienceItem(
        situation=_cap(outcome.objective),
        action=_cap(outcome.summary or "Not reported."),
        outcome=_cap("\n".join(lines)),
        lesson=_cap(lesson),
        evidence=(source_id,),
    )


def is_task_outcome(source: SessionSource) -> bool:
    return source.metadata.get("kind") == TASK_OUTCOME_KIND


def generate(projection: Projection) -> GeneratorResult:
    memories: dict[tuple[str, str], list[str]] = {}
    experiences: list[ExperienceItem] = []
    for source in projection.sources:
        if is_task_outcome(source):
            outcome = parse_task_outcome(source.content)
            item = experience_of(outcome, source.source_id) if outcome is not None else None
            if item is not None and len(experiences) < MAX_ITEMS:
                experiences.append(item)
            continue
        for line in source.content.splitlines():
            found = memory_line(line)
            if found is None:
                continue
            evidence = memories.get(found)
            if evidence is None:
                if len(memories) < MAX_ITEMS:
                    memories[found] = [source.source_id]
            elif source.source_id not in evidence:
                evidence.append(source.source_id)
    items = tuple(MemoryItem(kind=k, text=t, evidence=tuple(ev)) for (k, t), ev in memories.items())
    if not items and not experiences:
        return GeneratorResult(outcome="no_output")
    return GeneratorResult(outcome="output", memories=items, experiences=tuple(experiences))


class RulesGenerator:
    name = "rules"

    def generate(self, projection: Projection) -> GeneratorResult:
        return generate(projection)
