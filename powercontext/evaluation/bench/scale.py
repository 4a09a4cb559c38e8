"""Scale benchmarks (issue 35): embedding catch-up after a bulk write, and prepare over HTTP on a
large scope. Entries are written through the service layer the API and the pipeline use
(``memory_apply_changes``: one transaction, one Memory revision per chunk), so indexes,
signals and the embedder behave as in production; ``manage.py bench_scale`` drives them.
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction

from powercontext.core.models import MemoryEntryVector, MemoryMembership
from powercontext.evaluation.bench.common import Corpus, Texts, load_average, percentile
from powercontext.evaluation.bench.http import timed_prepares
from powercontext.evaluation.bench.scope_copy import copy_scope
from powercontext.memory.services import NewEntry, memory_apply_changes
from powercontext.search.vectors import embedding, pending

CHUNK = 500  # entries per write transaction when seeding


def seed(scope_id: str, count: int, corpus: Corpus | Texts, chunk: int = CHUNK) -> float:
    """Write ``count`` new notes to ``scope_id`` in transactions of ``chunk``; returns seconds."""
    started = time.perf_counter()
    written = 0
    while written < count:
        size = min(chunk, count - written)
        batch = [
            NewEntry(key=str(written + i), kind="note", text=corpus.note(), source_refs=[])
            for i in range(size)
        ]
        with transaction.atomic(durable=True):
            memory_apply_changes(scope_id=scope_id, remember=batch, retire_entry_ids=[])
        written += size
    return time.perf_counter() - started


def backlog(scope_id: str) -> int:
    """Active entry versions of the scope still without a vector."""
    return int(
        MemoryMembership.objects.filter(
            scope_id=scope_id,
            to_revision__isnull=True,
            state=MemoryMembership.State.ACTIVE,
            entry_version__vector__isnull=True,
        ).count()
    )


def bench_catch_up(
    entries: int, out: Callable[[str], None], scope_id: str | None = None, texts: Sequence[str] | None = None
) -> dict[str, Any]:
    """Write ``entries`` notes in bulk with the embedder running (this process's thread, the
    embedded default; the same ``embed_pending`` a Celery worker runs), then wait until every
    one has a vector. Reports the seeding time, the backlog at the last write, the catch-up time
    after it and the rates. The model is loaded and warmed before the clock starts. The notes
    are the synthetic ``Corpus``'s, or taken in turn from ``texts`` (``Texts``)."""
    if not embedding.warm_up():
        raise RuntimeError("the embedding model is unavailable: nothing to catch up")
    model = embedding.embedder()
    assert model is not None
    scope = scope_id or f"scale-catch-up-{time.time_ns()}"
    corpus: Corpus | Texts = Corpus(seed=35) if texts is None else Texts(texts)
    sample = [corpus.note() for _ in range(200)] if texts is None else list(texts)
    tokens = sum(len(model._tokenizer.encode(text).ids) for text in sample) / len(sample)
    load_before = load_average()
    cpu_before = time.process_time()
    started = time.perf_counter()
    seed_seconds = seed(scope, entries, corpus)
    last_write = time.perf_counter()
    left = backlog(scope)
    if not pending.wait_until_embedded(scope, 3600):
        raise RuntimeError("the embedder did not catch up within an hour")
    done = time.perf_counter()
    cpu = time.process_time() - cpu_before
    stored = MemoryEntryVector.objects.filter(scope_id=scope).count()
    catch_up = done - last_write
    threads = getattr(embedding, "embed_threads", lambda: 1)()
    result = {
        "entries": entries,
        "notes": "synthetic" if texts is None else "texts",
        "vectors": stored,
        "embed_threads": threads,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "tokens_per_entry": round(tokens, 1),
        "seed_seconds": round(seed_seconds, 2),
        "backlog_at_last_write": left,
        "catch_up_seconds_after_last_write": round(catch_up, 2),
        "catch_up_entries_per_second": round(left / catch_up, 1) if catch_up > 0 else None,
        "write_to_all_embedded_seconds": round(done - started, 2),
        "entries_per_second_overall": round(entries / (done - started), 1),
        "process_cpu_seconds": round(cpu, 1),
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }
    out(str({"catch_up": result}))
    if stored != entries:
        raise RuntimeError(f"{stored} vectors for {entries} entries")
    return result


def _http_prepare(
    url: str, scope_id: str, queries: list[str], clients: int, seconds: float
) -> dict[str, Any]:
    """``clients`` concurrent clients prepare back to back for ``seconds`` (``timed_prepares``):
    p50 / p99 over all requests, requests per second, errors."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    timings, elapsed = timed_prepares(url, scope_id, queries, clients, seconds, max_bytes=8000)
    samples = [milliseconds for milliseconds, _ in timings]
    return {
        "clients": clients,
        "requests": len(samples),
        "errors": sum(not ok for _, ok in timings),
        "p50_ms": round(statistics.median(samples), 2),
        "p99_ms": round(percentile(samples, 0.99), 2),
        "rps": round(len(samples) / elapsed, 1),
    }


def _http_remember(url: str, scope_id: str, corpus: Corpus, samples: int) -> float:
    """p50 (ms) of sequential remembers of new notes over HTTP."""
    import httpx

    timings = []
    with httpx.Client(base_url=url, timeout=30) as client:
        for _ in range(samples):
            body = {"scope_id": scope_id, "kind": "note", "text": corpus.note()}
            start = time.perf_counter()
            response = client.post("/v1/memory/remember", json=body)
            timings.append((time.perf_counter() - start) * 1000)
            if response.status_code not in (200, 201):
                raise RuntimeError(f"remember answered {response.status_code}")
    return statistics.median(timings)


def bench_prepare_sizes(
    url: str, sizes: list[int], clients: int, seconds: float, samples: int, out: Callable[[str], None]
) -> dict[str, Any]:
    """For each size a fresh scope seeded in bulk and embedded (this process's embedder), then,
    against the server at ``url`` (same database): hybrid prepare with ``clients`` concurrent
    clients on new prompts (p50 / p99 / rps) — three words from the whole vocabulary (rare in
    the scope: ``prepare``), three of the scope's most used words (``prepare_common_words``: each
    matches a large share of the notes) and 40 words drawn as the notes draw theirs
    (``prepare_paragraph``) — and sequential remember p50; the ratios largest vs smallest size
    (rare-word prompts)."""
    corpus = Corpus(seed=135)
    run = time.time_ns()
    rows: dict[str, Any] = {}
    for size in sorted(sizes):
        scope = f"scale-prepare-{run}-{size}"
        seed_seconds = seed(scope, size, corpus)
        waited = time.perf_counter()
        if embedding.embedder() is not None and not pending.wait_until_embedded(scope, 4 * 3600):
            raise RuntimeError("the embedder did not catch up")
        embed_seconds = time.perf_counter() - waited
        queries = [corpus.query() for _ in range(4000)]
        _http_prepare(url, scope, [corpus.query() for _ in range(200)], clients, 3)  # warm the workers
        prepare = _http_prepare(url, scope, queries, clients, seconds)
        common = _http_prepare(url, scope, [corpus.common_query() for _ in range(4000)], clients, seconds)
        paragraph = _http_prepare(url, scope, [corpus.paragraph() for _ in range(4000)], clients, seconds)
        remember = _http_remember(url, scope, corpus, samples)
        rows[str(size)] = {
            "seed_seconds": round(seed_seconds, 1),
            "embed_seconds": round(embed_seconds, 1),
            "prepare": prepare,
            "prepare_common_words": common,
            "prepare_paragraph": paragraph,
            "remember_p50_ms": round(remember, 2),
            "load_average": load_average(),
        }
        out(str({str(size): rows[str(size)]}))
    small, large = rows[str(min(sizes))], rows[str(max(sizes))]
    return {
        "sizes": rows,
        "prepare_p50_ratio": round(large["prepare"]["p50_ms"] / small["prepare"]["p50_ms"], 2),
        "remember_p50_ratio": round(large["remember_p50_ms"] / small["remember_p50_ms"], 2),
    }


def bench_threads(entries: int, rounds: int, out: Callable[[str], None]) -> dict[str, Any]:
    """The embedder with one model run at a time (what it did before issue 35) against
    ``embedding.embed_threads()`` runs at once, interleaved round by round on the same load:
    each round seeds two fresh scopes of ``entries`` with the writes' signals held back, then
    times ``embed_pending`` (what the thread and the Celery task run) on each, one mode first
    in even rounds and the other in odd ones."""
    from django.test import override_settings

    from powercontext.search import maintenance

    if not embedding.warm_up():
        raise RuntimeError("the embedding model is unavailable")
    corpus = Corpus(seed=235)
    run = time.time_ns()
    many = embedding.embed_threads()
    seconds: dict[str, float] = {"one": 0.0, "many": 0.0}
    cpu: dict[str, float] = {"one": 0.0, "many": 0.0}
    dispatch = maintenance._dispatch
    for index in range(rounds):
        scopes = {mode: f"scale-threads-{run}-{index}-{mode}" for mode in seconds}
        maintenance._dispatch = lambda scope_id: None  # type: ignore[assignment]
        try:
            for scope in scopes.values():
                seed(scope, entries, corpus)
        finally:
            maintenance._dispatch = dispatch  # type: ignore[assignment]
        for mode in ("one", "many") if index % 2 == 0 else ("many", "one"):
            with override_settings(POWERCONTEXT_EMBED_THREADS=1 if mode == "one" else many):
                cpu_before, started = time.process_time(), time.perf_counter()
                done = pending.embed_pending(scopes[mode], until_done=True)
                seconds[mode] += time.perf_counter() - started
                cpu[mode] += time.process_time() - cpu_before
            if done.written != entries or done.remaining:
                raise RuntimeError(f"{done.written} of {entries} embedded")
    total = entries * rounds
    result = {
        "entries_per_mode": total,
        "rounds": rounds,
        "threads_many": many,
        "one_at_a_time_entries_per_second": round(total / seconds["one"], 1),
        "many_at_once_entries_per_second": round(total / seconds["many"], 1),
        "speed_up": round(seconds["one"] / seconds["many"], 2),
        "cpu_ms_per_entry_one": round(1000 * cpu["one"] / total, 1),
        "cpu_ms_per_entry_many": round(1000 * cpu["many"] / total, 1),
        "load_average": load_average(),
    }
    out(str({"threads": result}))
    return result


FLEET_SCOPE = "scale-fleet-{}"


def active_entries(scope_id: str) -> int:
    """Entries of the scope's current head."""
    return int(
        MemoryMembership.objects.filter(
            scope_id=scope_id, to_revision__isnull=True, state=MemoryMembership.State.ACTIVE
        ).count()
    )


def fleet(scopes: int, entries: int, out: Callable[[str], None], copies: bool = False) -> list[str]:
    """``scopes`` scopes (``scale-fleet-0`` …) of ``entries`` notes each, embedded: a scope that
    already has them (an earlier run on the same database) is kept as it is, so the fleet is
    built once and measured against several servers. With ``copies``, every empty
    scope after the first is a copy of the first (``scope_copy``: minutes instead of hours)."""
    corpus = Corpus(seed=335)
    names = [FLEET_SCOPE.format(index) for index in range(scopes)]
    started = time.perf_counter()

    def embedded(name: str) -> None:
        if embedding.embedder() is not None and not pending.wait_until_embedded(name, 4 * 3600):
            raise RuntimeError("the embedder did not catch up")

    source_embedded = False
    for index, name in enumerate(names):
        held = active_entries(name)
        if copies and index and held == 0:
            if not source_embedded:  # copies carry the vectors the first scope has
                embedded(names[0])
                source_embedded = True
            copy_scope(names[0], name)
        elif entries > held:
            seed(name, entries - held, corpus)
    for name in names:
        embedded(name)
    out(str({"fleet_ready_seconds": round(time.perf_counter() - started, 1)}))
    return names


def cache_metrics(url: str, token: str) -> dict[str, float]:
    """The vector cache's figures from ``/metrics`` (the monitoring token): bytes held over the
    live workers, and evictions summed over the caches."""
    import httpx

    response = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    if response.status_code != 200:
        raise RuntimeError(f"/metrics answered {response.status_code}: set POWERCONTEXT_OPERATOR_TOKEN")
    figures = {"bytes": 0.0, "evictions": 0.0}
    for line in response.text.splitlines():
        if line.startswith("powercontext_vector_cache_bytes "):
            figures["bytes"] = float(line.split()[-1])
        elif line.startswith("powercontext_vector_cache_evictions_total{"):
            figures["evictions"] += float(line.split()[-1])
    return figures


def worker_memory(server_pid: int) -> list[dict[str, float]]:
    """Memory of each worker of the gunicorn whose master is ``server_pid`` (Linux ``/proc``), in
    MiB: resident now and at its peak (``VmRSS``, ``VmHWM``), the private part (``RssAnon``:
    heap, model, caches) and the proportional share (``Pss``: shared pages such as libraries,
    model files and SQLite's memory map divided among the processes that map them, so that the
    workers' ``Pss`` add up to what they take together)."""
    from pathlib import Path

    children: list[int] = []
    for task in Path(f"/proc/{server_pid}/task").iterdir():
        children += [int(pid) for pid in (task / "children").read_text().split()]
    workers = []
    for pid in sorted(children):
        fields: dict[str, str] = {}
        for name in ("status", "smaps_rollup"):
            for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
                key, _, value = line.partition(":")
                if value.strip().endswith("kB"):
                    fields.setdefault(key, value)
        keys = ("VmRSS", "VmHWM", "RssAnon", "Pss")
        workers.append({key: round(int(fields[key].split()[0]) / 1024, 1) for key in keys})
    return workers


def _sequential(client: Any, scopes: list[str], queries: list[str]) -> list[float]:
    """Milliseconds of one prepare per query, over one connection (so one worker serves them
    all), the scopes asked in turn."""
    timings = []
    for index, query in enumerate(queries):
        body = {"scope_id": scopes[index % len(scopes)], "query": query}
        started = time.perf_counter()
        response = client.post("/v1/context/prepare", json=body)
        timings.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"prepare answered {response.status_code}")
    return timings


def bench_fleet(
    url: str,
    names: list[str],
    samples: int,
    clients: int,
    seconds: float,
    server_pid: int | None,
    token: str,
    out: Callable[[str], None],
) -> dict[str, Any]:
    """Prepare on a fleet of scopes against a gunicorn whose vector cache holds fewer of them
    than there are (``POWERCONTEXT_VECTOR_CACHE_MB``). Cold: one connection (one worker) asks
    the scopes in turn, so each request finds its scope evicted (a least-recently-used cache
    asked in a cycle longer than it holds misses every time; the evictions per request from
    ``/metrics`` show it). Warm: the same connection asks one scope. Then ``clients`` clients
    ask every scope at once for ``seconds``, and each worker's resident memory (now and peak)
    and the bytes the caches hold are read."""
    import httpx

    from powercontext.evaluation.bench.http import mixed_throughput

    logging.getLogger("httpx").setLevel(logging.WARNING)
    corpus = Corpus(seed=435)
    with httpx.Client(base_url=url, timeout=60) as client:
        _sequential(client, names, [corpus.query() for _ in range(2 * len(names))])  # past preloaded ones
        before = cache_metrics(url, token)
        cold = _sequential(client, names, [corpus.query() for _ in range(samples)])
        after = cache_metrics(url, token)
        _sequential(client, names[:1], [corpus.query() for _ in range(20)])
        warm = _sequential(client, names[:1], [corpus.query() for _ in range(samples)])
    load = mixed_throughput(
        url, [corpus.query() for _ in range(4000)], clients, seconds, {name: name for name in names}
    )
    held = cache_metrics(url, token)
    result: dict[str, Any] = {
        "scopes": len(names),
        "cold": {
            "p50_ms": round(statistics.median(cold), 2),
            "p95_ms": round(percentile(cold, 0.95), 2),
            "evictions_per_request": round((after["evictions"] - before["evictions"]) / len(cold), 2),
        },
        "warm": {"p50_ms": round(statistics.median(warm), 2), "p95_ms": round(percentile(warm, 0.95), 2)},
        "load": {
            "clients": clients,
            "rps": round(sum(load[f"{name}_requests"] for name in names) / seconds, 1),
            "errors": load["errors"],
        },
        "cache_bytes_all_workers": int(held["bytes"]),
        "load_average": load_average(),
    }
    if server_pid is not None:
        workers = worker_memory(server_pid)
        result["workers"] = workers
        result["rss_total_mib"] = round(sum(worker["VmRSS"] for worker in workers), 1)
        result["pss_total_mib"] = round(sum(worker["Pss"] for worker in workers), 1)
        result["peak_rss_max_mib"] = max(worker["VmHWM"] for worker in workers)
    out(str({"fleet": result}))
    return result


def bench_after_write(scope_id: str, rounds: int, out: Callable[[str], None]) -> dict[str, Any]:
    """Writing and preparing in turn on an existing scope, in process (an agent that remembers
    between turns): ``rounds`` hybrid prepares with no write between them, then ``rounds`` times
    a remember followed by two prepares — the first after the write (the caches of the scope
    catch up with it) and the next (the write's vector has usually arrived by then: they catch
    up again). New prompts throughout, their embeddings computed beforehand, so the figures are
    the search's; this process's embedder embeds the new notes meanwhile, as a server's does.
    p50 / p95 of each (ms), and of the remembers."""
    from powercontext.memory.services import memory_remember
    from powercontext.prepare.application import PrepareRequest, ScopedContextApplication

    if not MemoryMembership.objects.filter(scope_id=scope_id, to_revision__isnull=True).exists():
        raise ValueError("the scope has no active entries: seed it first")
    app = ScopedContextApplication()
    corpus, notes = Corpus(seed=7), Corpus(seed=time.time_ns() % 1_000_000)
    queries = [corpus.query() for _ in range(3 * rounds + 1)]
    model = embedding.embedder()
    if model is not None:
        for query in queries:
            model.embed_query(query)

    def prepare(query: str) -> float:
        start = time.perf_counter()
        app.prepare(PrepareRequest(scope_id=scope_id, query=query))
        return (time.perf_counter() - start) * 1000

    prepare(queries.pop())  # the scope's caches read once, as a server's warm-up does
    steady = [prepare(queries.pop()) for _ in range(rounds)]
    first, second, remembers = [], [], []
    for _ in range(rounds):
        start = time.perf_counter()
        memory_remember(scope_id=scope_id, kind="note", text=notes.note())
        remembers.append((time.perf_counter() - start) * 1000)
        first.append(prepare(queries.pop()))
        second.append(prepare(queries.pop()))

    def summary(samples: list[float]) -> dict[str, float]:
        return {
            "p50_ms": round(statistics.median(samples), 2),
            "p95_ms": round(percentile(samples, 0.95), 2),
        }

    result = {
        "entries": active_entries(scope_id),
        "rounds": rounds,
        "prepare_without_writes": summary(steady),
        "prepare_first_after_write": summary(first),
        "prepare_second_after_write": summary(second),
        "remember": summary(remembers),
        "load_average": load_average(),
    }
    out(str(result))
    return result
