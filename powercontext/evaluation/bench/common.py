"""Shared benchmark helpers: percentiles, timing and a deterministic synthetic corpus."""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

SCOPE = "bench-scope"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def page_timings(samples: list[float], page_bytes: int) -> dict[str, Any]:
    """A page benchmark's figures: median and maximum of ``samples`` (ms, one decimal), the
    number of runs and the size of the page."""
    return {
        "p50_ms": round(statistics.median(samples), 1),
        "max_ms": round(max(samples), 1),
        "runs": len(samples),
        "page_bytes": page_bytes,
    }


def timed(fn: Callable[[], Any], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


class Corpus:
    """Deterministic synthetic notes: a Zipf-like vocabulary with some CJK, like real notes."""

    def __init__(self, seed: int = 7, vocabulary: int = 20000) -> None:
        self.random = random.Random(seed)
        syllables = [
            "ka",
            "lo",
            "mi",
            "ner",
            "sto",
            "pa",
            "ri",
            "ven",
            "tu",
            "dex",
            "qua",
            "zol",
            "fen",
            "gri",
        ]
        words: set[str] = set()
        while len(words) < vocabulary:
            words.add("".join(self.random.choice(syllables) for _ in range(self.random.randint(2, 4))))
        self.words = sorted(words)
        self.weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(self.words))]
        self.cjk = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]

    def note(self) -> str:
        words = self.random.choices(self.words, weights=self.weights, k=self.random.randint(12, 40))
        if self.random.random() < 0.2:
            words.append("".join(self.random.choices(self.cjk, k=6)))
        return " ".join(words)

    def query(self) -> str:
        # Three content words from the whole vocabulary (uniform): what a prompt shares with notes.
        return " ".join(self.random.sample(self.words, 3))

    def common_query(self, words: int = 3, among: int = 50) -> str:
        """``words`` of the ``among`` words the notes use most (in the default corpus each is in
        3.5-54 % of the notes): a prompt of a scope's everyday words ("test", "deploy", "error"),
        which matches a large share of its notes."""
        return " ".join(self.random.sample(self.words[:among], words))

    def paragraph(self, words: int = 40) -> str:
        """``words`` distinct words drawn as the notes draw theirs: a pasted paragraph."""
        chosen: dict[str, None] = {}
        while len(chosen) < words:
            chosen.update(dict.fromkeys(self.random.choices(self.words, weights=self.weights, k=words)))
        return " ".join(list(chosen)[:words])


class Texts:
    """Notes taken in turn from given texts (a LoCoMo file's turns: what notes of a conversation
    look like, ~35 word pieces each, against the synthetic ``Corpus``'s ~115); past the last text
    they start again, numbered, so that no two notes are the same."""

    def __init__(self, texts: Sequence[str]) -> None:
        if not texts:
            raise ValueError("no texts to take notes from")
        self.texts = list(texts)
        self.taken = 0

    def note(self) -> str:
        turn, at = divmod(self.taken, len(self.texts))
        self.taken += 1
        return self.texts[at] if turn == 0 else f"{self.texts[at]} ({turn + 1})"


def interleaved(
    calls: dict[str, Callable[[int], Any]], runs: int, clock: Callable[[], float] = time.perf_counter
) -> dict[str, list[float]]:
    """Milliseconds of each named call, ``runs`` times, interleaved: run ``i`` calls every variant
    once with argument ``i``, starting with a different variant each run (rotating), so that
    the variants share the machine's load and none always goes first (warming the other's
    caches)."""
    names = list(calls)
    out: dict[str, list[float]] = {name: [] for name in names}
    for i in range(runs):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            start = clock()
            calls[name](i)
            out[name].append((clock() - start) * 1000)
    return out


def compare(timings: dict[str, list[float]], numerator: str, denominator: str) -> dict[str, Any]:
    """p50 and p95 of two variants measured together and the p50 ratio numerator / denominator
    (None when the denominator's p50 is 0)."""
    a, b = timings[numerator], timings[denominator]
    a50, b50 = statistics.median(a), statistics.median(b)
    return {
        f"{numerator}_p50_ms": round(a50, 3),
        f"{numerator}_p95_ms": round(percentile(a, 0.95), 3),
        f"{denominator}_p50_ms": round(b50, 3),
        f"{denominator}_p95_ms": round(percentile(b, 0.95), 3),
        f"{numerator}_vs_{denominator}_p50": round(a50 / b50, 2) if b50 > 0 else None,
        "samples": len(a),
    }


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages (``uptime``), rounded."""
    return [round(value, 2) for value in os.getloadavg()]


def run_clients(clients: int, run: Callable[[int], None]) -> float:
    """Run ``run(0)`` .. ``run(clients - 1)`` in as many threads at once; the seconds they took."""
    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started
