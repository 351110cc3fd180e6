"""Add judged pool sentences to the gold set (see README.md beside this file).

    .venv/bin/python tools/eval/add_judgements.py POOL.jsonl JUDGEMENTS.jsonl ... [--gold GOLD.jsonl]

POOL.jsonl is what `build_pool.py` wrote (one object per sentence, with `candidate_id`); each judgement
line is `{"id", "label", "reason", "antecedent1", "antecedent2", "people", "note"}` with names as the
text of the sentence (the judge's own words, never a rule's spans). Names become character offsets: the
first occurrence before the connective, after the name before it. A judgement that does not fit (a name
not found, spans out of order, an unknown reason) is reported and left out. An item already in the gold
set is never changed. New items are split by subreddit (a held-back subreddit is held back whole): see
`knowref60k.quality.gold.heldout_by_subreddit`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import orjson

from knowref60k.quality.gold import GOLD_FILE, LABELS, REASONS, heldout_by_subreddit, load_gold
from knowref60k.quality.pool import POOL_FIELDS


def spans(sentence: str, end: int, names: list[str]) -> list[list[int]] | None:
    """Offsets of `names`, in order, before character `end`; None when one is not there."""
    found, position = [], 0
    for name in names:
        start = sentence.find(name, position, end)
        if start < 0:
            return None
        found.append([start, start + len(name)])
        position = start + len(name)
    return found


def gold_line(row: dict[str, Any], judged: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The gold record of a pool row and its judgement, or None with the problem."""
    if judged["label"] not in LABELS or (judged["label"] == "invalid") != (judged["reason"] in REASONS):
        return None, f"label {judged['label']!r} with reason {judged['reason']!r}"
    people = spans(row["sentence"], row["connective_start"], list(judged.get("people") or []))
    antecedents = None
    if judged["label"] == "valid":
        antecedents = spans(
            row["sentence"], row["connective_start"], [judged["antecedent1"], judged["antecedent2"]]
        )
        if antecedents is None:
            names = f"{judged['antecedent1']!r}, {judged['antecedent2']!r}"
            return None, f"names {names} not in order before the connective"
    split = "heldout" if heldout_by_subreddit(row["subreddit"], row["comment_id"]) else "tune"
    record = {
        **{key: row[key] for key in POOL_FIELDS},
        "split": split,
        "label": judged["label"],
        "reason": judged["reason"] if judged["label"] == "invalid" else None,
        "antecedent1": antecedents[0] if antecedents else None,
        "antecedent2": antecedents[1] if antecedents else None,
        "note": judged.get("note") or "",
        "people": people if people is not None else None,
    }
    return record, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pool", type=Path)
    parser.add_argument("judgements", nargs="+", type=Path)
    parser.add_argument("--gold", type=Path, default=GOLD_FILE)
    args = parser.parse_args()
    known = {item.candidate_id for item in load_gold(args.gold)}
    rows = [orjson.loads(line) for line in args.pool.read_bytes().splitlines()]
    by_sentence: dict[str, dict[str, Any]] = {}
    for path in args.judgements:
        for line in path.read_bytes().splitlines():
            judged = orjson.loads(line)
            by_sentence[next(r["sentence"] for r in rows if r["candidate_id"] == judged["id"])] = judged
    added, problems = [], []
    for row in rows:  # a sentence judged once stands for every pool row of it
        judged = by_sentence.get(row["sentence"])
        if row["candidate_id"] in known or judged is None:
            continue
        record, problem = gold_line(row, judged)
        if record is None:
            problems.append(f"{row['candidate_id']}: {problem}")
        else:
            added.append(record)
    with args.gold.open("ab") as gold:
        gold.write(b"".join(orjson.dumps(record) + b"\n" for record in added))
    print(f"{len(added)} items added to {args.gold}; {len(problems)} left out:")
    for problem in problems:
        print(f"  {problem}")


if __name__ == "__main__":
    main()
