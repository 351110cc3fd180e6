"""Pin every `name==version` line of a requirements lock by the sha256 of each of its distribution files
the package index lists, so that pip and uv install exactly those files (`--require-hashes` is implied
once a line has a hash).

    .venv/bin/python tools/locks/add_hashes.py annotation/requirements-labelstudio.lock [--index URL ...]

The index defaults to PyPI's; a pin no index lists is an error naming it. Comments are kept.
"""

from __future__ import annotations

import argparse
import re
import sys
import urllib.request
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*$")
DEFAULT_INDEX = "https://pypi.org/simple"
LINK = re.compile(r'href="[^"]*/([^/"#]+)#sha256=([0-9a-f]{64})"')


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def file_version(filename: str, name: str) -> str | None:
    """The version in a wheel's or sdist's file name of project `name`, None for another project (a
    wheel's name has no hyphen; an sdist's may, as the project's own name does)."""
    if filename.endswith(".whl"):
        parts = filename.split("-")
        return parts[1] if len(parts) > 2 and normalised(parts[0]) == normalised(name) else None
    stem = re.sub(r"(\.tar\.gz|\.zip)$", "", filename)
    if normalised(stem[: len(name)]) != normalised(name) or stem[len(name) : len(name) + 1] != "-":
        return None
    return stem[len(name) + 1 :]


def hashes_of(name: str, version: str, indexes: list[str]) -> list[str]:
    found = []
    for index in indexes:
        try:
            # A local index is a folder: its project page is the folder's index.html.
            page_name = "index.html" if index.startswith("file:") else ""
            with urllib.request.urlopen(f"{index.rstrip('/')}/{normalised(name)}/{page_name}") as page:
                text = page.read().decode()
        except OSError:
            continue
        found += [
            digest for filename, digest in LINK.findall(text) if file_version(filename, name) == version
        ]
    return sorted(set(found))


def hashed_lock(text: str, indexes: list[str]) -> tuple[str, list[str]]:
    lines, missing = [], []
    for line in text.splitlines():
        pin = PIN.match(line)
        if not pin:
            lines.append(line)
            continue
        digests = hashes_of(*pin.groups(), indexes)
        if not digests:
            missing.append(line.strip())
        lines.append(" \\\n    ".join([line.rstrip(), *(f"--hash=sha256:{digest}" for digest in digests)]))
    return "\n".join(lines) + "\n", missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lock", type=Path)
    parser.add_argument("--index", action="append", default=None, help="a simple index (repeatable)")
    args = parser.parse_args(argv)
    indexes = args.index or [DEFAULT_INDEX]
    text, missing = hashed_lock(args.lock.read_text(encoding="utf-8"), indexes)
    if missing:
        print(f"error: {args.lock}: no index lists a file of {', '.join(missing)}", file=sys.stderr)
        return 1
    args.lock.write_text(text, encoding="utf-8")
    print(f"{args.lock}: every pin hashed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
