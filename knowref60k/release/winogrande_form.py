"""A release's items in WinoGrande's form (a sentence with a blank "_" where the pronoun stood, two
options, the answer "1" or "2"), and the lm-evaluation-harness task functions over it.

This module imports nothing of knowref60k: `knowref60k release` copies it into every release as
`lm_eval/utils.py`, so that `lm_eval --include_path RELEASE/lm_eval --tasks knowref60k` needs no other
file, and `knowref60k evaluate-models` scores the very same problems.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

BLANK = "_"
SPLITS = ("train", "validation", "test")
# "her" is the object form unless a word of its own follows that is none of these (then it is "her car").
NOT_AFTER_POSSESSIVE = frozenset(
    "a an the this that these those to for from with about at by in on of off up down out over into "
    "and or but so because if when while as than then there here again too also very not just back "
    "away now soon later all both each every some any no more most much many".split()
)


def is_possessive(pronoun: str, following: str) -> bool:
    """Whether the pronoun stands for "Name's": his and hers always, her when a word of its own follows."""
    word = pronoun.lower()
    if word in ("his", "hers"):
        return True
    next_word = re.match(r"\s*([A-Za-z][\w'-]*)", following)
    return word == "her" and next_word is not None and next_word.group(1).lower() not in NOT_AFTER_POSSESSIVE


def to_winogrande(row: dict[str, Any]) -> dict[str, Any]:
    """A release row as a WinoGrande item: the pronoun becomes the blank, the names the options ("Name's"
    where the pronoun is possessive)."""
    sentence, start, end = row["sentence"], row["pronoun_start"], row["pronoun_end"]
    suffix = "'s" if is_possessive(row["pronoun"], sentence[end:]) else ""
    return {
        "id": row["id"],
        "sentence": sentence[:start] + BLANK + sentence[end:],
        "option1": row["name1"] + suffix,
        "option2": row["name2"] + suffix,
        "answer": str(int(row["label"]) + 1),
        "annotation_strength": int(row["annotation_strength"]),
    }


def scorable(row: dict[str, Any]) -> bool:
    """A sentence that already holds the blank character cannot be blanked unambiguously."""
    return BLANK not in row["sentence"]


# ---- the lm-evaluation-harness task (lm_eval/knowref60k.yaml) ----


def load_release_dataset(**_: Any) -> Any:
    """The release's splits (the Parquet shards beside this folder) as a DatasetDict of WinoGrande items."""
    import datasets
    import pyarrow.parquet as pq

    data = Path(__file__).resolve().parent.parent / "data"
    splits = {}
    for split in SPLITS:
        rows = [
            row
            for shard in sorted(data.glob(f"{split}-*.parquet"))
            for row in pq.read_table(shard).to_pylist()
        ]
        items = [to_winogrande(row) for row in rows if scorable(row)]
        columns = ("id", "sentence", "option1", "option2", "answer", "annotation_strength")
        splits[split] = datasets.Dataset.from_dict({c: [item[c] for item in items] for c in columns})
    return datasets.DatasetDict(splits)


def partial_contexts(sentence: str, options: tuple[str, str]) -> list[str]:
    """The sentence up to the blank, filled with each option: WinoGrande's partial scoring contexts."""
    blank = sentence.index(BLANK)
    return [sentence[:blank] + option for option in options]


def rest_after_blank(sentence: str) -> str:
    """What follows the blank: the continuation whose likelihood is compared."""
    return sentence[sentence.index(BLANK) + 1 :].strip()


def doc_to_text(doc: dict[str, Any]) -> int:
    return {"1": 0, "2": 1}[doc["answer"]]


def doc_to_target(doc: dict[str, Any]) -> str:
    return rest_after_blank(doc["sentence"])


def doc_to_choice(doc: dict[str, Any]) -> list[str]:
    return partial_contexts(doc["sentence"], (doc["option1"], doc["option2"]))
