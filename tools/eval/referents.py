"""The resolution gold set (data/eval/README.md, "Resolution criteria"): who the target pronoun of every
valid gold item refers to, and how far two blind judges agree on it.

    .venv/bin/python tools/eval/referents.py merge VERDICTS.jsonl... [--second SECOND.jsonl...]
    .venv/bin/python tools/eval/referents.py agreement

`merge` writes `data/eval/reddit_referents.jsonl` (one line per valid gold item: `candidate_id`, `split`,
`referent`, `referent_note`) from the first judges' verdict files ({"id", "referent", "note"} lines), and,
given the second judges' files, `data/eval/second_referents.jsonl` (each doubly judged item with both
verdicts and the settled one: the two judges' when they agree, else the line of `--settled FILE`).
`agreement` prints Cohen's kappa and raw agreement of the two judges.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
from sklearn.metrics import cohen_kappa_score

EVAL = Path(__file__).resolve().parents[2] / "data" / "eval"
GOLD = EVAL / "reddit_gold.jsonl"
REFERENTS = EVAL / "reddit_referents.jsonl"
SECOND = EVAL / "second_referents.jsonl"
VALUES = ("antecedent1", "antecedent2", "unclear")


def rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def verdicts(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """id -> verdict, refusing a value outside the criteria's or an id judged twice."""
    found: dict[str, dict[str, Any]] = {}
    for path in paths:
        for number, row in enumerate(rows(path), 1):
            if row.get("referent") not in VALUES or row["id"] in found:
                raise SystemExit(f"{path}:{number}: not a verdict of a new item: {row}")
            found[row["id"]] = {"referent": row["referent"], "note": row.get("note") or ""}
    return found


def agreement(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    clear = [(a, b) for a, b in pairs if "unclear" not in (a, b)]
    return {
        "items": len(pairs),
        "agree": sum(a == b for a, b in pairs),
        "kappa": round(float(cohen_kappa_score(first, second)), 3),
        "both_clear": len(clear),
        "both_clear_agree": sum(a == b for a, b in clear),
        "first": dict(Counter(first)),
        "second": dict(Counter(second)),
    }


def merge(first_files: list[Path], second_files: list[Path], settled_file: Path | None) -> None:
    valid = [row for row in rows(GOLD) if row["label"] == "valid"]
    first = verdicts(first_files)
    missing = [row["candidate_id"] for row in valid if row["candidate_id"] not in first]
    if missing or len(first) != len(valid):
        raise SystemExit(f"first verdicts for {len(first)} items, {len(valid)} valid; missing {missing[:5]}")
    second = verdicts(second_files)
    settled = verdicts([settled_file]) if settled_file else {}
    sample = []
    for row in valid:
        cid = row["candidate_id"]
        if cid not in second:
            continue
        a, b = first[cid], second[cid]
        agreed = a["referent"] == b["referent"]
        if not agreed and cid not in settled:
            raise SystemExit(f"{cid}: the judges disagree and --settled has no verdict for it")
        final = a if agreed else settled[cid]
        first[cid] = final
        sample.append(
            {
                "candidate_id": cid,
                "sentence": row["sentence"],
                "first": a,
                "second": b,
                "settled": final,
                "settled_by": "agreement" if agreed else "third judge",
            }
        )
    lines = [
        {
            "candidate_id": row["candidate_id"],
            "split": row["split"],
            "referent": first[row["candidate_id"]]["referent"],
            "referent_note": first[row["candidate_id"]]["note"],
        }
        for row in valid
    ]
    REFERENTS.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    if sample:
        SECOND.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in sample))
    counts = dict(Counter(line["referent"] for line in lines))
    print(f"{len(lines)} referents {counts}; {len(sample)} judged twice")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    merging = commands.add_parser("merge")
    merging.add_argument("first", nargs="+", type=Path)
    merging.add_argument("--second", nargs="*", type=Path, default=[])
    merging.add_argument("--settled", type=Path, default=None)
    commands.add_parser("agreement")
    args = parser.parse_args(argv)
    if args.command == "merge":
        merge(args.first, args.second, args.settled)
    else:
        sample = rows(SECOND)
        print(
            orjson.dumps(
                agreement([(r["first"]["referent"], r["second"]["referent"]) for r in sample])
            ).decode()
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
