"""Two-option problems to debias, read from a knowref60k release or a WinoGrande file.

A problem is the sentence filled in with each option, and which option is right: the features of the
two filled sentences are compared, so the label says which option is correct.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

from knowref60k.core.errors import UserError

WINOGRANDE_TSV_COLUMNS = ("index", "sentence1", "sentence2", "label", "candidate0", "candidate1")


@dataclass(frozen=True)
class Problem:
    id: str
    filled: tuple[str, str]
    label: int
    # Problems that must stay on one side of a train/test split: WinoGrande's twins (the same sentence
    # with a trigger word changed and the other answer) teach a model the twin's answer, the wrong one.
    group: str = ""


def twin_key(options: tuple[str, str], sentence: str) -> str:
    """Twins share their options and the first words of the sentence with its blank."""
    return "\x1f".join([*sorted(options), *sentence.lower().split()[:4]])


def read_problems(path: Path) -> list[Problem]:
    """Every problem of a release folder, a WinoGrande `train_*.tsv` or a WinoGrande `*.jsonl`."""
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    if path.is_dir():
        return list(_release_problems(path))
    if path.suffix == ".tsv":
        return list(_winogrande_tsv(path))
    if path.suffix in (".jsonl", ".json"):
        return list(_winogrande_jsonl(path))
    raise UserError(f"{path}: not a release folder, a WinoGrande .tsv or a WinoGrande .jsonl")


def _release_problems(folder: Path) -> Iterator[Problem]:
    shards = sorted((folder / "data").glob("*.parquet"))
    if not shards:
        raise UserError(f"{folder}: no data/*.parquet (is this a release folder?)")
    for shard in shards:
        yield from map(release_problem, pq.read_table(shard).to_pylist())


def release_problem(row: dict[str, Any]) -> Problem:
    """A release item as a problem: its own group (items are not twins)."""
    return Problem(row["id"], _fill_pronoun(row), int(row["label"]), row["id"])


def _fill_pronoun(row: dict[str, Any]) -> tuple[str, str]:
    """The sentence with the pronoun replaced by each name ("because Ann was ..." / "because Bo was ...")."""
    sentence, start, end = row["sentence"], row["pronoun_start"], row["pronoun_end"]
    return sentence[:start] + row["name1"] + sentence[end:], sentence[:start] + row["name2"] + sentence[end:]


def _winogrande_tsv(path: Path) -> Iterator[Problem]:
    """WinoGrande's training TSV: two rows per problem, each with one option filled in (`sentence1` ends
    with it) and `label` 1 on the right one."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = tuple(next(reader, ()))
        if header != WINOGRANDE_TSV_COLUMNS:
            raise UserError(f"{path}: line 1: expected the columns {', '.join(WINOGRANDE_TSV_COLUMNS)}")
        pending: list[tuple[int, list[str]]] = []
        for number, row in enumerate(reader, start=2):
            if len(row) != len(WINOGRANDE_TSV_COLUMNS):
                raise UserError(f"{path}: line {number}: {len(row)} fields, expected 6")
            pending.append((number, row))
            if len(pending) == 2:
                yield _tsv_pair(path, pending)
                pending = []
        if pending:
            raise UserError(f"{path}: line {pending[0][0]}: a problem with one row, expected two")


def _tsv_pair(path: Path, pair: list[tuple[int, list[str]]]) -> Problem:
    (number, first), (_, second) = pair
    if first[0] != second[0] or {first[3], second[3]} != {"0", "1"}:
        raise UserError(f"{path}: line {number}: rows {first[0]} and {second[0]} are not one problem")
    filled = (first[1] + first[2], second[1] + second[2])
    option = first[4] if first[1].endswith(first[4]) else first[5]
    blanked = first[1][: len(first[1]) - len(option)] + "_" + first[2]
    group = twin_key((first[4], first[5]), blanked)
    return Problem(f"{path.stem}-{first[0]}", filled, 0 if first[3] == "1" else 1, group)


def _winogrande_jsonl(path: Path) -> Iterator[Problem]:
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                row = orjson.loads(line)
                sentence, options = row["sentence"], (row["option1"], row["option2"])
                label = int(row["answer"]) - 1
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
                raise UserError(f"{path}: line {number}: not a WinoGrande problem ({error})") from None
            if "_" not in sentence or label not in (0, 1):
                raise UserError(f"{path}: line {number}: needs a '_' blank and an answer of 1 or 2")
            filled = (sentence.replace("_", options[0], 1), sentence.replace("_", options[1], 1))
            yield Problem(str(row.get("qID", number)), filled, label, twin_key(options, sentence))
