"""Contamination check: does an item share a 13-gram (lower-cased, punctuation removed) with any
item of a known benchmark (WSC-273, DPR train and test, WinoGrande dev)?"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from knowref60k.overlap.benchmarks import BenchmarkItem

N = 13
_WORDS = re.compile(r"[^\W_]+")


def ngrams(text: str, n: int = N) -> set[tuple[str, ...]]:
    words = _WORDS.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def benchmark_sentences(sets: Mapping[str, Sequence[BenchmarkItem]]) -> Iterator[tuple[str, str]]:
    """(benchmark, sentence) for every item of every set, the blank filled with each option."""
    for name, items in sets.items():
        for item in items:
            yield from ((name, filling) for filling in item.fillings())


class ContaminationIndex:
    def __init__(self, sentences: Iterable[tuple[str, str]]) -> None:
        self.owner: dict[tuple[str, ...], str] = {}
        for benchmark, sentence in sentences:
            for gram in ngrams(sentence):
                self.owner.setdefault(gram, benchmark)

    def match(self, sentence: str) -> str | None:
        """The benchmark sharing a 13-gram with the sentence, or None."""
        return next((self.owner[gram] for gram in ngrams(sentence) if gram in self.owner), None)
