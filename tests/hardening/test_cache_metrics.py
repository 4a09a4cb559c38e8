"""The vector cache's evictions and bytes in /metrics, and a dead worker's live gauges dropped
(gunicorn.conf.py's ``child_exit``)."""

from __future__ import annotations

import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from context_api import metrics  # registers the cache's listener, as the app's URL conf does
from powercontext.search.vectors import vector_cache
from powercontext.search.vectors.vector_cache import ScopeLRU

TOKEN = "operator-token-for-cache-metrics-0123456789"
ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024


@pytest.fixture
def scrape(settings: Any) -> Iterator[Any]:
    settings.POWERCONTEXT_OPERATOR_TOKEN = TOKEN
    settings.POWERCONTEXT_METRICS = True
    vector_cache.clear_cache()

    def read() -> dict[str, Any]:
        response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200
        return {family.name: family for family in text_string_to_metric_families(response.content.decode())}

    yield read
    vector_cache.clear_cache()


def _evictions(families: dict[str, Any], cache: str) -> float:
    return sum(
        sample.value
        for sample in families["powercontext_vector_cache_evictions"].samples
        if sample.name.endswith("_total") and sample.labels["cache"] == cache
    )


@pytest.mark.django_db
def test_evictions_are_counted_by_cache_and_the_bytes_held_are_shown(scrape: Any, settings: Any) -> None:
    settings.POWERCONTEXT_VECTOR_CACHE_MB = 1
    cache: ScopeLRU[int] = ScopeLRU("metrics-test", lambda size: size)
    before = _evictions(scrape(), "metrics-test")

    cache.put("scope-a", 400_000)
    cache.put("scope-b", 400_000)
    held = scrape()
    assert _evictions(held, "metrics-test") == before  # both fit in 1 MiB
    assert held["powercontext_vector_cache_bytes"].samples[0].value == 800_000

    cache.put("scope-c", 400_000)  # over the bound: the least recently used, scope-a, goes
    cache.put("scope-d", 900_000)  # b, c go: d alone fits
    after = scrape()

    assert _evictions(after, "metrics-test") == before + 3
    assert after["powercontext_vector_cache_bytes"].samples[0].value == 900_000
    assert [cache.get(scope) for scope in ("scope-a", "scope-b", "scope-c", "scope-d")] == [
        None,
        None,
        None,
        900_000,
    ]
    for family in after.values():  # no scope id in any label
        for sample in family.samples:
            assert not any("scope-" in value for value in sample.labels.values())


@pytest.mark.django_db
def test_with_metrics_off_nothing_is_counted(scrape: Any, settings: Any) -> None:
    assert metrics.observe_vector_cache in vector_cache._listeners
    settings.POWERCONTEXT_VECTOR_CACHE_MB = 1
    cache: ScopeLRU[int] = ScopeLRU("metrics-off-test", lambda size: size)
    settings.POWERCONTEXT_METRICS = False
    cache.put("scope-a", 900_000)
    cache.put("scope-b", 900_000)
    settings.POWERCONTEXT_METRICS = True
    assert _evictions(scrape(), "metrics-off-test") == 0
    assert cache.get("scope-a") is None  # evicted all the same


def test_a_dead_workers_live_gauge_files_are_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("gauge_livesum_4242.db", "gauge_livesum_4343.db", "counter_4242.db"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["gunicorn"])
    child_exit = runpy.run_path(str(ROOT / "gunicorn.conf.py"))["child_exit"]

    child_exit(None, SimpleNamespace(pid=4242))

    assert sorted(p.name for p in tmp_path.iterdir()) == ["counter_4242.db", "gauge_livesum_4343.db"]
