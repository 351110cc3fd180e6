"""Build the pool of Reddit sentences the gold set judges (see README.md beside this file).

.venv/bin/python tools/eval/build_pool.py ../shared/data/reddit/RC_sample_1M.zst --out pool.jsonl \\
    [--config tools/eval/pool_wide.toml]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import orjson

from knowref60k.quality.pool import build_pool


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the gold set's pool of loosely extracted sentences.")
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--model", help="spaCy pipeline (default: the project's default)")
    parser.add_argument("--config", type=Path, help="TOML file whose [extract] table widens the structure")
    args = parser.parse_args()
    rows = build_pool(args.inputs, args.workers, args.model, args.config)
    args.out.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    print(f"{len(rows)} sentences -> {args.out}")


if __name__ == "__main__":
    main()
