"""Build the control items from the gold set (see README.md beside this file).

    .venv/bin/python tools/eval/build_controls.py [--out data/eval/screening_controls.jsonl]
    .venv/bin/python tools/eval/build_controls.py --stage resolution [--out FILE]

Screening: a valid gold sentence becomes a control with its judged names highlighted and the answer
"valid"; an invalid one, with the two spans the gold set's pool rule picks, and the screening reason its
gold reason maps to. Resolution: each valid sentence of the gold set's tuning part whose referent the
judges could tell (`reddit_referents.jsonl`) and that prepare would keep becomes a control renamed by
prepare's own perturbation (the shipped name pools and seed, as any item), with the judged referent as its
answer. Deterministic: the same
gold set, spaCy pipeline and perturbation give the same file.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import orjson

from knowref60k.core.config import TARGET_PRONOUNS, ExtractConfig, PrepareConfig
from knowref60k.core.names import GENDERS, perturbation_pool
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.labelling.controls import DEFAULT_CONTROLS, RESOLUTION_CONTROLS
from knowref60k.labelling.decisions import RESOLUTION, SCREENING, VALID
from knowref60k.labelling.referents import UNCLEAR, load_referents
from knowref60k.prepare.name_mentions import name_mentions
from knowref60k.prepare.perturb import perturb
from knowref60k.prepare.stages.pronouns import other_gender_pronouns
from knowref60k.quality.evaluation import extract_sentences
from knowref60k.quality.gold import GOLD_FILE
from knowref60k.quality.gold_verdicts import SCREENING_REASON_OF
from knowref60k.quality.pool import POOL_STAGES


def main() -> None:
    parser = argparse.ArgumentParser(description="Control items from the gold set.")
    parser.add_argument("--stage", choices=(SCREENING, RESOLUTION), default=SCREENING)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.stage == RESOLUTION:
        resolution_controls(args.out or RESOLUTION_CONTROLS)
    else:
        screening_controls(args.out or DEFAULT_CONTROLS)


def resolution_controls(out: Path) -> None:
    referents = load_referents()
    config = PrepareConfig()
    pools = {gender: perturbation_pool(gender, config.gender_ambiguity_share) for gender in GENDERS}
    controls = []
    for record in (orjson.loads(line) for line in GOLD_FILE.read_bytes().splitlines()):
        judged = referents.get(record["candidate_id"])
        if judged is None or judged.split != "tune" or judged.referent == UNCLEAR:
            continue
        row = {**record, "pronoun_gender": TARGET_PRONOUNS[record["pronoun"].lower()]}
        for field in ("antecedent1", "antecedent2"):
            start, end = record[field]
            row |= {field: record["sentence"][start:end], f"{field}_start": start, f"{field}_end": end}
        # Left out where prepare would drop the item: a pronoun of the other gender, a repeated name the
        # sentence cannot tell, no two names to draw.
        if other_gender_pronouns(row) or name_mentions(row).problem:
            continue
        try:
            renamed = perturb(row, pools, config.seed)
        except ValueError:
            continue
        controls.append(
            {
                "candidate_id": record["candidate_id"],
                "source_file": record["source_file"],
                "sentence": record["sentence"],
                **renamed.columns(),
                "stage": RESOLUTION,
                "answer": judged.referent,
            }
        )
    out.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in controls))
    print(f"{len(controls)} resolution controls {dict(Counter(c['answer'] for c in controls))} -> {out}")


def screening_controls(out: Path) -> None:
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
    out.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in controls))
    valid = sum(control["answer"] == VALID for control in controls)
    print(f"{len(controls)} screening controls ({valid} valid) -> {out}")


if __name__ == "__main__":
    main()
