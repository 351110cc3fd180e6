"""Cheap features of a problem, in one hashed space of word 1-2-grams:
- the n-grams of the sentence filled with option 1 minus those of it filled with option 2: what goes
  with each option ("trophy", "trophy is");
- the n-grams both fillings share, the context ("because", "too small").
A linear model over them finds the words that give the answer away without resolving anything, the
artefacts AFLite looks for."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from knowref60k.debias.linear import Array
from knowref60k.debias.problems import Problem

DIMENSIONS = 2**18
WORD = re.compile(r"[a-z0-9']+")


def ngrams(text: str, longest: int = 2) -> set[str]:
    words = WORD.findall(text.lower())
    return {" ".join(words[i : i + n]) for n in range(1, longest + 1) for i in range(len(words) - n + 1)}


def bucket(kind: str, gram: str) -> int:
    """crc32: the same bucket on every machine and Python run."""
    return zlib.crc32(f"{kind}:{gram}".encode()) % DIMENSIONS


def ngram_features(problems: Sequence[Problem]) -> sparse.csr_matrix:
    """One row per problem: +1 for an n-gram only in the first filling, -1 for one only in the second,
    +1 for one of the shared context."""
    indptr, indices, values = [0], list[int](), list[float]()
    for problem in problems:
        first, second = (ngrams(text) for text in problem.filled)
        row: dict[int, float] = {}
        for grams, kind, value in (
            (first - second, "d", 1.0),
            (second - first, "d", -1.0),
            (first & second, "c", 1.0),
        ):
            for gram in grams:
                index = bucket(kind, gram)
                row[index] = row.get(index, 0.0) + value
        for index in sorted(row):
            indices.append(index)
            values.append(row[index])
        indptr.append(len(indices))
    shape = (len(problems), DIMENSIONS)
    return sparse.csr_matrix(
        (np.array(values), np.array(indices, dtype=np.int64), np.array(indptr)), shape=shape
    )


def labels_of(problems: Sequence[Problem]) -> Array:
    return np.array([problem.label for problem in problems], dtype=np.int8)
