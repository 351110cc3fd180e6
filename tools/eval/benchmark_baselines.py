"""The simple baselines of every release card's "How right and how hard" section on WSC-273, DPR test and
WinoGrande dev, computed once into `data/eval/benchmark_baselines.json` (they do not depend on the release):

    .venv/bin/python tools/eval/benchmark_baselines.py [--benchmarks DIR] [--model NAME] [--out FILE]

Each set's file is named with its sha256; the spaCy pipeline that parsed the sentences (the subject
baseline) with its version. The same files, pipeline and seed give the same bytes.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import orjson

from knowref60k.release.difficulty import BENCHMARK_BASELINES, benchmark_baselines, load_parser

log = logging.getLogger("benchmark_baselines")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--benchmarks", type=Path, required=True, help="the benchmarks folder (../shared/data/benchmarks)"
    )
    parser.add_argument("--model", default=None, help="spaCy pipeline (default: the first installed default)")
    parser.add_argument("--out", type=Path, default=BENCHMARK_BASELINES)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    pipeline = load_parser(args.model)
    if pipeline is None:
        raise SystemExit("no spaCy pipeline with a parser: `make setup` installs one")
    figures = benchmark_baselines(args.benchmarks, pipeline)
    args.out.write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2) + b"\n")
    for name, found in figures["sets"].items():
        shares = {baseline: (score or {}).get("share") for baseline, score in found["baselines"].items()}
        log.info("%s (%d items): %s", name, found["items"], shares)
    log.info("wrote %s", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
