"""Shared benchmark helpers: percentiles, timing and a deterministic synthetic corpus."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

SCOPE = "bench-scope"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


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
