"""What version of the code made an output."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=8)
def code_fingerprint(*modules: str) -> str:
    """Hash of the source of the library modules a stage depends on: changing them invalidates its
    finished outputs, while changing an unrelated module (the CLI, say) does not."""
    digest = hashlib.sha256()
    for module in sorted(modules):
        path = PACKAGE_DIR / f"{module}.py"
        digest.update(module.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]
