"""The known answers of resolution: who the pronoun of each valid gold item refers to in the original
sentence (`data/eval/reddit_referents.jsonl`; criteria in data/eval/README.md, "Resolution criteria"),
one of the two antecedents, or unclear when a careful reader cannot tell. Simulated resolvers answer
them, the cost model expects the unclear share of them, and releases are checked against them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import orjson

from knowref60k.core.errors import UserError
from knowref60k.core.paths import DATA_DIR
from knowref60k.labelling.decisions import NAMES

REFERENTS_FILE = DATA_DIR / "eval" / "reddit_referents.jsonl"
UNCLEAR = "unclear"
REFERENTS = (*NAMES, UNCLEAR)
SPLITS = ("tune", "heldout")


@dataclass(frozen=True)
class Referent:
    candidate_id: str
    split: str
    referent: str


def load_referents(path: Path = REFERENTS_FILE) -> dict[str, Referent]:
    """candidate_id -> the judged referent of every valid gold item; a malformed line is a UserError
    naming the file and line."""
    if not path.is_file():
        raise UserError(f"resolution gold not found: {path}")
    found = {}
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        try:
            record = orjson.loads(line)
            referent = Referent(str(record["candidate_id"]), record["split"], record["referent"])
        except (orjson.JSONDecodeError, KeyError, TypeError) as error:
            raise UserError(f"{path}, line {number}: not a judged referent ({error})") from None
        if referent.split not in SPLITS or referent.referent not in REFERENTS:
            allowed = f"referent must be one of {REFERENTS} and split one of {SPLITS}"
            raise UserError(f"{path}, line {number}: {allowed}")
        found[referent.candidate_id] = referent
    return found


@lru_cache(maxsize=4)
def unclear_share(path: Path = REFERENTS_FILE, split: str = "tune") -> float:
    """The share of the valid items of a split of the gold set whose referent the judges found unclear
    (the tuning part by default: levels are chosen on it)."""
    judged = [found.referent for found in load_referents(path).values() if found.split == split]
    return sum(referent == UNCLEAR for referent in judged) / len(judged) if judged else 0.0
