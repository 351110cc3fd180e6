"""Training the validity model (scikit-learn, imported only here): gradient-boosted trees on the judged
candidates' features, the recall floor from the out-of-fold scores of the whole score (the trees'
and the fine-tuned encoder's, whose out-of-fold scores `tools/scorer/finetune.py` stores), the trees
exported as JSON for `knowref60k.extract.scorer`, and an ablation. `tools/scorer/build.py` runs it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from knowref60k.core.errors import UserError
from knowref60k.core.paths import SPAN_ADAPTER, SPAN_OUT_OF_FOLD
from knowref60k.extract.nlp import model_version
from knowref60k.extract.scorer import CONTEXT_DIMENSIONS, FEATURES, Array, combine, project
from knowref60k.quality.gold import GOLD_FILE
from knowref60k.quality.scorer_data import Example

# Small trees, a slow rate and strong regularisation: a few thousand examples overfit larger trees
# (docs/decisions.md, "The validity score").
PARAMETERS: dict[str, Any] = {
    "max_iter": 300,
    "learning_rate": 0.02,
    "max_leaf_nodes": 7,
    "min_samples_leaf": 30,
    "l2_regularization": 5.0,
    "early_stopping": False,
    "random_state": 0,
}
FOLDS = 5
DIGITS = 8  # rounding of leaf values in the JSON: bytes that do not depend on the last bits


@dataclass(frozen=True)
class Supplement:
    """Judged examples beside the gold set (screening answers: `knowref60k.quality.screening_examples`),
    the weight each gets in the trees' fit (a gold example's is 1: screeners err), and their file."""

    examples: Sequence[Example]
    weight: float
    source: str
    sha256: str

    def record(self) -> dict[str, Any]:
        return {
            "file": self.source,
            "sha256": self.sha256,
            "examples": len(self.examples),
            "valid": sum(e.valid for e in self.examples),
            "weight": self.weight,
        }


def fit(features: Array, labels: Array, weights: Array | None = None) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(**PARAMETERS).fit(features, labels, sample_weight=weights)


def fit_with(
    features: Array, labels: Array, supplement: tuple[Array, Array, Array] | None, keep: Array | None = None
) -> Any:
    """The trees on the gold examples and, when given, the supplement's (rows `keep` of them) weighted."""
    if supplement is None:
        return fit(features, labels)
    extra_features, extra_labels, extra_weights = supplement
    rows = slice(None) if keep is None else keep
    return fit(
        np.vstack([features, extra_features[rows]]),
        np.concatenate([labels, extra_labels[rows]]),
        np.concatenate([np.ones(len(labels)), extra_weights[rows]]),
    )


def projection(data: Sequence[Example]) -> dict[str, list[Any]]:
    """The principal directions of the tuning spans' context vectors (no labels used)."""
    from sklearn.decomposition import PCA

    vectors = np.vstack([vector for e in data for vector in e.context])
    pca = PCA(CONTEXT_DIMENSIONS, random_state=0).fit(vectors)
    return {
        "mean": [round(float(v), DIGITS) for v in pca.mean_],
        "components": [[round(float(v), DIGITS) for v in row] for row in pca.components_],
    }


def matrix(
    data: Sequence[Example], projected: dict[str, list[Any]], columns: Sequence[int] | None = None
) -> tuple[Array, Array]:
    """The design matrix (the base features and the projected context vectors) and the labels."""
    mean, components = np.asarray(projected["mean"]), np.asarray(projected["components"])
    vectors = np.asarray([e.context for e in data], dtype=np.float64).reshape(2 * len(data), len(mean))
    context = project(vectors, mean, components).reshape(len(data), 2 * CONTEXT_DIMENSIONS)
    features = np.hstack([np.asarray([e.features for e in data], dtype=np.float64), context])
    if columns is not None:
        features = features[:, list(columns)]
    return features, np.array([e.valid for e in data], dtype=int)


def out_of_fold(
    data: Sequence[Example], columns: Sequence[int] | None = None, supplement: Supplement | None = None
) -> Array:
    """Each example's score from a model that saw none of its comment's examples (the supplement's
    examples of those comments left out too; the supplement itself is never scored)."""
    from sklearn.model_selection import GroupKFold

    projected = projection(data)
    features, labels = matrix(data, projected, columns)
    extra = weighted(supplement, projected, columns)
    groups = [e.item.comment_id for e in data]
    scores = np.zeros(len(data))
    for train, test in GroupKFold(FOLDS).split(features, labels, groups):
        keep = None
        if supplement is not None:
            held = {data[i].item.comment_id for i in test}
            keep = np.array([e.item.comment_id not in held for e in supplement.examples])
        model = fit_with(features[train], labels[train], extra, keep)
        scores[test] = model.predict_proba(features[test])[:, 1]
    return scores


def weighted(
    supplement: Supplement | None, projected: dict[str, list[Any]], columns: Sequence[int] | None = None
) -> tuple[Array, Array, Array] | None:
    """The supplement's design matrix, labels and weights; None without one."""
    if supplement is None or not supplement.examples:
        return None
    features, labels = matrix(supplement.examples, projected, columns)
    return features, labels, np.full(len(labels), supplement.weight)


def span_out_of_fold(model_name: str) -> dict[str, float]:
    """The fine-tuned encoder's out-of-fold score of each tuning sentence, as `finetune.py` stored them."""
    if not SPAN_OUT_OF_FOLD.is_file():
        raise UserError(f"{SPAN_OUT_OF_FOLD} not found: run tools/scorer/finetune.py first")
    record = orjson.loads(SPAN_OUT_OF_FOLD.read_bytes())
    if record["training"]["sha256"] != training_hash(model_name):
        raise UserError(f"{SPAN_OUT_OF_FOLD}: made from another gold set or spaCy pipeline; rerun it")
    scores: dict[str, float] = record["scores"]
    return scores


def check_tuning(data: Sequence[Example], span_scores: Mapping[str, float]) -> None:
    """Refuse a tuning part the score cannot be refitted out of fold on (too few candidates of either
    kind or too few comments for the folds) or whose sentences have no stored encoder score."""
    valid = sum(e.valid for e in data)
    comments = len({e.item.comment_id for e in data})
    if min(valid, len(data) - valid) < 2 * FOLDS or comments < FOLDS:
        raise UserError(
            f"the gold set's tuning part gives {len(data)} candidates ({valid} valid) from {comments} "
            f"comments: too few to refit the score out of fold (at least {2 * FOLDS} of each kind and "
            f"{FOLDS} comments)"
        )
    missing = sum(1 for e in data if e.item.sentence not in span_scores)
    if missing:
        raise UserError(
            f"{missing} tuning sentences have no encoder score in {SPAN_OUT_OF_FOLD.name}: run "
            "tools/scorer/finetune.py on this gold set first"
        )


def combined(data: Sequence[Example], trees: Array, span_scores: Mapping[str, float]) -> Array:
    """The whole score of each example from the trees' scores and the encoder's stored ones."""
    return combine(trees, np.array([span_scores[e.item.sentence] for e in data]))


def recall_point(scores: Array, labels: Array, recall: float) -> float:
    """The highest threshold that still keeps `recall` of the valid examples."""
    valid = np.sort(scores[labels == 1])[::-1]
    if not len(valid):
        return 0.0
    return float(np.floor(valid[max(0, int(np.ceil(recall * len(valid))) - 1)] * 1e4) / 1e4)


def export(model: Any) -> dict[str, Any]:
    trees = []
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        trees.append(
            {
                "feature": nodes["feature_idx"].tolist(),
                # Exact: a value equal to a threshold must go the way it goes in scikit-learn.
                "threshold": [float(v) for v in nodes["num_threshold"]],
                "missing_left": nodes["missing_go_to_left"].tolist(),
                "left": nodes["left"].tolist(),
                "right": nodes["right"].tolist(),
                "is_leaf": nodes["is_leaf"].tolist(),
                "value": [round(float(v), DIGITS) for v in nodes["value"]],
            }
        )
    return {"baseline": round(float(model._baseline_prediction.ravel()[0]), DIGITS), "trees": trees}


def training_hash(model_name: str) -> str:
    digest = hashlib.sha256(GOLD_FILE.read_bytes())
    digest.update(f"{model_name} {model_version(model_name)}".encode())
    return digest.hexdigest()[:16]


def build_model(
    data: Sequence[Example],
    model_name: str,
    keep_recall: float,
    span_scores: Mapping[str, float],
    supplement: Supplement | None = None,
) -> dict[str, Any]:
    """The model as JSON, fitted on `data` (the tuning examples) and the supplement's, with its recall
    floor on the gold examples' out-of-fold scores: the threshold that keeps `keep_recall` of the valid
    candidates (KnowRef recall is measured at it; below it a candidate is almost surely invalid). The
    labelling levels are chosen by cost from the calibration (`knowref60k.labelling.levels`)."""
    projected = projection(data)
    features, labels = matrix(data, projected)
    scores = combined(data, out_of_fold(data, supplement=supplement), span_scores)
    threshold = recall_point(scores, labels, keep_recall)
    model = {
        "features": list(FEATURES),
        "projection": projected,
        **export(fit_with(features, labels, weighted(supplement, projected))),
        "threshold": threshold,
        "training": {
            "data": f"{GOLD_FILE.name} (tune part), spaCy {model_name}",
            "sha256": training_hash(model_name),
            "examples": len(data),
            "valid": int(labels.sum()),
            "parameters": PARAMETERS,
            "threshold_recall": keep_recall,
            "span_model": {
                "file": SPAN_ADAPTER.name,
                "sha256": hashlib.sha256(SPAN_ADAPTER.read_bytes()).hexdigest(),
                "out_of_fold": SPAN_OUT_OF_FOLD.name,
            },
        },
    }
    if supplement is not None:
        model["training"]["supplement"] = supplement.record()
    return model


def feature_groups() -> dict[str, list[int]]:
    """Columns by what they know: the rules' person decision, entity labels, name lists and priors, the
    words around a span, its shape, gender, and the sentence."""
    groups = {
        "rule decision": ("rule_person",),
        "entity labels": ("entity_",),
        "name lists and priors": (
            "known_first_name",
            "world_name",
            "log_babies",
            "census_name",
            "prior_",
            "common_word",
            "all_common",
            "unknown_name_shape",
        ),
        "context words": ("determined", "quoted", "after_", "possessive_after", "titled", "title_only"),
        "span shape": ("sentence_initial", "name_words", "phrase_words", "all_proper_nouns"),
        "gender": ("gender_",),
        "sentence": tuple(name for name in FEATURES if not name.startswith(("a1_", "a2_"))),
        "people elsewhere": ("persons_elsewhere",),
        "context vectors": ("_context_",),
    }
    return {
        group: [i for i, name in enumerate(FEATURES) if any(part in name for part in parts)]
        for group, parts in groups.items()
    }


def out_of_fold_by_sentence(
    data: Sequence[Example], trees: Array, span_scores: Mapping[str, float]
) -> dict[str, float]:
    """Each tuning sentence's out-of-fold score (`trees`: the trees' `out_of_fold` scores of `data`), for
    curves that must not use what the model saw."""
    scores = combined(data, trees, span_scores)
    return {e.item.sentence: round(float(s), 6) for e, s in zip(data, scores, strict=True)}


def ablation(data: Sequence[Example], trees: Array, span_scores: Mapping[str, float]) -> list[dict[str, Any]]:
    """Average precision of the whole score's out-of-fold values (`trees`: the trees' `out_of_fold` scores
    of `data`), without either half, and without each feature group of the trees in turn (the encoder's
    half kept)."""
    from sklearn.metrics import average_precision_score

    labels = np.array([e.valid for e in data], dtype=int)
    encoder = np.array([span_scores[e.item.sentence] for e in data])
    scores = {
        "(nothing)": combine(trees, encoder),
        "the fine-tuned encoder": trees,
        "the trees": encoder,
    }
    for group, columns in feature_groups().items():
        kept = [i for i in range(len(FEATURES)) if i not in set(columns)]
        scores[f"trees' {group}"] = combine(out_of_fold(data, kept), encoder)
    return [
        {"without": name, "average_precision": round(float(average_precision_score(labels, values)), 4)}
        for name, values in scores.items()
    ]
