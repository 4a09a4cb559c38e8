"""Explain one prepare for operators: the head read, every candidate in search order and what
the builder did with it (admitted, duplicate or skipped, and why), with the byte budget.

Reads exactly what ``POST /v1/context/prepare`` reads (``context_candidates``) and runs the same
builder (``context_api.explain``). Nothing is written and no text is shown unless
``--show-text`` is given (then only each hit's first 40 characters).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from context_api.builder import (
    DEFAULT_MAX_BYTES,
    EXPERIENCE_CANDIDATE_WINDOW,
    MAX_MAX_BYTES,
    MEMORY_CANDIDATE_WINDOW,
    MIN_MAX_BYTES,
    BuilderInvariantError,
    render_experience_content,
)
from context_api.explain import CandidateTrace, Explanation, explain
from powercontext import search
from powercontext.selectors.context import context_candidates

PREVIEW_CHARS = 40
ID_CHARS = 12


def short(value: str) -> str:
    return value if len(value) <= ID_CHARS else value[: ID_CHARS - 1] + "\u2026"


def preview(text: str) -> str:
    # repr-style escaping keeps newlines and terminal escapes in a hit from reaching the terminal.
    return json.dumps(
        text[:PREVIEW_CHARS] + ("\u2026" if len(text) > PREVIEW_CHARS else ""), ensure_ascii=True
    )


def citation_label(trace: CandidateTrace) -> str:
    if "artifact_ref" in trace.citation:
        ref = trace.citation["artifact_ref"]
        return f"{short(ref['artifact_id'])}@{ref['revision']}"
    return f"{short(trace.citation['entry_id'])}/{short(trace.citation['entry_version_id'])}"


def outcome(trace: CandidateTrace) -> str:
    if trace.decision == "admitted":
        cut = f" truncated({trace.truncated_by})" if trace.truncated else ""
        return f"admitted {trace.content_bytes}B content, {trace.item_bytes}B item{cut}"
    if trace.decision == "duplicate":
        return f"duplicate of #{trace.duplicate_of}"
    return f"skipped: {trace.reason}"


class Command(BaseCommand):
    help = "Explain one prepare: each Memory/Experience candidate and the builder's decision on it."
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scope", required=True)
        parser.add_argument("--query", required=True)
        parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES)
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument(
            "--show-text", action="store_true", help=f"Also show each hit's first {PREVIEW_CHARS} characters."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        scope, query, max_bytes = options["scope"], options["query"], options["max_bytes"]
        if not scope.strip() or not query.strip():
            raise CommandError("--scope and --query must not be blank")
        if not MIN_MAX_BYTES <= max_bytes <= MAX_MAX_BYTES:
            raise CommandError(f"--max-bytes must be within {MIN_MAX_BYTES}..{MAX_MAX_BYTES}")
        mode = search.best_mode()
        found = context_candidates(
            scope_id=scope,
            query=query,
            memory_limit=MEMORY_CANDIDATE_WINDOW,
            experience_limit=EXPERIENCE_CANDIDATE_WINDOW,
        )
        try:
            explained = explain(
                memory_ref=found.memory_ref,
                memory_hits=found.memory_hits,
                experience_hits=found.experience_hits,
                max_bytes=max_bytes,
            )
        except BuilderInvariantError as exc:
            raise CommandError(f"builder invariant failure: {exc}") from exc
        texts = {
            **{("memory", rank): hit.text for rank, hit in enumerate(found.memory_hits, start=1)},
            **{
                ("experience", rank): render_experience_content(hit.content)
                for rank, hit in enumerate(found.experience_hits, start=1)
            },
        }
        show_text = options["show_text"]
        if options["json"]:
            body = {"scope_id": scope, "search_mode": mode, **explained.as_dict()}
            if show_text:
                for row, trace in zip(body["candidates"], explained.candidates, strict=True):
                    row["text_preview"] = texts[(trace.source, trace.rank)][:PREVIEW_CHARS]
            self.stdout.write(json.dumps(body, ensure_ascii=False))
            return
        self.write_table(scope, mode, explained, texts if show_text else None)

    def write_table(
        self, scope: str, mode: str, explained: Explanation, texts: dict[tuple[str, int], str] | None
    ) -> None:
        ref = explained.memory_ref
        head = f"{ref.artifact_id}@{ref.revision}" if ref is not None else "none (no Memory hit)"
        prepared = explained.prepared
        self.stdout.write(f"scope {scope}  search {mode}  memory head {head}")
        self.stdout.write(
            f"status {prepared.status}  content_bytes {prepared.content_bytes} / max_bytes "
            f"{explained.max_bytes}  admitted {len(explained.admitted)}"
        )
        columns = ("source", "#", "try", "citation", "score", "by", "chars", "decision")
        rows = []
        for trace in explained.candidates:
            rows.append(
                (
                    trace.source,
                    str(trace.rank),
                    str(trace.attempt or "-"),
                    citation_label(trace),
                    f"{trace.score:.4f}" if trace.score is not None else "-",
                    "+".join(trace.matched_by) if trace.matched_by else "-",
                    str(trace.source_chars),
                    outcome(trace)
                    + (f"  {preview(texts[(trace.source, trace.rank)])}" if texts is not None else ""),
                )
            )
        widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
        for row in (columns, *rows):
            self.stdout.write(
                "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            )
