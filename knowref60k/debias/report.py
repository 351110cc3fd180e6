"""`knowref60k debias`: AFLite on a release or a WinoGrande file, with its evidence, written to a folder:
`aflite.parquet` (per instance: score, round removed, kept), `report.json` and `report.png`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from knowref60k.core.encoder import MiniLM
from knowref60k.core.errors import UserError
from knowref60k.core.figures import pyplot, save_figure
from knowref60k.core.io import atomic_path, output_folder, write_json_atomic
from knowref60k.debias.aflite import Parameters, Result, aflite
from knowref60k.debias.evidence import BINS, Evidence, evidence, first_component, pmi_subset, random_subset
from knowref60k.debias.features import labels_of, ngram_features
from knowref60k.debias.linear import Array, Features
from knowref60k.debias.problems import Problem, read_problems

FEATURES = {
    "ngrams": "hashed word 1-2-grams: those of the sentence filled with option 1 minus those filled with "
    "option 2, and the shared context (2^18 buckets)",
    "encoder": "all-MiniLM-L6-v2 embeddings of the sentence filled with option 1 and with option 2",
}
COLUMNS = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("label", pa.int64(), nullable=False),
        pa.field("aflite_score", pa.float64()),
        pa.field("aflite_removed_round", pa.int32()),
        pa.field("aflite_kept", pa.bool_(), nullable=False),
    ]
)
# WinoGrande's Figure 1, for the README and the report.
PAPER_KL = {"full": 2.53, "aflite": 0.12, "random": 2.51, "pmi": 2.42}


@dataclass
class Analysis:
    """AFLite's result on a set of problems, the subsets compared and the evidence on each."""

    result: Result
    report: dict[str, Any]
    features: Features
    labels: Array
    subsets: dict[str, Array]
    evidence: dict[str, Evidence]
    # apart from the report, which must not change from run to run
    seconds: dict[str, float]

    def plot(self, path: Path) -> None:
        _plot(path, self.features, self.labels, self.subsets, self.evidence)


def analyse(
    problems: list[Problem],
    parameters: dict[str, Any],
    features_name: str = "ngrams",
    progress: Callable[[str, int, int | None], None] | None = None,
) -> Analysis:
    """AFLite over the problems and the evidence against random and PMI subsets of the same size.
    `progress(phase, done, total)` hears of sentences encoded and models trained."""
    if features_name not in FEATURES:
        raise UserError(f"unknown features {features_name!r}; use one of {', '.join(FEATURES)}")
    started = time.perf_counter()
    chosen = Parameters.for_size(len(problems), **parameters)
    words, labels = ngram_features(problems), labels_of(problems)

    def step(phase: str, total: int | None) -> Callable[[int], None] | None:
        return (lambda done: progress(phase, done, total)) if progress else None

    sentences = 2 * len(problems)
    features = words if features_name == "ngrams" else encoder_features(problems, step("encode", sentences))
    featurised = time.perf_counter()
    _, groups = np.unique([problem.group or problem.id for problem in problems], return_inverse=True)
    result = aflite(features, labels, chosen, groups, step("fit", None))
    filtered = time.perf_counter()
    kept = int(result.kept.sum())
    subsets = {
        "full": np.ones(len(problems), dtype=bool),
        "aflite": result.kept,
        "random": random_subset(len(problems), kept, chosen.seed),
        "pmi": pmi_subset(words, labels, kept),
    }
    found = {
        name: evidence(features[mask], labels[mask], groups[mask], chosen.seed)
        for name, mask in subsets.items()
    }
    report = {
        "instances": len(problems),
        "features": {"name": features_name, "description": FEATURES[features_name]},
        **result.summary(),
        "evidence": {name: asdict(item) for name, item in found.items()},
        "winogrande_figure_1_kl": PAPER_KL,
    }
    seconds = {
        "features": round(featurised - started, 1),
        "aflite": round(filtered - featurised, 1),
        "evidence": round(time.perf_counter() - filtered, 1),
    }
    return Analysis(result, report, features, labels, subsets, found, seconds)


def debias(
    source: Path,
    out_dir: Path,
    parameters: dict[str, Any],
    features_name: str = "ngrams",
    progress: Callable[[str, int, int | None], None] | None = None,
) -> dict[str, Any]:
    """AFLite over every problem of `source`; writes aflite.parquet, report.json and report.png."""
    problems = read_problems(source)  # a missing source is refused before --out is made
    output_folder(out_dir)
    analysis = analyse(problems, parameters, features_name, progress)
    report = {"source": str(source), **analysis.report, "seconds": analysis.seconds}
    _write_scores(out_dir / "aflite.parquet", problems, analysis.labels, analysis.result)
    write_json_atomic(out_dir / "report.json", report)
    analysis.plot(out_dir / "report.png")
    return report


def columns_of(result: Result) -> list[dict[str, Any]]:
    """Per instance, in order: the AFLite columns of a release row."""
    return [
        {
            "aflite_score": None if np.isnan(score) else float(score),
            "aflite_removed_round": int(removed) or None,
            "aflite_kept": not removed,
        }
        for score, removed in zip(result.scores, result.removed_in_round, strict=True)
    ]


def encoder_features(problems: list[Problem], progress: Callable[[int], None] | None = None) -> Array:
    """Both filled sentences' embeddings side by side (float64 for the solvers): a linear model sees
    the context as well as how the options change it, which the difference alone would cancel."""
    encoder = MiniLM()
    embeddings = encoder.encode([text for problem in problems for text in problem.filled], progress)
    both = np.hstack([embeddings[0::2], embeddings[1::2]]).astype(np.float64)
    # standardised, so that the logistic regressions' L2 penalty weighs every dimension alike (unit-length
    # embeddings have coordinates near 0.05, which the penalty would flatten to a constant prediction)
    spread = both.std(axis=0)
    standardised: Array = (both - both.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    return standardised


def _write_scores(path: Path, problems: list[Problem], labels: Array, result: Result) -> None:
    rows = [
        {"id": problem.id, "label": int(label), **columns}
        for problem, label, columns in zip(problems, labels, columns_of(result), strict=True)
    ]
    with atomic_path(path) as temporary:
        pq.write_table(pa.Table.from_pylist(rows, schema=COLUMNS), temporary, compression="zstd")


def _plot(
    path: Path,
    features: Features,
    labels: Array,
    subsets: dict[str, Array],
    found: dict[str, Evidence],
) -> None:
    """Like WinoGrande's Figure 1: each label's distribution along the subset's first component."""
    plt = pyplot()
    figure, axes = plt.subplots(1, len(subsets), figsize=(4 * len(subsets), 3.2))
    for axis, (name, mask) in zip(axes, subsets.items(), strict=True):
        projection, subset_labels = first_component(features[mask]), labels[mask]
        edges = np.histogram_bin_edges(projection, bins=BINS)
        for label in (0, 1):
            axis.hist(
                projection[subset_labels == label],
                bins=edges,
                alpha=0.55,
                density=True,
                label=f"label {label}",
            )
        item = found[name]
        axis.set_title(f"{name}: n={item.size:,}\nKL {item.kl_pc1:.4f}, probe {item.probe_accuracy:.1%}")
        axis.set_xlabel("first principal component")
    axes[0].legend()
    save_figure(figure, path)
