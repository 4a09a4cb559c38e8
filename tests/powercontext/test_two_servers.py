"""Issue 35, build 3: two app servers on one PostgreSQL agree. A write served by server A is seen
by the very next prepare on server B, whose caches were warm before the write: by its words at
once, and by meaning alone (a query sharing no word with the entry) once its vector exists.

Each server is its own gunicorn (one worker, the embedding model loaded, embedding after commit
in the writing process: the embedded default without a broker). Nothing here waits a fixed
time: the vector wait polls the database for the entry's vector row.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection

from powercontext.core.models import MemoryEntryVector
from powercontext.evaluation.bench.common import Corpus
from powercontext.search.fulltext import analyzer
from tests.hardening.services import start_gunicorn, stop, wait_until

# (entry, a query sharing no word with it that the model finds near it: cosine 0.43-0.67).
PAIRS = [
    (
        "The nightly backup job copies the Postgres dump to the S3 bucket at 02:00.",
        "where do database snapshots get archived overnight?",
    ),
    ("Always rotate the API signing keys every ninety days.", "how often should credentials be renewed?"),
    (
        "Frontend written with React plus TypeScript, bundled by Vite.",
        "which javascript library renders our browser interface?",
    ),
    (
        "Use feature flags to roll out risky changes gradually.",
        "how can we release dangerous functionality safely?",
    ),
    (
        "Memory leaks in the worker were caused by an unbounded cache.",
        "why did background processes keep growing RAM?",
    ),
    ("Docker images are built in CI and pushed to the registry.", "where do container builds happen?"),
    ("Customers are billed monthly through Stripe invoices.", "how do we charge clients for subscriptions?"),
    (
        "Timezone bugs appear when dates are stored without UTC offsets.",
        "why is each timestamp wrong for users abroad?",
    ),
    (
        "The mobile app caches images on disk to save bandwidth.",
        "how does our phone application reduce network usage for pictures?",
    ),
    ("Password resets send a one-time link by email.", "how do people recover forgotten login secrets?"),
]
SCOPES = [f"two-servers-{n}" for n in range(20)]  # 20 scopes x 10 pairs = 200 writes
FILLERS = 20  # unrelated notes per scope before the writes


def _database_url() -> str:
    s = connection.settings_dict
    return (
        f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    )


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Servers A and B: two gunicorns, one worker each, on the test database."""
    env = {
        **{k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"},
        "DATABASE_URL": _database_url(),
        "POWERCONTEXT_EMBEDDINGS": "true",
        "POWERCONTEXT_EMBED_WRITES": "async",
        "POWERCONTEXT_REQUIRE_TOKEN": "false",
        "LOG_LEVEL": "WARNING",
    }
    started: list[Any] = []
    clients: list[httpx.Client] = []
    try:
        for name in ("a", "b"):
            log = (tmp_path / f"gunicorn-{name}.log").open("wb")
            process, url = start_gunicorn(env, log, workers=1)
            started.append((process, log))
            clients.append(httpx.Client(base_url=url, timeout=60))
        for client in clients:
            wait_until(lambda c=client: _answers(c), 120, "both servers to answer /health/ready")
        yield clients[0], clients[1]
    finally:
        for client in clients:
            client.close()
        for process, log in started:
            stop(process)
            log.close()


def _answers(client: httpx.Client) -> bool:
    try:
        return client.get("/health/ready").status_code == 200
    except httpx.TransportError:
        return False


def _remember(server: httpx.Client, scope: str, text: str) -> str:
    response = server.post("/v1/memory/remember", json={"scope_id": scope, "kind": "note", "text": text})
    assert response.status_code == 200, response.text
    return str(response.json()["entry"]["citation"]["entry_id"])


def _prepare(server: httpx.Client, scope: str, query: str) -> str:
    body = {"scope_id": scope, "query": query}  # auto: hybrid, the model being loaded
    response = server.post("/v1/context/prepare", json=body)
    assert response.status_code == 200, response.text
    return str(response.json()["content"] or "")


def _vectors(scope: str | None = None) -> int:
    rows = MemoryEntryVector.objects.all()
    return (rows.filter(scope_id=scope) if scope else rows).count()


def _has_vector(entry_id: str, scope: str) -> bool:
    return MemoryEntryVector.objects.filter(scope_id=scope, entry_version__entry__entry_id=entry_id).exists()


def test_the_queries_share_no_word_with_their_entries() -> None:
    for text, query in PAIRS:
        entry_terms = set(analyzer.index_terms(analyzer.analyze(text)))
        assert not entry_terms & set(analyzer.index_terms(analyzer.analyze(query))), query


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_write_on_one_server_is_seen_by_the_next_prepare_on_the_other(
    servers: tuple[httpx.Client, httpx.Client],
) -> None:
    a, b = servers
    corpus = Corpus(seed=35)
    for scope in SCOPES:
        for _ in range(FILLERS):
            _remember(a, scope, corpus.note())
    wait_until(lambda: _vectors() == len(SCOPES) * FILLERS, 300, "the fillers' vectors")
    # B's caches warm on every scope, for every query the loop asks (vectors, the ranking's
    # head, term statistics, the query vectors): a stale cache would answer from them.
    for scope in SCOPES:
        for text, query in PAIRS:
            assert text not in _prepare(b, scope, query)
            assert text not in _prepare(b, scope, text)

    by_words = by_meaning = 0
    for round_ in range(len(PAIRS)):
        for scope in SCOPES:
            text, query = PAIRS[round_]
            entry_id = _remember(a, scope, text)
            by_words += entry_id in _prepare(b, scope, text)  # at once: the full-text channel
            wait_until(lambda s=scope, e=entry_id: _has_vector(e, s), 60, "the entry's vector")
            by_meaning += entry_id in _prepare(b, scope, query)  # the vector channel alone
    assert (by_words, by_meaning) == (200, 200)
