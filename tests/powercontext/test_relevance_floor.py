"""The relevance floor: a Memory or Experience candidate reaches the builder only when its own
similarity or lexical share clears the floor (``powercontext.search.ranking.relevance``); unrelated
prompts get an empty pack. The scopes are written here; the shipped negative prompt sets
(``powercontext/evaluation/data``) are read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from powercontext import search
from powercontext.evaluation import retrieval_eval
from powercontext.memory.services import memory_remember
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.prepare.explain_selectors import prepare_explain
from powercontext.prepare.selection import context_candidates
from powercontext.search.ranking import relevance, rerank
from powercontext.search.vectors import embedding, queries
from tests.review.factories import make_approved

EPSILON = 1e-6

NOTES = [
    "Use psycopg 3 for PostgreSQL connections in the billing service.",
    "The ledger table is append-only; corrections are new rows.",
    "Run ruff check and ruff format before every push.",
    "gunicorn runs two sync workers behind nginx with a 30 second timeout.",
    "Celery uses Redis as its broker; task results are not stored.",
    "Migrations run before the new release is switched on.",
    "Staging deploys are triggered by tags that start with rc-.",
    "Outbound HTTP calls time out after 3 seconds to connect and 10 to read.",
    "Feature flags are cached for sixty seconds in each worker process.",
    "The nightly pg_dump backup is restored weekly on the test host.",
]
CHAT = [
    "Ann: We adopted a greyhound called Pixel last weekend!",
    "Bob: A greyhound! How is Pixel settling in?",
    "Ann: She sleeps all day on the sofa and runs like the wind in the park.",
    "Bob: I finally finished painting the kitchen a pale yellow.",
    "Ann: Yellow sounds lovely. Did you paint the ceiling too?",
    "Bob: No, the ceiling stays white. Next I want to try pottery classes.",
    "Ann: My sister teaches pottery downtown on Thursdays.",
    "Bob: I went kayaking on the lake with my cousin on Sunday.",
]


def set_floor(settings: Any, similarity: float, share: float, lexical_similarity: float) -> None:
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = similarity
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = share
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY = lexical_similarity


def remember_all(scope: str, texts: list[str], kind: str = "note") -> None:
    for text in texts:
        memory_remember(scope_id=scope, kind=kind, text=text)


def memory_texts(scope: str, query: str) -> list[str]:
    found = context_candidates(scope_id=scope, query=query, memory_limit=16, experience_limit=8)
    return [hit.text for hit in found.memory_hits]


def figures(scope: str, query: str, text: str) -> tuple[float | None, float | None]:
    """(similarity, lexical share) of the candidate with ``text``, as selection computes them."""
    if search.best_mode() == "hybrid":
        rows, _ = rerank.ranked_context(scope, query, memory_limit=32, experience_limit=0)
    else:
        rows = relevance.annotate_memory(scope, query, search.search_memory(scope, query, 32))
    (row,) = [row for row in rows if row.text == text]
    return row.similarity, row.lexical_share


def test_the_floor_admits_at_its_thresholds_and_not_below() -> None:
    floor = relevance.Floor(min_similarity=0.4, min_lexical_share=0.3, min_lexical_similarity=0.2)

    assert floor.admits(0.4, 0.0) and not floor.admits(0.4 - EPSILON, 0.0)  # meaning alone
    assert floor.admits(None, 0.3) and not floor.admits(None, 0.3 - EPSILON)  # words alone, no vector
    # Words need a little agreement from meaning when the candidate has a vector.
    assert floor.admits(0.2, 0.3) and not floor.admits(0.2 - EPSILON, 0.3)
    assert not floor.admits(None, None)
    assert relevance.Floor(0.0, 0.0, 0.0).admits(-0.5, 0.0)  # all thresholds 0: off


@pytest.mark.django_db
def test_lexical_share_is_the_idf_mass_of_the_query_terms_an_entry_holds(settings: Any) -> None:
    remember_all("lex", ["ledger rows are append-only", "the ledger is audited", "lunch menu on fridays"])
    weights = relevance.term_weights(search.MEMORY_INDEX, "lex", relevance.content_terms("the ledger audit"))

    # "the" is a stop word; "ledger" is in two of three entries, "audit" (stemmed) in one.
    ledger, audit = ("ledger",), ("audit",)
    assert set(weights) == {ledger, audit} and weights[audit] > weights[ledger] > 0
    total = weights[ledger] + weights[audit]
    assert relevance.lexical_share(weights, ["the ledger is audited"]) == pytest.approx(1.0)
    assert relevance.lexical_share(weights, ["ledger rows"]) == pytest.approx(weights[ledger] / total)
    assert relevance.lexical_share(weights, ["lunch"]) == 0.0
    assert relevance.content_terms("how are you") == []  # only stop words: no lexical evidence


@pytest.mark.django_db
def test_memory_by_words_alone_at_the_boundary(settings: Any) -> None:
    """Without the model, the lexical share decides: just above the floor in, just below out."""
    remember_all("words", NOTES)
    query, text = "ledger corrections for the billing service", NOTES[1]
    set_floor(settings, 0.0, 0.0, 0.0)
    similarity, share = figures("words", query, text)
    assert similarity is None and share is not None and 0 < share < 1

    set_floor(settings, 0.4, share - EPSILON, 0.2)
    assert text in memory_texts("words", query)
    set_floor(settings, 0.4, share + EPSILON, 0.2)
    assert text not in memory_texts("words", query)


@pytest.mark.django_db
def test_memory_by_meaning_alone_at_the_boundary(embeddings: Any, settings: Any) -> None:
    """An entry sharing no word with the query is admitted by its raw similarity only."""
    remember_all("meaning", CHAT, kind="conversation")
    query, text = "a new dog at home", CHAT[0]
    set_floor(settings, 0.0, 0.0, 0.0)
    similarity, share = figures("meaning", query, text)
    assert share == 0.0 and similarity is not None and similarity > 0.2

    set_floor(settings, similarity - EPSILON, 1.0, 1.0)
    assert text in memory_texts("meaning", query)
    set_floor(settings, similarity + EPSILON, 1.0, 1.0)
    assert text not in memory_texts("meaning", query)
    # What the floor kept out stays visible to explain: a skip decision with its figures.
    found = context_candidates(scope_id="meaning", query=query, memory_limit=16, experience_limit=8)
    (kept_out,) = [d for d in found.dropped if d.hit.text == text]
    assert (kept_out.decision, kept_out.reason) == ("skipped", "below_relevance_floor")
    assert (kept_out.hit.similarity, kept_out.hit.lexical_share) == (pytest.approx(similarity), 0.0)
    assert all(
        hit.similarity is not None and hit.similarity >= similarity + EPSILON for hit in found.memory_hits
    )
    explained = prepare_explain(scope_id="meaning", query=query, max_bytes=8000, show_text=False)
    (shown,) = [
        row
        for row in explained.explanation.as_dict()["candidates"]
        if row["reason"] == "below_relevance_floor" and row["citation"]["entry_id"] == kept_out.hit.entry_id
    ]
    assert shown["similarity"] == pytest.approx(similarity) and shown["lexical_share"] == 0.0
    assert any(row.outcome == "skipped: below_relevance_floor" for row in explained.rows())


@pytest.mark.django_db
def test_memory_by_words_needs_the_lexical_similarity_when_it_has_a_vector(
    embeddings: Any, settings: Any
) -> None:
    remember_all("both", CHAT, kind="conversation")
    query, text = "pottery classes downtown", CHAT[6]
    set_floor(settings, 0.0, 0.0, 0.0)
    similarity, share = figures("both", query, text)
    assert similarity is not None and share is not None and share > 0.5

    set_floor(settings, 1.0, share, similarity - EPSILON)
    assert text in memory_texts("both", query)
    set_floor(settings, 1.0, share, similarity + EPSILON)
    assert text not in memory_texts("both", query)


STATUE = {
    "situation": "Bob carved a marble statue of a horse",
    "action": "he chiselled for weeks",
    "outcome": "the figure was finished",
    "lesson": "patience with marble",
}


def experience_situations(scope: str, query: str) -> list[str]:
    found = context_candidates(scope_id=scope, query=query, memory_limit=16, experience_limit=8)
    return [hit.content.situation for hit in found.experience_hits]


def experience_figures(scope: str, query: str) -> tuple[float | None, float | None]:
    rows = search.search_experience(scope, query, 8)
    if embedding.embedder() is not None:
        rows = queries.vector_search_experience(scope, query, 8)
    (row,) = relevance.annotate_experience(scope, query, rows)
    return row.similarity, row.lexical_share


@pytest.mark.django_db
def test_experiences_follow_the_same_rule_by_meaning(embeddings: Any, settings: Any) -> None:
    make_approved("exp", proposal=STATUE)
    query = "stone sculpture showing an animal"  # no word in common
    similarity, share = experience_figures("exp", query)
    assert share == 0.0 and similarity is not None

    set_floor(settings, similarity - EPSILON, 1.0, 1.0)
    assert experience_situations("exp", query) == [STATUE["situation"]]
    set_floor(settings, similarity + EPSILON, 1.0, 1.0)
    assert experience_situations("exp", query) == []


@pytest.mark.django_db
def test_experiences_follow_the_same_rule_by_words(settings: Any) -> None:
    make_approved("exp-words", proposal=STATUE)
    query = "marble statue of a dragon"
    similarity, share = experience_figures("exp-words", query)
    assert similarity is None and share is not None and 0 < share < 1

    set_floor(settings, 0.4, share - EPSILON, 0.2)
    assert experience_situations("exp-words", query) == [STATUE["situation"]]
    set_floor(settings, 0.4, share + EPSILON, 0.2)
    assert experience_situations("exp-words", query) == []


def empty_rate(scope: str, prompts: list[str]) -> float:
    application = ScopedContextApplication()
    empty = [application.prepare(PrepareRequest(scope_id=scope, query=p)).status == "empty" for p in prompts]
    return sum(empty) / len(empty)


@pytest.mark.django_db
def test_the_negative_sets_stay_empty_and_related_prompts_do_not(embeddings: Any) -> None:
    remember_all("eng", NOTES)
    remember_all("chat", CHAT, kind="conversation")
    sets = {name: retrieval_eval.read_lines(file) for name, (file, _) in retrieval_eval.NEGATIVE_SETS.items()}
    assert sum(len(prompts) for prompts in sets.values()) >= 150

    for name in ("everyday", "smalltalk", "nonsense"):
        assert empty_rate("eng", sets[name]) >= 0.95, name
    for name in ("software", "nonsense"):
        assert empty_rate("chat", sets[name]) >= 0.95, name
    # The floor is not a wall: prompts about what the scopes hold still get their entries.
    assert empty_rate("eng", ["which broker does celery use?", "how long do feature flags stay cached?"]) == 0
    assert empty_rate("chat", ["what is the name of Ann's greyhound?", "where are the pottery classes?"]) == 0


@pytest.mark.django_db
def test_without_the_model_unrelated_prompts_are_empty_too() -> None:
    remember_all("eng-fts", NOTES)
    everyday = retrieval_eval.read_lines("negatives_everyday.txt")

    assert empty_rate("eng-fts", everyday) >= 0.95
    assert empty_rate("eng-fts", ["which broker does celery use?"]) == 0


def test_the_query_embedding_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    class Counting(embedding.Embedder):
        def __init__(self) -> None:  # no model: embed() is replaced
            self._queries = embedding.OrderedDict()
            self._lock = embedding.threading.Lock()
            self.runs = 0

        def embed(self, text: str) -> Any:
            self.runs += 1
            return embedding.np.full(3, float(len(text)), dtype=embedding.np.float32)

    monkeypatch.setattr(embedding, "QUERY_CACHE_SIZE", 3)
    model = Counting()
    for query in ("a", "bb", "ccc", "a", "dddd"):
        model.embed_query(query)

    assert model.runs == 4  # the repeated "a" came from the cache
    assert list(model._queries) == ["ccc", "a", "dddd"]  # bounded; least recently used ("bb") left
    model.embed_query("bb")
    assert model.runs == 5 and len(model._queries) == 3


HOOK = Path(__file__).resolve().parents[2] / "context_api" / "hooks" / "codex_user_prompt_submit.py"


@pytest.mark.django_db(transaction=True)
def test_over_http_and_the_codex_hook_an_unrelated_prompt_is_empty_and_silent(
    embeddings: Any, live_server: Any, tmp_path: Path
) -> None:
    import httpx

    for note in NOTES:
        httpx.post(
            f"{live_server.url}/v1/memory/remember",
            json={"scope_id": "hook-eng", "kind": "note", "text": note},
        ).raise_for_status()

    def prepare(query: str) -> dict[str, Any]:
        response = httpx.post(
            f"{live_server.url}/v1/context/prepare", json={"scope_id": "hook-eng", "query": query}
        )
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    for unrelated in ("zebra xylophone marmalade teacup origami", "what is the capital of Mongolia"):
        assert prepare(unrelated)["status"] == "empty"
    assert prepare("which broker does celery use?")["status"] == "ready"

    hook = subprocess.run(
        [sys.executable, str(HOOK)],
        input=json.dumps(
            {
                "hook_event_name": "UserPromptSubmit",
                "prompt": "how do I bake sourdough bread",
                "cwd": str(tmp_path),
            }
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            "PATH": "/usr/bin:/bin",
            "POWERCONTEXT_URL": live_server.url,
            "POWERCONTEXT_SCOPE_ID": "hook-eng",
            "POWERCONTEXT_TIMEOUT_SECONDS": "10",
        },
    )
    assert hook.returncode == 0 and hook.stdout == ""
    (diagnostic,) = hook.stderr.splitlines()
    assert json.loads(diagnostic)["outcome"] == "empty"


def test_speaker_labels_used_by_the_ranking() -> None:  # neighbours: test_rerank
    words = {"what", "did", "caroline", "research"}
    assert rerank.speaker_named("Caroline: I researched adoption agencies.", words)
    assert not rerank.speaker_named("Melanie: Caroline researched it.", words)  # named, not speaking
    assert not rerank.speaker_named("no label here", words)
    assert rerank.speaker_named("Mary Ann: hi", {"mary", "ann"}) and not rerank.speaker_named(
        "Mary Ann: hi", {"ann"}
    )


@pytest.mark.django_db
def test_by_words_alone_the_scope_s_totals_are_counted_once_per_head_and_the_statement_s_counts_reused() -> (
    None
):
    """Without the model (and for every prompt the model cannot read) the lexical shares are
    weighed in the selection: the scope's totals (one row kept by triggers) are read once per
    Memory head, and on PostgreSQL the document frequencies come with the
    ranked read. The shares are those of figures counted afresh."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from powercontext.search.fulltext import bm25

    remember_all("weighed", NOTES)
    query = "which broker does celery use for tasks?"
    hits = context_candidates(
        scope_id="weighed", query=query, memory_limit=16, experience_limit=8
    ).memory_hits
    assert hits
    fresh = relevance.annotate_memory("weighed", query, search.search_memory("weighed", query, 32))
    bm25.clear_cache()
    counted = relevance.annotate_memory("weighed", query, search.search_memory("weighed", query, 32))
    assert [row.lexical_share for row in counted] == pytest.approx([row.lexical_share for row in fresh])

    def statements() -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            context_candidates(scope_id="weighed", query=query, memory_limit=16, experience_limit=8)
        return [entry["sql"] for entry in captured.captured_queries]

    totals = "total_length"  # the statement of the scope's totals
    assert not any(totals in sql for sql in statements())  # kept for this head
    memory_remember(scope_id="weighed", kind="note", text="Celery retries failed tasks three times.")
    after_write = statements()
    assert sum(totals in sql for sql in after_write) == 1  # once for the new head, on both databases
    assert not any(totals in sql for sql in statements())
    term_counts = "@@" if connection.vendor == "postgresql" else "MATCH"
    # PostgreSQL: one ranked read counts the terms too; SQLite: the ranked read and the counts.
    assert sum(term_counts in sql for sql in statements()) == (1 if connection.vendor == "postgresql" else 2)
