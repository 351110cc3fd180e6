"""Build the screening control items from the gold set (see README.md beside this file).

    .venv/bin/python tools/eval/build_controls.py [--out data/eval/screening_controls.jsonl]

A valid gold sentence becomes a control with its judged names highlighted and the answer "valid"; an
invalid one, with the two spans the gold set's pool rule picks, and the screening reason its gold reason
maps to. Deterministic: the same gold set and spaCy pipeline give the same file.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import orjson

from knowref60k.core.config import ExtractConfig
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.labelling.controls import DEFAULT_CONTROLS
from knowref60k.labelling.decisions import SCREENING, VALID
from knowref60k.quality.evaluation import extract_sentences
from knowref60k.quality.gold import GOLD_FILE
from knowref60k.quality.gold_verdicts import SCREENING_REASON_OF
from knowref60k.quality.pool import POOL_STAGES


def main() -> None:
    parser = argparse.ArgumentParser(description="Screening control items from the gold set.")
    parser.add_argument("--out", type=Path, default=DEFAULT_CONTROLS)
    args = parser.parse_args()
    records = [orjson.loads(line) for line in GOLD_FILE.read_bytes().splitlines()]
    config = ExtractConfig()
    pool = extract_sentences(
        "gold", [r["sentence"] for r in records], config, resolve_model_name(config.model), POOL_STAGES
    )
    spans_of = {row["line_number"]: row for row in pool.rows}
    controls = []
    for line, record in enumerate(records, start=1):
        if record["label"] == "valid":
            spans, answer = (record["antecedent1"], record["antecedent2"]), VALID
        elif line in spans_of:
            row = spans_of[line]
            spans = (
                (row["antecedent1_start"], row["antecedent1_end"]),
                (row["antecedent2_start"], row["antecedent2_end"]),
            )
            answer = SCREENING_REASON_OF[record["reason"]]
        else:
            continue
        controls.append(
            {
                "candidate_id": record["candidate_id"],
                "source_file": record["source_file"],
                "sentence": record["sentence"],
                "antecedent1_start": spans[0][0],
                "antecedent1_end": spans[0][1],
                "antecedent2_start": spans[1][0],
                "antecedent2_end": spans[1][1],
                "pronoun_start": record["pronoun_start"],
                "pronoun_end": record["pronoun_end"],
                "stage": SCREENING,
                "answer": answer,
            }
        )
    args.out.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in controls))
    valid = sum(control["answer"] == VALID for control in controls)
    print(f"{len(controls)} screening controls ({valid} valid) -> {args.out}")


if __name__ == "__main__":
    main()
