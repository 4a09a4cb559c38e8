"""The benchmark corpus's prompts: rare words (``query``), the scope's everyday words
(``common_query``) and pasted paragraphs (``paragraph``), which the scale benchmark times apart."""

from __future__ import annotations

import statistics

from powercontext.evaluation.bench.common import Corpus


def test_the_prompt_kinds_hold_distinct_words_of_the_expected_commonness() -> None:
    corpus = Corpus(seed=3, vocabulary=2000)
    notes = [set(corpus.note().split()) for _ in range(2000)]

    def share(prompts: list[str]) -> float:  # the median share of notes holding a prompt's word
        return statistics.median(
            sum(word in note for note in notes) / len(notes) for prompt in prompts for word in prompt.split()
        )

    common = [corpus.common_query() for _ in range(100)]
    rare = [corpus.query() for _ in range(100)]
    paragraphs = [corpus.paragraph() for _ in range(10)]

    assert all(len(set(prompt.split())) == len(prompt.split()) == 3 for prompt in common + rare)
    assert all(len(set(prompt.split())) == len(prompt.split()) == 40 for prompt in paragraphs)
    assert {word for prompt in common for word in prompt.split()} <= set(corpus.words[:50])
    assert set(corpus.common_query(12, among=12).split()) == set(corpus.words[:12])
    assert share(common) > 0.03 > share(paragraphs) > share(rare)
    assert Corpus(seed=3).paragraph(5) == Corpus(seed=3).paragraph(5)
