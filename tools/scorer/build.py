"""Train the validity model on the tuning part of the gold set and write it as JSON.

    .venv/bin/python tools/scorer/build.py [--out data/scorer/validity_model.json] [--recall 0.97]
        [--screening-examples EXAMPLES.jsonl [--screening-weight 0.5]]

1. The loose rule (person detection "score") makes a candidate of every judged sentence of
   `data/eval/reddit_gold.jsonl` that has exactly two names before its connective; each gets its feature
   vector (knowref60k.extract.scorer) and its label (valid when the gold set calls the sentence valid
   and the candidate's spans are the judged whole names).
2. The fine-tuned encoder's out-of-fold scores come from `tools/scorer/finetune.py` (run it first; it
   writes the adapters and `span_out_of_fold.json`).
3. Gradient-boosted trees (scikit-learn's HistGradientBoostingClassifier, seeded, one thread) are fitted
   on the `tune` part only; the `heldout` part is never read here.
   With `--screening-examples` (`knowref60k annotate examples`), the screeners' answers join the
   trees' fit, each weighted `--screening-weight` (a gold example weighs 1); the model records the
   file's name and hash. Without them the build is the gold set's alone.
4. The recall floor is chosen on the tune part's out-of-fold scores of the whole score (the mean of both
   halves; grouped 5-fold cross-validation by comment): the highest threshold that keeps `--recall` of
   the valid candidates. KnowRef recall is measured at it. The labelling levels (the threshold items are
   sent at, screening skipped or careful) are chosen by cost at run time from `calibration.json`, which
   `knowref60k measure-extraction` writes once the model is built.

The JSON holds the features' names, the trees, the thresholds, the hash of what it was trained on (the
gold file and the spaCy pipeline) and of the encoder's adapters, so `tests/test_scorer.py` can rebuild
it and compare.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # the same trees on any machine

import orjson

from knowref60k.core.config import ExtractConfig
from knowref60k.core.errors import UserError
from knowref60k.core.paths import VALIDITY_MODEL
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.quality.gold import GoldItem, load_gold
from knowref60k.quality.scorer_data import examples
from knowref60k.quality.screening_examples import load_examples
from knowref60k.quality.training import Supplement, build_model, span_out_of_fold


def supplement(
    path: Path | None, screened: list[GoldItem], weight: float, model_name: str
) -> Supplement | None:
    """The screening-derived examples (`screened`, loaded from `path`) as candidates of the loose rule,
    with their weight."""
    if path is None:
        return None
    made = examples(screened, model_name)
    return Supplement(made, weight, path.name, hashlib.sha256(path.read_bytes()).hexdigest())


def main() -> None:
    try:
        build(arguments())
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=VALIDITY_MODEL)
    parser.add_argument(
        "--recall", type=float, default=0.97, help="share of valid candidates the threshold keeps"
    )
    parser.add_argument("--screening-examples", type=Path, help="JSON lines from `annotate examples`")
    parser.add_argument(
        "--screening-weight", type=float, default=0.5, help="weight of a screening-derived example (gold: 1)"
    )
    return parser.parse_args()


def build(args: argparse.Namespace) -> None:
    # Read first: a malformed file or weight is refused before the long parse of the gold set.
    if not (math.isfinite(args.screening_weight) and args.screening_weight > 0):
        raise UserError(f"--screening-weight {args.screening_weight}: must be a number above 0")
    screened = load_examples(args.screening_examples) if args.screening_examples is not None else []
    model_name = resolve_model_name(ExtractConfig().model)
    tune = [example for example in examples(load_gold(), model_name) if example.item.split == "tune"]
    extra = supplement(args.screening_examples, screened, args.screening_weight, model_name)
    span_scores = span_out_of_fold(model_name)
    model = build_model(tune, model_name, args.recall, span_scores, extra)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(orjson.dumps(model) + b"\n")
    training = model["training"]
    print(
        f"{training['examples']} tuning examples ({training['valid']} valid), {len(model['trees'])} trees, "
        f"recall floor {model['threshold']} -> {args.out}"
    )


if __name__ == "__main__":
    main()
