"""search_memory over the wire: matching, ranking, Unicode, limits, modes, and what never hits."""

from __future__ import annotations

import math
from typing import Any

import pytest

from powercontext.search.fulltext import analyzer, language_id
from tests.api.helpers import (
    assert_error,
    assert_invalid,
    get_entry,
    make_memory,
    memory_ref,
    ok,
    retire,
    revise,
    search,
)

SCOPE = "search"
FILLER = [
    "the weather was mild and sunny",
    "lunch is served at noon",
    "the office plants need water",
    "a meeting about the budget",
    "parking is behind the building",
]


def hit_texts(api: Any, query: str, scope_id: str = SCOPE, **extra: Any) -> list[str]:
    return [hit["text"] for hit in api.search(scope_id, query, **extra)["hits"]]


# --- basics ---------------------------------------------------------------------------------------


def test_a_scope_without_memory_has_no_memory_no_mode_and_no_hits(api: Any) -> None:
    assert api.search(SCOPE, "anything") == {"memory": None, "mode": None, "hits": []}


def test_a_search_finds_the_matching_entry_with_a_full_citation(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "The deploy script lives in tools/deploy.sh")
    make_memory(api, SCOPE, *FILLER)

    body = api.search(SCOPE, "deploy")

    assert set(body) == {"memory", "mode", "hits"}
    assert body["memory"] == memory_ref(6)
    assert body["mode"] == "fts"
    (hit,) = body["hits"]
    assert set(hit) == {"citation", "text", "score", "matched_by"}
    assert hit["text"] == entry["text"]
    assert hit["matched_by"] == ["fts"]
    assert isinstance(hit["score"], float) and 0.0 <= hit["score"] <= 1.0
    # Hits cite the head revision the search saw, and the citation resolves to the same text.
    assert hit["citation"]["memory_ref"] == memory_ref(6)
    assert hit["citation"]["entry_id"] == entry["citation"]["entry_id"]
    assert hit["citation"]["entry_version_id"] == entry["citation"]["entry_version_id"]
    assert ok(get_entry(api, SCOPE, hit["citation"]))["text"] == entry["text"]


def test_a_query_that_matches_nothing_names_the_head_but_has_no_hits(api: Any) -> None:
    make_memory(api, SCOPE, *FILLER)

    assert api.search(SCOPE, "kubernetes") == {"memory": memory_ref(5), "mode": "fts", "hits": []}


def test_a_query_of_only_punctuation_has_no_hits(api: Any) -> None:
    make_memory(api, SCOPE, "a, b. c!")

    assert api.search(SCOPE, "?!.,;")["hits"] == []


@pytest.mark.parametrize("query", ["", " ", "\t\n", "\u3000"])
def test_a_blank_query_is_rejected(api: Any, query: str) -> None:
    make_memory(api, SCOPE, "something")

    errors = assert_invalid(search(api, SCOPE, query))

    assert errors[0]["loc"] == ["body", "query"]


def test_any_matching_term_is_enough_and_more_terms_rank_first(api: Any) -> None:
    make_memory(api, SCOPE, *FILLER)
    make_memory(
        api, SCOPE, "postgres backups run nightly", "postgres is the database", "backups are kept for a week"
    )

    hits = api.search(SCOPE, "postgres nightly backups")["hits"]

    assert hits[0]["text"] == "postgres backups run nightly"
    assert {h["text"] for h in hits} == {
        "postgres backups run nightly",
        "postgres is the database",
        "backups are kept for a week",
    }
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[-1]
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_inflected_english_words_match_their_stem(api: Any) -> None:
    make_memory(api, SCOPE, "Ann painted a sunrise over the lake", *FILLER)

    assert hit_texts(api, "paintings") == ["Ann painted a sunrise over the lake"]
    assert hit_texts(api, "PAINTS") == ["Ann painted a sunrise over the lake"]


def test_a_question_ranks_by_its_content_words_not_its_stop_words(api: Any) -> None:
    make_memory(
        api,
        SCOPE,
        "what did you do about it and what was it for",
        "what was that about",
        "Bob went kayaking on the lake",
    )

    hits = hit_texts(api, "What did Bob do about kayaking?")

    assert hits == ["Bob went kayaking on the lake"]


def _bm25(texts: list[str], query: str) -> list[float]:
    """Okapi BM25 as SQLite FTS5 computes it (k1 1.2, b 0.75, IDF floored at 1e-6, N and the
    average length over the given documents), from the analyzer's index terms."""
    docs = [analyzer.index_terms(analyzer.analyze(text)) for text in texts]
    terms = analyzer.query_terms(query, language_id.identify(query))
    n, avgdl = len(docs), sum(map(len, docs)) / len(docs)
    scores = []
    for doc in docs:
        score = 0.0
        for term in terms:
            tf = doc.count(term)
            if tf:
                df = sum(1 for other in docs if term in other)
                idf = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(doc) / avgdl))
        scores.append(score)
    return scores


def test_both_engines_rank_by_bm25_rare_terms_and_short_entries_first(api: Any) -> None:
    # Each engine ranks alike: a term in most entries weighs (almost) nothing however often it
    # repeats, a rare term decides, and among equal matches the shorter entry ranks first.
    texts = [
        "deploy deploy deploy deploy the service",
        "deploy the service on friday after the long weekly review of everything",
        "deploy on friday",
        "deploy the docs",
        "deploy the site",
        "rollback deploy",
        *FILLER,
    ]
    make_memory(api, SCOPE, *texts)
    query = "deploy rollback friday"
    expected = _bm25(texts, query)
    matching = sorted((i for i, score in enumerate(expected) if score > 0), key=lambda i: (-expected[i], i))

    hits = api.search(SCOPE, query, limit=20)["hits"]

    assert [hit["text"] for hit in hits] == [texts[i] for i in matching]
    assert hits[0]["text"] == "rollback deploy"
    assert hits[1]["text"] == "deploy on friday"
    for hit, i in zip(hits, matching, strict=True):
        assert hit["score"] == pytest.approx(expected[i] / (1 + expected[i]), rel=1e-5)

    # The statistics follow writes: more entries with "rollback" lower its weight.
    more = ["rollback the release", "rollback plan ready"]
    make_memory(api, SCOPE, *more)
    texts += more
    expected = _bm25(texts, query)
    by_text = {text: score for text, score in zip(texts, expected, strict=True)}

    hits = api.search(SCOPE, query, limit=20)["hits"]

    assert len(hits) == sum(1 for score in expected if score > 0)
    for hit in hits:
        assert hit["score"] == pytest.approx(by_text[hit["text"]] / (1 + by_text[hit["text"]]), rel=1e-5)


def test_a_long_query_ranks_by_the_same_bm25(api: Any) -> None:
    # A prompt of many words ranks every matched entry by FTS5's BM25 on both engines (PostgreSQL
    # reads each query token's postings), a term repeated in an entry counted as often as it
    # appears.
    texts = [
        "deploy deploy deploy deploy the service",
        "deploy the service on friday after the long weekly review of everything",
        "rollback deploy",
        "water the office plants, then water them again on friday",
        *FILLER,
    ]
    make_memory(api, SCOPE, *texts)
    query = "deploy rollback friday service weekly review water office plants lunch noon weather mild"
    assert len(analyzer.query_terms(query, language_id.identify(query))) > 8
    expected = _bm25(texts, query)
    matching = sorted((i for i, score in enumerate(expected) if score > 0), key=lambda i: (-expected[i], i))

    hits = api.search(SCOPE, query, limit=20)["hits"]

    assert [hit["text"] for hit in hits] == [texts[i] for i in matching]
    for hit, i in zip(hits, matching, strict=True):
        assert hit["score"] == pytest.approx(expected[i] / (1 + expected[i]), rel=1e-5)


def test_a_query_of_only_stop_words_still_matches_them(api: Any) -> None:
    make_memory(api, SCOPE, "what was that about", *FILLER)

    assert hit_texts(api, "What was that?")[0] == "what was that about"


def test_matching_is_by_whole_words(api: Any) -> None:
    make_memory(api, SCOPE, "configuration lives in settings", *FILLER)

    assert hit_texts(api, "config") == []
    assert hit_texts(api, "configuration") == ["configuration lives in settings"]


# --- Unicode --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "query"),
    [
        pytest.param("我们今天讨论数据库迁移方案", "数据库", id="chinese_substring"),
        pytest.param("我们今天讨论数据库迁移方案", "迁移方案", id="chinese_suffix"),
        pytest.param("我们今天讨论数据库迁移方案", "数据库的迁移", id="chinese_with_extra_characters"),
        pytest.param("テストを実行してください", "テスト", id="japanese_katakana"),
        pytest.param("ひらがなのぶんしょうです", "ぶんしょう", id="japanese_hiragana"),
        pytest.param("東京で会議があります", "会議", id="japanese_kanji"),
        pytest.param("데이터베이스 마이그레이션 계획", "마이그레이션", id="korean_word"),
        pytest.param("데이터베이스 마이그레이션 계획", "이그레", id="korean_inside_a_word"),
        pytest.param("release mixed中文text today", "中文", id="cjk_inside_latin"),
    ],
)
def test_cjk_text_is_found_by_a_substring_query(api: Any, text: str, query: str) -> None:
    make_memory(api, SCOPE, text, *FILLER)

    assert hit_texts(api, query) == [text]


def test_a_maximal_cjk_entry_is_indexed_and_found_by_any_of_its_pairs(api: Any) -> None:
    text = "".join(chr(0x4E00 + i) for i in range(2730)) + "ab"  # 8192 UTF-8 bytes, all distinct
    make_memory(api, SCOPE, text, *FILLER)

    for start in (0, 1365, 2728):
        query = text[start : start + 2]
        assert hit_texts(api, query) == [text], query


@pytest.mark.parametrize("query", ["苹果", "カメラ", "사과"])
def test_unrelated_cjk_queries_do_not_match(api: Any, query: str) -> None:
    make_memory(
        api, SCOPE, "我们今天讨论数据库迁移方案", "テストを実行してください", "데이터베이스 마이그레이션 계획"
    )

    assert hit_texts(api, query) == []


def test_an_emoji_is_a_searchable_term(api: Any) -> None:
    make_memory(api, SCOPE, "ship it \U0001f680 tonight", "party \U0001f389 friday", *FILLER)

    assert hit_texts(api, "\U0001f680") == ["ship it \U0001f680 tonight"]
    assert hit_texts(api, "\U0001f389") == ["party \U0001f389 friday"]
    assert hit_texts(api, "\U0001f431") == []


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        pytest.param("caf\u00e9 au lait", "cafe\u0301", id="decomposed_query_finds_composed_text"),
        pytest.param("cafe\u0301 noir", "caf\u00e9", id="composed_query_finds_decomposed_text"),
        pytest.param("Caf\u00e9 au lait", "CAFE\u0301", id="decomposed_upper_case_query"),
    ],
)
def test_combining_characters_match_their_composed_forms(api: Any, stored: str, query: str) -> None:
    make_memory(api, SCOPE, stored, "cafe without accent", *FILLER)

    hits = hit_texts(api, query)

    assert len(hits) == 1
    assert hits[0].startswith(("caf\u00e9", "Caf\u00e9"))  # returned in NFC


def test_an_accent_is_significant(api: Any) -> None:
    make_memory(api, SCOPE, "caf\u00e9 au lait", *FILLER)

    assert hit_texts(api, "cafe") == []


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        pytest.param("Stra\u00dfe is the street", "STRASSE", id="sharp_s_text_upper_query"),
        pytest.param("STRASSE is the street", "stra\u00dfe", id="upper_text_sharp_s_query"),
        pytest.param("Hello World", "hello", id="ascii"),
        pytest.param("hello world", "HELLO", id="ascii_upper_query"),
        pytest.param("\u039f\u0394\u039f\u03a3 is greek", "\u03bf\u03b4\u03bf\u03c2", id="greek_final_sigma"),
        pytest.param("\uff26\uff35\uff2c\uff2c width", "\uff46\uff55\uff4c\uff4c", id="fullwidth_latin"),
    ],
)
def test_matching_is_case_insensitive_by_casefolding(api: Any, stored: str, query: str) -> None:
    make_memory(api, SCOPE, stored, *FILLER)

    assert hit_texts(api, query) == [stored]


def test_an_underscore_word_is_one_term(api: Any) -> None:
    make_memory(api, SCOPE, "call get_user_by_id before saving", "get the user first", *FILLER)

    assert hit_texts(api, "get_user_by_id") == ["call get_user_by_id before saving"]
    assert hit_texts(api, "by") == []


def test_punctuation_separates_terms(api: Any) -> None:
    make_memory(api, SCOPE, "see docs/setup.md for details", *FILLER)

    assert hit_texts(api, "setup") == ["see docs/setup.md for details"]
    assert hit_texts(api, "md") == ["see docs/setup.md for details"]


# --- limit ----------------------------------------------------------------------------------------


def test_the_default_limit_is_ten(api: Any) -> None:
    make_memory(api, SCOPE, *[f"matching entry number {i}" for i in range(12)])

    assert len(hit_texts(api, "matching")) == 10


@pytest.mark.parametrize("limit", [1, 3, 12, 50])
def test_the_limit_caps_the_hits(api: Any, limit: int) -> None:
    make_memory(api, SCOPE, *[f"matching entry number {i}" for i in range(12)])

    assert len(hit_texts(api, "matching", limit=limit)) == min(limit, 12)


def test_the_limit_keeps_the_best_hits(api: Any) -> None:
    make_memory(api, SCOPE, *FILLER)
    make_memory(api, SCOPE, "red apples", "red green blue apples", "green leaves")

    assert hit_texts(api, "red green blue apples", limit=1) == ["red green blue apples"]


# --- what is never a hit --------------------------------------------------------------------------


def test_a_retired_entry_is_never_a_hit(api: Any) -> None:
    gone, _ = make_memory(api, SCOPE, "obsolete deploy notes", "current deploy notes")
    ok(retire(api, SCOPE, {**gone["citation"], "memory_ref": memory_ref(2)}))

    body = api.search(SCOPE, "obsolete deploy")

    assert [h["text"] for h in body["hits"]] == ["current deploy notes"]
    assert body["memory"] == memory_ref(3)


def test_a_revised_entry_is_found_by_its_new_text_only(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "the cache uses redis")
    revised = ok(revise(api, SCOPE, entry["citation"], "the cache uses memcached"))["entry"]

    assert hit_texts(api, "redis") == []
    hits = api.search(SCOPE, "cache")["hits"]
    assert [h["text"] for h in hits] == ["the cache uses memcached"]
    assert hits[0]["citation"] == revised["citation"]


def test_a_search_after_every_entry_is_retired_names_the_head_and_finds_nothing(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "temporary note")
    ok(retire(api, SCOPE, entry["citation"]))

    assert api.search(SCOPE, "temporary") == {"memory": memory_ref(2), "mode": "fts", "hits": []}


def test_a_no_op_remember_does_not_duplicate_hits(api: Any) -> None:
    make_memory(api, SCOPE, "only once")
    api.remember(SCOPE, "only once")

    assert hit_texts(api, "once") == ["only once"]


# --- modes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "fts"])
def test_auto_and_fts_modes_report_fts(api: Any, mode: str) -> None:
    make_memory(api, SCOPE, "mode check")

    body = api.search(SCOPE, "mode", mode=mode)

    assert body["mode"] == "fts"
    assert [h["text"] for h in body["hits"]] == ["mode check"]


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
@pytest.mark.parametrize("with_memory", [True, False])
def test_vector_and_hybrid_modes_are_not_supported(api: Any, mode: str, with_memory: bool) -> None:
    if with_memory:
        make_memory(api, SCOPE, "mode check")

    details = assert_error(search(api, SCOPE, "mode", mode=mode), 422, "capability_not_supported")

    assert isinstance(details, dict) and isinstance(details.get("capability"), str)
    assert mode in details["capability"]


def test_capabilities_list_exactly_the_modes_search_accepts(api: Any) -> None:
    make_memory(api, SCOPE, "mode check")
    modes = ok(api.get("/v1/capabilities"))["search_modes"]

    for mode in ("auto", "fts", "vector", "hybrid"):
        response = search(api, SCOPE, "mode", mode=mode)
        assert (response.status_code == 200) == (mode in modes), (mode, response.status_code)


# --- vector and hybrid (the local embedding model loaded) -----------------------------------------


def test_with_the_model_capabilities_list_every_mode_and_each_works(api: Any, embeddings: Any) -> None:
    make_memory(api, SCOPE, "Ann painted a sunrise over the lake", *FILLER)

    assert ok(api.get("/v1/capabilities"))["search_modes"] == ["auto", "fts", "vector", "hybrid"]
    for mode, used in (("auto", "hybrid"), ("fts", "fts"), ("vector", "vector"), ("hybrid", "hybrid")):
        body = api.search(SCOPE, "a painting of the dawn", mode=mode, limit=3)
        assert body["mode"] == used and body["memory"] == memory_ref(6)
        assert body["hits"][0]["text"] == "Ann painted a sunrise over the lake"
        for hit in body["hits"]:
            assert hit["citation"]["memory_ref"] == memory_ref(6)
            assert 0.0 <= hit["score"] <= 1.0 and set(hit["matched_by"]) <= {"fts", "vector"}


def test_vector_hits_name_their_channel_and_cite_resolvable_entries(api: Any, embeddings: Any) -> None:
    make_memory(api, SCOPE, "Ann painted a sunrise over the lake", *FILLER)

    body = api.search(SCOPE, "artwork of the morning sky", mode="vector", limit=50)

    assert len(body["hits"]) == 6 and all(hit["matched_by"] == ["vector"] for hit in body["hits"])
    top = body["hits"][0]
    assert ok(get_entry(api, SCOPE, top["citation"]))["text"] == top["text"]


def test_vector_search_stays_in_its_scope(api: Any, embeddings: Any) -> None:
    make_memory(api, SCOPE, "Ann painted a sunrise over the lake")
    make_memory(api, "other", "Bob painted a sunset over the sea")

    for mode in ("vector", "hybrid"):
        assert hit_texts(api, "painting", mode=mode) == ["Ann painted a sunrise over the lake"]
        assert hit_texts(api, "painting", "other", mode=mode) == ["Bob painted a sunset over the sea"]
