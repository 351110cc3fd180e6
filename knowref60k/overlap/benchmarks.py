"""The known pronoun benchmarks as packaged in ../shared/data/benchmarks: WSC-273 and WinoGrande dev
(JSONL, the pronoun replaced by a blank "_") and DPR train/test (TSV, one row per candidate filling).
Every item is read into one form: a sentence with a blank and its two options."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from knowref60k.core.errors import UserError
from knowref60k.core.records import Span
from knowref60k.overlap.index import BLANK, MarkedItem

# The test sets of the overlap figure, in the paper's order.
TEST_SETS = ("wsc273", "dpr-test", "winogrande-dev")
FILES = {
    "wsc273": "wsc273/wsc-273.jsonl",
    "winogrande-dev": "winogrande/dev.jsonl",
    "dpr-train": "dpr/train.tsv",
    "dpr-test": "dpr/test.tsv",
}


@dataclass(frozen=True)
class BenchmarkItem:
    benchmark: str
    item_id: str
    sentence: str
    option1: str
    option2: str
    # The right option, 0 or 1, where the file gives it.
    answer: int | None = None

    def fillings(self) -> tuple[str, str]:
        return self.sentence.replace(BLANK, self.option1), self.sentence.replace(BLANK, self.option2)

    def marked(self) -> MarkedItem:
        """The blank as the pronoun; each option where the sentence spells it out before the blank."""
        blank = self.sentence.index(BLANK)
        return MarkedItem(
            self.sentence,
            Span(blank, blank + len(BLANK)),
            (_find(self.sentence[:blank], self.option1), _find(self.sentence[:blank], self.option2)),
        )


def _find(text: str, phrase: str) -> Span | None:
    match = re.search(rf"\b{re.escape(phrase)}\b", text, re.IGNORECASE)
    return Span(match.start(), match.end()) if match else None


def read_benchmarks(root: Path) -> dict[str, list[BenchmarkItem]]:
    """Every known set's items, by set name."""
    if not root.is_dir():
        raise UserError(f"benchmarks folder not found: {root} (expected ../shared/data/benchmarks)")
    return {name: read_set(root, name) for name in FILES}


def read_set(root: Path, name: str) -> list[BenchmarkItem]:
    """One known set's items."""
    return _read_set(root / FILES[name], name)


def _read_set(path: Path, name: str) -> list[BenchmarkItem]:
    if not path.is_file():
        raise UserError(f"benchmark file not found: {path} (expected ../shared/data/benchmarks)")
    reader = _read_dpr if path.suffix == ".tsv" else _read_blank_jsonl
    return list(reader(path, name))


def _read_blank_jsonl(path: Path, name: str) -> Iterator[BenchmarkItem]:
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        try:
            row = orjson.loads(line)
            answer = int(row["answer"]) - 1 if str(row.get("answer")) in ("1", "2") else None
            yield BenchmarkItem(name, row["qID"], row["sentence"], row["option1"], row["option2"], answer)
        except (orjson.JSONDecodeError, KeyError, TypeError) as error:
            raise UserError(f"{path}, line {number}: not a WinoGrande-style item ({error})") from None


def _read_dpr(path: Path, name: str) -> Iterator[BenchmarkItem]:
    """One item per `index`: sentence1 ends with the filling that replaced the pronoun; the filling of
    the row labelled 1 is the right option."""
    items: dict[str, BenchmarkItem] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle, delimiter="\t"), 2):
            try:
                first, rest, options = (
                    row["sentence1"],
                    row["sentence2"],
                    (row["candidate0"], row["candidate1"]),
                )
            except KeyError as error:
                raise UserError(f"{path}, line {number}: no column {error}") from None
            filling = next((i for i, option in enumerate(options) if first.endswith(option)), None)
            if filling is None:
                raise UserError(f"{path}, line {number}: sentence1 does not end with a candidate")
            sentence = first[: -len(options[filling])] + BLANK + rest
            item = items.setdefault(row["index"], BenchmarkItem(name, row["index"], sentence, *options))
            if row.get("label") == "1":
                items[row["index"]] = replace(item, answer=filling)
    yield from items.values()
