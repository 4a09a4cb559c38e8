"""powercontext.prepare.explain and manage.py explain_prepare: the builder's per-candidate decisions."""

from __future__ import annotations

import ast
import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings
from hypothesis import given

from powercontext.prepare import explain as explain_module
from powercontext.prepare import explain_selectors as prepare_explain
from powercontext.prepare.builder import (
    BEGIN_MARKER,
    END_MARKER,
    EXPERIENCE_CANDIDATE_WINDOW,
    MEMORY_CANDIDATE_WINDOW,
    ArtifactRef,
    Built,
    Decision,
    ExperienceContent,
    ExperienceHit,
    MemoryHit,
    PreparedContext,
    PreparedContextBuilder,
    render_content,
    window,
)
from powercontext.prepare.explain import SKIP_REASONS, candidate_dict, citation, explain, summarize
from powercontext.prepare.management.commands import explain_prepare as explain_prepare_command
from powercontext.prepare.selection import ContextCandidates
from powercontext.search.vectors import shortlist, vector_inprocess
from tests.conftest import Api
from tests.context_api.test_builder_properties import DETERMINISTIC, HEAD, build, cases

# -- the formatted trace agrees with the built content ----------------------------------------


def explained_build(memory_ref, memory_hits, experience_hits, max_bytes):
    """What prepare does: cut at the candidate windows, build once, format the trace."""
    memories, memory_dropped = window("memory", memory_hits, MEMORY_CANDIDATE_WINDOW)
    experiences, experience_dropped = window("experience", experience_hits, EXPERIENCE_CANDIDATE_WINDOW)
    built = PreparedContextBuilder().build(
        memory_ref=memory_ref, memory_hits=memories, experience_hits=experiences, max_bytes=max_bytes
    )
    return explain(
        built, memory_ref=memory_ref, max_bytes=max_bytes, dropped=(*memory_dropped, *experience_dropped)
    )


def admitted_citations(prepared: PreparedContext) -> list[dict[str, Any]]:
    if prepared.content is None:
        return []
    content = prepared.content
    start = content.index(BEGIN_MARKER + "\n") + len(BEGIN_MARKER) + 1
    items = json.loads(content[start : content.index("\n" + END_MARKER)])["items"]
    return [item["citation"] for item in items]


def traced_citations(explained) -> list[dict[str, Any]]:
    result = []
    for trace in explained.admitted:
        if trace.source == "memory":
            result.append({"memory_ref": explained.as_dict()["memory_ref"], **citation(trace)})
        else:
            result.append(citation(trace))
    return result


@DETERMINISTIC
@given(cases())
def test_the_trace_agrees_with_the_built_content_on_admitted_citations_and_bytes(case):
    head, memories, experiences, max_bytes = case
    built = build(head, memories, experiences, max_bytes)

    explained = explained_build(head, memories, experiences, max_bytes)

    assert explained.prepared == built
    assert traced_citations(explained) == admitted_citations(built)
    assert [(t.source, t.rank) for t in explained.candidates] == [
        *(("memory", r) for r in range(1, len(memories) + 1)),
        *(("experience", r) for r in range(1, len(experiences) + 1)),
    ]
    assert [t.hit for t in explained.candidates] == [*memories, *experiences]
    for trace in explained.candidates:
        assert trace.decision in {"admitted", "duplicate", "skipped"}
        assert (trace.reason is not None) == (trace.decision == "skipped")
        assert (trace.duplicate_of is not None) == (trace.decision == "duplicate")
        if trace.decision == "admitted":
            assert 0 < trace.content_bytes < trace.item_bytes <= max_bytes
    if built.content is not None:
        contents = [t.content_bytes for t in explained.admitted]
        assert sum(contents) < built.content_bytes <= max_bytes
        # The envelope, one "," between items and the items themselves: the whole content.
        envelope = len(built.content.encode("utf-8")) - sum(t.item_bytes for t in explained.admitted)
        assert envelope == len(render_content(()).encode("utf-8")) + len(contents) - 1


def memory(entry: str, text: str, head: ArtifactRef = HEAD) -> MemoryHit:
    return MemoryHit(memory_ref=head, entry_id=entry, entry_version_id="v1", text=text, score=0.5)


def experience(artifact_id: str) -> ExperienceHit:
    return ExperienceHit(
        artifact_ref=ArtifactRef("experience", artifact_id, 1),
        content=ExperienceContent(situation="s", action="a", outcome="o", lesson="l"),
    )


def decisions(explained) -> list[tuple[str, int, str, Any]]:
    return [
        (t.source, t.rank, t.decision, t.reason or t.duplicate_of or t.truncated_by)
        for t in explained.candidates
    ]


def test_each_skip_reason_is_named():
    hits = [memory("e1", "first"), memory("e1", "first again"), memory("e2", "   ")]
    hits += [memory(f"m{i}", f"note {i}") for i in range(MEMORY_CANDIDATE_WINDOW)]  # 19 hits
    experiences = [experience("x1"), experience("x1"), experience("x2"), experience("x3")]

    explained = explained_build(HEAD, hits, experiences, 8000)

    assert decisions(explained) == [
        ("memory", 1, "admitted", None),
        ("memory", 2, "duplicate", 1),
        ("memory", 3, "skipped", "blank"),
        *(("memory", r, "admitted", None) for r in range(4, 9)),  # m0..m4, interleaved with x1, x2
        *(("memory", r, "skipped", "total_item_limit") for r in range(9, 11)),  # 8 items already
        *(("memory", r, "skipped", "item_limit") for r in range(11, 17)),  # 8 selected already
        *(("memory", r, "skipped", "window") for r in range(17, 20)),
        ("experience", 1, "admitted", None),
        ("experience", 2, "duplicate", 1),
        ("experience", 3, "admitted", None),
        ("experience", 4, "skipped", "item_limit"),
    ]
    assert [t.attempt for t in explained.admitted] == [1, 2, 3, 4, 5, 6, 7, 8]


def test_the_summary_counts_each_decision_and_holds_no_text_or_id():
    hits = [memory("e1", "first"), memory("e1", "first again"), memory("e2", "   ")]
    hits += [memory(f"m{i}", f"note {i}") for i in range(MEMORY_CANDIDATE_WINDOW)]
    hits.append(memory("big", "a" * 3000))  # beyond the window
    experiences = [experience("x1"), experience("x1"), experience("x2"), experience("x3")]
    explained = explained_build(HEAD, hits, experiences, 8000)

    summary = summarize(explained)

    assert (summary.memory_candidates, summary.experience_candidates) == (20, 4)
    assert (summary.memory_admitted, summary.experience_admitted) == (6, 2)
    assert summary.duplicates == 2 and not summary.empty
    assert dict(zip(SKIP_REASONS, summary.skipped, strict=True)) == {
        "blank": 1,
        "unencodable": 0,
        "item_limit": 7,
        "total_item_limit": 2,
        "over_budget": 0,
        "window": 4,
        "below_relevance_floor": 0,
        "held_by_reports": 0,
        "below_pack_cut": 0,
    }
    assert summary.truncated == (0, 0)
    assert (summary.content_bytes, summary.max_bytes) == (explained.prepared.content_bytes, 8000)
    assert all(isinstance(value, int | bool | tuple) for value in vars(summary).values())


def test_explain_formats_the_trace_it_is_given_and_builds_nothing():
    hits = [memory("e1", "first"), memory("e2", "second")]
    built = PreparedContextBuilder().build(
        memory_ref=HEAD, memory_hits=hits, experience_hits=[], max_bytes=8000
    )
    # A trace that disagrees with the content is shown as given: explain never rebuilds.
    forged = Built(built.context, (Decision("memory", 1, hits[1], "skipped", reason="over_budget"),))

    explained = explain(forged, memory_ref=HEAD, max_bytes=8000)

    assert explained.prepared is built.context
    assert decisions(explained) == [("memory", 1, "skipped", "over_budget")]
    assert explained.candidates[0].hit is hits[1]
    assert [t.hit for t in built.trace] == hits and all(t.decision == "admitted" for t in built.trace)


def test_hits_selection_dropped_are_shown_with_its_reason_in_rank_order():
    hits = [memory("e1", "first"), memory("e2", "second")]
    built = PreparedContextBuilder().build(
        memory_ref=HEAD, memory_hits=hits[:1], experience_hits=[experience("x1")], max_bytes=8000
    )
    floor = "below relevance floor"
    dropped = (
        Decision("experience", 2, experience("x2"), "skipped", reason=floor),
        Decision("memory", 2, hits[1], "skipped", reason=floor),
    )

    explained = explain(built, memory_ref=HEAD, max_bytes=8000, dropped=dropped)

    assert decisions(explained) == [
        ("memory", 1, "admitted", None),
        ("memory", 2, "skipped", floor),
        ("experience", 1, "admitted", None),
        ("experience", 2, "skipped", floor),
    ]
    summary = summarize(explained)
    assert (summary.memory_candidates, summary.experience_candidates) == (2, 2)
    assert sum(summary.skipped) == 0  # a reason of selection's own has no aggregate counter


def test_truncation_is_attributed_to_the_source_cap_or_the_budget():
    capped = explained_build(HEAD, [memory("e1", "a" * 3000)], [], 8000)
    cut = explained_build(HEAD, [memory("e1", "a" * 3000)], [], 800)
    neither = explained_build(HEAD, [memory("e1", "a" * 3000), memory("e2", "b" * 100)], [], 800)

    assert decisions(capped) == [("memory", 1, "admitted", "source_cap")]
    row = candidate_dict(capped.candidates[0])
    assert row["content_bytes"] == 2000 and row["source_bytes"] == 3000 and row["truncated"] is True
    assert decisions(cut) == [("memory", 1, "admitted", "budget")]
    assert decisions(neither)[1] == ("memory", 2, "skipped", "over_budget")
    assert neither.candidates[1].attempt == 2


def test_explain_uses_only_the_builders_public_names():
    """Explain formats the trace; it cannot re-run the builder's private selection or fitting."""
    tree = ast.parse(Path(explain_module.__file__).read_text(encoding="utf-8"))
    imported = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "powercontext.prepare.builder"
        for alias in node.names
    ]
    assert imported and not [name for name in imported if name.startswith("_")]
    assert "PreparedContextBuilder" not in imported


# -- manage.py explain_prepare ------------------------------------------------------------------

LONG = "deploy " + " ".join(["checklist"] * 150)  # 1506 bytes: more than the budget leaves, so it is cut
SHORT = "deploy on tuesdays only"
MISSES = "deploy with the old script, now retired"


@pytest.fixture
def ops_scope(api: Api, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    """Three remembered entries, read by the real selector, put in a known search order with the
    first hit repeated (a duplicate the builder must drop)."""
    entries = {text: api.remember("ops", text)["entry"] for text in (SHORT, LONG, MISSES)}
    original = prepare_explain.context_candidates

    def ordered(**kwargs: Any) -> ContextCandidates:
        found = original(**kwargs)
        order = [SHORT, LONG, MISSES]
        hits = sorted(found.memory_hits, key=lambda hit: order.index(hit.text))
        assert [hit.text for hit in hits] == order
        return ContextCandidates(found.memory_ref, [*hits, hits[0]], found.experience_hits)

    monkeypatch.setattr(prepare_explain, "context_candidates", ordered)
    return entries


def run(*args: str) -> str:
    out = StringIO()
    call_command("explain_prepare", *args, stdout=out)
    return out.getvalue()


def test_explain_says_how_this_process_ranked_the_scopes_memory_vectors(ops_scope, embeddings) -> None:
    vector_inprocess._cache.clear()
    body = json.loads(run("--scope", "ops", "--query", "deploy", "--json"))
    assert body["search_mode"] == "hybrid"
    assert body["vector_ranking"] == {"rows": 3, "shortlist": None}
    assert "3 Memory vectors ranked exactly" in run("--scope", "ops", "--query", "deploy")

    with override_settings(POWERCONTEXT_VECTOR_EXACT_ROWS=2):  # a large scope, in miniature
        vector_inprocess._cache.clear()
        body = json.loads(run("--scope", "ops", "--query", "deploy", "--json"))
        assert body["vector_ranking"] == {"rows": 3, "shortlist": shortlist.MIN_DEPTH}
        text = run("--scope", "ops", "--query", "deploy")
        assert f"3 Memory vectors ranked over a shortlist of at least {shortlist.MIN_DEPTH:,}" in text
    vector_inprocess._cache.clear()


def test_the_command_lists_each_candidate_with_its_decision(ops_scope) -> None:
    body = json.loads(run("--scope", "ops", "--query", "deploy", "--max-bytes", "1200", "--json"))

    assert body["scope_id"] == "ops" and body["max_bytes"] == 1200
    assert body["search_mode"] in {"fts", "hybrid"}
    # The in-process vector cache after the prepare (bytes against the bound), or none when no
    # vectors were used.
    cache = body["vector_cache"]
    if body["search_mode"] == "hybrid":
        assert cache["bound_bytes"] == 256 * 1024 * 1024 and cache["scopes"] >= 1
        assert 0 < cache["bytes"] <= cache["bound_bytes"] and cache["too_large"] == 0
    else:
        assert cache is None
    assert body["memory_ref"]["family"] == "memory" and body["status"] == "ready"
    assert 1100 < body["content_bytes"] <= 1200 and body["admitted"] == 2
    rows = body["candidates"]
    cited = [
        {k: ops_scope[t]["citation"][k] for k in ("entry_id", "entry_version_id")}
        for t in (SHORT, LONG, MISSES)
    ]
    assert [row["citation"] for row in rows] == [*cited, cited[0]]
    short, long, misses, again = rows
    assert short["decision"] == "admitted" and short["truncated"] is False
    assert short["content_bytes"] == len(SHORT)
    assert long["decision"] == "admitted" and long["truncated"] is True and long["truncated_by"] == "budget"
    assert long["source_bytes"] == len(LONG) > long["content_bytes"] >= 64
    assert misses["decision"] == "skipped" and misses["reason"] == "over_budget"
    assert again["decision"] == "duplicate" and again["duplicate_of"] == 1
    assert all(isinstance(row["score"], float) and row["matched_by"] for row in rows)
    assert "checklist" not in json.dumps(body) and "tuesdays" not in json.dumps(body)


def test_the_table_shows_sizes_and_short_ids_and_text_only_on_request(ops_scope) -> None:
    table = run("--scope", "ops", "--query", "deploy", "--max-bytes", "1200")
    shown = run("--scope", "ops", "--query", "deploy", "--max-bytes", "1200", "--show-text")

    assert "max_bytes 1200" in table and "admitted 2" in table
    assert re.search(r"search hybrid \(vector cache \d+\.\d of 256 MiB, \d+ scopes?\)  ", table) or (
        "search fts  " in table
    )
    assert "duplicate of #1" in table and "skipped: over_budget" in table and "truncated(budget)" in table
    assert "tuesdays" not in table and "checklist" not in table
    entry_id = ops_scope[SHORT]["citation"]["entry_id"]
    assert len(entry_id) <= 12 or entry_id not in table
    assert '"deploy on tuesdays only"' in shown
    assert '"deploy checklist checklist checklist che\u2026"' in shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Celery använder Redis", '"Celery använder Redis"'),  # letters of every script as they are
        ("数据库 PostgreSQL", '"数据库 PostgreSQL"'),
        ('say "hi" \\ bye', '"say \\"hi\\" \\\\ bye"'),
        ("two\nlines\ttab", '"two\\u000alines\\u0009tab"'),
        ("\x1b[31mred\x9b2J", '"\\u001b[31mred\\u009b2J"'),  # ESC and the one-byte CSI
        ("abc\u202edcba\u2028", '"abc\\u202edcba\\u2028"'),  # a bidi override, a line separator
        ("\U000e0001tag", '"\\U000e0001tag"'),  # a format character beyond the BMP
    ],
)
def test_a_preview_shows_letters_and_escapes_what_acts_on_a_terminal(text: str, shown: str) -> None:
    assert explain_prepare_command.preview(text) == shown


def test_an_unknown_scope_explains_an_empty_prepare(api: Api) -> None:
    body = json.loads(run("--scope", "nobody", "--query", "deploy", "--json"))

    assert body["memory_ref"] is None and body["status"] == "empty" and body["content_bytes"] == 0
    assert body["candidates"] == [] and body["max_bytes"] == 8000


def test_the_budget_is_validated(api: Api) -> None:
    with pytest.raises(CommandError, match="max-bytes"):
        run("--scope", "ops", "--query", "deploy", "--max-bytes", "100")
