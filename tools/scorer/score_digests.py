"""Digests of every step of the validity score on a fixed slice of the gold set: compare them with the
recorded ones, record them, or compare them under other BLAS kernels and SIMD code on this machine.

    .venv/bin/python tools/scorer/score_digests.py            # this process against the recorded
    .venv/bin/python tools/scorer/score_digests.py --write    # record this machine's
    .venv/bin/python tools/scorer/score_digests.py --kernels  # each OpenBLAS kernel this processor runs,
                                                              # and numpy without its AVX-512 code

The recorded digests (`tests/golden/score_digests.json`) are what `tests/test_same_scores_everywhere.py`
compares with. `--kernels` is how a dependence on the processor is found on one machine: OpenBLAS picks
its kernel from `OPENBLAS_CORETYPE` and numpy drops the SIMD code named in `NPY_DISABLE_CPU_FEATURES`,
so each run computes the products and functions as another processor would. BLIS picks its kernel by
processor alone, and only the entity recogniser's own loop still runs on it (docs/extraction.md, "The
same score on every processor").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import orjson

from knowref60k.extract.nlp import resolve_model_name
from knowref60k.quality.gold import load_gold
from knowref60k.quality.score_digests import NUMPY_AVX512, differences, digest_items, score_digests

RECORDED = Path(__file__).resolve().parents[2] / "tests" / "golden" / "score_digests.json"
# OpenBLAS kernels and the instructions each needs (/proc/cpuinfo's flags).
KERNELS = {"Haswell": {"avx2", "fma"}, "SkylakeX": {"avx512f"}, "Sandybridge": {"avx"}}


def here() -> dict[str, object]:
    return score_digests(digest_items(load_gold()), resolve_model_name(None))


def cpu_flags() -> set[str]:
    lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    return next((set(line.split(":", 1)[1].split()) for line in lines if line.startswith("flags")), set())


def under(environment: dict[str, str]) -> dict[str, object]:
    """This script's digests in a process with `environment` added."""
    run = subprocess.run(
        [sys.executable, __file__, "--json"],
        env={**os.environ, **environment},
        capture_output=True,
        check=True,
    )
    found: dict[str, object] = orjson.loads(run.stdout)
    return found


def kernels(recorded: dict[str, object]) -> int:
    flags = cpu_flags()
    variants = [{"OPENBLAS_CORETYPE": k} for k, needs in KERNELS.items() if needs <= flags]
    variants.append({"NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512})
    failed = 0
    for environment in variants:
        found = under(environment)
        differing = differences(found, recorded)
        failed += bool(differing)
        setting = " ".join(f"{name}={value}" for name, value in environment.items())
        print(f"{setting}\n  {found['processor']}\n  differs: {', '.join(differing) or 'nothing'}")
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"record this machine's digests in {RECORDED}")
    action.add_argument("--kernels", action="store_true", help="compare under every kernel this CPU runs")
    action.add_argument("--json", action="store_true", help="print this process's digests as JSON")
    args = parser.parse_args()
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(here()))
        return
    if args.write:
        RECORDED.write_bytes(orjson.dumps(here(), option=orjson.OPT_INDENT_2) + b"\n")
        print(f"recorded -> {RECORDED}")
        return
    recorded = orjson.loads(RECORDED.read_bytes())
    if args.kernels:
        sys.exit(1 if kernels(recorded) else 0)
    differing = differences(here(), recorded)
    print(f"differs: {', '.join(differing) or 'nothing'} (recorded on {recorded['processor']})")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
