"""The shipped validity model's file (`data/scorer/validity_model.json`), read as data: the trees for
extraction, and the operating points it was built with for preparation and labelling, which need only
those numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.errors import UserError
from knowref60k.core.paths import VALIDITY_MODEL


def read_model(path: Path = VALIDITY_MODEL) -> dict[str, Any]:
    if not path.is_file():
        raise UserError(f"validity model not found: {path} (rebuild it: data/scorer/build.py)")
    model: dict[str, Any] = orjson.loads(path.read_bytes())
    return model


def operating_point(name: str, path: Path = VALIDITY_MODEL) -> float:
    """`threshold` (below it a candidate is set aside), `skip_screening_above` or
    `careful_screening_below`."""
    return float(read_model(path)[name])
