"""Do screeners' answers teach the score? A measurement on the gold set, by the same code the
score's build uses (`knowref60k.quality.screening_examples`, `training.Supplement`).

    .venv/bin/python tools/scorer/screening_demo.py [--source RC_sample_B.zst] [--accuracy 0.9]
        [--weights 0.25,0.5,1] [--out output/eval/screening-demo.json]

The judged sentences of one source file stand in for fresh text that no judge saw, only screeners:
1. their tuning part's loose-rule candidates are screened by simulated screeners (`--accuracy`, seeded,
   each answering from the gold verdict as a careful screener would, erring at random otherwise; votes
   until the labelling rule decides), and their decided tasks become screening-derived examples;
2. the trees are fitted on the rest of the tuning part alone (A) and with those examples at each weight
   (B), and, as the ceiling, with the same sentences' gold verdicts (C);
3. each is scored on the whole held-back part (never used to fit): average precision of the trees and of
   the whole score (with the shipped encoder's half, the same for all).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import orjson

from knowref60k.extract.nlp import resolve_model_name
from knowref60k.extract.scorer import Array, combine
from knowref60k.extract.span_model import SpanModel, candidate_spans
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import SCREENING, decide
from knowref60k.quality.gold import GOLD_FILE, load_gold
from knowref60k.quality.gold_verdicts import SCREENING_REASON_OF
from knowref60k.quality.scorer_data import Example, examples
from knowref60k.quality.screening_examples import load_examples, screening_examples, write_examples
from knowref60k.quality.training import Supplement, fit_with, matrix, projection, weighted
from knowref60k_annotation.simulate import screener

START = datetime(2026, 11, 1, tzinfo=UTC)


def simulated_votes(
    data: list[Example], accuracy: float, config: LabellingConfig, seed: int
) -> list[dict[str, Any]]:
    """Votes of simulated screeners on each example's candidate until the screening rule decides it."""
    truth = {e.row["candidate_id"]: "valid" if e.valid else SCREENING_REASON_OF[str(e.error)] for e in data}
    answer = screener(truth.__getitem__, accuracy, seed)
    rule, votes = config.rule(SCREENING), list[dict[str, Any]]()
    for e in data:
        item_id, cast = e.row["candidate_id"], list[dict[str, Any]]()
        while decide(item_id, cast, rule).status == "pending" and len(cast) < rule.limit:
            at = START + timedelta(seconds=len(votes))
            cast.append(
                {
                    "stage": SCREENING, "item_id": item_id, "task_id": 0, "annotation_id": len(votes),
                    "annotator_id": len(cast), "choice": answer(item_id, len(cast)), "created_at": at,
                    "updated_at": at, "simulated": True,
                }
            )  # fmt: skip
            votes.append(cast[-1])
    return votes


def screening_supplement(data: list[Example], accuracy: float, weight: float, model_name: str) -> Supplement:
    """The examples the simulated screeners' decided tasks yield, through the examples file."""
    config = LabellingConfig()
    votes = simulated_votes(data, accuracy, config, seed=37)
    found, _ = screening_examples(votes, {e.row["candidate_id"]: e.row for e in data}, config)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "screening-examples.jsonl"
        write_examples(found, path)
        made = examples(load_examples(path), model_name)
    return Supplement(made, weight, "simulated", "")


def scores(
    train: list[Example], supplement: Supplement | None, test: list[Example], encoder: Array
) -> dict[str, float]:
    from sklearn.metrics import average_precision_score

    projected = projection(train)
    features, labels = matrix(train, projected)
    model = fit_with(features, labels, weighted(supplement, projected))
    test_features, test_labels = matrix(test, projected)
    trees = model.predict_proba(test_features)[:, 1]
    return {
        "average_precision_trees": round(float(average_precision_score(test_labels, trees)), 4),
        "average_precision_score": round(
            float(average_precision_score(test_labels, combine(trees, encoder))), 4
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="RC_sample_B.zst", help="source file of the stand-in sentences")
    parser.add_argument("--accuracy", type=float, default=0.9)
    parser.add_argument("--weights", default="0.25,0.5,1")
    parser.add_argument("--out", type=Path, default=Path("output/eval/screening-demo.json"))
    args = parser.parse_args()
    model_name = resolve_model_name(None)
    sources = {
        r["candidate_id"]: r["source_file"] for r in map(orjson.loads, GOLD_FILE.read_bytes().splitlines())
    }
    made = examples(load_gold(), model_name)
    fresh = [e for e in made if e.item.split == "tune" and sources[e.item.candidate_id] == args.source]
    rest = [e for e in made if e.item.split == "tune" and sources[e.item.candidate_id] != args.source]
    held_back = [e for e in made if e.item.split == "heldout"]
    encoder = SpanModel().probabilities([(e.row["sentence"], candidate_spans(e.row)) for e in held_back])
    result: dict[str, Any] = {
        "stand_in": {"source": args.source, "examples": len(fresh), "valid": sum(e.valid for e in fresh)},
        "tuning_examples_without_them": len(rest),
        "held_back_examples": len(held_back),
        "screener_accuracy": args.accuracy,
        "A_gold_without_the_stand_in": scores(rest, None, held_back, encoder),
        "C_with_their_gold_verdicts": scores(rest, Supplement(fresh, 1.0, "gold", ""), held_back, encoder),
    }
    for weight in (float(w) for w in args.weights.split(",")):
        supplement = screening_supplement(fresh, args.accuracy, weight, model_name)
        result["screening_examples"] = {
            "examples": len(supplement.examples),
            "valid": sum(e.valid for e in supplement.examples),
        }
        result[f"B_with_screening_examples_weight_{weight:g}"] = scores(rest, supplement, held_back, encoder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
