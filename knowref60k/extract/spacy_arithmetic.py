"""spaCy's arithmetic made independent of the processor it runs on.

The validity score reads the pipeline's contextual token vectors (`doc.tensor`), and a tree's split can
lie closer to one of them than the last bits in which two processors disagree. Two sources of those bits
are removed here, for every component that extraction runs:
- matrix products: thinc multiplies with BLIS, whose kernel is chosen by processor; `StableOps`
  computes them exactly (knowref60k.core.exact_math);
- layer normalisation: thinc scales by `variance ** -0.5`, and numpy's float32 power has its own code for
  AVX-512, which rounds differently; `1 / sqrt(variance)` is correctly rounded everywhere.

What stays with the processor is the entity recogniser's own transition loop, which spaCy runs in C with
BLIS (docs/extraction.md, "The same score on every processor").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from spacy.language import Language
from thinc.api import Model, NumpyOps
from thinc.layers import layernorm

from knowref60k.core.exact_math import product

LAYER_NORM = "layernorm"
EPSILON = np.float32(1e-08)  # thinc's


class StableOps(NumpyOps):  # type: ignore[misc]
    """thinc's CPU operations with matrix products that give the same float32 on every processor."""

    name = "stable_numpy"

    def gemm(self, x: Any, y: Any, *, out: Any = None, trans1: bool = False, trans2: bool = False) -> Any:
        return product(x.T if trans1 else x, y.T if trans2 else y, out=out)


def stable_layer_norm(model: Model[Any, Any], X: Any, is_train: bool) -> tuple[Any, Callable[[Any], Any]]:
    """thinc's layer normalisation at inference, with a correctly rounded inverse square root; training
    keeps thinc's own (whose backward pass it needs)."""
    if is_train:
        return layernorm.forward(model, X, is_train)
    variance = X.var(axis=1, keepdims=True) + EPSILON
    Y = (X - X.mean(axis=1, keepdims=True)) / np.sqrt(variance) * model.get_param("G")
    Y += model.get_param("b")
    return Y, _inference_only


def _inference_only(_: Any) -> Any:
    raise RuntimeError("the stable layer normalisation runs at inference only")


def stabilise(nlp: Language) -> None:
    """Give every layer of the pipeline's models `StableOps` (spaCy builds some layers, as the entity
    recogniser's output layer, with the default operations while it loads) and every layer normalisation
    the stable inverse square root."""
    ops = StableOps()
    for _, component in nlp.pipeline:
        model = getattr(component, "model", None)
        if isinstance(model, Model):
            for node in model.walk():
                node.ops = ops
                if node.name == LAYER_NORM:
                    node._func = stable_layer_norm
