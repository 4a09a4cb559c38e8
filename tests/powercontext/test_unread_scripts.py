"""Text the embedding model cannot read: MiniLM learned from English pairs, so any two Chinese,
Japanese or Russian texts come out similar. A query mostly in such a script is ranked and
admitted by its words alone (``embedding.reads``), as in full-text mode, so an unrelated Chinese
prompt against Chinese notes gets ``empty`` while a related one still gets its note."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest

from powercontext.evaluation import retrieval_eval
from powercontext.memory.selectors import memory_search
from powercontext.memory.services import memory_remember
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.prepare.builder import CONTENT_PREFIX, CONTENT_SUFFIX
from powercontext.prepare.explain_selectors import prepare_explain
from powercontext.search.vectors import embedding


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("which broker does celery use?", True),
        ("Quelle est la capitale de la Mongolie ?", True),  # Latin script: read (see the docs)
        ("the Übergrößenträger café", True),
        (unicodedata.normalize("NFD", "a crème brûlée"), True),  # combining accents stay in their word
        ("12345 -- !!", True),  # no letter: nothing to distrust
        ("what does 数据 mean", True),  # three words and two characters
        ("今天天气怎么样？", False),
        ("Celery 用什么消息代理？", False),  # one Latin word, six characters
        ("サワードウパンの焼き方は？", False),
        ("오늘 날씨 어때요?", False),
        ("Какой брокер использует Celery?", False),
        ("Ποια είναι η πρωτεύουσα;", False),
        # Latin letters, but languages the model finds alike whatever they say (told by the
        # language identifier); Swedish it reads as well as French
        ("Jaka jest stolica Mongolii?", False),
        ("Jaké je hlavní město Mongolska?", False),
        ("Apa ibu kota Mongolia?", False),
        ("Vad är Mongoliets huvudstad?", True),
        ("Moğolistan'ın başkenti neresidir?", False),  # Turkish
        ("Hvad er hovedstaden i Mongoliet?", False),  # Danish, Norwegian, Finnish, Hungarian too
        ("Mikä on Mongolian pääkaupunki?", False),
        ("Thủ đô của Mông Cổ là gì?", False),  # no list: no English word, letters beyond ASCII
        ("We ate crème brûlée in Zürich", True),  # English words: English
        ("which broker does celery use in staging?", True),
    ],
)
def test_reads_follows_the_script_of_most_words(text: str, read: bool) -> None:
    assert embedding.reads(text) is read


def cited_texts(scope: str, query: str) -> list[str]:
    """The texts of the Memory items a prepare of ``query`` cites, in order."""
    prepared = ScopedContextApplication().prepare(PrepareRequest(scope_id=scope, query=query))
    if prepared.content is None:
        return []
    envelope = json.loads(prepared.content[len(CONTENT_PREFIX) : -len(CONTENT_SUFFIX)])
    return [item["content"] for item in envelope["items"]]


def notes_with(notes: list[str], word: str) -> list[str]:
    (found,) = [note for note in notes if word in note]
    return [found]


@pytest.mark.django_db
def test_chinese_prompts_are_admitted_by_their_words(embeddings: Any) -> None:
    notes = retrieval_eval.read_lines("engineering_notes_zh.txt")
    for note in notes:
        memory_remember(scope_id="eng-zh", kind="note", text=note)
    unrelated = retrieval_eval.read_lines("negatives_everyday_zh.txt")
    assert len(unrelated) >= 30

    assert [query for query in unrelated if cited_texts("eng-zh", query)] == []
    # Related prompts still get their note, and only the notes their words match.
    assert cited_texts("eng-zh", "Celery 用什么消息代理？") == notes_with(notes, "Celery")
    assert cited_texts("eng-zh", "账本表可以修改吗？") == notes_with(notes, "账本表")
    explained = prepare_explain(scope_id="eng-zh", query="今天天气怎么样？", max_bytes=8000)
    assert explained.search_mode == "fts"
    assert all(row.similarity is None for row in explained.explanation.candidates)


@pytest.mark.django_db
def test_russian_prompts_too(embeddings: Any) -> None:
    notes = [
        "Для подключения к PostgreSQL используем psycopg 3.",
        "Таблица проводок только дополняется, исправления пишутся новыми строками.",
        "Celery использует Redis как брокер сообщений.",
        "Миграции выполняются перед выпуском новой версии.",
    ]
    for note in notes:
        memory_remember(scope_id="eng-ru", kind="note", text=note)

    # Words alone decide, without Russian function words: "как" in "Привет, как дела?" is not a
    # topic, though it is rare in four notes (analyzer.stop_words).
    for unrelated in ("Как испечь хлеб на закваске?", "Какая столица Монголии?", "Привет, как дела?"):
        assert cited_texts("eng-ru", unrelated) == [], unrelated
    assert cited_texts("eng-ru", "Какой брокер использует Celery?") == notes_with(notes, "Celery")


@pytest.mark.django_db
def test_search_auto_reports_full_text_for_an_unread_query(embeddings: Any) -> None:
    memory_remember(scope_id="mixed", kind="note", text="Celery 使用 Redis 作为消息代理。")
    memory_remember(scope_id="mixed", kind="note", text="Celery uses Redis as its broker.")

    assert (
        memory_search(scope_id="mixed", query="Celery 用什么消息代理？", limit=5, mode="auto").mode == "fts"
    )
    assert memory_search(
        scope_id="mixed", query="which broker does celery use", limit=5, mode="auto"
    ).mode == ("hybrid")
    # Asked for explicitly, the vector channel still answers.
    assert memory_search(scope_id="mixed", query="Celery 用什么消息代理？", limit=5, mode="vector").hits
