"""The evaluation's prompt sets besides LoCoMo: negative sets and related sets over note scopes.

Negative sets (``NEGATIVE_SETS``): prompts unrelated to the memory they are asked against:
software-engineering questions against every conversation's scope, everyday questions and small
talk against one engineering-notes scope (``engineering_notes.txt``), nonsense against all of
them, and, per language other than English, everyday questions and small talk against the same
engineering notes written in that language (Chinese, Danish, Norwegian, Finnish, Hungarian,
Polish, Czech, Indonesian, Turkish, Vietnamese: the model does not read them; French, German,
Spanish, Italian, Portuguese, Dutch, Swedish: it reads them less well than English). A correct
answer is ``empty``; the report gives each set's empty rate, mean items and bytes.

Other languages' everyday negatives are also asked against the English notes, and their related
questions (``related_other_languages.txt``) against the English notes that answer them: a prompt
in another language over English memory is the common case for people who do not write English.

Related sets (``RELATED_SETS``): questions in those languages that one note of their scope
answers (``<note number> <question>`` per line, 1 = the notes file's first note). A correct pack
cites that note: they keep a floor strict enough for the negative sets from silencing the
questions it should answer. The report gives each set's found rate, mean items and bytes.

Every file is in ``powercontext/evaluation/data`` (README there), written for this project. Each
notes file is remembered into one fresh scope per run (``<prefix>-<run>``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from powercontext.memory.services import memory_remember
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.prepare.builder import CONTENT_PREFIX, CONTENT_SUFFIX

MAX_BYTES = 8000
NOTE_KIND = "note"
# The evaluation data directory (kept in the repository; ``BASE_DIR``-relative, so it does not
# depend on where this module lives).
DATA_DIR = Path(settings.BASE_DIR) / "powercontext" / "evaluation" / "data"
CHAT, ENGINEERING = "chat", "engineering"
# Languages with engineering notes, everyday negatives and related questions of their own.
LANGUAGES = (
    "zh",
    "fr",
    "de",
    "es",
    "it",
    "pt",
    "nl",
    "sv",
    "da",
    "no",
    "fi",
    "hu",
    "pl",
    "cs",
    "id",
    "tr",
    "vi",
)
# kind of scope -> (notes file, scope id prefix) for the scopes the note sets build
NOTE_SCOPES: dict[str, tuple[str, str]] = {
    ENGINEERING: ("engineering_notes.txt", "eval-eng"),
    **{f"{ENGINEERING}-{lang}": (f"engineering_notes_{lang}.txt", f"eval-eng-{lang}") for lang in LANGUAGES},
}
# name -> (file, the scopes it is asked against)
NEGATIVE_SETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "software": ("negatives_software.txt", (CHAT,)),
    "everyday": ("negatives_everyday.txt", (ENGINEERING,)),
    "smalltalk": ("negatives_smalltalk.txt", (ENGINEERING,)),
    "nonsense": ("negatives_nonsense.txt", (CHAT, ENGINEERING)),
    # in their own language's scope, and (but Chinese) against the English notes: across languages
    **{
        f"everyday-{lang}": (
            f"negatives_everyday_{lang}.txt",
            (f"{ENGINEERING}-{lang}",) if lang == "zh" else (f"{ENGINEERING}-{lang}", ENGINEERING),
        )
        for lang in LANGUAGES
    },
}
# name -> (file, the scope it is asked against)
RELATED_SETS: dict[str, tuple[str, str]] = {
    **{f"related-{lang}": (f"related_{lang}.txt", f"{ENGINEERING}-{lang}") for lang in LANGUAGES},
    # the same questions (six languages) about the English notes that answer them too
    "related-other-languages": ("related_other_languages.txt", ENGINEERING),
}


def read_lines(name: str) -> list[str]:
    """The prompts (or notes) of one evaluation data file: "#" lines and blank lines skipped."""
    text = (DATA_DIR / name).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def read_related(name: str) -> list[tuple[int, str]]:
    """The (note index from 0, question) pairs of one related set."""
    pairs = []
    for line in read_lines(name):
        number, _, question = line.partition(" ")
        if not number.isdigit() or int(number) < 1 or not question.strip():
            raise ValueError(f"{name}: expected '<note number> <question>', got {line!r}")
        pairs.append((int(number) - 1, question.strip()))
    return pairs


def memory_item_citations(content: str | None) -> list[dict[str, Any]]:
    """The citation of each Memory item of a prepared context's ``content``, in pack order
    (exactly as prepare rendered it: what an agent sends back with its feedback)."""
    if content is None:
        return []
    envelope = json.loads(content[len(CONTENT_PREFIX) : -len(CONTENT_SUFFIX)])
    return [item["citation"] for item in envelope["items"] if "memory_ref" in item["citation"]]


def memory_item_entry_ids(content: str | None) -> list[str]:
    """The entry id of each Memory item of a prepared context's ``content``, in order."""
    return [citation["entry_id"] for citation in memory_item_citations(content)]


@dataclass
class PackTotals:
    """What the packs of one report held, summed: one pack per question (or prompt), its Memory
    items and content bytes."""

    packs: int = 0
    items: int = 0  # Memory items in the packs
    content_bytes: int = 0

    def add_pack(self, items: int, content_bytes: int) -> None:
        self.packs += 1
        self.items += items
        self.content_bytes += content_bytes

    def rate(self, count: float) -> float:
        """``count`` per pack, as every report rounds a rate."""
        return round(count / (self.packs or 1), 4)

    def pack_means(self) -> dict[str, float]:
        """The mean items and content bytes per pack, as every report states them."""
        packs = self.packs or 1
        return {
            "mean_items": round(self.items / packs, 3),
            "mean_content_bytes": round(self.content_bytes / packs, 1),
        }


@dataclass
class NegativeScore(PackTotals):
    """Running totals of one negative set: prompts and empty packs (the correct answer);
    ``as_dict`` gives the empty rate and the pack means."""

    empty: int = 0

    def add(self, items: int, content_bytes: int) -> None:
        self.empty += items == 0
        self.add_pack(items, content_bytes)

    def as_dict(self) -> dict[str, Any]:
        return {"prompts": self.packs, "empty_rate": self.rate(self.empty), **self.pack_means()}


@dataclass
class RelatedScore(PackTotals):
    """Running totals of one related set: questions and packs citing their note."""

    found: int = 0

    def add(self, found: bool, items: int, content_bytes: int) -> None:
        self.found += found
        self.add_pack(items, content_bytes)

    def as_dict(self) -> dict[str, Any]:
        return {"questions": self.packs, "found_rate": self.rate(self.found), **self.pack_means()}


def _note_scope(notes: str, scope_id: str) -> list[str]:
    """Remember every note of ``notes`` into ``scope_id``; their entry ids, in file order."""
    entries = []
    for note in read_lines(notes):
        mutation = memory_remember(scope_id=scope_id, kind=NOTE_KIND, text=note)
        if mutation.entry is None:
            raise ValueError(f"{notes}: a note is repeated")
        entries.append(mutation.entry.entry_id)
    return entries


def evaluate_note_sets(
    application: ScopedContextApplication,
    *,
    run: str,
    chat_scopes: list[str],
    caught_up: Any,
) -> tuple[dict[str, NegativeScore], dict[str, RelatedScore]]:
    """Build the note scopes (``caught_up(scope_id)`` waits for their vectors), then ask every
    negative set against its scopes and every related set against its scope."""
    targets = {CHAT: chat_scopes}
    entries: dict[str, list[str]] = {}
    for kind, (notes, prefix) in NOTE_SCOPES.items():
        scope_id = f"{prefix}-{run}"
        entries[kind] = _note_scope(notes, scope_id)
        caught_up(scope_id)
        targets[kind] = [scope_id]

    def ask(scope_id: str, prompt: str) -> tuple[list[str], int]:
        prepared = application.prepare(PrepareRequest(scope_id=scope_id, query=prompt, max_bytes=MAX_BYTES))
        return memory_item_entry_ids(prepared.content), prepared.content_bytes

    negatives: dict[str, NegativeScore] = {}
    for name, (file_name, kinds) in NEGATIVE_SETS.items():
        prompts = read_lines(file_name)
        for kind in kinds:
            score = negatives.setdefault(f"{name} @ {kind}", NegativeScore())
            for scope_id in targets[kind]:
                for prompt in prompts:
                    items, size = ask(scope_id, prompt)
                    score.add(len(items), size)
    related: dict[str, RelatedScore] = {}
    for name, (file_name, kind) in RELATED_SETS.items():
        score = related.setdefault(f"{name} @ {kind}", RelatedScore())
        for index, question in read_related(file_name):
            items, size = ask(targets[kind][0], question)
            score.add(entries[kind][index] in items, len(items), size)
    return negatives, related
