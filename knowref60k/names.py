"""First-name lists (1990 US Census) used to recognise person names."""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

from knowref60k.paths import DATA_DIR

NAMES_DIR = DATA_DIR / "names"
GENDERS = ("male", "female")


@lru_cache(maxsize=4)
def load_first_names(gender: str, names_dir: Path = NAMES_DIR) -> dict[str, float]:
    """Name (title case) -> frequency in percent, for one gender."""
    path = names_dir / f"{gender}.tsv"
    with path.open(encoding="utf-8", newline="") as handle:
        return {
            row["name"]: float(row["frequency_percent"]) for row in csv.DictReader(handle, delimiter="\t")
        }


@lru_cache(maxsize=1)
def known_first_names() -> frozenset[str]:
    return frozenset(name for gender in GENDERS for name in load_first_names(gender))
