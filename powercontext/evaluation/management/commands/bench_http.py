"""HTTP benchmark against a running server: prepare vs /health/live latency, throughput, and
MCP ``tools/call`` vs the same REST operation (search_memory, remember_memory).

Run by scripts/bench.sh against gunicorn serving the benchmark database. The load generator
shares the machine with the server, so compare figures from one run as ratios.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import httpx
from django.core.management.base import BaseCommand, CommandParser

from powercontext.evaluation.bench.common import SCOPE, Corpus, percentile


class Command(BaseCommand):
    help = "Measure prepare and liveness latency and prepare throughput against --url."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", required=True)
        parser.add_argument("--samples", type=int, default=300)
        parser.add_argument("--clients", type=int, default=8)
        parser.add_argument("--seconds", type=float, default=10.0, help="duration of the throughput run")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args: Any, **options: Any) -> None:
        url, samples = options["url"].rstrip("/"), options["samples"]
        corpus = Corpus()
        queries = [corpus.query() for _ in range(samples)]
        with httpx.Client(base_url=url, timeout=30) as client:
            # Steady state: warm connections and caches with other queries than the timed ones.
            for _ in range(samples):
                client.get("/health/live")
                client.post("/v1/context/prepare", json={"scope_id": SCOPE, "query": corpus.query()})
            live = self._timed(lambda i: client.get("/health/live"), samples)
            prepare = self._timed(
                lambda i: client.post(
                    "/v1/context/prepare", json={"scope_id": SCOPE, "query": queries[i], "max_bytes": 8000}
                ),
                samples,
            )
        results: dict[str, Any] = {
            "live_p50_ms": round(statistics.median(live), 3),
            "prepare_p50_ms": round(statistics.median(prepare), 3),
            "prepare_p95_ms": round(percentile(prepare, 0.95), 3),
            "prepare_vs_live_p50": round(statistics.median(prepare) / statistics.median(live), 2),
        }
        results.update(self._throughput(url, queries, options["clients"], options["seconds"]))
        results.update(self._mcp_vs_rest(url, queries, samples))
        self.stdout.write(json.dumps(results, indent=2))
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)

    @staticmethod
    def _timed(call: Any, samples: int) -> list[float]:
        out = []
        for i in range(samples):
            start = time.perf_counter()
            response = call(i)
            out.append((time.perf_counter() - start) * 1000)
            if response.status_code != 200:
                raise RuntimeError(f"unexpected status {response.status_code}")
        return out

    @staticmethod
    def _mcp_vs_rest(url: str, queries: list[str], samples: int) -> dict[str, Any]:
        """p50 of an MCP tools/call against the same REST call on the same server, interleaved
        call by call so both see the same server state; plain JSON-RPC POSTs after one
        initialize (what an MCP client sends per call)."""
        headers = {"Accept": "application/json, text/event-stream"}
        with httpx.Client(base_url=url, timeout=30, headers=headers) as client:
            init = client.post(
                "/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "bench_http", "version": "1"},
                    },
                },
            )
            version = init.json()["result"]["protocolVersion"]
            client.headers["MCP-Protocol-Version"] = version
            client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})

            def rest(path: str, body: dict[str, Any]) -> None:
                if client.post(path, json=body).status_code != 200:
                    raise RuntimeError(f"unexpected REST status for {path}")

            def tool(name: str, arguments: dict[str, Any]) -> None:
                message = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
                response = client.post("/mcp", json=message)
                if response.status_code != 200 or response.json()["result"]["isError"]:
                    raise RuntimeError(f"unexpected MCP answer for {name}: {response.text[:200]}")

            def search(i: int) -> dict[str, Any]:
                return {"scope_id": SCOPE, "query": queries[i % len(queries)]}

            def remember(i: int) -> dict[str, Any]:
                return {
                    "scope_id": "bench-mcp",
                    "kind": "note",
                    "text": f"benchmark note {i} {queries[i % len(queries)]}",
                }

            timings: dict[str, list[float]] = {k: [] for k in ("rs", "ms", "rr", "mr")}
            for i in range(samples // 5):  # warm up both paths
                rest("/v1/memory/search", search(i))
                tool("search_memory", search(i))
            for i in range(samples):
                calls: list[tuple[str, Callable[[], None]]] = [
                    ("rs", partial(rest, "/v1/memory/search", search(i))),
                    ("ms", partial(tool, "search_memory", search(i))),
                    ("rr", partial(rest, "/v1/memory/remember", remember(2 * i))),
                    ("mr", partial(tool, "remember_memory", remember(2 * i + 1))),
                ]
                for key, run in calls:
                    start = time.perf_counter()
                    run()
                    timings[key].append((time.perf_counter() - start) * 1000)
        p50 = {key: statistics.median(values) for key, values in timings.items()}
        return {
            "mcp_protocol_version": version,
            "rest_search_p50_ms": round(p50["rs"], 3),
            "mcp_search_p50_ms": round(p50["ms"], 3),
            "mcp_vs_rest_search_p50": round(p50["ms"] / p50["rs"], 2),
            "rest_remember_p50_ms": round(p50["rr"], 3),
            "mcp_remember_p50_ms": round(p50["mr"], 3),
            "mcp_vs_rest_remember_p50": round(p50["mr"] / p50["rr"], 2),
        }

    @staticmethod
    def _throughput(url: str, queries: list[str], clients: int, seconds: float) -> dict[str, Any]:
        deadline = time.perf_counter() + seconds
        counts = [0] * clients
        errors = [0] * clients
        barrier = threading.Barrier(clients)

        def run(index: int) -> None:
            with httpx.Client(base_url=url, timeout=30) as client:
                barrier.wait()
                i = index
                while time.perf_counter() < deadline:
                    response = client.post(
                        "/v1/context/prepare", json={"scope_id": SCOPE, "query": queries[i % len(queries)]}
                    )
                    if response.status_code == 200:
                        counts[index] += 1
                    else:
                        errors[index] += 1
                    i += clients

        threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        return {
            "throughput_clients": clients,
            "throughput_requests": sum(counts),
            "throughput_errors": sum(errors),
            "throughput_rps": round(sum(counts) / elapsed, 1),
        }
