"""How the validity score grows with judged data: the tuning part's out-of-fold quality when each of the 5
folds (grouped by comment) trains on only a share of its comments, for the trees, the fine-tuned
encoder and the score (their mean).

    .venv-eval/bin/python tools/scorer/learning_curve.py [--shares 0.2,0.4] [--tuning-items N] [--out FILE]

Runs in the model-evaluation environment; on the 7,377-sentence gold set a share of 0.4 (about the size
of the 3,020-sentence set's tuning part, so the two curves meet there) takes 8.5 minutes on 2 cores,
0.2 about half that; the whole
share is the shipped out-of-fold scores (`span_out_of_fold.json` and the trees'), not refitted. Seeded:
both halves drop the same comments. Prints per share the average precision over all tuning candidates
and, on the single-connective candidates `make eval` measures, the precision at the rules' yield and the
yield at 90% precision, with thresholds picked on the same scores (optimistic: compare shares with each
other, not with the held-back part). The targets are computed by `make eval`'s own function; nothing is
fitted or picked on the `heldout` part, which gives only the per-million scale and the rules' yield.
`--tuning-items N` keeps only the first N tuning items of the gold set (file order) for every row, the
whole share included (the test suite's slice: the same code in about a minute).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import torch
from finetune import fit as fit_encoder
from finetune import predict
from sklearn.metrics import average_precision_score
from sklearn.model_selection import GroupKFold

from knowref60k.core.config import ExtractConfig
from knowref60k.core.encoder import MiniLM
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.extract.scorer import Array, combine
from knowref60k.extract.span_model import MAX_TOKENS
from knowref60k.quality.gold import GoldItem, gold_metadata, load_gold
from knowref60k.quality.score_eval import evaluate_score
from knowref60k.quality.scorer_data import Example, examples
from knowref60k.quality.training import FOLDS, matrix, out_of_fold, projection, span_out_of_fold
from knowref60k.quality.training import fit as fit_trees


def kept_rows(train: Sequence[int], groups: Sequence[str], share: float) -> list[int]:
    """The training rows of a seeded `share` of the fold's comments."""
    comments = sorted({groups[i] for i in train})
    random.Random(0).shuffle(comments)
    chosen = set(comments[: round(len(comments) * share)])
    return [i for i in train if groups[i] in chosen]


def share_scores(tune: list[Example], share: float, base: MiniLM) -> dict[str, Array]:
    """Out-of-fold scores of both halves and of the score, each fold trained on `share` of its comments."""
    features, labels = matrix(tune, projection(tune))
    groups = [e.item.comment_id for e in tune]
    trees, encoder = np.zeros(len(tune)), np.zeros(len(tune))
    for train, test in GroupKFold(FOLDS).split(tune, groups=groups):
        kept = kept_rows(train, groups, share)
        trees[test] = fit_trees(features[kept], labels[kept]).predict_proba(features[test])[:, 1]
        encoder[test] = predict(base, fit_encoder(base, [tune[i] for i in kept]), [tune[i] for i in test])
    return {"trees": trees, "encoder": encoder, "score": combine(trees, encoder)}


def whole_scores(tune: list[Example], model_name: str) -> dict[str, Array]:
    """The shipped model's out-of-fold scores (every comment of each training fold)."""
    trees = out_of_fold(tune)
    stored = span_out_of_fold(model_name)
    encoder = np.array([stored[e.item.sentence] for e in tune])
    return {"trees": trees, "encoder": encoder, "score": combine(trees, encoder)}


def tuning_targets(
    gold: list[GoldItem], tune: list[Example], scores: Array, model_name: str
) -> dict[str, Any]:
    """`make eval`'s two targets on the tuning part (`score_eval.evaluate_score`) with these scores as
    the tuning sentences' out-of-fold ones."""
    by_sentence = {e.item.sentence: float(s) for e, s in zip(tune, scores, strict=True)}
    comments = gold_metadata()["source_comments"]
    points = evaluate_score(gold, ExtractConfig(), model_name, comments, 0.0, by_sentence)["tune"]
    return {
        "precision_at_rules_yield": points["rules_yield"]["precision"],
        "per_million_at_90": points["precision_90"]["per_million"],
    }


def summary(
    gold: list[GoldItem], tune: list[Example], scores: dict[str, Array], model_name: str
) -> dict[str, Any]:
    labels = np.array([e.valid for e in tune], dtype=int)
    result: dict[str, Any] = {
        f"average_precision_{name}": round(float(average_precision_score(labels, values)), 4)
        for name, values in scores.items()
    }
    return result | tuning_targets(gold, tune, scores["score"], model_name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shares", default="0.2,0.4", help="shares of each fold's comments to train on")
    parser.add_argument("--tuning-items", type=int, help="only the first N tuning items of the gold set")
    parser.add_argument("--out", type=Path, help="also write the results as JSON")
    args = parser.parse_args()
    torch.set_num_threads(2)
    model_name = resolve_model_name(ExtractConfig().model)
    gold = load_gold()
    kept = {item.candidate_id for item in [i for i in gold if i.split == "tune"][: args.tuning_items]}
    tune = [e for e in examples(gold, model_name) if e.item.candidate_id in kept]
    base = MiniLM(max_tokens=MAX_TOKENS)
    results = {"1.0": summary(gold, tune, whole_scores(tune, model_name), model_name)}
    print(f"share 1.0: {results['1.0']}", flush=True)
    for share in sorted({float(s) for s in args.shares.split(",")} - {1.0}):
        results[str(share)] = summary(gold, tune, share_scores(tune, share, base), model_name)
        print(f"share {share}: {results[str(share)]}", flush=True)
    if args.out:
        args.out.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2) + b"\n")


if __name__ == "__main__":
    main()
