"""Contamination check: does an item share a 13-gram (lower-cased, punctuation removed) with any
item of a known benchmark (WSC-273, DPR, WinoGrande, as packaged in ../shared/data/benchmarks)?"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from knowref60k.errors import UserError

N = 13
_WORDS = re.compile(r"[^\W_]+")


def ngrams(text: str, n: int = N) -> set[tuple[str, ...]]:
    words = _WORDS.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def benchmark_sentences(root: Path) -> Iterator[tuple[str, str]]:
    """(benchmark, sentence) for every item; blanks are filled with each option."""
    if not root.is_dir():
        raise UserError(f"benchmarks folder not found: {root} (expected ../shared/data/benchmarks)")
    for name, path in (
        ("wsc273", root / "wsc273" / "wsc-273.jsonl"),
        ("winogrande", root / "winogrande" / "dev.jsonl"),
    ):
        for line in path.read_bytes().splitlines():
            item = orjson.loads(line)
            for option in (item["option1"], item["option2"]):
                yield name, item["sentence"].replace("_", option)
    for split in ("train", "test"):
        with (root / "dpr" / f"{split}.tsv").open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                yield "dpr", f"{row['sentence1']}{row['sentence2']}"


class ContaminationIndex:
    def __init__(self, sentences: Iterable[tuple[str, str]]) -> None:
        self.owner: dict[tuple[str, ...], str] = {}
        for benchmark, sentence in sentences:
            for gram in ngrams(sentence):
                self.owner.setdefault(gram, benchmark)

    def match(self, sentence: str) -> str | None:
        """The benchmark sharing a 13-gram with the sentence, or None."""
        return next((self.owner[gram] for gram in ngrams(sentence) if gram in self.owner), None)
