"""Counting a prompt's tokens in a document's stored index terms, as prepare's reranking does."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from powercontext.search.fulltext import analyzer
from powercontext.search.fulltext.engines import Engine, PostgresEngine, SqliteEngine

ENGINES = [SqliteEngine(), PostgresEngine()]


def _tokens(words: list[str]) -> list[str]:
    return analyzer.scope_tokens("counts-scope", words)


@pytest.mark.parametrize("db", ENGINES, ids=lambda db: db.vendor)
@pytest.mark.parametrize("asked", [1, 3, 4, 5, 8, 9, 40])
def test_counts_are_each_tokens_occurrences_for_short_and_long_prompts(db: Engine, asked: int) -> None:
    # Words that are prefixes of one another ("log", "logs", "logger"), repeated, and a non-ASCII
    # one: a count must be of the whole token, however many tokens the prompt has.
    rng = random.Random(asked)
    vocabulary = ["log", "logs", "logger", "lo", "deploy", "déploiement", *(f"w{i}" for i in range(60))]
    for _ in range(50):
        document = _tokens(rng.choices(vocabulary, k=rng.randint(1, 60)))
        names = rng.sample(vocabulary, asked)
        tokens = dict(zip(_tokens(names), names, strict=True))
        held = Counter(document)
        expected = {name: held[token] for token, name in tokens.items() if held[token]}
        assert db.counts(db._stored(document), tokens) == expected


@pytest.mark.parametrize("db", ENGINES, ids=lambda db: db.vendor)
def test_a_long_prompt_and_a_short_one_count_alike(db: Engine) -> None:
    # Either side of ``lookup_tokens`` the two ways of counting must agree on the same document.
    document = _tokens(["retry", "retry", "retries", "cache", "cache", "cache", "timeout"])
    stored = db._stored(document)
    few = dict(zip(_tokens(["cache", "retry"]), ["cache", "retry"], strict=True))
    names = ["cache", "retry", *(f"other{i}" for i in range(db.lookup_tokens + 3))]
    many = dict(zip(_tokens(names), names, strict=True))
    assert len(few) <= db.lookup_tokens < len(many)
    assert db.counts(stored, few) == db.counts(stored, many) == {"cache": 3, "retry": 2}
