"""Did AFLite remove the artefacts? WinoGrande's two checks on a subset, against its two baselines of
the same size (a random subset, and one filtered by word-label PMI):

- the KL divergence between the two labels' distributions along the subset's first principal
  component (WinoGrande's Figure 1: 2.53 before, 0.12 after AFLite, 2.51 random, 2.42 PMI);
- the held-out accuracy of a fresh linear probe trained on part of the subset (50% = nothing to learn).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import LinearOperator, svds

from knowref60k.debias.linear import Array, Features, fit, group_split

BINS = 20
# Half a count added to every bin (Jeffreys): an empty bin on one side must not make the KL explode
# on a few hundred instances.
SMOOTHING = 0.5
PROBE_REPEATS = 5
PROBE_TEST_SHARE = 0.2


@dataclass(frozen=True)
class Evidence:
    size: int
    kl_pc1: float
    probe_accuracy: float


def evidence(features: Features, labels: Array, groups: Array, seed: int) -> Evidence:
    projection = first_component(features)
    accuracy = probe_accuracy(features, labels, groups, seed)
    return Evidence(features.shape[0], kl_divergence(projection, labels), accuracy)


def first_component(features: Features) -> Array:
    """Each instance's coordinate on the first principal component, without densifying the features."""
    mean = np.asarray(features.mean(axis=0)).ravel()
    rows, columns = features.shape
    centred = LinearOperator(
        (rows, columns),
        matvec=lambda v: features @ v - mean @ v,
        rmatvec=lambda u: features.T @ u - mean * u.sum(),
        matmat=lambda v: features @ v - (mean @ v)[None, :],
        rmatmat=lambda u: features.T @ u - np.outer(mean, u.sum(axis=0)),
        dtype=np.float64,
    )
    start = np.ones(min(rows, columns)) / np.sqrt(min(rows, columns))  # fixed start: deterministic
    left, singular, _ = svds(centred, k=1, v0=start, random_state=0)
    projection: Array = np.asarray(left[:, 0] * singular[0], dtype=np.float64)
    # a component's sign is arbitrary: fix it so the first non-zero coordinate is positive
    nonzero = np.flatnonzero(np.abs(projection) > 1e-12)
    return -projection if nonzero.size and projection[nonzero[0]] < 0 else projection


def kl_divergence(projection: Array, labels: Array) -> float:
    """KL(label 0 || label 1) of the histograms of the projection, on shared bins, smoothed."""
    edges = np.histogram_bin_edges(projection, bins=BINS)
    first, _ = np.histogram(projection[labels == 0], bins=edges)
    second, _ = np.histogram(projection[labels == 1], bins=edges)
    p = (first + SMOOTHING) / (first.sum() + SMOOTHING * BINS)
    q = (second + SMOOTHING) / (second.sum() + SMOOTHING * BINS)
    return float(np.sum(p * np.log(p / q)))


def probe_accuracy(features: Features, labels: Array, groups: Array, seed: int) -> float:
    """Mean accuracy on held-out fifths of the subset (whole groups) of a linear probe trained on the rest."""
    generator = np.random.default_rng(seed)
    test_size = max(1, int(features.shape[0] * PROBE_TEST_SHARE))
    accuracies = []
    for _ in range(PROBE_REPEATS):
        test, train = group_split(groups, test_size, generator)
        model = fit(features[train], labels[train])
        accuracies.append(float(np.mean(model.predict(features[test]) == labels[test])))
    return float(np.mean(accuracies))


def random_subset(size: int, keep: int, seed: int) -> Array:
    """A mask keeping `keep` of `size` instances at random."""
    mask = np.zeros(size, dtype=bool)
    mask[np.random.default_rng(seed).choice(size, keep, replace=False)] = True
    return mask


def pmi_subset(features: sparse.csr_matrix, labels: Array, keep: int) -> Array:
    """WinoGrande's PMI baseline: an instance's score is the highest PMI between one of its signed
    features and its own label; the `keep` lowest-scoring instances stay."""
    signed = sparse.hstack([features > 0, features < 0], format="csr").astype(np.float64)
    scores = np.zeros(features.shape[0])
    for label in (0, 1):
        mine = labels == label
        if not mine.any():
            continue
        with_label = np.asarray(signed[mine].sum(axis=0)).ravel()
        total = np.asarray(signed.sum(axis=0)).ravel()
        prior = mine.mean()
        pmi = np.log((with_label + 1) / (total + 2) / prior)
        shift = 1.0 - pmi.min()  # all positive, so that a row's maximum is over its own features
        best = np.asarray(signed[mine].multiply(pmi + shift).max(axis=1).todense()).ravel() - shift
        scores[mine] = np.where(signed[mine].getnnz(axis=1) > 0, best, 0.0)
    order = np.lexsort((np.arange(len(scores)), scores))
    mask = np.zeros(len(scores), dtype=bool)
    mask[order[:keep]] = True
    return mask
