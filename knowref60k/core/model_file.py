"""The shipped validity model's file (`data/scorer/validity_model.json`), read as data: the trees for
extraction, and the recall floor it was built with for the evaluation, which needs only that number."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.errors import UserError
from knowref60k.core.paths import VALIDITY_MODEL


def read_model(path: Path = VALIDITY_MODEL) -> dict[str, Any]:
    if not path.is_file():
        raise UserError(f"validity model not found: {path} (rebuild it: tools/scorer/build.py)")
    model: dict[str, Any] = orjson.loads(path.read_bytes())
    return model


def recall_floor(path: Path = VALIDITY_MODEL) -> float:
    """The highest score that keeps 97% of the tuning part's valid candidates (the model's `threshold`):
    KnowRef recall is measured at it. What is sent to labelling is chosen by cost
    (`knowref60k.labelling.levels`)."""
    return float(read_model(path)["threshold"])
